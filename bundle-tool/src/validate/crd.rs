//! Part of the CRD validator: upstream runs Kubernetes' `ValidateCustomResourceDefinition`
//! and keeps every error outside `openAPIV3Schema` and `status`. Here: the CRD's name is
//! `<plural>.<group>`, the group is a DNS subdomain with a dot, and there is exactly one
//! storage version among uniquely named versions. Messages are Kubernetes' field errors
//! (`<field>: Invalid value: "<v>": <why>`), wrapped the way upstream wraps them.

use std::collections::BTreeSet;

use serde_json::Value;

use super::Finding;

/// A Kubernetes field error as upstream reports it: field and value, then the whole
/// Kubernetes message as detail.
fn field_error(field: &str, value: &str, body: String) -> Finding {
    Finding {
        field: Some(field.to_string()),
        ..Finding::error(value, format!("{field}: {body}"))
    }
}

/// The findings for one CRD (apiextensions.k8s.io v1 or v1beta1).
pub fn findings(crd: &Value) -> Vec<Finding> {
    let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let mut out = Vec::new();
    let (name, group, plural) = (
        text("/metadata/name"),
        text("/spec/group"),
        text("/spec/names/plural"),
    );
    if name != format!("{plural}.{group}") {
        out.push(field_error(
            "metadata.name",
            name,
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    if group.is_empty() {
        out.push(field_error("spec.group", "", "Required value".into()));
    } else if !super::csv_metadata::is_dns_subdomain(group) {
        out.push(field_error(
            "spec.group",
            group,
            format!(
                "Invalid value: {group:?}: {}",
                super::csv_metadata::SUBDOMAIN_RULE
            ),
        ));
    } else if !group.contains('.') {
        out.push(field_error(
            "spec.group",
            group,
            format!("Invalid value: {group:?}: should be a domain with at least one dot"),
        ));
    }

    // v1beta1 defaults `versions` from the single `version` (served and stored).
    let versions: Vec<(&str, bool)> = match crd["spec"]["versions"].as_array() {
        Some(list) if !list.is_empty() => list
            .iter()
            .map(|v| (v["name"].as_str().unwrap_or(""), v["storage"] == true))
            .collect(),
        _ if !text("/spec/version").is_empty() => vec![(text("/spec/version"), true)],
        _ => Vec::new(),
    };
    // Upstream prints the whole versions list as a Go struct dump; we print the names.
    let names: Vec<&str> = versions.iter().map(|(n, _)| *n).collect();
    let shown = format!("[{}]", names.join(" "));
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    if unique.len() != names.len() {
        out.push(field_error(
            "spec.versions",
            &shown,
            format!("Invalid value: {shown}: must contain unique version names"),
        ));
    }
    if versions.iter().filter(|(_, storage)| *storage).count() != 1 {
        out.push(field_error(
            "spec.versions",
            &shown,
            format!(
                "Invalid value: {shown}: must have exactly one version marked as storage version"
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(crd: Value) -> Vec<String> {
        findings(&crd).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_sound_crd_has_no_findings() {
        let crd = json!({"metadata": {"name": "caches.example.com"}, "spec": {
            "group": "example.com", "names": {"plural": "caches"},
            "versions": [{"name": "v1", "storage": true}, {"name": "v2", "storage": false}]}});
        assert_eq!(messages(crd), Vec::<String>::new());
        let v1beta1 = json!({"metadata": {"name": "caches.example.com"}, "spec": {
            "group": "example.com", "names": {"plural": "caches"}, "version": "v1"}});
        assert_eq!(messages(v1beta1), Vec::<String>::new());
    }

    #[test]
    fn each_problem_is_a_kubernetes_field_error() {
        let crd = json!({"metadata": {"name": "caches.example"}, "spec": {
            "group": "example", "names": {"plural": "caches"},
            "versions": [{"name": "v1", "storage": true}, {"name": "v1", "storage": true}]}});
        assert_eq!(
            messages(crd),
            vec![
                "Error: Field spec.group, Value example: spec.group: Invalid value: \"example\": should be a domain with at least one dot",
                "Error: Field spec.versions, Value [v1 v1]: spec.versions: Invalid value: [v1 v1]: must contain unique version names",
                "Error: Field spec.versions, Value [v1 v1]: spec.versions: Invalid value: [v1 v1]: must have exactly one version marked as storage version",
            ]
        );
        let misnamed = json!({"metadata": {"name": "cache.example.com"}, "spec": {
            "group": "example.com", "names": {"plural": "caches"},
            "versions": [{"name": "v1", "storage": true}]}});
        assert_eq!(
            messages(misnamed),
            vec![
                "Error: Field metadata.name, Value cache.example.com: metadata.name: Invalid value: \"cache.example.com\": must be spec.names.plural+\".\"+spec.group"
            ]
        );
    }
}
