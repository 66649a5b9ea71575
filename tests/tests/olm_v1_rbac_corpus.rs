//! `bundle-tool olm-v1 rbac` on corpus bundles of the shapes the Redis bundle does not have:
//! one installed for all namespaces with validating and mutating webhooks and bundled
//! ClusterRoles (codeflare-operator 1.16.0), one that supports only its own namespace
//! (analytics-operator 0.1.1, whose own rules allow anything on RBAC objects). The operator's
//! ClusterRole names are reference values
//! computed with Go's json.Encoder over operator-framework/api v0.34.0's
//! StrategyDeploymentPermissions, SHA-224 and big.Int.Text(36), as operator-controller v1.5.1
//! names them (rukpak/render/render.go, rukpak/util/hash.go).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn corpus_bundle(package: &str, version: &str) -> PathBuf {
    let found = e2e::corpus::bundles()
        .into_iter()
        .find(|(p, v, _)| p == package && v == version);
    found
        .unwrap_or_else(|| panic!("corpus bundle {package} {version} is missing"))
        .2
}

fn rbac(bundle: &PathBuf) -> Vec<Value> {
    let output = Command::new(e2e::bundle_tool_binary())
        .args(["olm-v1", "rbac"])
        .arg(bundle)
        .args(["-n", "ops", "--service-account", "installer", "-o", "json"])
        .output()
        .expect("bundle-tool runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let list: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(list["kind"], "List");
    list["items"].as_array().expect("items").clone()
}

fn rules<'a>(items: &'a [Value], kind: &str) -> &'a [Value] {
    items
        .iter()
        .find(|o| o["kind"] == kind)
        .and_then(|o| o["rules"].as_array())
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("no {kind}"))
}

/// The names pinned for `resource` with `verb`.
fn pinned<'a>(rules: &'a [Value], resource: &str, verb: &str) -> Vec<&'a str> {
    let rule = rules
        .iter()
        .find(|r| {
            r["resourceNames"].is_array()
                && r["resources"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|x| x == resource))
                && r["verbs"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|x| x == verb))
        })
        .unwrap_or_else(|| panic!("no pinned rule for {verb} {resource}"));
    rule["resourceNames"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn all_namespaces_bundle_with_webhooks_and_bundled_cluster_roles() {
    let items = rbac(&corpus_bundle("codeflare-operator", "1.16.0"));
    let cluster = rules(&items, "ClusterRole");
    let role = rules(&items, "Role");
    assert_eq!(
        pinned(cluster, "clusterroles", "update"),
        [
            "codeflare-operator-11vxv4467q2y869z17vvbc4ommaqr4kvsizgo5o2i9a8",
            "codeflare-operator-appwrapper-editor-role",
            "codeflare-operator-viewer-role",
            "codeflare-operator.-9kcshcvu37gzxpm63faoculytkffybwfj1cq1spi5tv",
        ]
    );
    assert_eq!(
        pinned(cluster, "mutatingwebhookconfigurations", "patch"),
        ["mappwrapper.kb.io", "mraycluster.ray.openshift.ai"]
    );
    assert_eq!(
        pinned(cluster, "validatingwebhookconfigurations", "patch"),
        ["vappwrapper.kb.io", "vraycluster.ray.openshift.ai"]
    );
    assert_eq!(
        pinned(role, "certificates", "get"),
        ["codeflare-operator-manager-service-cert"]
    );
    // The operator's own rules allow every verb on Services and Secrets, and the account
    // holds them: nothing names the webhook Service or the bundled Secret.
    assert!(
        role.iter().all(|r| !r.to_string().contains("\"services\"")),
        "{role:?}"
    );
    // Every namespaced object lives in the install namespace: the Role is there.
    let role_object = items.iter().find(|o| o["kind"] == "Role").expect("Role");
    assert_eq!(role_object["metadata"]["namespace"], "ops");
}

#[test]
fn own_namespace_bundle_keeps_its_permissions_in_a_role() {
    let items = rbac(&corpus_bundle("analytics-operator", "0.1.1"));
    let cluster = rules(&items, "ClusterRole");
    let role = rules(&items, "Role");
    // Its permissions stay in the install namespace (a Role there), and the account holds
    // them there; its Deployment is pinned in the Role.
    assert!(
        role.iter().any(
            |r| r["resources"] == serde_json::json!(["leases"]) && r["resourceNames"].is_null()
        )
    );
    assert_eq!(
        pinned(role, "deployments", "update"),
        ["analytics-operator-controller-manager"]
    );
    assert_eq!(
        pinned(cluster, "customresourcedefinitions", "update"),
        [
            "anomalydata.observability-analytics.redhat.com",
            "anomalyengines.observability-analytics.redhat.com",
        ]
    );
    // The operator may do anything with RBAC objects; holding that rule (the only way to
    // grant it without escalate) already covers its Roles and bindings: none is named.
    assert!(cluster.iter().any(|r| r["apiGroups"]
        == serde_json::json!(["rbac.authorization.k8s.io"])
        && r["resources"] == serde_json::json!(["*"])));
    assert!(
        cluster
            .iter()
            .chain(role)
            .all(|r| !r.to_string().contains("analytics-operator-1")),
        "a role name is pinned though the operator's rules cover it"
    );
    // No webhooks: no cert-manager objects to manage.
    let all = cluster
        .iter()
        .chain(role)
        .map(Value::to_string)
        .collect::<String>();
    assert!(!all.contains("cert-manager.io"), "{all}");
    // The finalizer rule names the package, the default extension name.
    assert_eq!(
        pinned(cluster, "clusterextensions/finalizers", "update"),
        ["analytics-operator"]
    );
}

#[test]
fn a_missing_bundle_is_an_error_naming_it() {
    let output = Command::new(e2e::bundle_tool_binary())
        .args(["olm-v1", "rbac", "no/such/bundle", "-n", "ops"])
        .args(["--service-account", "installer"])
        .output()
        .expect("bundle-tool runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no/such/bundle"), "{stderr}");
}
