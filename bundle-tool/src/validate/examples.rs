//! The CSV validator's example checks: `alm-examples` (or `olm.examples`) is a JSON list of
//! objects, each example is of an API the CSV provides, and each provided API has an example.

use std::collections::BTreeSet;

use serde_json::Value;

use super::Finding;

/// A group/version/kind printed as Kubernetes prints it: `group/version, Kind=Kind`.
fn gvk(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}, Kind={kind}")
}

/// The findings for the CSV `csv` named `name`.
pub fn findings(csv: &Value, name: &str) -> Vec<Finding> {
    let invalid_csv = |detail: &str| Finding::warning("", format!("({name}) {detail}"));
    let annotations = csv["metadata"]["annotations"].as_object();
    let Some(annotations) = annotations.filter(|a| !a.is_empty()) else {
        return vec![invalid_csv("annotations not found")];
    };
    let text = |key: &str| annotations.get(key).map(|v| v.as_str().unwrap_or_default());
    let mut out = Vec::new();
    let examples = match (text("alm-examples"), text("olm.examples")) {
        (None, None) => return vec![invalid_csv("example annotations not found")],
        (Some(alm), Some(_)) => {
            out.push(invalid_csv(
                "both `alm-examples` and `olm.examples` are present. Checking only `alm-examples`",
            ));
            alm
        }
        (Some(alm), None) => alm,
        (None, Some(olm)) => olm,
    };
    let parsed: Value = if examples.trim().is_empty() {
        Value::Array(Vec::new())
    } else {
        match serde_json::from_str(examples) {
            Ok(value) => value,
            Err(e) => {
                out.push(Finding::error(
                    json_error_position(examples, &e),
                    "invalid example",
                ));
                return out;
            }
        }
    };
    let Some(list) = parsed.as_array() else {
        out.push(Finding::error(
            format!(
                "json: cannot unmarshal {} into Go value of type []unstructured.Unstructured",
                json_type(&parsed)
            ),
            "error decoding example CustomResource",
        ));
        return out;
    };
    let mut examples_gvks = BTreeSet::new();
    for example in list {
        let api_version = example["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        examples_gvks.insert(gvk(
            group,
            version,
            example["kind"].as_str().unwrap_or_default(),
        ));
    }

    let mut provided = BTreeSet::new();
    let spec = &csv["spec"];
    for owned in spec["customresourcedefinitions"]["owned"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let crd_name = owned["name"].as_str().unwrap_or_default();
        let Some((_, group)) = crd_name.split_once('.') else {
            out.push(Finding {
                value: None,
                ..Finding::error(
                    "",
                    format!("couldn't parse plural.group from crd name: {crd_name}"),
                )
            });
            continue;
        };
        provided.insert(gvk(
            group,
            owned["version"].as_str().unwrap_or_default(),
            owned["kind"].as_str().unwrap_or_default(),
        ));
    }
    for api in spec["apiservicedefinitions"]["owned"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let field = |key: &str| api[key].as_str().unwrap_or_default();
        provided.insert(gvk(field("group"), field("version"), field("kind")));
    }
    for example in examples_gvks.difference(&provided) {
        out.push(Finding::error(
            example.clone(),
            "example must have a provided API",
        ));
    }
    for api in provided.difference(&examples_gvks) {
        out.push(Finding::warning(
            api.clone(),
            "provided API should have an example annotation",
        ));
    }
    out
}

/// Go's name of a JSON value's type, as its decoder's error names it.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "object",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        Value::Array(_) => "array",
    }
}

/// Upstream's value for a syntax error: the byte offset and the text up to it, marked.
fn json_error_position(text: &str, error: &serde_json::Error) -> String {
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if index + 1 == error.line() {
            offset += error.column().min(line.len());
            break;
        }
        offset += line.len();
    }
    let offset = offset.min(text.len());
    let offset = (0..=offset)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!(
        "invalid character at {offset}\n {}<--(see the invalid character)",
        &text[..offset]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(csv: Value) -> Vec<String> {
        findings(&csv, "op.v1.0.0")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn csv(examples: &str) -> Value {
        json!({"metadata": {"annotations": {"alm-examples": examples}}, "spec": {
            "customresourcedefinitions": {"owned": [
                {"name": "caches.example.com", "version": "v1", "kind": "Cache"},
                {"name": "queues.example.com", "version": "v1", "kind": "Queue"}
            ]}
        }})
    }

    #[test]
    fn examples_and_provided_apis_must_match() {
        let found = messages(csv(
            r#"[{"apiVersion": "example.com/v1", "kind": "Cache"}, {"apiVersion": "example.com/v2", "kind": "Cache"}]"#,
        ));
        assert_eq!(
            found,
            vec![
                "Error: Value example.com/v2, Kind=Cache: example must have a provided API",
                "Warning: Value example.com/v1, Kind=Queue: provided API should have an example annotation",
            ]
        );
    }

    #[test]
    fn broken_or_missing_examples_are_named() {
        let broken = messages(csv(r#"[{"kind": }]"#));
        assert_eq!(broken.len(), 1);
        assert!(
            broken[0].starts_with("Error: Value invalid character at 11\n [{\"kind\": }")
                && broken[0].ends_with("<--(see the invalid character): invalid example"),
            "{broken:?}"
        );
        let object = messages(csv(r#"{"kind": "Cache"}"#));
        assert_eq!(
            object,
            vec![
                "Error: Value json: cannot unmarshal object into Go value of type []unstructured.Unstructured: error decoding example CustomResource"
            ]
        );
        assert_eq!(
            messages(json!({"metadata": {"annotations": {"a": "b"}}})),
            vec!["Warning: Value : (op.v1.0.0) example annotations not found"]
        );
        assert_eq!(
            messages(json!({"metadata": {}})),
            vec!["Warning: Value : (op.v1.0.0) annotations not found"]
        );
    }
}
