//! `check-upgrade` on real release history: consecutive versions of operators in
//! `tests/corpus-extra/` (bundles from operator-framework/community-operators). Each case is
//! a finding checked by hand against the bundle files (docs/upgrade-safety.md), and one pair
//! the files show to be a clean upgrade.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn bundle(package: &str, version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus-extra/bundles/community-operators")
        .join(package)
        .join(version)
}

fn check(package: &str, old: &str, new: &str) -> (Option<i32>, Value) {
    let output = Command::new(e2e::bundle_tool_binary())
        .arg("check-upgrade")
        .args([bundle(package, old), bundle(package, new)])
        .args(["-o", "json"])
        .output()
        .expect("run bundle-tool");
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{package} {old} -> {new}: {e}: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code(), report)
}

/// The findings of `rule`, as `subject version path: message`.
fn findings(report: &Value, rule: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| {
            format!(
                "{} {} {}: {}",
                f["subject"].as_str().unwrap_or_default(),
                f["version"].as_str().unwrap_or("-"),
                f["path"].as_str().unwrap_or("-"),
                f["message"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn a_storage_version_dropped_between_releases() {
    // 0.9.2's CRD has only v1alpha1 (stored); 0.9.5's only v1beta1.
    let (code, report) = check("koku-metrics-operator", "0.9.2", "0.9.5");
    assert_eq!(code, Some(1));
    assert_eq!(
        findings(&report, "storedVersionRemoval"),
        [
            "kokumetricsconfigs.koku-metrics-cfg.openshift.io - spec.versions: stored versions removed : [v1alpha1]"
        ]
    );
}

#[test]
fn a_scope_change_between_releases() {
    let (code, report) = check("namespace-configuration-operator", "0.1.0", "0.2.0");
    assert_eq!(code, Some(1));
    assert_eq!(
        findings(&report, "scope"),
        [
            r#"namespaceconfigs.redhatcop.redhat.io - spec.scope: scope changed : "Namespaced" -> "Cluster""#
        ]
    );
}

#[test]
fn a_new_required_field_between_releases() {
    let (code, report) = check("keepalived-operator", "0.3.0", "1.0.0");
    assert_eq!(code, Some(1));
    assert!(
        findings(&report, "required").contains(
            &"keepalivedgroups.redhatcop.redhat.io v1alpha1 ^.spec: new required fields: [image]"
                .to_string()
        ),
        "{:#?}",
        findings(&report, "required")
    );
}

#[test]
fn a_release_without_an_edge_from_the_one_before() {
    // 0.0.3's CSV has no replaces, skips or olm.skipRange.
    let (code, report) = check("cert-utils-operator", "0.0.1", "0.0.3");
    assert_eq!(code, Some(1));
    assert_eq!(findings(&report, "upgradeEdge").len(), 1);
}

#[test]
fn an_optional_field_added_is_a_clean_upgrade() {
    // 10.0.0 replaces 9.0.2; the CRDs differ only by an optional `attributes` map added to
    // two of them. The operator image changes, as every release's does.
    let (code, report) = check("keycloak-operator", "9.0.2", "10.0.0");
    assert_eq!(code, Some(0), "{report:#}");
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["rule"].as_str().expect("rule"))
        .collect();
    assert!(
        !rules.is_empty() && rules.iter().all(|r| *r == "operatorImage"),
        "{rules:?}"
    );
}
