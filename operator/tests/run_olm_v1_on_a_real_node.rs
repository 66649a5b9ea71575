//! `bundle-tool run` on the real node with OLM v1 (cert-manager, operator-controller and
//! catalogd v1.5.1 as pods, no OLM v0), in sequence on one cluster:
//!
//! 0. with an installer ClusterRole already there that lacks one rule (creating CRDs), `run`
//!    stops at operator-controller's permission preflight and names the missing rule;
//! 1. `run bundle/` (`--olm auto` finds OLM v1): the bundle and catalog images pushed, a
//!    ClusterCatalog Serving, the installer ServiceAccount with the RBAC `olm-v1 rbac`
//!    derives, a ClusterExtension `Installed=True` at 0.1.0; the operator reconciles the
//!    sample RedisCluster with real Redis;
//! 2. a second `run` changes nothing and says so; `run --upgrade` to a generated 0.2.0 (no
//!    `replaces`): the catalog adds the edge, the installer's rules become those of both
//!    bundles, the ClusterExtension is Installed at 0.2.0 and the operator reconciles again;
//! 3. `run cleanup`: every object `run` made (listed before) is gone, the ClusterExtension
//!    first, and with it the operator's Deployment.

mod olm_release;
mod real;
mod run_support;

use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, ensure};
use e2e::ControlPlane;
use e2e::node::RealNode;
use e2e::olm_v1_on_node::{OlmV1OnNode, OlmV1Release};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use olm_release::repo;
use serde_json::Value;

use run_support::{NAMESPACE, bundle_tool};

/// Every object carrying `run`'s labels, as `Kind/name`.
async fn made_by_run(client: &kube::Client) -> anyhow::Result<Vec<String>> {
    run_support::labelled(
        client,
        &[
            (
                "olm.operatorframework.io",
                "v1",
                "ClusterCatalog",
                "clustercatalogs",
                false,
            ),
            (
                "olm.operatorframework.io",
                "v1",
                "ClusterExtension",
                "clusterextensions",
                false,
            ),
            ("", "v1", "ServiceAccount", "serviceaccounts", true),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                "clusterroles",
                false,
            ),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRoleBinding",
                "clusterrolebindings",
                false,
            ),
            ("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "RoleBinding",
                "rolebindings",
                true,
            ),
        ],
    )
    .await
}

#[tokio::test]
async fn run_installs_and_cleans_up_through_olm_v1() -> anyhow::Result<()> {
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node: &'static RealNode = plane.real_node().await?;
    let client = plane.client().await?;
    let started = Instant::now();
    let olm = OlmV1OnNode::deploy_release(plane, node, OlmV1Release::InstallerV1_5).await?;
    println!("OLM v1 up: {:.1} s", started.elapsed().as_secs_f64());
    olm_release::push_workload_images(node).await?;
    node.namespace(&client, NAMESPACE).await?;
    let describe = || olm.describe(node);
    let kubeconfig = plane.kubeconfig_path().display().to_string();
    let registry = format!("{}/run", node.registry());
    let bundle = repo().join("bundle").display().to_string();
    let install = [
        "run",
        bundle.as_str(),
        "--registry",
        &registry,
        "--plain-http",
        "--timeout",
        "300s",
    ];

    // 0. An installer ClusterRole made beforehand without the right to create CRDs: `run`
    // leaves an existing object as it is, and operator-controller's preflight refuses.
    let derived = Command::new(e2e::bundle_tool_binary())
        .args([
            "olm-v1",
            "rbac",
            bundle.as_str(),
            "-n",
            NAMESPACE,
            "--service-account",
            "redis-operator-run-installer",
            "--extension",
            "redis-operator-run",
            "-o",
            "json",
        ])
        .output()?;
    ensure!(derived.status.success(), "olm-v1 rbac failed");
    let derived: Value = serde_json::from_slice(&derived.stdout)?;
    let mut role = derived["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|o| o["kind"] == "ClusterRole")
        .context("no ClusterRole derived")?
        .clone();
    let rules = role["rules"].as_array_mut().context("no rules")?;
    let before_rules = rules.len();
    rules.retain(|rule| {
        !(rule["resources"] == serde_json::json!(["customresourcedefinitions"])
            && rule["verbs"] == serde_json::json!(["create"]))
    });
    ensure!(
        rules.len() + 1 == before_rules,
        "no CRD create rule to take out"
    );
    let cluster_roles: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
        )),
    );
    let role_name = role["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    cluster_roles
        .create(&PostParams::default(), &serde_json::from_value(role)?)
        .await?;
    let output = bundle_tool(&kubeconfig, &install)?;
    let said = run_support::text(&output);
    ensure!(
        !output.status.success(),
        "run succeeded without the CRD rule:\n{said}"
    );
    for words in [
        "waiting for the ClusterExtension to be Installed",
        "ClusterExtension redis-operator-run",
        "pre-authorization failed",
        "Resources:[customresourcedefinitions]",
        "Verbs:[create]",
        "bundle-tool olm-v1 rbac derives them",
    ] {
        ensure!(
            said.contains(words),
            "the refusal does not name {words:?}:\n{said}"
        );
    }
    let output = bundle_tool(&kubeconfig, &["run", "cleanup", "redis-operator"])?;
    ensure!(output.status.success(), "cleanup after the refusal failed");
    cluster_roles
        .delete(&role_name, &kube::api::DeleteParams::default())
        .await?;
    let left = made_by_run(&client).await?;
    ensure!(
        left.is_empty(),
        "left after the refusal's cleanup: {left:?}"
    );

    // 1. Install.
    let output = bundle_tool(&kubeconfig, &install)?;
    let said = run_support::text(&output);
    ensure!(
        output.status.success(),
        "run failed:\n{said}\n{}",
        describe()
    );
    run_support::said_each(
        &said,
        &[
            "the bundle image",
            "created ClusterCatalog redis-operator-run-catalog",
            "ready ClusterCatalog redis-operator-run-catalog: Serving",
            "created ServiceAccount redis-operator/redis-operator-run-installer",
            "created ClusterRole ",
            "created ClusterExtension redis-operator-run",
            "installed ClusterExtension redis-operator-run: Installed=True at redis-operator.v0.1.0",
        ],
    )?;
    olm_release::check_operator_reconciles_real_redis(node, &client, &describe).await?;

    // 2. The same again.
    let mut again_args = install.to_vec();
    again_args.extend(["-o", "json"]);
    let output = bundle_tool(&kubeconfig, &again_args)?;
    ensure!(output.status.success(), "the second run failed");
    let again: Value = serde_json::from_slice(&output.stdout)?;
    ensure!(
        again["changed"] == false,
        "the second run changed something: {again:#}"
    );

    // The upgrade.
    let checkout = olm_release::Checkout::new()?;
    let next = run_support::next_bundle(&checkout)?;
    let next = next.display().to_string();
    let output = bundle_tool(
        &kubeconfig,
        &[
            "run",
            &next,
            "--upgrade",
            "--registry",
            &registry,
            "--plain-http",
            "--timeout",
            "300s",
        ],
    )?;
    let said = run_support::text(&output);
    ensure!(
        output.status.success(),
        "run --upgrade failed:\n{said}\n{}",
        describe()
    );
    run_support::said_each(
        &said,
        &[
            "the catalog's channel entry adds the edge redis-operator.v0.1.0 -> redis-operator.v0.2.0",
            "updated ClusterCatalog redis-operator-run-catalog",
            "updated ClusterRole redis-operator:redis-operator-run-installer: the rules of both bundles",
            "installed ClusterExtension redis-operator-run: Installed=True at redis-operator.v0.2.0",
        ],
    )?;
    olm_release::check_operator_reconciles_real_redis(node, &client, &describe).await?;

    // 3. Cleanup.
    let before = made_by_run(&client).await?;
    for kind in [
        "ClusterCatalog/",
        "ClusterExtension/",
        "ServiceAccount/",
        "ClusterRole/",
        "ClusterRoleBinding/",
        "Role/",
        "RoleBinding/",
    ] {
        ensure!(
            before.iter().any(|o| o.starts_with(kind)),
            "no {kind} made by run: {before:?}"
        );
    }
    let output = bundle_tool(
        &kubeconfig,
        &["run", "cleanup", "redis-operator", "-o", "json"],
    )?;
    ensure!(output.status.success(), "run cleanup failed");
    let report: Value = serde_json::from_slice(&output.stdout)?;
    let deleted: Vec<String> = report["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["action"] == "deleted")
        .filter_map(|s| s["object"].as_str())
        .map(|o| {
            let (kind, rest) = o.split_once(' ').unwrap_or((o, ""));
            format!("{kind}/{}", rest.rsplit('/').next().unwrap_or(rest))
        })
        .collect();
    for object in &before {
        ensure!(
            deleted.contains(object),
            "cleanup did not list {object}: {report:#}"
        );
    }
    let left = made_by_run(&client).await?;
    ensure!(left.is_empty(), "left after cleanup: {left:?}");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    ensure!(
        deployments.get_opt("redis-operator").await?.is_none(),
        "the operator's Deployment survived the ClusterExtension's deletion"
    );
    Ok(())
}
