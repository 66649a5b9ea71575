//! Subresources (the scale paths) and printer columns: simple JSON paths under the right
//! part of the object, and the column types and formats `kubectl get` knows.

use serde_json::Value;

use super::super::Finding;
use super::rules::{invalid, required};

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";

/// apiextensions' `validateSimpleJSONPath`.
fn simple_json_path(path: &str, field: &str) -> Option<Finding> {
    if path.is_empty() {
        Some(invalid(field, path, "must not be empty"))
    } else if !path.starts_with('.') {
        Some(invalid(
            field,
            path,
            "must be a simple json path starting with .",
        ))
    } else {
        None
    }
}

/// The checks of `subresources` at `at` (the scale paths).
pub fn subresources(subresources: Option<&Value>, at: &str, out: &mut Vec<Finding>) {
    let Some(scale) = subresources.map(|s| &s["scale"]).filter(|s| !s.is_null()) else {
        return;
    };
    for (key, prefix) in [
        ("specReplicasPath", ".spec."),
        ("statusReplicasPath", ".status."),
    ] {
        let field = format!("{at}.scale.{key}");
        let path = scale[key].as_str().unwrap_or("");
        if path.is_empty() {
            out.push(required(&field, ""));
        } else if let Some(error) = simple_json_path(path, &field) {
            out.push(error);
        } else if !path.starts_with(prefix) {
            let under = prefix.trim_end_matches('.');
            out.push(invalid(
                &field,
                path,
                &format!("should be a json path under {under}"),
            ));
        }
    }
    let selector = scale["labelSelectorPath"].as_str().unwrap_or("");
    if !selector.is_empty() {
        let field = format!("{at}.scale.labelSelectorPath");
        if let Some(error) = simple_json_path(selector, &field) {
            out.push(error);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            // Upstream's value here is a pointer, printed as an address; we print the path.
            out.push(invalid(
                &field,
                selector,
                "should be a json path under either .spec or .status",
            ));
        }
    }
}

/// The checks of the printer columns `columns` at `at`.
pub fn columns(columns: &[Value], at: &str, json_path_key: &str, out: &mut Vec<Finding>) {
    for (i, column) in columns.iter().enumerate() {
        let at = format!("{at}[{i}]");
        if column["name"].as_str().unwrap_or("").is_empty() {
            out.push(required(&format!("{at}.name"), ""));
        }
        let kind = column["type"].as_str().unwrap_or("");
        let types = format!("must be one of {COLUMN_TYPES}");
        if kind.is_empty() {
            out.push(required(&format!("{at}.type"), &types));
        } else if !COLUMN_TYPES.split(',').any(|t| t == kind) {
            out.push(invalid(&format!("{at}.type"), kind, &types));
        }
        let format = column["format"].as_str().unwrap_or("");
        if !format.is_empty() && !COLUMN_FORMATS.split(',').any(|f| f == format) {
            let formats = format!("must be one of {COLUMN_FORMATS}");
            out.push(invalid(&format!("{at}.format"), format, &formats));
        }
        let field = format!("{at}.JSONPath");
        let path = column[json_path_key].as_str().unwrap_or("");
        if path.is_empty() {
            out.push(required(&field, ""));
        } else if let Some(error) = simple_json_path(path, &field) {
            out.push(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(found: Vec<Finding>) -> Vec<String> {
        found.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn scale_paths_point_into_spec_and_status() {
        let mut out = Vec::new();
        let sub =
            json!({"scale": {"specReplicasPath": ".status.x", "labelSelectorPath": "spec.z"}});
        subresources(Some(&sub), "spec.subresources", &mut out);
        assert_eq!(
            messages(out),
            vec![
                "Error: Field spec.subresources.scale.specReplicasPath, Value .status.x: spec.subresources.scale.specReplicasPath: Invalid value: \".status.x\": should be a json path under .spec",
                "Error: Field spec.subresources.scale.statusReplicasPath, Value : spec.subresources.scale.statusReplicasPath: Required value",
                "Error: Field spec.subresources.scale.labelSelectorPath, Value spec.z: spec.subresources.scale.labelSelectorPath: Invalid value: \"spec.z\": must be a simple json path starting with .",
            ]
        );
    }

    #[test]
    fn columns_have_known_types_and_paths() {
        let mut out = Vec::new();
        let cols = [
            json!({"name": "A", "type": "integer", "jsonPath": ".spec.a"}),
            json!({"name": "B", "type": "int", "format": "weird", "jsonPath": "status.b"}),
        ];
        columns(&cols, "spec.additionalPrinterColumns", "jsonPath", &mut out);
        assert_eq!(
            messages(out),
            vec![
                "Error: Field spec.additionalPrinterColumns[1].type, Value int: spec.additionalPrinterColumns[1].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string",
                "Error: Field spec.additionalPrinterColumns[1].format, Value weird: spec.additionalPrinterColumns[1].format: Invalid value: \"weird\": must be one of byte,date,date-time,double,float,int32,int64,password",
                "Error: Field spec.additionalPrinterColumns[1].JSONPath, Value status.b: spec.additionalPrinterColumns[1].JSONPath: Invalid value: \"status.b\": must be a simple json path starting with .",
            ]
        );
    }
}
