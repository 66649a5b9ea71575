//! Kubernetes' field errors and name rules in apimachinery's words, as the CRD validator
//! reports them: the whole Kubernetes message is the detail, and the value is printed the
//! way operator-framework/api prints it (`%v`), which is not always how Kubernetes quotes it.

use super::super::Finding;

/// apimachinery's explanation of a DNS-1035 label (the double space is theirs).
pub const DNS1035_RULE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// The problems apimachinery's `IsDNS1035Label` finds in `value`.
pub fn dns1035_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    let bytes = value.as_bytes();
    let ok = bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if !ok {
        problems.push(DNS1035_RULE.to_string());
    }
    problems
}

/// The problems apimachinery's `IsDNS1123Subdomain` finds in `value`.
pub fn subdomain_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > 253 {
        problems.push("must be no more than 253 characters".to_string());
    }
    if !super::super::csv_metadata::is_dns_subdomain(value) {
        problems.push(super::super::csv_metadata::SUBDOMAIN_RULE.to_string());
    }
    problems
}

/// A Go string as `%q` prints it.
pub fn quoted(value: &str) -> String {
    format!("{value:?}")
}

/// One Kubernetes field error: `shown` is the value as operator-framework/api prints it,
/// `body` the text after `<field>: `.
pub fn error(field: &str, shown: &str, body: String) -> Finding {
    Finding {
        field: Some(field.to_string()),
        ..Finding::error(shown, format!("{field}: {body}"))
    }
}

/// `field.Invalid` with a string value.
pub fn invalid(field: &str, value: &str, why: &str) -> Finding {
    error(
        field,
        value,
        format!("Invalid value: {}: {why}", quoted(value)),
    )
}

/// `field.Required`; upstream's value is the empty string.
pub fn required(field: &str, why: &str) -> Finding {
    let body = if why.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {why}")
    };
    error(field, "", body)
}

/// `field.Forbidden`; upstream's value is the empty string.
pub fn forbidden(field: &str, why: &str) -> Finding {
    error(field, "", format!("Forbidden: {why}"))
}

/// `field.NotSupported` with the accepted values.
pub fn not_supported(field: &str, value: &str, accepted: &[&str]) -> Finding {
    let list: Vec<String> = accepted.iter().map(|a| quoted(a)).collect();
    error(
        field,
        value,
        format!(
            "Unsupported value: {}: supported values: {}",
            quoted(value),
            list.join(", ")
        ),
    )
}

/// `validateEnumStrings`: required, then one of `accepted`.
pub fn enum_string(field: &str, value: &str, accepted: &[&str]) -> Option<Finding> {
    if value.is_empty() {
        Some(required(field, ""))
    } else if !accepted.contains(&value) {
        Some(not_supported(field, value, accepted))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1035_labels() {
        assert!(dns1035_problems("v1beta1").is_empty());
        assert_eq!(dns1035_problems("1v"), vec![DNS1035_RULE.to_string()]);
        assert_eq!(dns1035_problems("V1"), vec![DNS1035_RULE.to_string()]);
        assert_eq!(dns1035_problems("a-"), vec![DNS1035_RULE.to_string()]);
        assert_eq!(dns1035_problems(&"a".repeat(64)).len(), 1);
    }

    #[test]
    fn errors_print_like_operator_framework_api() {
        assert_eq!(
            not_supported("spec.scope", "Global", &["Cluster", "Namespaced"]).to_string(),
            "Error: Field spec.scope, Value Global: spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""
        );
        assert_eq!(
            required("spec.names.kind", "").to_string(),
            "Error: Field spec.names.kind, Value : spec.names.kind: Required value"
        );
    }
}
