//! The upgrade graph: OLM offers NEW to a cluster running OLD only when NEW's CSV names an
//! edge from it (`spec.replaces`, `spec.skips`, or the `olm.skipRange` annotation).

use super::bundle_contents::BundleContents;
use super::finding::{Area, Finding, Level};
use crate::version_range::VersionRange;

/// The rule for a missing edge.
pub const UPGRADE_EDGE: &str = "upgradeEdge";

/// Findings about the edge from `old` to `new`.
pub fn check_edge(old: &BundleContents, new: &BundleContents) -> Vec<Finding> {
    let spec = &new.csv["spec"];
    let replaces = spec["replaces"].as_str().unwrap_or_default();
    let skips: Vec<&str> = spec["skips"]
        .as_array()
        .map(|l| l.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let skip_range = new.csv["metadata"]["annotations"]["olm.skipRange"]
        .as_str()
        .unwrap_or_default();
    let old_version = old.version();
    let in_range = !skip_range.is_empty()
        && old_version.as_ref().is_some_and(|version| {
            VersionRange::parse(skip_range).is_ok_and(|range| range.contains(version))
        });
    let mut findings = Vec::new();
    if replaces != old.name && !skips.contains(&old.name.as_str()) && !in_range {
        let shown_range = if skip_range.is_empty() {
            "none"
        } else {
            skip_range
        };
        findings.push(Finding {
            level: Level::Error,
            area: Area::Graph,
            rule: UPGRADE_EDGE.into(),
            subject: new.name.clone(),
            version: None,
            path: Some("spec.replaces".into()),
            message: format!(
                "{} has no upgrade edge from {}: it replaces {:?}, skips [{}], and its olm.skipRange ({shown_range}) does not contain {}",
                new.name,
                old.name,
                replaces,
                skips.join(", "),
                old_version.map_or_else(|| "OLD's version".to_string(), |v| v.to_string()),
            ),
            old: Some(old.name.clone()),
            new: Some(replaces.to_string()),
            hint: format!(
                "set spec.replaces: {} in NEW's CSV (or add it to spec.skips, or widen olm.skipRange); otherwise OLM never offers this upgrade",
                old.name
            ),
        });
    }
    if let (Some(old_version), Some(new_version)) = (old.version(), new.version())
        && new_version <= old_version
    {
        findings.push(Finding {
            level: Level::Warning,
            area: Area::Graph,
            rule: "versionOrder".into(),
            subject: new.name.clone(),
            version: None,
            path: Some("spec.version".into()),
            message: format!("NEW's version {new_version} is not above OLD's {old_version}"),
            old: Some(old_version.to_string()),
            new: Some(new_version.to_string()),
            hint: "raise spec.version: catalogs and the semver template order bundles by it".into(),
        });
    }
    findings
}
