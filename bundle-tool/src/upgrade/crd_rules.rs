//! CRD upgrade rules: operator-controller v1.11.0's preflight (crdify's CRD-wide checks,
//! every property comparator within each version, and across served versions unless NEW
//! converts through a webhook), and a CRD that NEW no longer ships.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::finding::{Area, CRD_REMOVED, Finding, Level};
// Where the rule names are kept (the finding prints by them); readers of the CRD rules
// look for it here too.
pub use super::finding::is_crd_wide;
use super::property_rules::{Violation, compare};
use super::schema::{Node, flatten, go_list, go_quote};

/// A CRD in the shape of `apiextensions.k8s.io/v1` (v1beta1's top-level `version` and
/// `validation` moved into `versions`), which the rules read.
#[derive(Clone, Debug, PartialEq)]
pub struct Crd {
    /// `metadata.name`.
    pub name: String,
    /// `spec.scope`.
    pub scope: String,
    /// `spec.versions`, each with its name, served, storage and `schema.openAPIV3Schema`.
    pub versions: Vec<CrdVersion>,
    /// `spec.conversion.strategy` (`None` or `Webhook`; absent is `None`).
    pub conversion: String,
    /// The versions objects may be stored at: `status.storedVersions` when known, and the
    /// storage version, which the API server adds to it as soon as the CRD is created.
    pub stored_versions: Vec<String>,
}

/// One version of a CRD.
#[derive(Clone, Debug, PartialEq)]
pub struct CrdVersion {
    /// Its name (`v1`).
    pub name: String,
    /// Whether it is served.
    pub served: bool,
    /// Whether it is the storage version.
    pub storage: bool,
    /// Its OpenAPI v3 schema.
    pub schema: Option<Value>,
}

impl Crd {
    /// Reads a CRD object (v1 or v1beta1).
    pub fn from_object(object: &Value) -> Crd {
        let spec = &object["spec"];
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let legacy_schema = spec["validation"]["openAPIV3Schema"].clone();
        let mut versions: Vec<CrdVersion> = spec["versions"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|v| CrdVersion {
                        name: text(&v["name"]),
                        served: v["served"].as_bool().unwrap_or(false),
                        storage: v["storage"].as_bool().unwrap_or(false),
                        schema: Some(v["schema"]["openAPIV3Schema"].clone())
                            .filter(|s| s.is_object())
                            .or_else(|| Some(legacy_schema.clone()).filter(|s| s.is_object())),
                    })
                    .collect()
            })
            .unwrap_or_default();
        if versions.is_empty()
            && let Some(version) = spec["version"].as_str()
        {
            versions.push(CrdVersion {
                name: version.to_string(),
                served: true,
                storage: true,
                schema: Some(legacy_schema).filter(|s| s.is_object()),
            });
        }
        let mut stored_versions: Vec<String> = object["status"]["storedVersions"]
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        for version in versions.iter().filter(|v| v.storage) {
            if !stored_versions.contains(&version.name) {
                stored_versions.push(version.name.clone());
            }
        }
        let scope = match spec["scope"].as_str() {
            Some(scope) => scope.to_string(),
            // v1beta1 defaulted an unset scope to Namespaced.
            None => "Namespaced".to_string(),
        };
        Crd {
            name,
            scope,
            versions,
            conversion: spec["conversion"]["strategy"]
                .as_str()
                .unwrap_or("None")
                .to_string(),
            stored_versions,
        }
    }

    fn version(&self, name: &str) -> Option<&CrdVersion> {
        self.versions.iter().find(|v| v.name == name)
    }
}

/// Every finding for one CRD that OLD and NEW both ship.
pub fn check_crd(old: &Crd, new: &Crd) -> Vec<Finding> {
    let mut findings = Vec::new();
    let crd_wide =
        |rule: &str, message: String, old_value, new_value, path: Option<String>| Finding {
            level: Level::Error,
            area: Area::Crd,
            rule: rule.to_string(),
            subject: new.name.clone(),
            version: None,
            path,
            message,
            old: old_value,
            new: new_value,
            hint: hint(rule, false).to_string(),
        };
    if old.scope != new.scope {
        findings.push(crd_wide(
            "scope",
            format!(
                "scope changed : {} -> {}",
                go_quote(&old.scope),
                go_quote(&new.scope)
            ),
            Some(old.scope.clone()),
            Some(new.scope.clone()),
            Some("spec.scope".into()),
        ));
    }
    let new_names: BTreeSet<&str> = new.versions.iter().map(|v| v.name.as_str()).collect();
    let removed: Vec<&String> = old
        .stored_versions
        .iter()
        .filter(|v| !new_names.contains(v.as_str()))
        .collect();
    if !removed.is_empty() {
        findings.push(crd_wide(
            "storedVersionRemoval",
            format!("stored versions removed : {}", go_list(&removed)),
            Some(go_list(&old.stored_versions)),
            Some(go_list(&new_names.iter().collect::<Vec<_>>())),
            Some("spec.versions".into()),
        ));
    }
    for new_version in &new.versions {
        let Some(old_version) = old.version(&new_version.name) else {
            continue;
        };
        let new_fields = flatten(new_version.schema.as_ref());
        for field in flatten(old_version.schema.as_ref()).keys() {
            if !new_fields.contains_key(field) {
                findings.push(crd_wide(
                    "existingFieldRemoval",
                    format!("removed field : {}.{field}", new_version.name),
                    Some(field.clone()),
                    None,
                    Some(format!("{}.{field}", new_version.name)),
                ));
            }
        }
    }
    // Within each version: OLD's version against NEW's of the same name.
    for old_version in &old.versions {
        if let Some(new_version) = new.version(&old_version.name) {
            for (path, violation) in compare_versions(old_version, new_version) {
                findings.push(schema_finding(
                    &new.name,
                    &old_version.name,
                    path,
                    violation,
                    false,
                ));
            }
        }
    }
    // Across NEW's served versions, unless a webhook converts between them; issues OLD
    // already had between the same pair are not reported again.
    if new.conversion != "Webhook" {
        let known = served_issues(old);
        for (pair, issues) in served_issues(new) {
            for (path, violation) in issues {
                let seen = known.get(&pair).is_some_and(|old_issues| {
                    old_issues.iter().any(|(p, v)| {
                        *p == path && v.rule == violation.rule && v.message == violation.message
                    })
                });
                if !seen {
                    findings.push(schema_finding(&new.name, &pair, path, violation, true));
                }
            }
        }
    }
    findings
}

/// The finding for a CRD that OLD ships and NEW does not.
pub fn removed_crd(old: &Crd, new_bundle: &str) -> Finding {
    Finding {
        level: Level::Error,
        area: Area::Crd,
        rule: CRD_REMOVED.into(),
        subject: old.name.clone(),
        version: None,
        path: None,
        message: format!("CRD {} is not in {new_bundle}", old.name),
        old: Some(old.name.clone()),
        new: None,
        hint: hint(CRD_REMOVED, false).into(),
    }
}

fn schema_finding(crd: &str, version: &str, path: String, v: Violation, served: bool) -> Finding {
    Finding {
        level: Level::Error,
        area: Area::Crd,
        rule: v.rule.to_string(),
        subject: crd.to_string(),
        version: Some(version.to_string()),
        path: Some(path),
        message: v.message,
        old: v.old,
        new: v.new,
        hint: hint(v.rule, served).to_string(),
    }
}

/// Every property of `old`'s schema whose node differs in `new`, with the comparators'
/// violations (crdify's `CompareVersions`: properties only NEW has are not looked at).
fn compare_versions(old: &CrdVersion, new: &CrdVersion) -> Vec<(String, Violation)> {
    let new_nodes = flatten(new.schema.as_ref());
    let mut found = Vec::new();
    let empty = Node::new();
    for (path, old_node) in flatten(old.schema.as_ref()) {
        let new_node = new_nodes.get(&path).unwrap_or(&empty);
        if old_node == *new_node {
            continue;
        }
        for violation in compare(&old_node, new_node) {
            found.push((path.clone(), violation));
        }
    }
    found
}

/// The issues between every pair of a CRD's served versions, lower version first, keyed
/// `v1alpha1 -> v1` as crdify names them.
fn served_issues(crd: &Crd) -> BTreeMap<String, Vec<(String, Violation)>> {
    let mut served: Vec<&CrdVersion> = crd.versions.iter().filter(|v| v.served).collect();
    served.sort_by(|a, b| compare_kube_versions(&a.name, &b.name));
    let mut pairs = BTreeMap::new();
    for (i, lower) in served.iter().enumerate() {
        for higher in &served[i + 1..] {
            pairs.insert(
                format!("{} -> {}", lower.name, higher.name),
                compare_versions(lower, higher),
            );
        }
    }
    pairs
}

/// Kubernetes' version priority, lowest first: names that are not `vN[alphaM|betaM]`
/// (reverse alphabetical), then alpha, beta, GA, each by major then minor number.
fn compare_kube_versions(a: &str, b: &str) -> Ordering {
    match (kube_version(a), kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.cmp(&y),
    }
}

/// `(stability, major, minor)` of a Kubernetes API version name: alpha 0, beta 1, GA 2.
fn kube_version(name: &str) -> Option<(u8, u64, u64)> {
    let rest = name.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let major: u64 = rest[..digits].parse().ok()?;
    if major == 0 {
        return None;
    }
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, minor) = if let Some(minor) = tail.strip_prefix("alpha") {
        (0, minor)
    } else if let Some(minor) = tail.strip_prefix("beta") {
        (1, minor)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stability, major, minor.parse().ok()?))
}

/// A one-line fix for a CRD rule.
fn hint(rule: &str, served: bool) -> &'static str {
    if served {
        return "versions served side by side must accept the same objects: make them compatible, or convert between them with a webhook (spec.conversion.strategy: Webhook)";
    }
    match rule {
        "scope" => "keep spec.scope; a different scope needs a new CRD (another group or kind)",
        "storedVersionRemoval" => {
            "keep the version in spec.versions (served: false is enough) until objects are migrated and status.storedVersions no longer lists it"
        }
        "existingFieldRemoval" => {
            "keep the field (say it is deprecated in its description); drop it only in a new API version"
        }
        "enum" => "keep every old enum value; only add values",
        "default" => "keep the old default; a changed default rewrites what existing objects mean",
        "required" => {
            "make the new field optional (default it in the controller), or require it only in a new API version"
        }
        "type" => "keep the old type; a new type needs a new API version and conversion",
        "maximum" | "maxItems" | "maxLength" | "maxProperties" => {
            "do not lower or add a maximum in an existing version: stored objects may exceed it"
        }
        "minimum" | "minItems" | "minLength" | "minProperties" => {
            "do not raise or add a minimum in an existing version: stored objects may be below it"
        }
        "pattern" => "keep the old pattern; stored values may not match a new one",
        "nullable" => "keep nullable as it was",
        "oneOf" => "keep the oneOf alternatives as they were",
        "unhandled" => {
            "a change the preflight does not judge, which OLM v1 refuses: revert it, or review it by hand and release it in a new API version"
        }
        CRD_REMOVED => {
            "keep shipping the CRD: its objects would be left with no operator (or deleted with it)"
        }
        _ => "keep the schema compatible with what OLD accepted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_version_order() {
        let mut names = vec![
            "v1", "v2beta1", "v1alpha1", "foo", "v1beta2", "bar", "v1beta1",
        ];
        names.sort_by(|a, b| compare_kube_versions(a, b));
        assert_eq!(
            names,
            [
                "foo", "bar", "v1alpha1", "v1beta1", "v1beta2", "v2beta1", "v1"
            ]
        );
    }
}
