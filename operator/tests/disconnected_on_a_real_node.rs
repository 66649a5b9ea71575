//! A disconnected install on the real node, OLM v0.46.0 as pods: the operator's image is
//! published on `ghcr.io`, which the node reaches only through a mirror that serves digests
//! (containerd `capabilities = ["pull"]`, as a disconnected cluster's mirror configuration
//! does; see [`e2e::node::DIGEST_ONLY_MIRRORED`]), and the mirror holds it by digest only,
//! its tags removed as `oc-mirror` leaves a mirror.
//!
//! 1. The release job resolves images through the same mirror, by its `registries.conf`
//!    (`--registries-conf`), while the tags are still there: one release with
//!    `--pin-digests`, one without, each into a catalog of its own; then the tags go.
//! 2. The release without pinning: OLM installs the CSV, and its operator pod cannot pull
//!    `ghcr.io/…:0.1.0`: the kubelet's pull error names the tag, and the CSV does not
//!    succeed. It is removed.
//! 3. The pinned release, its catalog image and bundle image named by digest as well: the
//!    CSV Succeeded, the operator's pod runs the digest the mirror holds.
//!
//! So pinning is what makes the install work; everything else (OLM's own images, the
//! catalog and bundle images in the cluster registry) is the same for both.

mod olm_release;
mod real;

use anyhow::{Context as _, ensure};
use e2e::ControlPlane;
use e2e::node::{DIGEST_ONLY_MIRRORED, DigestOnlyMirror, RealNode};
use e2e::olm_on_node::{OLM_NAMESPACE, OlmOnNode, olm_resource};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use olm_release::{Checkout, apply_olm_file, push_workload_images, wait_for};
use serde_json::{Value, json};

/// The namespace `olm/operatorgroup.yaml` names.
const NAMESPACE: &str = "redis-operator";
const CSV: &str = "redis-operator.v0.1.0";
const SUBSCRIPTION: &str = "redis-operator";
/// The operator image as the disconnected release publishes it.
const OPERATOR_IMAGE: &str = "ghcr.io/example/redis-operator:0.1.0";

#[tokio::test]
async fn a_digest_pinned_release_installs_from_a_digest_only_mirror_and_a_tagged_one_does_not()
-> anyhow::Result<()> {
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let olm = OlmOnNode::deploy(plane, node).await?;
    let describe = || olm.describe(node);
    // The images the CSV names besides the operator's (Redis, the exporter), on the cluster
    // registry's mirrors of quay.io and docker.io, where pinning resolves them.
    push_workload_images(node).await?;

    // 1. The operator image on ghcr.io, behind the mirror; both releases while tags resolve.
    let mirror = DigestOnlyMirror::start().await?;
    let operator_by_digest = mirror
        .push(OPERATOR_IMAGE, &olm_release::operator_image()?)
        .await?;
    let tagged = release(node, &mirror, "tagged", false)?;
    let pinned = release(node, &mirror, "pinned", true)?;
    let repository = OPERATOR_IMAGE
        .strip_prefix(&format!("{DIGEST_ONLY_MIRRORED}/"))
        .and_then(|path| path.split_once(':'))
        .map(|(repository, _)| repository)
        .context("the operator image has a registry and a tag")?;
    mirror.drop_tags(repository)?;

    node.namespace(&client, NAMESPACE).await?;
    apply_olm_file(&client, "operatorgroup.yaml").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let csvs = dynamic(&client, "ClusterServiceVersion", NAMESPACE);

    // 2. Without pinning: the CSV's Deployment names the tag, which resolves nowhere.
    subscribe(&client, "disconnected-tagged", &tagged.catalog).await?;
    let pull_error = wait_for(
        node,
        &describe,
        300,
        "the tagged operator's pull error",
        || {
            let pods = pods.clone();
            async move {
                for pod in pods.list(&ListParams::default()).await? {
                    for status in pod
                        .status
                        .and_then(|s| s.container_statuses)
                        .unwrap_or_default()
                    {
                        let waiting = status.state.and_then(|s| s.waiting);
                        if let Some(waiting) = waiting
                            && matches!(
                                waiting.reason.as_deref(),
                                Some("ErrImagePull" | "ImagePullBackOff")
                            )
                            && waiting
                                .message
                                .as_deref()
                                .unwrap_or("")
                                .contains(OPERATOR_IMAGE)
                        {
                            return Ok(Some(waiting.message.unwrap_or_default()));
                        }
                    }
                }
                Ok(None)
            }
        },
    )
    .await?;
    println!("the tagged release's operator pod: {pull_error}");
    let phase = csv_phase(&csvs).await?;
    ensure!(
        phase.as_deref() != Some("Succeeded"),
        "the tagged release's CSV succeeded without its image: {phase:?}"
    );
    unsubscribe(&client, node, &describe, "disconnected-tagged").await?;

    // 3. Pinned: the same version from the other catalog, every image by digest.
    subscribe(&client, "disconnected-pinned", &pinned.catalog).await?;
    wait_for(node, &describe, 300, "the pinned CSV Succeeded", || {
        let csvs = csvs.clone();
        async move { Ok((csv_phase(&csvs).await?.as_deref() == Some("Succeeded")).then_some(())) }
    })
    .await?;
    let installed = csvs.get(CSV).await?;
    let image = &installed.data["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
        ["containers"][0]["image"];
    ensure!(
        image == operator_by_digest.as_str(),
        "the pinned CSV's operator image is {image}, not {operator_by_digest}"
    );
    let digest = operator_by_digest
        .split_once('@')
        .map(|(_, digest)| digest)
        .context("a digest reference")?;
    let running: Vec<String> = pods
        .list(&ListParams::default())
        .await?
        .into_iter()
        .flat_map(|pod| pod.status.and_then(|s| s.container_statuses))
        .flatten()
        .filter(|status| status.ready)
        .map(|status| status.image_id)
        .collect();
    ensure!(
        running.iter().any(|id| id.ends_with(digest)),
        "no ready operator container runs {digest}: {running:?}"
    );
    println!("the pinned release's operator runs {operator_by_digest}");
    Ok(())
}

/// What a release of the disconnected test published.
struct Released {
    /// The catalog image by digest, as the admin's CatalogSource names it.
    catalog: String,
}

/// Releases 0.1.0 from a clean checkout whose operator image is [`OPERATOR_IMAGE`], the
/// bundle and catalog to the cluster registry under `name`, resolving images through the
/// mirror (`--registries-conf`); with `--pin-digests` when `pin`.
fn release(
    node: &RealNode,
    mirror: &DigestOnlyMirror,
    name: &str,
    pin: bool,
) -> anyhow::Result<Released> {
    let checkout = Checkout::new()?;
    let manifests = checkout.root().join("operator/config/manifests.yaml");
    let text = std::fs::read_to_string(&manifests)?;
    ensure!(
        text.contains(olm_release::OPERATOR_IMAGE),
        "operator/config/manifests.yaml no longer names {}",
        olm_release::OPERATOR_IMAGE
    );
    std::fs::write(
        &manifests,
        text.replace(olm_release::OPERATOR_IMAGE, OPERATOR_IMAGE),
    )?;
    // The release job's view of the public registries: ghcr.io through the digest-only
    // mirror, quay.io and docker.io through the cluster registry (both plain HTTP).
    let registries_conf = checkout.root().join("registries.conf");
    let registry = node.registry();
    std::fs::write(
        &registries_conf,
        format!(
            "[[registry]]\nprefix = \"{DIGEST_ONLY_MIRRORED}\"\nlocation = \"{}\"\ninsecure = true\n\n\
             [[registry]]\nprefix = \"quay.io\"\nlocation = \"{registry}\"\ninsecure = true\n\n\
             [[registry]]\nprefix = \"docker.io\"\nlocation = \"{registry}\"\ninsecure = true\n",
            mirror.host()
        ),
    )?;
    let catalog_repository = format!("{registry}/example/disconnected-{name}-catalog");
    let bundle_image = format!("--bundle-image={registry}/example/disconnected-{name}-bundle");
    let catalog_image = format!("--catalog-image={catalog_repository}:latest");
    let conf = registries_conf.display().to_string();
    let mut args = vec![
        "release",
        "--config",
        "bundle-tool.yaml",
        "--version",
        "0.1.0",
        "--channels",
        "candidate-v0,stable-v0",
        &bundle_image,
        &catalog_image,
        "--registries-conf",
        &conf,
        "--push",
        "--plain-http",
        "-o",
        "json",
    ];
    if pin {
        args.push("--pin-digests");
    }
    let summary: Value = serde_json::from_str(&checkout.bundle_tool(&args)?)?;
    let field = |pointer: &str| {
        summary
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
            .with_context(|| format!("no {pointer} in the release summary: {summary}"))
    };
    let bundle = format!(
        "{registry}/example/disconnected-{name}-bundle@{}",
        field("/bundle/digest")?
    );
    // What the catalog records for the bundle: its digest when pinned, the tag otherwise.
    let catalog_json =
        std::fs::read_to_string(checkout.root().join("catalog/redis-operator/catalog.json"))?;
    ensure!(
        catalog_json.contains(&bundle) == pin,
        "the {name} release's catalog {} the bundle by digest ({bundle})",
        if pin { "does not name" } else { "names" }
    );
    Ok(Released {
        catalog: format!("{catalog_repository}@{}", field("/catalog/digest")?),
    })
}

fn dynamic(client: &kube::Client, kind: &str, namespace: &str) -> Api<DynamicObject> {
    let plural = format!("{}s", kind.to_lowercase());
    let resource = olm_resource("v1alpha1", kind, &plural);
    Api::namespaced_with(client.clone(), namespace, &resource)
}

async fn csv_phase(csvs: &Api<DynamicObject>) -> anyhow::Result<Option<String>> {
    Ok(csvs
        .get_opt(CSV)
        .await?
        .and_then(|csv| csv.data["status"]["phase"].as_str().map(str::to_string)))
}

/// A CatalogSource `source` on `catalog` (by digest: nothing to poll), and a Subscription
/// to the package's default channel from it.
async fn subscribe(client: &kube::Client, source: &str, catalog: &str) -> anyhow::Result<()> {
    let objects = [
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": source, "namespace": OLM_NAMESPACE},
            "spec": {
                "sourceType": "grpc",
                "image": catalog,
                "grpcPodConfig": {"securityContextConfig": "restricted"},
            },
        }),
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": SUBSCRIPTION, "namespace": NAMESPACE},
            "spec": {
                "name": "redis-operator",
                "channel": "stable-v0",
                "source": source,
                "sourceNamespace": OLM_NAMESPACE,
                "installPlanApproval": "Automatic",
            },
        }),
    ];
    for object in objects {
        e2e::olm::apply_yaml(client, &serde_json::to_string(&object)?).await?;
    }
    Ok(())
}

/// Deletes the Subscription, the CSV and the CatalogSource `source`, and waits until they
/// and the operator's pods are gone.
async fn unsubscribe(
    client: &kube::Client,
    node: &RealNode,
    describe: &dyn Fn() -> String,
    source: &str,
) -> anyhow::Result<()> {
    let delete = DeleteParams::foreground();
    let subscriptions = dynamic(client, "Subscription", NAMESPACE);
    let csvs = dynamic(client, "ClusterServiceVersion", NAMESPACE);
    let sources = dynamic(client, "CatalogSource", OLM_NAMESPACE);
    subscriptions.delete(SUBSCRIPTION, &delete).await?;
    csvs.delete(CSV, &delete).await?;
    sources.delete(source, &delete).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    wait_for(node, describe, 120, "the tagged install removed", || {
        let (pods, subscriptions, csvs, sources) = (
            pods.clone(),
            subscriptions.clone(),
            csvs.clone(),
            sources.clone(),
        );
        async move {
            let gone = pods.list(&ListParams::default()).await?.items.is_empty()
                && subscriptions.get_opt(SUBSCRIPTION).await?.is_none()
                && csvs.get_opt(CSV).await?.is_none()
                && sources.get_opt(source).await?.is_none();
            Ok(gone.then_some(()))
        }
    })
    .await
}
