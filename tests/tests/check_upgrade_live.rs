//! `bundle-tool check-upgrade --kubeconfig` on the real control plane: a version the cluster
//! stored objects at before the storage version moved is in the live CRD's
//! `status.storedVersions` but in no bundle file. Without the cluster the upgrade that drops
//! it looks safe; with `--kubeconfig` it is refused, as operator-controller's preflight and
//! OLM v0 refuse it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use e2e::ControlPlane;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const NAME: &str = "gadgets.upgrade.example.com";

fn version(name: &str, storage: bool) -> Value {
    json!({"name": name, "served": true, "storage": storage,
           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
}

fn crd(versions: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {"group": "upgrade.example.com", "scope": "Namespaced",
                 "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
                 "versions": versions}
    })
}

fn write_bundle(dir: &Path, name: &str, replaces: Option<&str>, crd: &Value) {
    std::fs::create_dir_all(dir.join("manifests")).expect("mkdir");
    let mut csv = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name},
        "spec": {"version": name.rsplit_once(".v").expect("versioned name").1}
    });
    if let Some(replaces) = replaces {
        csv["spec"]["replaces"] = json!(replaces);
    }
    std::fs::write(dir.join("manifests/csv.yaml"), csv.to_string()).expect("csv");
    std::fs::write(dir.join("manifests/crd.yaml"), crd.to_string()).expect("crd");
}

fn check_upgrade(
    old: &Path,
    new: &Path,
    kubeconfig: Option<&Path>,
) -> (Option<i32>, Value, String) {
    let mut command = Command::new(e2e::bundle_tool_binary());
    command
        .arg("check-upgrade")
        .arg(old)
        .arg(new)
        .args(["-o", "json"]);
    if let Some(kubeconfig) = kubeconfig {
        command.arg("--kubeconfig").arg(kubeconfig);
    }
    let output = command.output().expect("run bundle-tool");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (output.status.code(), report, stderr)
}

fn rules(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["rule"].as_str().expect("rule").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_versions_come_from_the_cluster() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let client = plane.client().await?;
    let api: Api<CustomResourceDefinition> = Api::all(client);
    // Created with v1alpha1 as the storage version, then moved to v1: the API server keeps
    // v1alpha1 in status.storedVersions.
    let first: CustomResourceDefinition =
        serde_json::from_value(crd(vec![version("v1alpha1", true), version("v1", false)]))?;
    api.create(&PostParams::default(), &first).await?;
    let moved = json!({"spec": {"versions": [version("v1alpha1", false), version("v1", true)]}});
    api.patch(NAME, &PatchParams::default(), &Patch::Merge(&moved))
        .await?;
    let stored = e2e::eventually(Duration::from_secs(30), "both stored versions", || async {
        let live = api.get(NAME).await?;
        let stored = live
            .status
            .and_then(|s| s.stored_versions)
            .unwrap_or_default();
        Ok((stored.len() == 2).then_some(stored))
    })
    .await?;
    assert_eq!(stored, ["v1alpha1", "v1"]);

    let dir = tempfile::tempdir()?;
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));
    // OLD's file is what the cluster has now; NEW drops v1alpha1.
    write_bundle(
        &old,
        "gadget.v1.0.0",
        None,
        &crd(vec![version("v1alpha1", false), version("v1", true)]),
    );
    write_bundle(
        &new,
        "gadget.v1.1.0",
        Some("gadget.v1.0.0"),
        &crd(vec![version("v1", true)]),
    );

    let (code, report, _) = check_upgrade(&old, &new, None);
    assert_eq!(
        (code, rules(&report)),
        (Some(0), vec![]),
        "from the files alone: {report:#}"
    );

    let (code, report, stderr) = check_upgrade(&old, &new, Some(plane.kubeconfig_path()));
    assert_eq!(code, Some(1), "{report:#} {stderr}");
    assert_eq!(rules(&report), ["storedVersionRemoval"]);
    assert_eq!(
        report["findings"][0]["message"],
        "stored versions removed : [v1alpha1]"
    );
    assert!(
        stderr.contains(&format!(
            "{NAME}: stored versions from the cluster: v1alpha1, v1"
        )),
        "{stderr}"
    );

    // A CRD the cluster does not have: the files decide, and the note says so.
    api.delete(NAME, &DeleteParams::default()).await?;
    let (code, _, stderr) = e2e::eventually(Duration::from_secs(30), "the CRD gone", || async {
        let result = check_upgrade(&old, &new, Some(plane.kubeconfig_path()));
        Ok(result.2.contains("not on the cluster").then_some(result))
    })
    .await?;
    assert_eq!(code, Some(0), "{stderr}");
    Ok(())
}

const WIDGETS: &str = "widgets.upgrade.example.com";

fn widget_crd(size: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": WIDGETS},
        "spec": {"group": "upgrade.example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "properties": {"size": size}}}}}}]}
    })
}

/// OLM v0 validates every existing custom resource against NEW's schema before it updates a
/// CRD. On the real API server: a Widget with `size: 12` and one with `size: 3`; NEW caps
/// `size` at 10. Only the first is reported, with OLM v0's message; a NEW capping at 20
/// refuses neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn existing_objects_are_validated_against_the_new_schema() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let client = plane.client().await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let old_crd = widget_crd(json!({"type": "integer"}));
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(old_crd.clone())?,
    )
    .await?;
    let resource = kube::api::ApiResource {
        group: "upgrade.example.com".into(),
        version: "v1".into(),
        api_version: "upgrade.example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widgets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &resource);
    for (name, size) in [("big", 12), ("small", 3)] {
        let object: kube::api::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "upgrade.example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"size": size}}))?;
        e2e::eventually(Duration::from_secs(30), "the Widget created", || async {
            Ok(widgets.create(&PostParams::default(), &object).await.ok())
        })
        .await?;
    }

    let dir = tempfile::tempdir()?;
    let (old, capped, relaxed) = (
        dir.path().join("old"),
        dir.path().join("capped"),
        dir.path().join("relaxed"),
    );
    write_bundle(&old, "widget.v1.0.0", None, &old_crd);
    write_bundle(
        &capped,
        "widget.v1.1.0",
        Some("widget.v1.0.0"),
        &widget_crd(json!({"type": "integer", "maximum": 10})),
    );
    write_bundle(
        &relaxed,
        "widget.v1.1.0",
        Some("widget.v1.0.0"),
        &widget_crd(json!({"type": "integer", "maximum": 20})),
    );

    let existing = |report: &Value| -> Vec<Value> {
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["rule"] == "existingObjectInvalid")
            .cloned()
            .collect()
    };
    // From the files alone, no object is looked at.
    let (_, report, _) = check_upgrade(&old, &capped, None);
    assert!(existing(&report).is_empty(), "{report:#}");

    let (code, report, stderr) = check_upgrade(&old, &capped, Some(plane.kubeconfig_path()));
    assert_eq!(code, Some(1), "{report:#} {stderr}");
    let found = existing(&report);
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["level"], "error");
    assert_eq!(found[0]["subject"], WIDGETS);
    assert_eq!(found[0]["version"], "v1");
    assert_eq!(found[0]["path"], "default/big: spec.size");
    assert_eq!(found[0]["old"], "12");
    assert_eq!(
        found[0]["message"],
        "error validating upgrade.example.com/v1, Kind=Widget \"default/big\": updated validation \
         is too restrictive: [].spec.size: Invalid value: 12: spec.size in body should be less \
         than or equal to 10"
    );
    assert!(
        stderr.contains(&format!(
            "{WIDGETS}: 2 existing widgets at v1 validated against widget.v1.1.0's schema, 1 refused"
        )),
        "{stderr}"
    );

    let (_, report, stderr) = check_upgrade(&old, &relaxed, Some(plane.kubeconfig_path()));
    assert!(existing(&report).is_empty(), "{report:#}");
    assert!(stderr.contains("0 refused"), "{stderr}");

    crds.delete(WIDGETS, &DeleteParams::default()).await?;
    Ok(())
}
