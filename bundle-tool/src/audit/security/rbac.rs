//! The rights a bundle asks for: the CSV's `clusterPermissions` (cluster-wide) and
//! `permissions` (the install namespace, or every watched namespace), and any ClusterRole or
//! Role shipped in `manifests/`. Each RBAC rule is matched the way the apiserver matches it
//! (`*` anywhere, `pods/*` for subresources), so a wildcard counts for every right it covers.

use serde_json::Value;

use super::Finding;
use super::risk::{self, Risk, Rule};
use crate::audit::evidence::BundleManifests;

/// Where a set of rules applies, which decides how far a right reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every namespace and the cluster-scoped resources.
    Cluster,
    /// One namespace (or each namespace OLM's OperatorGroup targets).
    Namespace,
}

/// Rules granted together, and to whom.
struct RuleSet<'a> {
    scope: Scope,
    subject: String,
    rules: Vec<&'a Value>,
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_ascii_lowercase)
                .collect()
        })
        .unwrap_or_default()
}

/// One RBAC rule, lowercased for matching and kept as written for evidence.
struct RbacRule<'a> {
    groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    named: bool,
    raw: &'a Value,
}

impl<'a> RbacRule<'a> {
    fn new(raw: &'a Value) -> Self {
        RbacRule {
            groups: strings(&raw["apiGroups"]),
            resources: strings(&raw["resources"]),
            verbs: strings(&raw["verbs"]),
            named: raw["resourceNames"]
                .as_array()
                .is_some_and(|names| !names.is_empty()),
            raw,
        }
    }

    fn group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == "*" || g == group)
    }

    fn resource(&self, resource: &str) -> bool {
        self.resources.iter().any(|r| {
            r == "*"
                || r == resource
                || r.strip_suffix("/*")
                    .is_some_and(|parent| resource.split_once('/').map(|(p, _)| p) == Some(parent))
        })
    }

    /// Whether the rule grants any of `verbs` on any of `resources` in any of `groups`.
    fn grants(&self, groups: &[&str], resources: &[&str], verbs: &[&str]) -> bool {
        groups.iter().any(|g| self.group(g))
            && resources.iter().any(|r| self.resource(r))
            && self
                .verbs
                .iter()
                .any(|v| v == "*" || verbs.contains(&v.as_str()))
    }

    fn wild(list: &[String]) -> bool {
        list.iter().any(|x| x == "*")
    }

    /// The rule as written, on one line.
    fn evidence(&self) -> String {
        serde_json::to_string(self.raw).unwrap_or_default()
    }
}

const RBAC_GROUP: &[&str] = &["rbac.authorization.k8s.io"];
const ROLES: &[&str] = &["roles", "clusterroles"];
const WRITE: &[&str] = &["create", "update", "patch"];

/// A right's risk where it applies: one level lower in a namespace than cluster-wide, for most.
fn graded(scope: Scope, cluster: Risk, namespaced: Risk) -> Risk {
    match scope {
        Scope::Cluster => cluster,
        Scope::Namespace => namespaced,
    }
}

/// Every finding of one RBAC rule.
fn rule_findings(rule: &RbacRule, scope: Scope, subject: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut flag = |r: &'static Rule, risk: Risk| {
        out.push(Finding::new(r, risk, subject, rule.evidence()));
    };
    use Risk::*;
    let any_group = RbacRule::wild(&rule.groups);
    if any_group && (RbacRule::wild(&rule.resources) || RbacRule::wild(&rule.verbs)) {
        // Everything below follows from this one; listing it again would only repeat it.
        flag(risk::RBAC_WILDCARD_ALL, graded(scope, Critical, High));
        return out;
    }
    if any_group || RbacRule::wild(&rule.resources) || RbacRule::wild(&rule.verbs) {
        flag(risk::RBAC_WILDCARD, graded(scope, Medium, Low));
    }
    if rule.grants(RBAC_GROUP, ROLES, &["escalate"]) {
        flag(risk::RBAC_ESCALATE, graded(scope, Critical, High));
    }
    if rule.grants(RBAC_GROUP, ROLES, &["bind"]) {
        flag(risk::RBAC_BIND, graded(scope, Critical, High));
    }
    if rule.grants(
        &["", "authentication.k8s.io"],
        &["users", "groups", "serviceaccounts", "uids", "userextras/*"],
        &["impersonate"],
    ) {
        flag(risk::RBAC_IMPERSONATE, graded(scope, Critical, High));
    }
    if !rule.named && rule.grants(&[""], &["secrets"], &["get", "list", "watch"]) {
        flag(risk::RBAC_SECRETS_READ, graded(scope, High, Medium));
    }
    if rule.grants(&[""], &["pods/exec", "pods/attach"], &["create", "get"]) {
        flag(risk::RBAC_PODS_EXEC, graded(scope, High, Medium));
    }
    if rule.grants(
        &[""],
        &["nodes/proxy"],
        &["get", "create", "update", "patch"],
    ) {
        flag(risk::RBAC_NODES_PROXY, High);
    }
    if rule.grants(
        RBAC_GROUP,
        &[
            "roles",
            "clusterroles",
            "rolebindings",
            "clusterrolebindings",
        ],
        WRITE,
    ) {
        flag(risk::RBAC_RBAC_WRITE, graded(scope, High, Medium));
    }
    if rule.grants(
        &["admissionregistration.k8s.io"],
        &[
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        ],
        WRITE,
    ) {
        // The configurations are cluster-scoped: a Role cannot reach them.
        flag(risk::RBAC_WEBHOOK_WRITE, graded(scope, High, Low));
    }
    if rule.grants(
        &["apiextensions.k8s.io"],
        &["customresourcedefinitions"],
        &["create", "update", "patch", "delete"],
    ) {
        flag(risk::RBAC_CRD_WRITE, graded(scope, Medium, Low));
    }
    out
}

fn rule_sets(manifests: &BundleManifests) -> Vec<RuleSet<'_>> {
    let mut sets = Vec::new();
    for (entries, scope, key) in [
        (
            &manifests.cluster_permissions,
            Scope::Cluster,
            "clusterPermissions",
        ),
        (&manifests.permissions, Scope::Namespace, "permissions"),
    ] {
        for entry in entries {
            let account = entry["serviceAccountName"].as_str().unwrap_or("(unnamed)");
            sets.push(RuleSet {
                scope,
                subject: format!("ServiceAccount {account} ({key})"),
                rules: entry["rules"]
                    .as_array()
                    .map(|r| r.iter().collect())
                    .unwrap_or_default(),
            });
        }
    }
    for object in &manifests.others {
        let scope = match object["kind"].as_str() {
            Some("ClusterRole") => Scope::Cluster,
            Some("Role") => Scope::Namespace,
            _ => continue,
        };
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or("(unnamed)");
        sets.push(RuleSet {
            scope,
            subject: format!("{kind} {name} (manifests/)"),
            rules: object["rules"]
                .as_array()
                .map(|r| r.iter().collect())
                .unwrap_or_default(),
        });
    }
    sets
}

/// Every RBAC finding of a bundle.
pub fn review(manifests: &BundleManifests) -> Vec<Finding> {
    rule_sets(manifests)
        .iter()
        .flat_map(|set| {
            set.rules
                .iter()
                .flat_map(|raw| rule_findings(&RbacRule::new(raw), set.scope, &set.subject))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn findings(scope: Scope, rule: Value) -> Vec<(&'static str, Risk)> {
        let entry = json!([{"serviceAccountName": "op", "rules": [rule]}]);
        let mut manifests = BundleManifests::default();
        match scope {
            Scope::Cluster => manifests.cluster_permissions = entry.as_array().cloned().unwrap(),
            Scope::Namespace => manifests.permissions = entry.as_array().cloned().unwrap(),
        }
        review(&manifests)
            .into_iter()
            .map(|f| (f.rule, f.risk))
            .collect()
    }

    fn cluster(rule: Value) -> Vec<(&'static str, Risk)> {
        findings(Scope::Cluster, rule)
    }

    #[test]
    fn narrow_rules_have_no_findings() {
        let safe = json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch", "create", "patch"]});
        assert_eq!(cluster(safe), vec![]);
    }

    #[test]
    fn everything_on_every_group_is_critical_once() {
        let all = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
        assert_eq!(
            cluster(all.clone()),
            vec![("rbac-wildcard-all", Risk::Critical)]
        );
        assert_eq!(
            findings(Scope::Namespace, all),
            vec![("rbac-wildcard-all", Risk::High)]
        );
    }

    #[test]
    fn a_wildcard_counts_for_the_rights_it_covers() {
        let core = json!({"apiGroups": [""], "resources": ["*"], "verbs": ["get"]});
        assert_eq!(
            cluster(core),
            vec![
                ("rbac-wildcard", Risk::Medium),
                ("rbac-secrets-read", Risk::High),
                ("rbac-pods-exec", Risk::High),
                ("rbac-nodes-proxy", Risk::High),
            ]
        );
        let subresources = json!({"apiGroups": [""], "resources": ["pods/*"], "verbs": ["create"]});
        assert_eq!(cluster(subresources), vec![("rbac-pods-exec", Risk::High)]);
    }

    #[test]
    fn escalate_bind_impersonate_are_critical_cluster_wide() {
        let escalate = json!({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["escalate", "bind"]});
        assert_eq!(
            cluster(escalate),
            vec![
                ("rbac-escalate", Risk::Critical),
                ("rbac-bind", Risk::Critical)
            ]
        );
        let read = json!({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["get", "list"]});
        assert_eq!(cluster(read), vec![]);
        let impersonate =
            json!({"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]});
        assert_eq!(
            findings(Scope::Namespace, impersonate),
            vec![("rbac-impersonate", Risk::High)]
        );
    }

    #[test]
    fn secrets_read_depends_on_scope_and_names() {
        let read = json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]});
        assert_eq!(
            cluster(read.clone()),
            vec![("rbac-secrets-read", Risk::High)]
        );
        assert_eq!(
            findings(Scope::Namespace, read),
            vec![("rbac-secrets-read", Risk::Medium)]
        );
        let named = json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["tls"], "verbs": ["get"]});
        assert_eq!(cluster(named), vec![]);
        let write_only =
            json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "delete"]});
        assert_eq!(cluster(write_only), vec![]);
    }

    #[test]
    fn writing_rbac_webhooks_and_crds_is_flagged() {
        let rbac = json!({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"], "verbs": ["create"]});
        assert_eq!(cluster(rbac), vec![("rbac-rbac-write", Risk::High)]);
        let hooks = json!({"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"], "verbs": ["patch"]});
        assert_eq!(cluster(hooks), vec![("rbac-webhook-write", Risk::High)]);
        let hooks_read = json!({"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"], "verbs": ["get", "list"]});
        assert_eq!(cluster(hooks_read), vec![]);
        let crds = json!({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["delete"]});
        assert_eq!(cluster(crds), vec![("rbac-crd-write", Risk::Medium)]);
    }

    #[test]
    fn roles_shipped_in_manifests_are_reviewed_with_their_evidence() {
        let manifests = BundleManifests {
            others: vec![
                json!({"kind": "ClusterRole", "metadata": {"name": "reader"},
                "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["watch"]}]}),
            ],
            ..Default::default()
        };
        let found = review(&manifests);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].subject, "ClusterRole reader (manifests/)");
        assert_eq!(
            found[0].evidence,
            r#"{"apiGroups":[""],"resources":["secrets"],"verbs":["watch"]}"#
        );
    }
}
