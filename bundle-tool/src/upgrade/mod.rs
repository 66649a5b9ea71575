//! Upgrade safety: whether installed users of OLD can move to NEW. CRDs through
//! operator-controller v1.11.0's preflight rules (crdify's, with its message texts), the
//! upgrade edge OLM needs to offer NEW, and what changes for a cluster admin in the CSV.
//! `docs/upgrade-safety.md` lists the rules and what is not checked.

mod bundle_contents;
mod catalog_edges;
pub mod cr_validation;
pub mod crd_rules;
mod finding;
pub mod formats;
mod graph;
pub mod live_crds;
mod operator_rules;
mod permissions;
pub mod property_rules;
mod render;
pub mod schema;

pub use bundle_contents::{BundleContents, ClusterError, UpgradeError};
pub use catalog_edges::{
    CatalogReport, Edge, ImageBundles, NotChecked, check_catalog, check_edges_into, upgrades_into,
};
pub use finding::{Area, Finding, Level, Report};
pub use live_crds::{EXISTING_OBJECT_INVALID, Live, read_cluster};
pub use render::{Format, render_catalog, render_report};

/// Which checks to run on a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checks {
    /// Whether NEW must name an edge from OLD (off for catalog edges, which the catalog
    /// itself draws).
    pub graph: bool,
}

/// Every finding for the upgrade from `old` to `new`.
pub fn check_pair(old: &BundleContents, new: &BundleContents, checks: Checks) -> Report {
    let mut findings = Vec::new();
    for (name, old_crd) in &old.crds {
        match new.crds.get(name) {
            Some(new_crd) => findings.extend(crd_rules::check_crd(old_crd, new_crd)),
            None => findings.push(crd_rules::removed_crd(old_crd, &new.name)),
        }
    }
    if checks.graph {
        findings.extend(graph::check_edge(old, new));
    }
    findings.extend(operator_rules::check_operator(old, new));
    Report::new(old.name.clone(), new.name.clone(), findings)
}
