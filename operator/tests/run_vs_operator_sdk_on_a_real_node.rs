//! `bundle-tool run` and the command it stands beside, `operator-sdk run bundle` (v1.42.3),
//! on one cluster with OLM v0.46.0 as pods, the Redis bundle of the repository:
//!
//! 1. `bundle-tool run` of the bundle image installs it: CSV `Succeeded`; `run cleanup`
//!    removes it;
//! 2. `operator-sdk run bundle` of the same image (with the index and decompression images it
//!    needs, see `run_support/operator_sdk_run.rs`) reaches the same CSV, in the same phase;
//!    `operator-sdk cleanup` removes it.
//!
//! Each command's wall time is printed; the timing comparison, five rounds each, is
//! `operator/benches/run.rs`.

mod olm_release;
mod real;
mod run_support;

use anyhow::ensure;
use e2e::ControlPlane;
use e2e::olm_on_node::OlmOnNode;
use olm_release::{push_workload_images, repo};
use run_support::operator_sdk_run::SdkSetup;
use run_support::{NAMESPACE, csv_phase};

const CSV: &str = "redis-operator.v0.1.0";

#[tokio::test]
async fn run_and_operator_sdk_run_bundle_reach_the_same_csv_phase() -> anyhow::Result<()> {
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    node.namespace(&client, NAMESPACE).await?;
    let olm = OlmOnNode::deploy(plane, node).await?;
    push_workload_images(node).await?;
    let kubeconfig = plane.kubeconfig_path().display().to_string();
    let bundle = repo().join("bundle");

    // The bundle as an image: in the HTTPS registry operator-sdk needs, and the same image
    // (same digest) in the cluster registry, where run also pushes its catalog over plain
    // HTTP (--plain-http is for every registry of a command).
    let sdk = SdkSetup::prepare(node, &bundle).await?;
    let image = node
        .push_image("run/redis-operator-bundle:v0.1.0", &sdk.bundle_image)
        .await?;

    // 1. Ours, given the bundle image.
    let registry = format!("{}/run", node.registry());
    let started = std::time::Instant::now();
    let output = run_support::bundle_tool(
        &kubeconfig,
        &["run", &image, "--registry", &registry, "--plain-http"],
    )?;
    let ours = started.elapsed().as_secs_f64();
    ensure!(
        output.status.success(),
        "bundle-tool run failed:\n{}\n{}",
        run_support::text(&output),
        olm.describe(node)
    );
    let our_phase = csv_phase(&client, CSV).await?;
    ensure!(
        our_phase.as_deref() == Some("Succeeded"),
        "bundle-tool run returned with the CSV {our_phase:?}"
    );
    let output = run_support::bundle_tool(&kubeconfig, &["run", "cleanup", "redis-operator"])?;
    ensure!(
        output.status.success(),
        "bundle-tool run cleanup failed:\n{}",
        run_support::text(&output)
    );
    ensure!(
        csv_phase(&client, CSV).await?.is_none(),
        "the CSV is left after run cleanup"
    );

    // 2. The anchor, on the same bundle image.
    let (output, theirs) = sdk.run_bundle(&kubeconfig, NAMESPACE)?;
    ensure!(
        output.status.success(),
        "operator-sdk run bundle {} failed:\n{}\n{}",
        sdk.bundle,
        run_support::text(&output),
        olm.describe(node)
    );
    let their_phase = csv_phase(&client, CSV).await?;
    ensure!(
        their_phase == our_phase,
        "operator-sdk run bundle left the CSV {their_phase:?}, bundle-tool run {our_phase:?}"
    );
    println!(
        "to CSV {}: bundle-tool run {ours:.1} s, operator-sdk run bundle {theirs:.1} s",
        our_phase.unwrap_or_default()
    );
    let (output, _) = sdk.cleanup(&kubeconfig, NAMESPACE, "redis-operator")?;
    ensure!(
        output.status.success(),
        "operator-sdk cleanup failed:\n{}",
        run_support::text(&output)
    );
    ensure!(
        csv_phase(&client, CSV).await?.is_none(),
        "the CSV is left after operator-sdk cleanup"
    );
    Ok(())
}
