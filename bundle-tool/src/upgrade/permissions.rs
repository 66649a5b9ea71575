//! RBAC the operator asks for, OLD against NEW: every rule of the CSV's `permissions`
//! (namespaced) and `clusterPermissions` expanded to single grants, so that a grant NEW adds
//! is listed on its own line as a reviewer wants to see it, and a wildcard OLD had covers it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::bundle_contents::BundleContents;
use super::finding::{Finding, Level};

/// One grant: where, to whom, on what, which verb.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Grant {
    /// `permissions` or `clusterPermissions`.
    scope: &'static str,
    /// The service account.
    account: String,
    /// The API group (`""` is core), or `nonResourceURL` for URLs.
    group: String,
    /// The resource, or the URL.
    resource: String,
    /// Resource names, comma-separated ("" is all).
    names: String,
    /// The verb.
    verb: String,
}

impl Grant {
    /// Whether `self` (from OLD) allows everything `other` does.
    fn covers(&self, other: &Grant) -> bool {
        let matches = |mine: &str, theirs: &str| mine == "*" || mine == theirs;
        self.scope == other.scope
            && self.account == other.account
            && matches(&self.group, &other.group)
            && matches(&self.resource, &other.resource)
            && (self.names.is_empty() || self.names == other.names)
            && matches(&self.verb, &other.verb)
    }

    /// What the grant is on, for a line of the report.
    fn target(&self) -> String {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        let names = if self.names.is_empty() {
            String::new()
        } else {
            format!(" [{}]", self.names)
        };
        if self.group == "nonResourceURL" {
            format!("{} {} {}", self.scope, self.account, self.resource)
        } else {
            format!(
                "{} {} {group}/{}{names}",
                self.scope, self.account, self.resource
            )
        }
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn grants(csv: &Value) -> BTreeSet<Grant> {
    let mut set = BTreeSet::new();
    for scope in ["permissions", "clusterPermissions"] {
        for entry in csv["spec"]["install"]["spec"][scope]
            .as_array()
            .into_iter()
            .flatten()
        {
            let account = entry["serviceAccountName"].as_str().unwrap_or_default();
            for rule in entry["rules"].as_array().into_iter().flatten() {
                let verbs = strings(&rule["verbs"]);
                let names = strings(&rule["resourceNames"]).join(",");
                let mut targets: Vec<(String, String)> = Vec::new();
                for group in strings(&rule["apiGroups"]) {
                    for resource in strings(&rule["resources"]) {
                        targets.push((group.clone(), resource));
                    }
                }
                for url in strings(&rule["nonResourceURLs"]) {
                    targets.push(("nonResourceURL".into(), url));
                }
                for (group, resource) in targets {
                    for verb in &verbs {
                        set.insert(Grant {
                            scope,
                            account: account.to_string(),
                            group: group.clone(),
                            resource: resource.clone(),
                            names: names.clone(),
                            verb: verb.clone(),
                        });
                    }
                }
            }
        }
    }
    set
}

/// Grants NEW adds (warnings, one per target with its verbs) and drops (info).
pub fn check_permissions(old: &BundleContents, new: &BundleContents) -> Vec<Finding> {
    let (before, after) = (grants(&old.csv), grants(&new.csv));
    let added = after.iter().filter(|g| !before.iter().any(|o| o.covers(g)));
    let removed = before.iter().filter(|g| !after.iter().any(|n| n.covers(g)));
    let mut findings = Vec::new();
    for (level, rule, grants, hint) in [
        (
            Level::Warning,
            "permissionAdded",
            by_target(added),
            "review each new grant: cluster admins approve them on upgrade (manual approval) or get them silently (automatic)",
        ),
        (
            Level::Info,
            "permissionRemoved",
            by_target(removed),
            "check the operator no longer needs it: a missing grant shows up as forbidden errors at run time",
        ),
    ] {
        for (target, verbs) in grants {
            let (scope, _) = target.split_once(' ').unwrap_or_default();
            let verbs = verbs.join(",");
            let message = if rule == "permissionAdded" {
                format!("{target}: {verbs} granted")
            } else {
                format!("{target}: {verbs} no longer granted")
            };
            let values = if rule == "permissionAdded" {
                (None, Some(verbs))
            } else {
                (Some(verbs), None)
            };
            findings.push(Finding::about_csv(
                &new.name,
                level,
                rule,
                &format!("spec.install.spec.{scope}"),
                message,
                values,
                hint,
            ));
        }
    }
    findings
}

fn by_target<'a>(grants: impl Iterator<Item = &'a Grant>) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for grant in grants {
        map.entry(grant.target())
            .or_default()
            .push(grant.verb.clone());
    }
    map
}
