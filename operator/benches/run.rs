//! `bundle-tool run` on the real node with OLM v0.46.0, five rounds: the command's start to
//! CSV Succeeded for an install of the Redis bundle 0.1.0, and for `run --upgrade` to 0.2.0,
//! each round ending with `run cleanup`; then five rounds of `operator-sdk run bundle`
//! (v1.42.3) of the same bundle, each ending with `operator-sdk cleanup`. Prints each round,
//! the medians and their ratio.
//!
//! Run: `cargo test --workspace --locked --target x86_64-unknown-linux-gnu --bench run` (as
//! root, like the real-node tests; the README test command builds it).

#[path = "../tests/olm_release/mod.rs"]
mod olm_release;
#[path = "../tests/real/mod.rs"]
mod real;
#[path = "../tests/run_support/mod.rs"]
mod run_support;

use std::time::Instant;

use e2e::ControlPlane;
use e2e::olm_on_node::OlmOnNode;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use olm_release::{Checkout, push_workload_images, repo};
use run_support::operator_sdk_run::SdkSetup;

use run_support::NAMESPACE;
const ROUNDS: usize = 5;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    values[values.len() / 2]
}

/// Runs bundle-tool; the wall seconds, failing unless it exits 0.
fn timed(kubeconfig: &str, args: &[&str]) -> anyhow::Result<f64> {
    let started = Instant::now();
    let output = run_support::command(kubeconfig, args)?.output()?;
    let seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        output.status.success(),
        "bundle-tool {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(seconds)
}

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench())
}

async fn bench() -> anyhow::Result<()> {
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    node.namespace(&client, NAMESPACE).await?;
    let _olm = OlmOnNode::deploy(plane, node).await?;
    push_workload_images(node).await?;
    let kubeconfig = plane.kubeconfig_path().display().to_string();
    let registry = format!("{}/run", node.registry());
    let bundle = repo().join("bundle").display().to_string();
    let checkout = Checkout::new()?;
    let next = run_support::next_bundle(&checkout)?;
    let next = next.display().to_string();
    let (mut installs, mut upgrades) = (Vec::new(), Vec::new());
    for round in 1..=ROUNDS {
        let install = timed(
            &kubeconfig,
            &["run", &bundle, "--registry", &registry, "--plain-http"],
        )?;
        let upgrade = timed(
            &kubeconfig,
            &[
                "run",
                &next,
                "--upgrade",
                "--registry",
                &registry,
                "--plain-http",
            ],
        )?;
        timed(&kubeconfig, &["run", "cleanup", "redis-operator"])?;
        println!("round {round}: run {install:.1} s, run --upgrade {upgrade:.1} s");
        installs.push(install);
        upgrades.push(upgrade);
    }
    let (ours_install, ours_upgrade) = (median(installs), median(upgrades));
    println!(
        "median of {ROUNDS}: run (start to CSV Succeeded) {ours_install:.1} s, run --upgrade {ours_upgrade:.1} s"
    );

    // The anchor on the same cluster and bundle: operator-sdk run bundle, then its cleanup.
    let sdk = SdkSetup::prepare(node, &repo().join("bundle")).await?;
    let mut sdk_installs = Vec::new();
    for round in 1..=ROUNDS {
        // A quiet namespace first: operator-sdk's cleanup leaves the registry pod to the
        // garbage collector, and a run bundle before the pod is gone fails ("object is being
        // deleted: pods … already exists").
        let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
        e2e::eventually(
            std::time::Duration::from_secs(120),
            "no pods left in the namespace",
            || async {
                Ok(pods
                    .list(&ListParams::default())
                    .await?
                    .items
                    .is_empty()
                    .then_some(()))
            },
        )
        .await?;
        let (output, seconds) = sdk.run_bundle(&kubeconfig, NAMESPACE)?;
        anyhow::ensure!(
            output.status.success(),
            "operator-sdk run bundle failed:\n{}",
            run_support::text(&output)
        );
        let (output, _) = sdk.cleanup(&kubeconfig, NAMESPACE, "redis-operator")?;
        anyhow::ensure!(
            output.status.success(),
            "operator-sdk cleanup failed:\n{}",
            run_support::text(&output)
        );
        println!("round {round}: operator-sdk run bundle {seconds:.1} s");
        sdk_installs.push(seconds);
    }
    let sdk_install = median(sdk_installs);
    println!(
        "median of {ROUNDS}: operator-sdk run bundle {sdk_install:.1} s; run is {:.1}x faster",
        sdk_install / ours_install
    );
    Ok(())
}
