//! `bundle-tool run` on the real node with OLM v0.46.0 as pods, in sequence on one cluster:
//!
//! 1. before OLM is installed, `run` fails naming the missing OLM CRD;
//! 2. with OLM: an install mode the bundle does not support (OwnNamespace) is refused and
//!    nothing is applied; a registry the node cannot pull from (a private one, pushed to
//!    with credentials the node lacks) is named with the kubelet's pull message;
//! 3. `run bundle/` installs the Redis operator: CSV Succeeded, the operator reconciles the
//!    sample RedisCluster with real Redis; a second `run` changes nothing and says so;
//! 4. `run --upgrade` to a 0.2.0 bundle that names no `replaces`: the catalog adds the edge
//!    and says so, the CSV moves, the operator rolls and reconciles a change of the sample;
//! 5. `run cleanup`: every object `run` made (listed before, so the check cannot pass on an
//!    empty list) is gone, an unrelated Subscription in the namespace survives, and the
//!    OperatorGroup `run` made is kept while that Subscription is there, deleted after; the
//!    kept CRD no longer converts through the deleted operator's webhook;
//! 6. `run --server-image`: the catalog in ConfigMaps mounted into a server pod running the
//!    0.1.0 catalog image already in the registry, nothing pushed (the registry's repositories
//!    and tags unchanged). The install succeeds, a second run changes nothing, and `--upgrade`
//!    to 0.2.0 succeeds, which it can only if the server reads the mounted ConfigMaps (the
//!    image's own catalog has no 0.2.0). `run cleanup` removes the ConfigMaps with the rest;
//! 7. an operator image that does not exist, and an operator container that exits 1: `run`
//!    exits non-zero within its timeout naming the pod, the reason, and (for the crash) the
//!    exit code and the container's last log line.

mod olm_release;
mod real;
mod run_support;

use std::path::Path;
use std::process::Output;
use std::time::Instant;

use anyhow::{Context as _, ensure};
use e2e::ControlPlane;
use e2e::node::RealNode;
use e2e::olm_on_node::{OlmOnNode, olm_resource};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use olm_release::{Checkout, push_workload_images, repo};
use serde_json::{Value, json};

use run_support::{NAMESPACE, csv_phase};

const PACKAGE: &str = "redis-operator";

struct Run {
    kubeconfig: String,
    registry: String,
}

impl Run {
    /// `bundle-tool run ARGS… -n NAMESPACE --kubeconfig …` with the static server binary in
    /// the catalog image; prints what it said and how long it took.
    fn bundle_tool(&self, args: &[&str]) -> anyhow::Result<Output> {
        run_support::bundle_tool(&self.kubeconfig, args)
    }

    /// [`bundle_tool`](Self::bundle_tool) with `stdin` on standard input.
    fn bundle_tool_with_stdin(&self, args: &[&str], stdin: &str) -> anyhow::Result<Output> {
        use std::io::Write as _;
        let mut child = run_support::command(&self.kubeconfig, args)?
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        child
            .stdin
            .take()
            .context("no stdin")?
            .write_all(stdin.as_bytes())?;
        let output = child.wait_with_output()?;
        println!(
            "bundle-tool {} ({}):\n{}",
            args.join(" "),
            output.status,
            run_support::text(&output)
        );
        Ok(output)
    }

    /// `run BUNDLE --registry … --plain-http` and more `args`.
    fn install(&self, bundle: &Path, args: &[&str]) -> anyhow::Result<Output> {
        let bundle = bundle.display().to_string();
        let mut all = vec!["run", &bundle, "--registry", &self.registry, "--plain-http"];
        all.extend_from_slice(args);
        self.bundle_tool(&all)
    }

    /// `run BUNDLE --server-image IMAGE` and more `args`: the catalog in ConfigMaps.
    fn install_from_config_maps(
        &self,
        bundle: &Path,
        image: &str,
        args: &[&str],
    ) -> anyhow::Result<Output> {
        let bundle = bundle.display().to_string();
        let mut all = vec!["run", &bundle, "--server-image", image];
        all.extend_from_slice(args);
        self.bundle_tool(&all)
    }
}

/// The repositories of the node's registry and the tags of each, as the registry lists them.
async fn registry_contents(registry: &str) -> anyhow::Result<Vec<String>> {
    let (status, body) = e2e::http_get_at(registry, "/v2/_catalog").await?;
    ensure!(status == 200, "GET /v2/_catalog: {status} {body}");
    let catalog: Value = serde_json::from_str(&body).context("/v2/_catalog")?;
    let mut contents = Vec::new();
    for repository in catalog["repositories"].as_array().into_iter().flatten() {
        let repository = repository.as_str().unwrap_or_default();
        let (status, body) =
            e2e::http_get_at(registry, &format!("/v2/{repository}/tags/list")).await?;
        ensure!(status == 200, "GET tags of {repository}: {status} {body}");
        let tags: Value = serde_json::from_str(&body).context("tags/list")?;
        let mut tags: Vec<String> = tags["tags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect();
        tags.sort();
        contents.push(format!("{repository}:{}", tags.join(",")));
    }
    ensure!(!contents.is_empty(), "the registry lists no repository");
    Ok(contents)
}

/// The ConfigMaps `run` made, and the ConfigMaps its catalog server pod mounts at `/configs`,
/// by name.
async fn config_maps_and_mounts(
    client: &kube::Client,
) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use kube::api::ListParams;
    let selector = ListParams::default().labels(run_support::SELECTOR);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let mut made: Vec<String> = maps
        .list(&selector)
        .await?
        .items
        .into_iter()
        .filter_map(|m| m.metadata.name)
        .collect();
    made.sort();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let mut mounted = Vec::new();
    for pod in pods.list(&selector).await?.items {
        // The previous catalog's server may still be going away after an upgrade.
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let spec = pod.spec.unwrap_or_default();
        // The volume mounted where the server reads its catalog (the pod has others, such
        // as the service account's, which projects the kube-root-ca.crt ConfigMap).
        let catalog_volume = spec
            .containers
            .iter()
            .flat_map(|c| c.volume_mounts.iter().flatten())
            .find(|m| m.mount_path == "/configs")
            .map(|m| m.name.clone())
            .with_context(|| {
                format!(
                    "the server pod {:?} mounts nothing at /configs",
                    pod.metadata.name
                )
            })?;
        for volume in spec.volumes.into_iter().flatten() {
            if volume.name != catalog_volume {
                continue;
            }
            for source in volume
                .projected
                .and_then(|p| p.sources)
                .into_iter()
                .flatten()
            {
                if let Some(map) = source.config_map {
                    mounted.push(map.name);
                }
            }
        }
    }
    mounted.sort();
    Ok((made, mounted))
}

/// Fails unless the command failed and its output names every one of `words`.
fn failed_naming(output: &Output, words: &[&str]) -> anyhow::Result<()> {
    let said = run_support::text(output);
    ensure!(!output.status.success(), "it succeeded:\n{said}");
    for word in words {
        ensure!(
            said.contains(word),
            "its message does not name {word:?}:\n{said}"
        );
    }
    Ok(())
}

/// Every object of the namespace carrying `run`'s labels, as `Kind/name`.
async fn made_by_run(client: &kube::Client) -> anyhow::Result<Vec<String>> {
    run_support::labelled(
        client,
        &[
            ("", "v1", "Pod", "pods", true),
            ("", "v1", "Service", "services", true),
            ("", "v1", "ConfigMap", "configmaps", true),
            (
                "operators.coreos.com",
                "v1alpha1",
                "CatalogSource",
                "catalogsources",
                true,
            ),
            (
                "operators.coreos.com",
                "v1",
                "OperatorGroup",
                "operatorgroups",
                true,
            ),
            (
                "operators.coreos.com",
                "v1alpha1",
                "Subscription",
                "subscriptions",
                true,
            ),
        ],
    )
    .await
}

/// A copy of the repository's bundle with its CSV changed by `edit`.
fn edited_bundle(dir: &Path, edit: impl Fn(&mut Value)) -> anyhow::Result<()> {
    e2e::copy_dir(&repo().join("bundle"), dir)?;
    let path = dir.join("manifests/redis-operator.clusterserviceversion.yaml");
    let mut csv: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path)?)
        .with_context(|| path.display().to_string())?;
    edit(&mut csv);
    // JSON is YAML: the renderer reads it as the manifest it is.
    std::fs::write(&path, serde_json::to_string_pretty(&csv)?)?;
    Ok(())
}

fn operator_container(csv: &mut Value) -> &mut Value {
    &mut csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"]
        [0]
}

/// `run cleanup` as JSON; fails unless it exits 0.
fn cleanup(run: &Run) -> anyhow::Result<Value> {
    let output = run.bundle_tool(&["run", "cleanup", PACKAGE, "-o", "json"])?;
    ensure!(
        output.status.success(),
        "run cleanup failed:\n{}",
        run_support::text(&output)
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}

fn deleted(report: &Value) -> Vec<String> {
    report["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["action"] == "deleted")
        .filter_map(|s| s["object"].as_str())
        .map(|object| {
            // `Kind namespace/name` → `Kind/name`.
            let (kind, rest) = object.split_once(' ').unwrap_or((object, ""));
            format!("{kind}/{}", rest.rsplit('/').next().unwrap_or(rest))
        })
        .collect()
}

#[tokio::test]
async fn run_installs_upgrades_cleans_up_and_says_why_it_is_stuck() -> anyhow::Result<()> {
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node: &'static RealNode = plane.real_node().await?;
    let client = plane.client().await?;
    node.namespace(&client, NAMESPACE).await?;
    let run = Run {
        kubeconfig: plane.kubeconfig_path().display().to_string(),
        registry: format!("{}/run", node.registry()),
    };
    let bundle = repo().join("bundle");

    // 1. No OLM yet.
    let output = run.install(&bundle, &["--timeout", "30s"])?;
    failed_naming(
        &output,
        &[
            "OLM is not installed",
            "catalogsources.operators.coreos.com",
        ],
    )?;

    let started = Instant::now();
    let olm = OlmOnNode::deploy(plane, node).await?;
    println!("OLM up: {:.1} s", started.elapsed().as_secs_f64());
    push_workload_images(node).await?;
    let describe = || olm.describe(node);

    // 2. Refused before anything is applied.
    let output = run.install(&bundle, &["--install-mode", "OwnNamespace"])?;
    failed_naming(
        &output,
        &[
            "redis-operator.v0.1.0 does not support install mode OwnNamespace",
            "AllNamespaces",
            "nothing was applied",
        ],
    )?;
    let applied = made_by_run(&client).await?;
    ensure!(applied.is_empty(), "a refused run applied {applied:?}");

    // A registry the node cannot pull from: a private one (htpasswd) that `run` pushes to
    // with credentials the node does not have.
    let private = e2e::OciRegistry::start(e2e::RegistryAuth::Htpasswd {
        username: "dev".into(),
        password: "s3cret".into(),
    })
    .await?;
    let output = run.bundle_tool_with_stdin(
        &[
            "run",
            &bundle.display().to_string(),
            "--registry",
            &format!("{}/run", private.host()),
            "--plain-http",
            "--username",
            "dev",
            "--password-stdin",
            "--timeout",
            "120s",
        ],
        "s3cret\n",
    )?;
    failed_naming(
        &output,
        &[
            "waiting for the catalog server pod to be Ready",
            "Pod redis-operator/redis-operator-run-catalog-",
            &format!(
                "cannot pull its image {}/run/redis-operator-run-catalog@sha256:",
                private.host()
            ),
        ],
    )?;
    let said = run_support::text(&output);
    ensure!(
        said.contains("ErrImagePull") || said.contains("ImagePullBackOff"),
        "the kubelet's pull reason is not named:\n{said}"
    );
    let report = cleanup(&run)?;
    let removed = deleted(&report);
    ensure!(
        removed.iter().any(|o| o.starts_with("Pod/"))
            && removed.iter().any(|o| o.starts_with("Service/")),
        "cleanup did not remove the unpullable server: {report:#}"
    );
    ensure!(
        made_by_run(&client).await?.is_empty(),
        "left after cleanup: {:?}",
        made_by_run(&client).await?
    );

    // 3. Install, then the same again.
    let output = run.install(&bundle, &["--timeout", "300s"])?;
    ensure!(
        output.status.success(),
        "run failed:\n{}\n{}",
        run_support::text(&output),
        describe()
    );
    let said = run_support::text(&output);
    run_support::said_each(
        &said,
        &[
            "ready Pod redis-operator/redis-operator-run-catalog-",
            "created CatalogSource redis-operator/redis-operator-run-catalog",
            "created OperatorGroup redis-operator/bundle-tool-run: AllNamespaces",
            "created Subscription redis-operator/redis-operator-run",
            "approved InstallPlan redis-operator/",
            "succeeded ClusterServiceVersion redis-operator/redis-operator.v0.1.0",
        ],
    )?;
    // The server was Ready before the CatalogSource was created.
    let ready = said.find("ready Pod").context("no ready line")?;
    let source = said
        .find("created CatalogSource")
        .context("no CatalogSource line")?;
    ensure!(
        ready < source,
        "the CatalogSource came before the server was Ready:\n{said}"
    );
    ensure!(
        csv_phase(&client, "redis-operator.v0.1.0")
            .await?
            .as_deref()
            == Some("Succeeded"),
        "the CSV is not Succeeded after run"
    );
    olm_release::check_operator_reconciles_real_redis(node, &client, &describe).await?;

    let output = run.install(&bundle, &["-o", "json"])?;
    ensure!(
        output.status.success(),
        "the second run failed:\n{}",
        run_support::text(&output)
    );
    let again: Value = serde_json::from_slice(&output.stdout)?;
    ensure!(
        again["changed"] == false,
        "the second run changed something: {again:#}"
    );
    ensure!(
        again["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["detail"]
                .as_str()
                .is_some_and(|d| d.contains("nothing changed"))),
        "the second run does not say nothing changed: {again:#}"
    );

    // 4. Upgrade to 0.2.0, whose CSV names no replaces.
    let checkout = Checkout::new()?;
    let next = run_support::next_bundle(&checkout)?;
    let output = run.install(&next, &["--upgrade", "--timeout", "300s"])?;
    ensure!(
        output.status.success(),
        "run --upgrade failed:\n{}\n{}",
        run_support::text(&output),
        describe()
    );
    let said = run_support::text(&output);
    run_support::said_each(
        &said,
        &[
            "the catalog's channel entry adds the edge redis-operator.v0.1.0 -> redis-operator.v0.2.0",
            "updated CatalogSource redis-operator/redis-operator-run-catalog",
            "deleted Pod redis-operator/redis-operator-run-catalog-",
            "approved InstallPlan",
            "succeeded ClusterServiceVersion redis-operator/redis-operator.v0.2.0",
        ],
    )?;
    olm_release::check_operator_reconciles_real_redis(node, &client, &describe).await?;

    // 5. Cleanup, with an unrelated Subscription in the namespace.
    let subscriptions: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &olm_resource("v1alpha1", "Subscription", "subscriptions"),
    );
    let unrelated: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "unrelated", "namespace": NAMESPACE},
        "spec": {"name": "unrelated", "channel": "stable", "source": "nowhere", "sourceNamespace": NAMESPACE},
    }))?;
    subscriptions
        .create(&PostParams::default(), &unrelated)
        .await?;
    let before = made_by_run(&client).await?;
    for kind in [
        "Pod/",
        "Service/",
        "CatalogSource/",
        "OperatorGroup/",
        "Subscription/",
    ] {
        ensure!(
            before.iter().any(|o| o.starts_with(kind)),
            "no {kind} made by run before cleanup: {before:?}"
        );
    }
    let report = cleanup(&run)?;
    let removed = deleted(&report);
    for object in before.iter().filter(|o| !o.starts_with("OperatorGroup/")) {
        ensure!(
            removed.contains(object),
            "cleanup did not list {object}: {report:#}"
        );
    }
    ensure!(
        removed
            .iter()
            .any(|o| o == "ClusterServiceVersion/redis-operator.v0.2.0"),
        "cleanup did not remove the CSV: {report:#}"
    );
    ensure!(
        report["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["action"] == "kept"
                && s["object"]
                    .as_str()
                    .is_some_and(|o| o.contains("OperatorGroup"))),
        "cleanup did not keep the OperatorGroup the unrelated Subscription needs: {report:#}"
    );
    // The sample RedisCluster stays, and so does its CRD: cleanup waits until OLM has taken
    // the deleted CSV's conversion webhook off the CRD, so that the installs of steps 6 and 7
    // can read the existing RedisClusters in every version, as OLM checks them before it
    // applies the CRD again.
    ensure!(
        report["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["action"] == "released"
                && s["object"] == "CustomResourceDefinition redisclusters.cache.example.com"),
        "cleanup did not wait for the CRD's conversion webhook to be released: {report:#}"
    );
    let left = made_by_run(&client).await?;
    ensure!(
        left == ["OperatorGroup/bundle-tool-run"],
        "left after cleanup: {left:?}"
    );
    ensure!(
        subscriptions.get_opt("unrelated").await?.is_some(),
        "cleanup removed the unrelated Subscription"
    );
    ensure!(
        csv_phase(&client, "redis-operator.v0.2.0").await?.is_none(),
        "the CSV is still there"
    );
    subscriptions
        .delete("unrelated", &DeleteParams::default())
        .await?;
    let report = cleanup(&run)?;
    ensure!(
        deleted(&report) == ["OperatorGroup/bundle-tool-run"],
        "the second cleanup: {report:#}"
    );

    // 6. The catalog served from ConfigMaps by the 0.1.0 catalog image already in the
    // registry: nothing pushed. That image's own catalog has no 0.2.0, so the upgrade below
    // resolves only if the server reads the mounted ConfigMaps.
    let phase = Instant::now();
    let server_image = format!("{}/redis-operator-run-catalog:0.1.0", run.registry);
    let registry_before = registry_contents(&node.registry()).await?;
    let output = run.install_from_config_maps(&bundle, &server_image, &["--timeout", "300s"])?;
    ensure!(
        output.status.success(),
        "run --server-image failed:\n{}\n{}",
        run_support::text(&output),
        describe()
    );
    let said = run_support::text(&output);
    run_support::said_each(
        &said,
        &[
            "created ConfigMap redis-operator/redis-operator-run-catalog-",
            "ready Pod redis-operator/redis-operator-run-catalog-",
            "created CatalogSource redis-operator/redis-operator-run-catalog",
            "succeeded ClusterServiceVersion redis-operator/redis-operator.v0.1.0",
        ],
    )?;
    ensure!(
        !said.contains(" pushed "),
        "run --server-image pushed something:\n{said}"
    );
    let (made, mounted) = config_maps_and_mounts(&client).await?;
    ensure!(
        !made.is_empty() && made == mounted,
        "the ConfigMaps made {made:?} are not those the server pod mounts {mounted:?}"
    );
    let output = run.install_from_config_maps(&bundle, &server_image, &["-o", "json"])?;
    let again: Value = serde_json::from_slice(&output.stdout)?;
    ensure!(
        output.status.success() && again["changed"] == false,
        "the second run --server-image changed something: {again:#}"
    );
    let output =
        run.install_from_config_maps(&next, &server_image, &["--upgrade", "--timeout", "120s"])?;
    ensure!(
        output.status.success(),
        "run --upgrade --server-image failed:\n{}\n{}",
        run_support::text(&output),
        describe()
    );
    run_support::said_each(
        &run_support::text(&output),
        &[
            "created ConfigMap redis-operator/redis-operator-run-catalog-",
            "updated CatalogSource redis-operator/redis-operator-run-catalog",
            "deleted ConfigMap redis-operator/redis-operator-run-catalog-",
            "succeeded ClusterServiceVersion redis-operator/redis-operator.v0.2.0",
        ],
    )?;
    let (made_now, mounted) = config_maps_and_mounts(&client).await?;
    ensure!(
        !made_now.is_empty() && made_now == mounted && made_now != made,
        "after the upgrade: ConfigMaps {made_now:?} (before {made:?}), mounted {mounted:?}"
    );
    let registry_after = registry_contents(&node.registry()).await?;
    ensure!(
        registry_after == registry_before,
        "run --server-image changed the registry: {registry_before:?} -> {registry_after:?}"
    );
    let before = made_by_run(&client).await?;
    for kind in [
        "ConfigMap/",
        "Pod/",
        "Service/",
        "CatalogSource/",
        "OperatorGroup/",
        "Subscription/",
    ] {
        ensure!(
            before.iter().any(|o| o.starts_with(kind)),
            "no {kind} made by run --server-image before cleanup: {before:?}"
        );
    }
    let report = cleanup(&run)?;
    let removed = deleted(&report);
    for object in &before {
        ensure!(
            removed.contains(object),
            "cleanup did not list {object}: {report:#}"
        );
    }
    let left = made_by_run(&client).await?;
    ensure!(left.is_empty(), "left after cleanup: {left:?}");
    println!(
        "the ConfigMap phase: {:.1} s",
        phase.elapsed().as_secs_f64()
    );

    // 7. An operator image that does not exist.
    let scratch = tempfile::tempdir()?;
    let missing = scratch.path().join("missing-image");
    edited_bundle(&missing, |csv| {
        operator_container(csv)["image"] = json!("quay.io/example/redis-operator-missing:0.1.0");
    })?;
    let output = run.install(&missing, &["--timeout", "240s"])?;
    failed_naming(
        &output,
        &[
            "waiting for the ClusterServiceVersion to succeed",
            "Pod redis-operator/redis-operator-",
            "cannot pull its image quay.io/example/redis-operator-missing:0.1.0",
        ],
    )?;
    cleanup(&run)?;

    // An operator whose container exits 1.
    let crashing = scratch.path().join("crashing");
    let busybox = node.images().busybox.clone();
    edited_bundle(&crashing, |csv| {
        let container = operator_container(csv);
        container["image"] = json!(busybox);
        container["command"] = json!([
            "sh",
            "-c",
            "echo redis-operator cannot start: no such config >&2; exit 1"
        ]);
        container["args"] = json!([]);
    })?;
    let output = run.install(&crashing, &["--timeout", "240s"])?;
    failed_naming(
        &output,
        &[
            "waiting for the ClusterServiceVersion to succeed",
            "Pod redis-operator/redis-operator-",
            "CrashLoopBackOff",
            "exit code 1",
            "redis-operator cannot start: no such config",
        ],
    )?;
    cleanup(&run)?;
    ensure!(
        made_by_run(&client).await?.is_empty(),
        "left after the last cleanup"
    );
    Ok(())
}
