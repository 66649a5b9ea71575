//! OLM v1's catalog side running as pods on the real node, from the same releases OLM v0
//! installs: cert-manager v1.11.5 and operator-controller v1.11.0's `standard.yaml` (catalogd;
//! see [`e2e::olm_v1_on_node`] for what is left out and why), then:
//!
//! 1. `bundle-tool release` publishes 0.1.0 from a clean copy of the repo to the cluster
//!    registry; `olm/clustercatalog.yaml` on the catalog image turns `Serving` with
//!    `status.urls.base` set; catalogd's mutating webhook (its CA injected by cainjector)
//!    labelled it; and `<base>/api/v1/all`, read through the catalogd Service, is the
//!    released catalog, document for document;
//! 2. releasing 0.2.0 re-pushes the catalog image under the same tag: catalogd's poll finds
//!    the new digest and serves 0.2.0;
//! 3. deprecations written with `bundle-tool catalog deprecate`, in a re-pushed catalog image,
//!    are served as written.
//!
//! operator-controller (ClusterExtension installs, upgrades, its preflight) does not run: its
//! v1.11.0 program cannot be built from the Go module proxy (tests/assets/build-go-assets.sh).

mod olm_release;
mod real;

use std::time::Instant;

use anyhow::{Context as _, ensure};
use e2e::ControlPlane;
use e2e::node::RealNode;
use e2e::olm_v1_on_node::{OLM_V1_NAMESPACE, OlmV1OnNode, condition, olm_v1_resource};
use kube::api::{Api, DynamicObject};
use olm_release::{Checkout, wait_for};
use serde_json::Value;

const CATALOG: &str = "redis-operator-catalog";

struct Cluster {
    client: kube::Client,
    node: &'static RealNode,
    olm: OlmV1OnNode,
}

impl Cluster {
    fn catalogs(&self) -> Api<DynamicObject> {
        Api::all_with(
            self.client.clone(),
            &olm_v1_resource("ClusterCatalog", "clustercatalogs"),
        )
    }

    async fn apply(&self, name: &str) -> anyhow::Result<()> {
        olm_release::apply_olm_file(&self.client, name).await
    }

    fn describe(&self) -> String {
        let mut out = self.olm.describe(self.node);
        if let Ok(output) = self.node.kubectl(&["get", "clustercatalogs", "-o", "yaml"]) {
            out.push_str(&String::from_utf8_lossy(&output.stdout));
            out.push_str(&String::from_utf8_lossy(&output.stderr));
        }
        out
    }

    async fn wait<T, F, Fut>(&self, seconds: u64, what: &str, check: F) -> anyhow::Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
    {
        wait_for(self.node, &|| self.describe(), seconds, what, check).await
    }

    /// The catalog image's digest catalogd last unpacked.
    async fn catalog_digest(&self) -> anyhow::Result<Option<String>> {
        let catalog = self.catalogs().get(CATALOG).await?.data;
        Ok(catalog["status"]["resolvedSource"]["image"]["ref"]
            .as_str()
            .map(str::to_string))
    }

    /// Waits until catalogd serves the catalog image `digest` (its poll found a re-push).
    async fn wait_catalog_serving(&self, digest: &str) -> anyhow::Result<()> {
        self.wait(
            150,
            &format!("catalogd to serve the catalog image {digest}"),
            || async {
                let catalog = self.catalogs().get(CATALOG).await?.data;
                let serving = condition(&catalog, "Serving").is_some_and(|c| c["status"] == "True");
                let resolved = self
                    .catalog_digest()
                    .await?
                    .is_some_and(|r| r.ends_with(digest));
                Ok(
                    (serving && resolved && catalog["status"]["urls"]["base"].is_string())
                        .then_some(()),
                )
            },
        )
        .await
    }

    /// `<base>/api/v1/all` read through the catalogd Service (the apiserver's service proxy).
    fn catalog_all(&self) -> anyhow::Result<String> {
        let path = format!(
            "/api/v1/namespaces/{OLM_V1_NAMESPACE}/services/https:catalogd-service:443/proxy/catalogs/{CATALOG}/api/v1/all"
        );
        let output = self.node.kubectl(&["get", "--raw", &path])?;
        ensure!(
            output.status.success(),
            "GET {path}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(String::from_utf8(output.stdout)?)
    }

    /// `<base>/api/v1/all` as documents, checked equal to the checkout's released catalog;
    /// returns them.
    fn check_served_is_released(&self, checkout: &Checkout) -> anyhow::Result<Vec<String>> {
        let served = documents(&self.catalog_all()?)?;
        let released = documents(&std::fs::read_to_string(
            checkout.root().join("catalog/redis-operator/catalog.json"),
        )?)?;
        ensure!(
            served == released,
            "catalogd's /api/v1/all is not the released catalog:\nserved {served:#?}\nreleased {released:#?}"
        );
        Ok(served)
    }
}

/// The JSON documents of a catalog file or answer, each as a sorted string: a multiset.
fn documents(text: &str) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for document in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        out.push(document?.to_string());
    }
    out.sort();
    Ok(out)
}

#[tokio::test]
async fn catalogd_serves_each_release_of_the_catalog_image() -> anyhow::Result<()> {
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let started = Instant::now();
    let olm = OlmV1OnNode::deploy(plane, node).await?;
    println!(
        "cert-manager and OLM v1's catalogd up as pods: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let cluster = Cluster { client, node, olm };

    // 1. The first release; the ClusterCatalog serves it.
    let checkout = Checkout::new()?;
    let first = checkout.release(node, "0.1.0", "candidate-v0,stable-v0")?;
    let catalog_started = Instant::now();
    cluster.apply("clustercatalog.yaml").await?;
    cluster.wait_catalog_serving(digest_of(&first)?).await?;
    println!(
        "ClusterCatalog applied → Serving: {:.1} s",
        catalog_started.elapsed().as_secs_f64()
    );
    let catalog = cluster.catalogs().get(CATALOG).await?;
    let label = catalog
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("olm.operatorframework.io/metadata.name"));
    ensure!(
        label.map(String::as_str) == Some(CATALOG),
        "catalogd's mutating webhook did not label the ClusterCatalog: {:?}",
        catalog.metadata.labels
    );
    let catalog = catalog.data;
    let base = catalog["status"]["urls"]["base"]
        .as_str()
        .unwrap_or_default();
    ensure!(
        base == format!("https://catalogd-service.{OLM_V1_NAMESPACE}.svc/catalogs/{CATALOG}"),
        "status.urls.base is {base:?}"
    );
    cluster.check_served_is_released(&checkout)?;

    // 2. A release reaches the cluster by catalogd's poll of the same tag.
    let second = checkout.release(node, "0.2.0", "candidate-v0")?;
    cluster.wait_catalog_serving(digest_of(&second)?).await?;
    let served = cluster.check_served_is_released(&checkout)?;
    ensure!(
        served
            .iter()
            .any(|d| d.contains("\"name\":\"redis-operator.v0.2.0\"")),
        "0.2.0 is not served after the poll"
    );

    // 3. Deprecations from `bundle-tool catalog deprecate`, in a re-pushed catalog image.
    let message = "0.1.0 is withdrawn: upgrade to 0.2.0";
    checkout.bundle_tool(&[
        "catalog",
        "deprecate",
        "catalog",
        "--package",
        "redis-operator",
        "--bundle",
        "redis-operator.v0.1.0",
        "--message",
        message,
    ])?;
    let digest = checkout.push_catalog(node)?;
    cluster.wait_catalog_serving(&digest).await?;
    let served = cluster.check_served_is_released(&checkout)?;
    ensure!(
        served
            .iter()
            .any(|d| d.contains("\"schema\":\"olm.deprecations\"") && d.contains(message)),
        "the deprecation is not served"
    );
    Ok(())
}

/// The catalog image digest in a `release -o json` summary.
fn digest_of(summary: &Value) -> anyhow::Result<&str> {
    summary["catalog"]["digest"]
        .as_str()
        .with_context(|| format!("no catalog digest in {summary}"))
}
