//! The rest of Kubernetes' `ValidateObjectMeta` on a CRD: label keys and values, annotation
//! keys and their total size, finalizer names. The name, generateName and namespace rules
//! live in the parent module because they depend on the CRD's spec.

use serde_json::Value;

use super::super::Finding;
use super::rules::{error, invalid, subdomain_problems};

/// apimachinery's explanation of a qualified name (the double spaces are theirs).
const QUALIFIED_NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// apimachinery's explanation of a label value.
const LABEL_VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// Kubernetes' limit on the summed length of annotation keys and values.
const ANNOTATIONS_SIZE_LIMIT: usize = 256 * 1024;

/// Label, annotation and finalizer findings for the CRD `crd`, in upstream's order.
pub fn findings(crd: &Value, out: &mut Vec<Finding>) {
    let metadata = &crd["metadata"];
    if let Some(labels) = metadata["labels"].as_object() {
        for (key, value) in labels {
            for problem in qualified_name_problems(key) {
                out.push(invalid("metadata.labels", key, &problem));
            }
            let value = value.as_str().unwrap_or("");
            for problem in label_value_problems(value) {
                out.push(invalid("metadata.labels", value, problem));
            }
        }
    }
    if let Some(annotations) = metadata["annotations"].as_object() {
        let mut size = 0;
        for (key, value) in annotations {
            // Case does not matter in annotation keys: upstream lowercases before checking.
            for problem in qualified_name_problems(&key.to_lowercase()) {
                out.push(invalid("metadata.annotations", key, &problem));
            }
            size += key.len() + value.as_str().map_or(0, str::len);
        }
        if size > ANNOTATIONS_SIZE_LIMIT {
            out.push(error(
                "metadata.annotations",
                "<value omitted>",
                format!("Too long: may not be more than {ANNOTATIONS_SIZE_LIMIT} bytes"),
            ));
        }
    }
    for finalizer in metadata["finalizers"].as_array().into_iter().flatten() {
        let finalizer = finalizer.as_str().unwrap_or("");
        for problem in qualified_name_problems(finalizer) {
            out.push(invalid("metadata.finalizers", finalizer, &problem));
        }
    }
}

/// The problems apimachinery's `IsQualifiedName` finds in `value`: an optional DNS
/// subdomain prefix and `/`, then a name of at most 63 characters.
fn qualified_name_problems(value: &str) -> Vec<String> {
    let parts: Vec<&str> = value.split('/').collect();
    let mut problems = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_string());
            } else {
                for problem in subdomain_problems(prefix) {
                    problems.push(format!("prefix part {problem}"));
                }
            }
            name
        }
        _ => {
            problems.push(format!("a qualified name {QUALIFIED_NAME_RULE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
            return problems;
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        problems.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        problems.push(format!("name part {QUALIFIED_NAME_RULE}"));
    }
    problems
}

/// The problems apimachinery's `IsValidLabelValue` finds in `value`.
fn label_value_problems(value: &str) -> Vec<&'static str> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push("must be no more than 63 characters");
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        problems.push(LABEL_VALUE_RULE);
    }
    problems
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, which cannot match the empty string.
fn is_qualified_name_part(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_follow_apimachinery() {
        assert!(qualified_name_problems("app.kubernetes.io/name").is_empty());
        assert!(qualified_name_problems("Name_1").is_empty());
        assert_eq!(
            qualified_name_problems("/x"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(
            qualified_name_problems("a/b/c")[0],
            format!(
                "a qualified name {QUALIFIED_NAME_RULE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )
        );
        assert_eq!(
            qualified_name_problems("Example.com/-x"),
            vec![
                format!(
                    "prefix part {}",
                    super::super::super::csv_metadata::SUBDOMAIN_RULE
                ),
                format!("name part {QUALIFIED_NAME_RULE}"),
            ]
        );
        assert_eq!(
            qualified_name_problems("x/"),
            vec![
                "name part must be non-empty".to_string(),
                format!("name part {QUALIFIED_NAME_RULE}")
            ]
        );
        assert_eq!(qualified_name_problems(&"a".repeat(64)).len(), 1);
    }

    #[test]
    fn labels_annotations_and_finalizers_are_checked() {
        let crd = serde_json::json!({"metadata": {
            "labels": {"ok": "", "bad key": "v", "k": "-v"},
            "annotations": {"Example.COM/Key": "x", "a b": "y"},
            "finalizers": ["example.com/cleanup", "bad finalizer"],
        }});
        let mut out = Vec::new();
        findings(&crd, &mut out);
        let messages: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(
            messages[0]
                .contains("metadata.labels: Invalid value: \"bad key\": name part must consist")
        );
        assert!(
            messages[1].contains("metadata.labels: Invalid value: \"-v\": a valid label must be")
        );
        assert!(messages[2].contains("metadata.annotations: Invalid value: \"a b\": name part"));
        assert!(messages[3].contains("metadata.finalizers: Invalid value: \"bad finalizer\""));
        let big = serde_json::json!({"metadata": {"annotations": {"k": "x".repeat(ANNOTATIONS_SIZE_LIMIT)}}});
        let mut out = Vec::new();
        findings(&big, &mut out);
        assert_eq!(
            out[0].to_string(),
            "Error: Field metadata.annotations, Value <value omitted>: metadata.annotations: Too long: may not be more than 262144 bytes"
        );
    }
}
