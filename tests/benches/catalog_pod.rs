//! A CatalogSource's registry pod on the real node, our catalog image against one built around
//! opm (the way opm's generated Dockerfile builds it), same catalog, in the same run: the time
//! from creating the CatalogSource (spec.image, `restricted`) to OLM reporting it READY, and
//! the pod's memory once READY (its cgroup: processes and the page cache they brought in).
//! OLM v0.46.0 runs as pods (tests/src/olm_on_node.rs). Catalogs: the Redis operator's, and
//! the 39 corpus catalogs merged with it.
//!
//! ```sh
//! RUSTFLAGS="-C target-feature=+crt-static" cargo build --release -p catalog-server --target x86_64-unknown-linux-gnu
//! cargo bench -p e2e --bench catalog_pod
//! ```
//!
//! `E2E_CATALOG_SERVER` picks another static server (default: the release build above; a static
//! bundle-tool serves the same way, for comparing with catalog images built before the split).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use e2e::ControlPlane;
use e2e::bench_run::median;
use e2e::olm_on_node::{OLM_NAMESPACE, OlmOnNode, olm_resource};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;

const ROUNDS: usize = 3;

struct Sample {
    ready: Duration,
    memory: u64,
    /// What the memory is made of, from `memory.stat`.
    parts: String,
}

/// Creates a CatalogSource for `image`, waits for READY, reads the registry pod's memory,
/// deletes it and waits until its pod is gone.
async fn run_once(
    client: &kube::Client,
    node: &e2e::RealNode,
    name: &str,
    image: &str,
) -> anyhow::Result<Sample> {
    let sources: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        OLM_NAMESPACE,
        &olm_resource("v1alpha1", "CatalogSource", "catalogsources"),
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), OLM_NAMESPACE);
    let source = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": OLM_NAMESPACE},
        "spec": {"sourceType": "grpc", "image": image,
                 "grpcPodConfig": {"securityContextConfig": "restricted"}},
    });
    let started = Instant::now();
    sources
        .patch(name, &PatchParams::apply("bench"), &Patch::Apply(&source))
        .await?;
    let ready = e2e::eventually(Duration::from_secs(300), "READY", || async {
        node.check_running()?;
        let source = sources.get(name).await?;
        Ok(
            (source.data["status"]["connectionState"]["lastObservedState"] == "READY")
                .then(|| started.elapsed()),
        )
    })
    .await?;
    // Settled: the first ListPackages/ListBundles from catalog-operator and packageserver.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let selector = format!("olm.catalogSource={name}");
    let pod = pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no registry pod for {name}"))?;
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let memory = node.pod_memory(uid)?;
    let stat = node.pod_memory_stat(uid)?;
    let parts = [
        "total_rss",
        "total_cache",
        "total_shmem",
        "total_mapped_file",
    ]
    .iter()
    .map(|name| {
        let mib = stat.get(*name).copied().unwrap_or_default() as f64 / (1 << 20) as f64;
        format!("{} {mib:.1}", name.trim_start_matches("total_"))
    })
    .collect::<Vec<_>>()
    .join(", ");
    sources.delete(name, &DeleteParams::default()).await?;
    e2e::eventually(
        Duration::from_secs(120),
        "the registry pod gone",
        || async {
            let left = pods.list(&ListParams::default().labels(&selector)).await?;
            Ok(left.items.is_empty().then_some(()))
        },
    )
    .await?;
    Ok(Sample {
        ready,
        memory,
        parts,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = std::env::var_os("E2E_CATALOG_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/x86_64-unknown-linux-gnu/release/catalog-server")
        });
    anyhow::ensure!(
        server.is_file(),
        "{} is missing: RUSTFLAGS=\"-C target-feature=+crt-static\" cargo build --release -p catalog-server --target x86_64-unknown-linux-gnu",
        server.display()
    );
    let assets = e2e::assets::Assets::locate()?;
    let plane = ControlPlane::shared().await?;
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    OlmOnNode::deploy(&plane, node).await?;

    let redis = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog");
    let merged = tempfile::tempdir()?;
    e2e::corpus::merge_catalogs(merged.path());
    e2e::copy_dir(
        &redis.join("redis-operator"),
        &merged.path().join("redis-operator"),
    )?;
    println!("catalog\timage\tREADY s (median of {ROUNDS})\tpod memory MiB (median)");
    for (label, catalog) in [("redis", redis.as_path()), ("corpus-merged", merged.path())] {
        let ours = bundle_tool::image::build_runnable_catalog_image(catalog, &server)?;
        anyhow::ensure!(ours.static_server, "{} is not static", server.display());
        let theirs = e2e::olm_on_node::opm_catalog_image(&assets, catalog)?;
        let ours = node
            .push_as(
                &format!("quay.io/example/bench-{label}-bundle-tool:latest"),
                &ours.image,
            )
            .await?;
        let theirs = node
            .push_as(
                &format!("quay.io/example/bench-{label}-opm:latest"),
                &theirs,
            )
            .await?;
        let mut results = Vec::new();
        for (kind, image) in [("bundle-tool", &ours), ("opm", &theirs)] {
            results.push((kind, image, Vec::new()));
        }
        // Alternated rounds, so that a slow moment of the machine hits both.
        for round in 0..ROUNDS {
            for (kind, image, samples) in &mut results {
                let name = format!("bench-{label}-{kind}-{round}");
                samples.push(run_once(&client, node, &name, image).await?);
            }
        }
        let mut medians = Vec::new();
        for (kind, _, samples) in &results {
            let ready = median(samples.iter().map(|s| s.ready.as_secs_f64()).collect());
            let memory = median(
                samples
                    .iter()
                    .map(|s| s.memory as f64 / (1 << 20) as f64)
                    .collect(),
            );
            // Every sample too: READY moves in steps of OLM's probe and reconnect periods.
            let each: Vec<String> = samples
                .iter()
                .map(|s| {
                    format!(
                        "{:.1} s/{:.1} MiB [{}]",
                        s.ready.as_secs_f64(),
                        s.memory as f64 / (1 << 20) as f64,
                        s.parts
                    )
                })
                .collect();
            println!(
                "{label}\t{kind}\t{ready:.2}\t{memory:.1}\t({})",
                each.join(", ")
            );
            medians.push((ready, memory));
        }
        println!(
            "{label}\tratio opm/bundle-tool\tREADY {:.2}x\tmemory {:.2}x",
            medians[1].0 / medians[0].0,
            medians[1].1 / medians[0].1
        );
    }
    Ok(())
}
