//! The CSV validator's metadata checks: `metadata.name` and `spec.replaces` are DNS-1123
//! subdomains and label values (the CSV name ends up in labels), known OLM annotation keys are
//! spelled with the right case, and `olm.properties` belongs in `metadata/properties.yaml`.

use serde_json::Value;

use super::Finding;

/// Annotation keys OLM reads case-sensitively.
const CASE_SENSITIVE_KEYS: [&str; 5] = [
    "olm.operatorGroup",
    "olm.operatorNamespace",
    "olm.targetNamespaces",
    "olm.providedAPIs",
    "olm.skipRange",
];

/// Kubernetes' explanation of a DNS-1123 subdomain (apimachinery's `RegexError` text).
pub(super) const SUBDOMAIN_RULE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// Kubernetes' explanation of a label value (the double spaces are apimachinery's).
const LABEL_VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// The findings for the CSV `csv` named `name`.
pub fn findings(csv: &Value, name: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for (field, value) in [
        ("metadata.name", Some(name)),
        ("spec.replaces", csv["spec"]["replaces"].as_str()),
    ] {
        // An empty `replaces` is not checked; an empty name is.
        let Some(value) = value.filter(|v| field == "metadata.name" || !v.is_empty()) else {
            continue;
        };
        let problems = name_problems(value);
        if !problems.is_empty() {
            out.push(Finding::error(
                "",
                format!(
                    "({name}) {field} {value:?} is invalid: {}",
                    problems.join(",")
                ),
            ));
        }
    }
    let annotations = csv["metadata"]["annotations"].as_object();
    for key in annotations.into_iter().flat_map(|a| a.keys()) {
        if let Some(known) = CASE_SENSITIVE_KEYS
            .iter()
            .find(|k| k.eq_ignore_ascii_case(key) && *k != key)
        {
            out.push(Finding::error(
                name,
                format!("provided annotation {key} uses wrong case and should be {known} instead"),
            ));
        }
        if key == "olm.properties" {
            out.push(Finding::warning(
                "",
                "found olm.properties annotation, please define these properties in metadata/properties.yaml instead",
            ));
        }
    }
    out
}

/// True when every dot-separated part of `value` is a DNS-1123 label (length aside).
pub(super) fn is_dns_subdomain(value: &str) -> bool {
    let dns_label = |label: &str| {
        let bytes = label.as_bytes();
        let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        !bytes.is_empty()
            && bytes.first().is_some_and(alnum)
            && bytes.last().is_some_and(alnum)
            && bytes.iter().all(|b| alnum(b) || *b == b'-')
    };
    value.split('.').all(dns_label)
}

/// What makes `value` not a DNS-1123 subdomain or not a label value, in apimachinery's words.
fn name_problems(value: &str) -> Vec<&'static str> {
    let mut problems = Vec::new();
    if value.len() > 253 {
        problems.push("must be no more than 253 characters");
    }
    if !is_dns_subdomain(value) {
        problems.push(SUBDOMAIN_RULE);
    }
    if value.len() > 63 {
        problems.push("must be no more than 63 characters");
    }
    let bytes = value.as_bytes();
    let label_value = bytes.is_empty()
        || (bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(b)));
    if !label_value {
        problems.push(LABEL_VALUE_RULE);
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_must_be_subdomains_and_label_values() {
        assert!(name_problems("redis-operator.v0.1.0").is_empty());
        assert_eq!(name_problems("Redis.v1"), vec![SUBDOMAIN_RULE]);
        let long = format!("a{}", ".b".repeat(40));
        assert_eq!(
            name_problems(&long),
            vec!["must be no more than 63 characters"]
        );
        let found = findings(&json!({"spec": {"replaces": "old_v1"}}), "op.v1.0.0");
        assert_eq!(found.len(), 1);
        assert!(found[0].to_string().starts_with(
            "Error: Value : (op.v1.0.0) spec.replaces \"old_v1\" is invalid: a lowercase RFC 1123 subdomain"
        ));
    }

    #[test]
    fn annotation_keys_are_checked() {
        let csv = json!({"metadata": {"annotations": {"olm.skiprange": "<1.0.0", "olm.properties": "[]"}}});
        let found: Vec<String> = findings(&csv, "op.v1.0.0")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(found.contains(&"Error: Value op.v1.0.0: provided annotation olm.skiprange uses wrong case and should be olm.skipRange instead".to_string()), "{found:#?}");
        assert!(found.contains(&"Warning: Value : found olm.properties annotation, please define these properties in metadata/properties.yaml instead".to_string()));
    }
}
