//! The checks behind each criterion of [`super::criteria::CRITERIA`]: pure functions from a
//! bundle's [`CapabilityEvidence`] to a [`Verdict`]. Each names what it found, so that a
//! report explains itself.

use serde_json::Value;

use super::evidence::{CapabilityEvidence, Verdict};

mod autopilot;
mod basic_install;
mod insights;
mod lifecycle;
mod upgrades;

pub use autopilot::*;
pub use basic_install::*;
pub use insights::*;
pub use lifecycle::*;
pub use upgrades::*;

pub(super) fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// RBAC rules of the CSV granting any of `verbs` on `group`/`resource` (`*` counts).
pub(super) fn granted(
    evidence: &CapabilityEvidence,
    groups: &[&str],
    resource: &str,
    verbs: &[&str],
) -> bool {
    let Some(manifests) = &evidence.manifests else {
        return false;
    };
    manifests.rules.iter().any(|rule| {
        let rule_groups = strings(&rule["apiGroups"]);
        let resources = strings(&rule["resources"]);
        let rule_verbs = strings(&rule["verbs"]);
        rule_groups.iter().any(|g| *g == "*" || groups.contains(g))
            && resources.iter().any(|r| *r == "*" || *r == resource)
            && rule_verbs.iter().any(|v| *v == "*" || verbs.contains(v))
    })
}

/// Objects of `manifests/` whose kind is one of `kinds`, as `Kind/name`.
pub(super) fn objects_of_kind(evidence: &CapabilityEvidence, kinds: &[&str]) -> Vec<String> {
    evidence
        .manifests
        .iter()
        .flat_map(|m| &m.others)
        .filter(|o| o["kind"].as_str().is_some_and(|k| kinds.contains(&k)))
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// `(deployment/container, container)` for every container of the install deployments.
pub(super) fn containers(evidence: &CapabilityEvidence) -> Vec<(String, &Value)> {
    evidence
        .manifests
        .iter()
        .flat_map(|m| &m.deployments)
        .flat_map(|d| {
            let name = d["name"].as_str().unwrap_or_default();
            d["spec"]["template"]["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |c| {
                    (
                        format!("{name}/{}", c["name"].as_str().unwrap_or_default()),
                        c,
                    )
                })
        })
        .collect()
}

/// `(version name, openAPIV3Schema)` of a CRD, for apiextensions v1 and v1beta1.
pub(super) fn schemas(crd: &Value) -> Vec<(String, Option<&Value>)> {
    let shared = crd["spec"]["validation"]["openAPIV3Schema"]
        .as_object()
        .map(|_| &crd["spec"]["validation"]["openAPIV3Schema"]);
    let versions = crd["spec"]["versions"].as_array();
    match versions {
        Some(versions) if !versions.is_empty() => versions
            .iter()
            .filter(|v| v["served"].as_bool() != Some(false))
            .map(|v| {
                let own = v["schema"]["openAPIV3Schema"]
                    .as_object()
                    .map(|_| &v["schema"]["openAPIV3Schema"]);
                (
                    v["name"].as_str().unwrap_or_default().to_string(),
                    own.or(shared),
                )
            })
            .collect(),
        _ => vec![(
            crd["spec"]["version"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            shared,
        )],
    }
}

/// An owned-API entry of the CSV as "Kind version", for evidence lists.
pub(super) fn owned_api_label(owned: &Value) -> String {
    format!(
        "{} {}",
        owned["kind"].as_str().unwrap_or_default(),
        owned["version"].as_str().unwrap_or_default()
    )
}

pub(super) fn crd_name(crd: &Value) -> &str {
    crd["metadata"]["name"].as_str().unwrap_or_default()
}

/// Property names under `spec` (two levels deep) of every owned CRD, as `crd: path`.
pub(super) fn spec_fields(evidence: &CapabilityEvidence) -> Option<Vec<(String, String)>> {
    let crds = evidence.owned_crds()?;
    let mut fields = Vec::new();
    for crd in crds {
        for (_, schema) in schemas(crd) {
            let Some(spec) = schema.and_then(|s| s["properties"]["spec"]["properties"].as_object())
            else {
                continue;
            };
            for (name, child) in spec {
                fields.push((crd_name(crd).to_string(), name.clone()));
                for nested in child["properties"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                {
                    fields.push((crd_name(crd).to_string(), format!("{name}.{nested}")));
                }
            }
        }
    }
    fields.sort();
    fields.dedup();
    Some(fields)
}

pub(super) fn last_segment(path: &str) -> String {
    path.rsplit('.').next().unwrap_or(path).to_ascii_lowercase()
}

/// Names that say "the operand's version or image".
pub(super) fn is_version_field(name: &str) -> bool {
    let name = last_segment(name);
    name == "version" || name == "image" || name.ends_with("version") || name.ends_with("image")
}

pub(super) fn live(evidence: &CapabilityEvidence, id: &str) -> Verdict {
    match &evidence.live {
        None => Verdict::unknown("needs a cluster: run with --kubeconfig"),
        Some(live) => live
            .verdicts
            .get(id)
            .cloned()
            .unwrap_or_else(|| Verdict::unknown("not probed")),
    }
}

pub(super) fn is_backup_word(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["backup", "restore", "snapshot"]
        .iter()
        .any(|w| name.contains(w))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::evidence::{BundleManifests, Outcome};
    use super::*;

    fn with_manifests(manifests: BundleManifests) -> CapabilityEvidence {
        CapabilityEvidence {
            owned: vec![json!({"name": "dbs.example.com", "kind": "Db", "version": "v1"})],
            manifests: Some(manifests),
            ..Default::default()
        }
    }

    fn crd(versions: serde_json::Value) -> serde_json::Value {
        json!({"metadata": {"name": "dbs.example.com"}, "spec": {"versions": versions}})
    }

    #[test]
    fn v1beta1_crds_have_their_schema_at_spec_validation() {
        let old = json!({"metadata": {"name": "dbs.example.com"}, "spec": {
            "version": "v1", "validation": {"openAPIV3Schema": {"properties": {"spec": {"properties": {"backupSchedule": {}}}}}}}});
        let evidence = with_manifests(BundleManifests {
            crds: vec![old],
            ..Default::default()
        });
        assert_eq!(owned_crd_schema(&evidence).outcome, Outcome::Pass);
        // `backupSchedule` names a backup feature.
        assert_eq!(backup_restore(&evidence).outcome, Outcome::Pass);
    }

    #[test]
    fn several_versions_without_a_conversion_webhook_fail() {
        let evidence = with_manifests(BundleManifests {
            crds: vec![crd(
                json!([{"name": "v1", "served": true, "storage": true}, {"name": "v1beta1", "served": true}]),
            )],
            ..Default::default()
        });
        let verdict = crd_conversion(&evidence);
        assert_eq!(verdict.outcome, Outcome::Fail);
        assert!(
            verdict.detail.contains("dbs.example.com"),
            "{}",
            verdict.detail
        );
    }

    #[test]
    fn wildcard_rules_grant_everything() {
        let evidence = with_manifests(BundleManifests {
            rules: vec![json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]})],
            ..Default::default()
        });
        for check in [
            events,
            pod_disruption_budget,
            autoscaling,
            monitoring_objects,
            finalizers,
        ] {
            assert_eq!(check(&evidence).outcome, Outcome::Pass);
        }
    }

    #[test]
    fn a_read_only_rule_grants_no_creation() {
        let evidence = with_manifests(BundleManifests {
            rules: vec![
                json!({"apiGroups": ["", "policy"], "resources": ["events", "poddisruptionbudgets"], "verbs": ["get", "list"]}),
            ],
            ..Default::default()
        });
        assert_eq!(events(&evidence).outcome, Outcome::Fail);
        assert_eq!(pod_disruption_budget(&evidence).outcome, Outcome::Fail);
    }

    #[test]
    fn catalog_entries_leave_manifest_criteria_unknown_but_judge_what_they_carry() {
        let evidence = CapabilityEvidence {
            owned: vec![
                json!({"name": "backups.example.com", "kind": "Backup", "version": "v1",
                               "statusDescriptors": [{"path": "conditions", "x-descriptors": ["urn:alm:descriptor:io.kubernetes.conditions"]}]}),
            ],
            ..Default::default()
        };
        for check in [bundle_valid, probes, events, owned_crd_schema, autoscaling] {
            assert_eq!(check(&evidence).outcome, Outcome::Unknown);
        }
        assert_eq!(backup_restore(&evidence).outcome, Outcome::Pass);
        assert_eq!(condition_descriptors(&evidence).outcome, Outcome::Pass);
        assert_eq!(upgrade_edge(&evidence).outcome, Outcome::Fail);
        assert_eq!(live_metrics(&evidence).outcome, Outcome::Unknown);
    }

    #[test]
    fn recreate_strategy_and_missing_probes_are_named() {
        let evidence = with_manifests(BundleManifests {
            deployments: vec![
                json!({"name": "op", "spec": {"strategy": {"type": "Recreate"},
                "template": {"spec": {"containers": [{"name": "manager", "livenessProbe": {}}]}}}}),
            ],
            ..Default::default()
        });
        assert!(rolling_update(&evidence).detail.contains("op"));
        let verdict = probes(&evidence);
        assert_eq!(verdict.outcome, Outcome::Fail);
        assert!(verdict.detail.contains("op/manager"), "{}", verdict.detail);
    }
}
