//! The installer ServiceAccount of a ClusterExtension and the least RBAC that lets
//! operator-controller v1.5.1 install, upgrade and remove given bundles with it.
//!
//! What operator-controller asks of the ServiceAccount, read from v1.5.1: its
//! `PreflightPermissions` check (`internal/operator-controller/authorization/rbac.go`) wants,
//! for each rendered object, `get`, `patch`, `update`, `delete` on the object by name, `create`
//! in its namespace, `list` and `watch` on the resource cluster-wide (its content manager
//! watches what it installed), and `update` on `clusterextensions/finalizers` of the
//! extension; Helm then does the same calls against the API server as the ServiceAccount.
//! Helm's release Secrets are not the ServiceAccount's business: operator-controller keeps
//! them in its own namespace with its own client (`cmd/operator-controller/main.go`,
//! `ChunkedStorageDriverMapper` on the system namespace).
//!
//! The rules here: `get`, `update`, `patch`, `delete` pinned by `resourceNames` (in a Role for
//! namespaced objects, a ClusterRole for cluster-scoped ones), `create` per resource (the API
//! server cannot check a name on create), `list`/`watch` per resource cluster-wide; no
//! wildcards.
//!
//! Creating the operator's ClusterRoles and Roles is only allowed to whoever holds their
//! rules or has `escalate`. `escalate` cannot be pinned to the role names: on create neither
//! the API server (k8s.io/kubernetes `pkg/registry/rbac/escalation_check.go`, the name comes
//! from the request path, empty on create) nor v1.5.1's preflight (`rbac.go`,
//! `checkEscalation`, a RequestInfo without a name) passes the object's name, so a pinned
//! `escalate` never matches and an unpinned one would let the ServiceAccount write any role.
//! The ServiceAccount holds the operator's own rules instead, cluster-wide for the operator's
//! ClusterRoles, in the install namespace for its Roles; holding them also allows the bindings
//! to them, so `bind` is needed only for roles the bundle binds but does not carry. What the
//! operator's rules already allow is not asked for again.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::rendered::{self, ExternalRole, RenderedObject};
use super::{OlmV1Error, RegistryV1};

/// Where the installer lives and which ClusterExtension uses it.
#[derive(Clone, Debug)]
pub struct RbacOptions {
    /// The ClusterExtension's `spec.namespace` (the install namespace).
    pub namespace: String,
    /// The ServiceAccount's name.
    pub service_account: String,
    /// The ClusterExtension's `metadata.name` (its finalizers are updated as the account).
    pub extension: String,
}

/// The derived objects, ready to apply: the ServiceAccount, a ClusterRole and its
/// ClusterRoleBinding, a Role and its RoleBinding in the install namespace.
#[derive(Clone, Debug)]
pub struct InstallerRbac {
    /// The objects in apply order.
    pub objects: Vec<Value>,
}

impl InstallerRbac {
    /// The ClusterRole's (and its binding's) name: `<namespace>:<serviceAccount>`, the
    /// account's name being unique only within its namespace.
    pub fn cluster_role_name(options: &RbacOptions) -> String {
        format!("{}:{}", options.namespace, options.service_account)
    }

    /// The Role's (and its binding's) name: the ServiceAccount's.
    pub fn role_name(options: &RbacOptions) -> String {
        options.service_account.clone()
    }

    /// A `v1` `List` of the objects (what `kubectl apply -f` takes as one JSON document).
    pub fn to_list(&self) -> Value {
        json!({"apiVersion": "v1", "kind": "List", "items": self.objects})
    }

    /// The objects as YAML documents, each after a `---` line.
    pub fn to_yaml(&self) -> Result<String, serde_saphyr::ser::Error> {
        let mut text = String::new();
        for object in &self.objects {
            text.push_str("---\n");
            text.push_str(&serde_saphyr::to_string(object)?);
        }
        Ok(text)
    }
}

/// Derives the installer's RBAC for every bundle given (several for an upgrade: the one
/// installed and those it may upgrade to).
pub fn derive(bundles: &[RegistryV1], options: &RbacOptions) -> Result<InstallerRbac, OlmV1Error> {
    let mut objects = BTreeSet::new();
    let mut granted_cluster = Vec::new();
    let mut granted_namespace = Vec::new();
    let mut external = BTreeSet::new();
    for bundle in bundles {
        let rendered = rendered::render(bundle, &options.namespace)?;
        objects.extend(rendered.objects);
        granted_cluster.extend(rendered.cluster_rules);
        granted_namespace.extend(rendered.namespace_rules);
        external.extend(rendered.external_roles);
    }
    let granted_cluster = dedup(granted_cluster);
    let granted_namespace = dedup(granted_namespace);
    // (group, resource) → names, for cluster-scoped and namespaced objects.
    let mut cluster_names: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut namespace_names: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for RenderedObject {
        group,
        resource,
        namespace,
        name,
    } in &objects
    {
        let key = (group.clone(), resource.clone());
        match namespace {
            None => cluster_names.entry(key).or_default().push(name.clone()),
            Some(_) => namespace_names.entry(key).or_default().push(name.clone()),
        }
    }
    // What the operator's own rules already allow is not asked for twice: the account holds
    // those rules anyway (a namespaced object's rule is held in the namespace from either).
    let held_in_namespace: Vec<Value> = granted_cluster
        .iter()
        .chain(&granted_namespace)
        .cloned()
        .collect();
    let mut cluster_rules = Vec::new();
    let mut namespace_rules = Vec::new();
    let mut cluster_collection: BTreeMap<(String, Vec<&str>), BTreeSet<String>> = BTreeMap::new();
    for (scope_names, held, rules) in [
        (&cluster_names, &granted_cluster, &mut cluster_rules),
        (&namespace_names, &held_in_namespace, &mut namespace_rules),
    ] {
        for ((group, resource), names) in scope_names {
            let listing = uncovered(group, resource, &["list", "watch"], None, &granted_cluster);
            if !listing.is_empty() {
                cluster_collection
                    .entry((group.clone(), listing))
                    .or_default()
                    .insert(resource.clone());
            }
            let create = uncovered(group, resource, &["create"], None, held);
            if !create.is_empty() {
                rules.push(rule(group, resource, &create, None));
            }
            let named = uncovered(group, resource, OBJECT_VERBS, Some(names), held);
            if !named.is_empty() {
                rules.push(rule(group, resource, &named, Some(names)));
            }
        }
    }
    // One list/watch rule per group: the content manager watches each resource cluster-wide.
    let mut collection_rules: Vec<Value> = cluster_collection
        .iter()
        .map(|((group, verbs), resources)| {
            json!({"apiGroups": [group], "resources": resources, "verbs": verbs})
        })
        .collect();
    collection_rules.append(&mut cluster_rules);
    let mut cluster_rules = collection_rules;
    cluster_rules.push(json!({
        "apiGroups": ["olm.operatorframework.io"],
        "resources": ["clusterextensions/finalizers"],
        "resourceNames": [options.extension],
        "verbs": ["update"],
    }));
    for ExternalRole {
        kind,
        name,
        namespace,
    } in &external
    {
        let resource = if kind == "Role" {
            "roles"
        } else {
            "clusterroles"
        };
        let bind = rule(
            "rbac.authorization.k8s.io",
            resource,
            &["bind"],
            Some(std::slice::from_ref(name)),
        );
        match namespace {
            Some(_) => namespace_rules.push(bind),
            None => cluster_rules.push(bind),
        }
    }
    cluster_rules.extend(granted_cluster);
    namespace_rules.extend(granted_namespace);

    let account = &options.service_account;
    let namespace = &options.namespace;
    let subject = json!([{"kind": "ServiceAccount", "name": account, "namespace": namespace}]);
    let cluster_role = InstallerRbac::cluster_role_name(options);
    let role = InstallerRbac::role_name(options);
    let objects = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": account, "namespace": namespace}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": cluster_role}, "rules": cluster_rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": cluster_role},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
               "subjects": subject}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": role, "namespace": namespace}, "rules": namespace_rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": role, "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
               "subjects": subject}),
    ];
    Ok(InstallerRbac { objects })
}

/// The verbs on one named object.
const OBJECT_VERBS: &[&str] = &["get", "update", "patch", "delete"];

fn rule(group: &str, resource: &str, verbs: &[&str], names: Option<&[String]>) -> Value {
    let mut rule = json!({"apiGroups": [group], "resources": [resource], "verbs": verbs});
    if let Some(names) = names {
        rule["resourceNames"] = json!(names);
    }
    rule
}

/// The verbs of `verbs` on `group`/`resource` (by `names`, or any name when `None`) that no
/// rule of `held` allows.
fn uncovered<'a>(
    group: &str,
    resource: &str,
    verbs: &[&'a str],
    names: Option<&[String]>,
    held: &[Value],
) -> Vec<&'a str> {
    let lists = |rule: &Value, field: &str, item: &str| {
        rule[field]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x == item || x == "*"))
    };
    verbs
        .iter()
        .copied()
        .filter(|verb| {
            !held.iter().any(|rule| {
                let rule_names: Vec<&str> = rule["resourceNames"]
                    .as_array()
                    .map(|l| l.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let names_allowed = rule_names.is_empty()
                    || names.is_some_and(|n| n.iter().all(|n| rule_names.contains(&n.as_str())));
                lists(rule, "apiGroups", group)
                    && lists(rule, "resources", resource)
                    && lists(rule, "verbs", verb)
                    && names_allowed
            })
        })
        .collect()
}

fn dedup(rules: Vec<Value>) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    rules
        .into_iter()
        .filter(|r| seen.insert(r.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn redis() -> RegistryV1 {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle");
        RegistryV1::read(&dir).expect("the repository's bundle/ reads")
    }

    fn options() -> RbacOptions {
        RbacOptions {
            namespace: "redis-operator".into(),
            service_account: "installer".into(),
            extension: "redis-operator".into(),
        }
    }

    fn rules_of<'a>(rbac: &'a InstallerRbac, kind: &str) -> &'a [Value] {
        rbac.objects
            .iter()
            .find(|o| o["kind"] == kind)
            .and_then(|o| o["rules"].as_array())
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("no {kind} with rules"))
    }

    /// The rule for `resource` whose verbs include `verb`.
    fn find<'a>(rules: &'a [Value], resource: &str, verb: &str) -> Option<&'a Value> {
        rules.iter().find(|r| {
            r["resources"]
                .as_array()
                .is_some_and(|l| l.iter().any(|x| x == resource))
                && r["verbs"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|x| x == verb))
        })
    }

    fn names(rule: &Value) -> Vec<&str> {
        rule["resourceNames"]
            .as_array()
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    #[test]
    fn operator_role_names_are_operator_controllers() {
        // Reference values: Go's json.Encoder over operator-framework/api v0.34.0's
        // StrategyDeploymentPermissions, SHA-224, big.Int.Text(36), cut as
        // ObjectNameForBaseAndSuffix cuts (operator-controller v1.5.1 rukpak/util), run on
        // bundle/manifests/redis-operator.clusterserviceversion.yaml.
        let bundle = redis();
        let rendered = rendered::render(&bundle, "redis-operator").expect("renders");
        let roles: Vec<&str> = rendered
            .objects
            .iter()
            .filter(|o| o.resource == "clusterroles")
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(
            roles,
            [
                "redis-operator.v0.-11wwhzzrepk5tzts7l0aavy9wdjx92086cccfvefx8w4",
                "redis-operator.v0.1-pdts51cut4o198q22n7qpywj35s6hqameu6vc0clqiy",
            ]
        );
    }

    #[test]
    fn redis_bundle_rules_are_pinned_and_complete() {
        let rbac = derive(&[redis()], &options()).expect("derives");
        let kinds: Vec<&str> = rbac
            .objects
            .iter()
            .filter_map(|o| o["kind"].as_str())
            .collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding"
            ]
        );
        let cluster = rules_of(&rbac, "ClusterRole");
        let role = rules_of(&rbac, "Role");
        let crd = find(cluster, "customresourcedefinitions", "update").expect("CRD rule");
        assert_eq!(names(crd), ["redisclusters.cache.example.com"]);
        assert!(find(cluster, "customresourcedefinitions", "create").is_some());
        let deployments = find(role, "deployments", "patch").expect("Deployment rule");
        assert_eq!(names(deployments), ["redis-operator"]);
        // The bundle's two Services and the one OLM makes for the conversion webhook.
        let services = find(role, "services", "delete").expect("Service rule");
        assert_eq!(
            names(services),
            [
                "redis-operator-metrics",
                "redis-operator-service",
                "redis-operator-webhook"
            ]
        );
        let issuers = find(role, "issuers", "get").expect("Issuer rule");
        assert_eq!(
            names(issuers),
            ["redis-operator-service-cert-selfsigned-issuer"]
        );
        let certificates = find(role, "certificates", "get").expect("Certificate rule");
        assert_eq!(names(certificates), ["redis-operator-service-cert"]);
        let accounts = find(role, "serviceaccounts", "update").expect("ServiceAccount rule");
        assert_eq!(names(accounts), ["redis-operator"]);
        let finalizers =
            find(cluster, "clusterextensions/finalizers", "update").expect("finalizers");
        assert_eq!(names(finalizers), ["redis-operator"]);
        // list/watch cluster-wide for every kind made, namespaced ones included.
        for resource in ["deployments", "services", "certificates", "clusterroles"] {
            let rule = find(cluster, resource, "watch").unwrap_or_else(|| panic!("{resource}"));
            assert!(names(rule).is_empty(), "{rule}");
        }
        // The operator's own rules are held (to create its ClusterRole), no escalate or bind.
        assert!(find(cluster, "redisclusters/finalizers", "update").is_some());
        assert!(
            find(cluster, "namespaces", "get").is_some(),
            "the rule OLM adds"
        );
        assert!(
            find(cluster, "leases", "create").is_some(),
            "permissions made cluster-wide"
        );
        for rule in cluster.iter().chain(role) {
            for field in ["verbs", "apiGroups", "resources", "resourceNames"] {
                for item in rule[field].as_array().into_iter().flatten() {
                    assert_ne!(item, "*", "a wildcard in {rule}");
                    assert_ne!(item, "escalate", "{rule}");
                    assert_ne!(item, "bind", "{rule}");
                }
            }
        }
    }

    #[test]
    fn upgrades_cover_the_names_of_both_bundles() {
        let old = redis();
        let mut new = redis();
        new.csv.id.name = "redis-operator.v0.2.0".into();
        let rbac = derive(&[old, new], &options()).expect("derives");
        let cluster = rules_of(&rbac, "ClusterRole");
        let roles = find(cluster, "clusterroles", "delete").expect("ClusterRole rule");
        // The names are cut to 19 characters of `<csv>-<account>` before the hash: the
        // promoted permission's name is the same for both, the cluster permission's is not.
        assert_eq!(
            names(roles),
            [
                "redis-operator.v0.-11wwhzzrepk5tzts7l0aavy9wdjx92086cccfvefx8w4",
                "redis-operator.v0.1-pdts51cut4o198q22n7qpywj35s6hqameu6vc0clqiy",
                "redis-operator.v0.2-pdts51cut4o198q22n7qpywj35s6hqameu6vc0clqiy",
            ]
        );
    }
}
