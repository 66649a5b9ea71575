//! OLM v1 (operator-controller and catalogd v1.5.1) installing the Redis operator from our
//! catalog image and from an opm-based image of the same catalog, five rounds each,
//! alternating: `olm/clustercatalog.yaml` on the image until `Serving`, catalogd's memory
//! then (its pod's cgroup: the process and the page cache of what it unpacked), and from
//! applying `olm/clusterextension.yaml` (with the installer RBAC `release` derived) to
//! `Installed=True` and to the operator's Deployment available; then both are deleted.
//! Prints each round and the medians.
//!
//! Run: `cargo test --workspace --locked --target x86_64-unknown-linux-gnu --bench
//! olm_v1_install` (as root, like the real-node tests; the README test command builds it).

#[path = "../tests/olm_release/mod.rs"]
mod olm_release;
#[path = "../tests/real/mod.rs"]
mod real;

use std::time::{Duration, Instant};

use anyhow::Context as _;
use e2e::ControlPlane;
use e2e::olm_v1_on_node::{
    OLM_V1_NAMESPACE, OlmV1OnNode, OlmV1Release, condition, olm_v1_resource,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use olm_release::{CATALOG_IMAGE, Checkout, push_workload_images, repo};
use serde_json::{Value, json};

const ROUNDS: usize = 5;
const NAMESPACE: &str = "redis-operator";
const CATALOG: &str = "redis-operator-catalog";
const EXTENSION: &str = "redis-operator";
/// Where the opm-based image of the same catalog goes.
const OPM_CATALOG_IMAGE: &str = "quay.io/example/redis-operator-catalog-opm:latest";

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    values[values.len() / 2]
}

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench())
}

/// Polls `check` every 100 ms for up to `seconds`: `e2e::eventually`'s 200 ms would be a
/// tenth of the 0.4–2 s this bench measures.
async fn until<F, Fut>(seconds: u64, what: &str, check: F) -> anyhow::Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if check().await? {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "{what}: not within {seconds} s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn read_object(path: &str) -> anyhow::Result<Value> {
    let path = repo().join(path);
    serde_saphyr::from_str(&std::fs::read_to_string(&path)?)
        .with_context(|| path.display().to_string())
}

/// One round's numbers for one image.
struct Round {
    serving: f64,
    catalogd_bytes: u64,
    installed: f64,
    available: f64,
}

async fn bench() -> anyhow::Result<()> {
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let _olm = OlmV1OnNode::deploy_release(plane, node, OlmV1Release::InstallerV1_5).await?;
    push_workload_images(node).await?;
    let checkout = Checkout::new()?;
    checkout.release(node, "0.1.0", "candidate-v0,stable-v0")?;
    let opm_image = e2e::olm_on_node::opm_catalog_image(
        &e2e::assets::Assets::locate()?,
        &checkout.root().join("catalog"),
    )?;
    node.push_as(OPM_CATALOG_IMAGE, &opm_image).await?;
    node.namespace(&client, NAMESPACE).await?;
    let rbac = std::fs::read_to_string(checkout.root().join("olm/clusterextension-rbac.yaml"))?;
    e2e::olm::apply_yaml(&client, &rbac).await?;

    let catalogs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &olm_v1_resource("ClusterCatalog", "clustercatalogs"),
    );
    let extensions: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &olm_v1_resource("ClusterExtension", "clusterextensions"),
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let olm_pods: Api<Pod> = Api::namespaced(client.clone(), OLM_V1_NAMESPACE);
    let apply = PatchParams::apply("olm-v1-install-bench").force();
    let catalog_object = read_object("olm/clustercatalog.yaml")?;
    let extension_object = read_object("olm/clusterextension.yaml")?;

    let mut results: Vec<(&str, Vec<Round>)> = vec![("ours", Vec::new()), ("opm", Vec::new())];
    for round in 1..=ROUNDS {
        for (label, rounds) in results.iter_mut() {
            let image = if *label == "ours" {
                CATALOG_IMAGE
            } else {
                OPM_CATALOG_IMAGE
            };
            let mut catalog = catalog_object.clone();
            catalog["spec"]["source"]["image"] = json!({"ref": image});
            let started = Instant::now();
            // Applied through its own API, not by discovery: the extension deleted the round
            // before takes its CRD with it, and a discovery walking the groups while that
            // group goes away fails with a bare 404.
            catalogs
                .patch(CATALOG, &apply, &Patch::Apply(&catalog))
                .await
                .context("applying the ClusterCatalog")?;
            until(180, "the ClusterCatalog Serving", || async {
                let catalog = catalogs
                    .get(CATALOG)
                    .await
                    .context("the ClusterCatalog")?
                    .data;
                Ok(condition(&catalog, "Serving").is_some_and(|c| c["status"] == "True"))
            })
            .await?;
            let serving = started.elapsed().as_secs_f64();
            let catalogd = olm_pods
                .list(&ListParams::default())
                .await?
                .into_iter()
                .find(|pod| {
                    pod.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("catalogd-controller-manager-"))
                })
                .context("no catalogd pod")?;
            let catalogd_bytes =
                node.pod_memory(catalogd.metadata.uid.as_deref().context("a pod uid")?)?;

            let started = Instant::now();
            extensions
                .patch(EXTENSION, &apply, &Patch::Apply(&extension_object))
                .await
                .context("applying the ClusterExtension")?;
            until(300, "the ClusterExtension Installed", || async {
                let extension = extensions
                    .get(EXTENSION)
                    .await
                    .context("the ClusterExtension")?
                    .data;
                Ok(condition(&extension, "Installed").is_some_and(|c| c["status"] == "True"))
            })
            .await?;
            let installed = started.elapsed().as_secs_f64();
            until(300, "the operator's Deployment available", || async {
                Ok(deployments
                    .get_opt("redis-operator")
                    .await
                    .context("the operator's Deployment")?
                    .and_then(|d| d.status)
                    .and_then(|s| s.available_replicas)
                    .unwrap_or(0)
                    >= 1)
            })
            .await?;
            let available = started.elapsed().as_secs_f64();
            println!(
                "round {round} {label}: Serving {serving:.1} s, catalogd {:.1} MiB, Installed {installed:.1} s, Deployment available {available:.1} s",
                catalogd_bytes as f64 / 1048576.0
            );
            rounds.push(Round {
                serving,
                catalogd_bytes,
                installed,
                available,
            });

            extensions
                .delete(EXTENSION, &DeleteParams::default())
                .await?;
            until(180, "the ClusterExtension gone", || async {
                Ok(extensions
                    .get_opt(EXTENSION)
                    .await
                    .context("the deleted ClusterExtension")?
                    .is_none()
                    && deployments
                        .get_opt("redis-operator")
                        .await
                        .context("the deleted extension's Deployment")?
                        .is_none())
            })
            .await?;
            catalogs
                .delete(CATALOG, &DeleteParams::default())
                .await
                .context("deleting the ClusterCatalog")?;
            until(180, "the ClusterCatalog gone", || async {
                Ok(catalogs
                    .get_opt(CATALOG)
                    .await
                    .context("the deleted ClusterCatalog")?
                    .is_none())
            })
            .await?;
        }
    }
    println!(
        "\nmedians of {ROUNDS} (catalog image → ClusterCatalog Serving; catalogd memory then; ClusterExtension applied → Installed, → Deployment available):"
    );
    for (label, rounds) in &results {
        let pick = |f: fn(&Round) -> f64| median(rounds.iter().map(f).collect());
        println!(
            "{label}: Serving {:.1} s, catalogd {:.1} MiB, Installed {:.1} s, available {:.1} s",
            pick(|r| r.serving),
            pick(|r| r.catalogd_bytes as f64 / 1048576.0),
            pick(|r| r.installed),
            pick(|r| r.available)
        );
    }
    Ok(())
}
