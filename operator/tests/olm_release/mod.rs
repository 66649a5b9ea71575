//! What the OLM v0 and OLM v1 real-node tests share: a clean checkout that `bundle-tool
//! release` publishes from, the images the Redis bundle names, and the check that an
//! installed operator runs and reconciles the sample with real Redis.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use e2e::node::{RealNode, mirror_path};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use redis_operator::api::v1::RedisCluster;
use redis_operator::redis::Role;
use serde_json::{Value, json};

use crate::real;

/// Where the sample RedisCluster runs.
pub const SAMPLE_NAMESPACE: &str = "redis-olm-sample";

/// The names the repository's files give the images (bundle-tool.yaml, olm/, the manifests).
pub const CATALOG_IMAGE: &str = "quay.io/example/redis-operator-catalog:latest";
pub const OPERATOR_IMAGE: &str = "quay.io/example/redis-operator:0.1.0";
pub const EXPORTER_IMAGE: &str = "quay.io/oliver006/redis_exporter:v1.62.0";

/// The `SOURCE_DATE_EPOCH` of the test's releases (2025-11-30 00:00 UTC).
const RELEASE_DATE_EPOCH: &str = "1764460800";

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// Applies a file of `olm/` as written.
pub async fn apply_olm_file(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let path = repo().join("olm").join(name);
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    e2e::olm::apply_yaml(client, &text)
        .await
        .with_context(|| format!("applying olm/{name}"))
}

/// A clean copy of the repository's release inputs, with an empty catalog (no release yet).
pub struct Checkout {
    dir: tempfile::TempDir,
    /// The arm64 catalog server when releases make two-platform indexes
    /// ([`Checkout::two_platforms`]).
    arm64_server: Option<PathBuf>,
}

impl Checkout {
    pub fn new() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let root = repo();
        std::fs::copy(
            root.join("bundle-tool.yaml"),
            dir.path().join("bundle-tool.yaml"),
        )?;
        for folder in ["operator/config", "catalog"] {
            e2e::copy_dir(&root.join(folder), &dir.path().join(folder))?;
        }
        // The released versions go in again, one release at a time: the rendered catalog goes,
        // and the template keeps its settings but lists no bundle yet (its archetype lists
        // are the last part of the file).
        std::fs::remove_file(dir.path().join("catalog/redis-operator/catalog.json"))?;
        let template_path = dir.path().join("catalog/template.yaml");
        let template = std::fs::read_to_string(&template_path)?;
        let settings = template
            .split("\ncandidate:")
            .next()
            .filter(|head| head.len() < template.len())
            .context("catalog/template.yaml has no candidate list")?;
        std::fs::write(&template_path, format!("{settings}\n"))?;
        Ok(Checkout {
            dir,
            arm64_server: None,
        })
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Releases from this checkout build linux/amd64 + linux/arm64 OCI image indexes (bundle
    /// and catalog), the arm64 catalog image with the cross-built `catalog-server`, as a
    /// release with `release.platforms` does; the node then pulls the amd64 image out of
    /// each index.
    pub fn two_platforms(mut self) -> anyhow::Result<Self> {
        self.arm64_server = Some(aarch64_catalog_server()?);
        Ok(self)
    }

    /// `bundle-tool release` of `version` into `channels`, pushed to the cluster registry
    /// (the catalog image under the name `olm/` gives it); returns its JSON summary.
    pub fn release(&self, node: &RealNode, version: &str, channels: &str) -> anyhow::Result<Value> {
        self.release_to(node, version, channels, CATALOG_IMAGE)
    }

    /// [`release`](Self::release) with the catalog image pushed under `catalog_image` (a
    /// name of a registry the cluster mirrors).
    pub fn release_to(
        &self,
        node: &RealNode,
        version: &str,
        channels: &str,
        catalog_image: &str,
    ) -> anyhow::Result<Value> {
        let registry = node.registry();
        let started = Instant::now();
        let output = Command::new(e2e::bundle_tool_binary())
            .current_dir(self.root())
            .env(
                bundle_tool::image::SERVER_BINARY_VARIABLE,
                static_catalog_server()?,
            )
            .args([
                "release",
                "--config",
                "bundle-tool.yaml",
                "--version",
                version,
            ])
            .args(["--channels", channels])
            .arg(format!(
                "--bundle-image={registry}/example/redis-operator-bundle"
            ))
            .arg(format!(
                "--catalog-image={registry}/{}",
                mirror_path(catalog_image)?
            ))
            .args(self.platform_args())
            .args(["--push", "--plain-http", "-o", "json"])
            // createdAt pinned, as a reproducible release job pins it: the OLM v0 test releases
            // each version twice (for our catalog image and for opm's), and the two must be
            // the same bundles for their package manifests to compare equal.
            .env("SOURCE_DATE_EPOCH", RELEASE_DATE_EPOCH)
            .output()?;
        ensure!(
            output.status.success(),
            "bundle-tool release {version} failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        println!(
            "bundle-tool release {version}: {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(serde_json::from_slice(&output.stdout)?)
    }
}

impl Checkout {
    /// The `release` flags of [`Checkout::two_platforms`]; none otherwise.
    fn platform_args(&self) -> Vec<String> {
        match &self.arm64_server {
            Some(server) => vec![
                "--platform".to_string(),
                "linux/amd64,linux/arm64".to_string(),
                format!("--server-binary=linux/arm64={}", server.display()),
            ],
            None => Vec::new(),
        }
    }

    /// The platforms of the image index at `reference` in the node's registry, as
    /// `bundle-tool inspect` lists them; an error for a single-platform image.
    pub fn index_platforms(&self, reference: &str) -> anyhow::Result<Vec<String>> {
        let inspected: Value =
            serde_json::from_str(&self.bundle_tool(&["inspect", reference, "--plain-http"])?)?;
        let platforms = inspected["platforms"]
            .as_array()
            .with_context(|| format!("{reference} is not an image index: {inspected}"))?;
        platforms
            .iter()
            .map(|p| {
                p["platform"]
                    .as_str()
                    .map(str::to_string)
                    .with_context(|| format!("{reference}: a platform without a name: {p}"))
            })
            .collect()
    }

    /// Runs bundle-tool in the checkout; fails with its output unless it exits 0.
    pub fn bundle_tool(&self, args: &[&str]) -> anyhow::Result<String> {
        let output = Command::new(e2e::bundle_tool_binary())
            .current_dir(self.root())
            .env(
                bundle_tool::image::SERVER_BINARY_VARIABLE,
                static_catalog_server()?,
            )
            .args(args)
            .output()?;
        ensure!(
            output.status.success(),
            "bundle-tool {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Builds the checkout's catalog into an image and pushes it under the catalog's tag, as a
    /// release's last two steps do; returns the pushed digest.
    pub fn push_catalog(&self, node: &RealNode) -> anyhow::Result<String> {
        let target = format!("{}/{}", node.registry(), mirror_path(CATALOG_IMAGE)?);
        build_and_push_catalog(
            |args| self.bundle_tool(args),
            &self.root().join("target/oci-catalog"),
            &target,
        )
    }
}

/// `bundle-tool build catalog --catalog` of the `catalog` folder where `bundle_tool` runs,
/// into the OCI layout `layout`, then `push` of it to `target` over plain HTTP; returns the
/// pushed digest.
pub fn build_and_push_catalog(
    bundle_tool: impl Fn(&[&str]) -> anyhow::Result<String>,
    layout: &Path,
    target: &str,
) -> anyhow::Result<String> {
    let built = bundle_tool(&[
        "build",
        "catalog",
        "--catalog",
        "--tag",
        "latest",
        "--oci-layout",
        &layout.display().to_string(),
    ])?;
    let source = built
        .trim()
        .split('@')
        .next()
        .context("no layout reference")?;
    let pushed = bundle_tool(&["push", source, target, "--plain-http"])?;
    pushed
        .trim()
        .rsplit_once('@')
        .map(|(_, d)| d.to_string())
        .with_context(|| format!("push printed no digest: {pushed}"))
}

/// The aarch64 `catalog-server`: `$E2E_AARCH64_BIN_DIR/catalog-server`, else the workspace's
/// `target/aarch64-unknown-linux-gnu/debug/catalog-server`, which the README's test command
/// cross-builds.
pub fn aarch64_catalog_server() -> anyhow::Result<PathBuf> {
    let dir = std::env::var_os("E2E_AARCH64_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/aarch64-unknown-linux-gnu/debug"));
    let path = dir.join("catalog-server");
    ensure!(
        path.is_file(),
        "{} is missing: cross-build it with `rustup target add aarch64-unknown-linux-gnu`, \
         `apt-get install gcc-aarch64-linux-gnu` and `RUSTFLAGS=\"-C target-feature=+crt-static\" \
         cargo build --target aarch64-unknown-linux-gnu --bin catalog-server` (tests/run-all.sh does)",
        path.display()
    );
    Ok(path)
}

/// The statically linked catalog server the README test command builds, for the catalog
/// image.
pub fn static_catalog_server() -> anyhow::Result<PathBuf> {
    let binary = repo().join("target/x86_64-unknown-linux-gnu/debug/catalog-server");
    let built = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .map_err(|e| anyhow::anyhow!("{}: {e}: run RUSTFLAGS=\"-C target-feature=+crt-static\" cargo build --workspace --target x86_64-unknown-linux-gnu (the README test command does)", binary.display()))?;
    let ours = std::fs::metadata(e2e::catalog_server_binary())?.modified()?;
    // Both come from the same sources; a static build much older than the other is stale.
    ensure!(
        built + Duration::from_secs(3600) >= ours,
        "{} is older than target/debug/catalog-server: rebuild it (the README test command does)",
        binary.display()
    );
    Ok(binary)
}

/// The operator image (the static build, as a release makes it), the Redis images under the
/// names the operator's manifests give them, and an exporter image.
pub async fn push_workload_images(node: &RealNode) -> anyhow::Result<()> {
    node.push_as(OPERATOR_IMAGE, &operator_image()?).await?;
    real::push_redis_images_named(node, |version| {
        mirror_path(&format!("docker.io/library/redis:{version}"))
    })
    .await?;
    let exporter = Path::new("/usr/bin/prometheus-redis-exporter");
    ensure!(
        exporter.is_file(),
        "{} is missing: install Debian's prometheus-redis-exporter (the README test command does)",
        exporter.display()
    );
    node.push_programs(
        &mirror_path(EXPORTER_IMAGE)?,
        &[exporter],
        Vec::new(),
        &e2e::node::ContainerConfig {
            entrypoint: vec!["/usr/bin/prometheus-redis-exporter".into()],
            user: "59000:59000".into(),
            ..e2e::node::ContainerConfig::default()
        },
    )
    .await?;
    Ok(())
}

/// Waits up to `seconds` for `check`, printing how long it took; on time-out fails with
/// `describe()` (the calling test's report of the cluster).
pub async fn wait_for<T, F, Fut>(
    node: &RealNode,
    describe: &dyn Fn() -> String,
    seconds: u64,
    what: &str,
    check: F,
) -> anyhow::Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let started = Instant::now();
    let result = e2e::eventually(Duration::from_secs(seconds), what, || async {
        node.check_running()?;
        check().await
    })
    .await;
    match result {
        Ok(value) => {
            println!("{what}: {:.1} s", started.elapsed().as_secs_f64());
            Ok(value)
        }
        Err(error) => anyhow::bail!("{error:#}\n{}", describe()),
    }
}

/// The installed operator's pod runs and reconciles the sample RedisCluster to Ready with
/// real Redis pods (one primary, the rest replicating from it, asked over the pod network);
/// a v1alpha1 read converts through the conversion webhook, on the certificate the installing
/// OLM manages (the CRD's caBundle: the operator cannot write CRDs).
///
/// The first call creates the sample with 3 replicas. A later one (after an upgrade) waits
/// until the operator's Deployment has rolled out, then adds a replica:
/// only an operator that runs after the upgrade can bring the status to the new generation,
/// so a status left over from the old operator does not pass.
pub async fn check_operator_reconciles_real_redis(
    node: &RealNode,
    client: &kube::Client,
    describe: &dyn Fn() -> String,
) -> anyhow::Result<()> {
    let ns = SAMPLE_NAMESPACE;
    let clusters: Api<RedisCluster> = Api::namespaced(client.clone(), ns);
    let replicas = if node.kubectl(&["get", "namespace", ns])?.status.success() {
        wait_for(
            node,
            describe,
            180,
            "the operator's Deployment rolled out",
            || operator_rolled_out(client),
        )
        .await?;
        // Up, not down: a scale-down could remove the primary and test a failover instead.
        let replicas = clusters.get("my-redis").await?.spec.replicas + 1;
        clusters
            .patch(
                "my-redis",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await?;
        replicas
    } else {
        node.namespace(client, ns).await?;
        let sample = std::fs::read_to_string(
            repo().join("operator/config/samples/cache_v1_rediscluster.yaml"),
        )?;
        let mut sample: Value = serde_saphyr::from_str(&sample)?;
        sample["metadata"]["namespace"] = json!(ns);
        e2e::apply_objects(client, &[sample]).await?;
        3
    };
    wait_for(
        node,
        describe,
        300,
        &format!("the sample RedisCluster Ready with {replicas} real Redis pods"),
        || async {
            let c = clusters.get("my-redis").await?;
            Ok(real::is_running(&c, replicas).then_some(()))
        },
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    wait_for(
        node,
        describe,
        60,
        "Redis answering on every pod: one primary, the others replicating from it",
        || async { Ok(replication_of(&pods, replicas).await?.then_some(())) },
    )
    .await?;
    let crd: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crd.get("redisclusters.cache.example.com").await?;
    let ca_bundle = crd
        .spec
        .conversion
        .and_then(|c| c.webhook)
        .and_then(|w| w.client_config)
        .and_then(|c| c.ca_bundle);
    ensure!(
        ca_bundle.is_some_and(|ca| !ca.0.is_empty()),
        "the CRD's conversion webhook has no caBundle: OLM did not wire its certificate"
    );
    // After an upgrade the new bundle's CRD may for a moment name a Service or CA that is not
    // yet the one serving: conversion works once OLM has wired both.
    let output = wait_for(
        node,
        describe,
        90,
        "a v1alpha1 read through the conversion webhook",
        || async {
            let output = node.kubectl(&[
                "get",
                "redisclusters.v1alpha1.cache.example.com",
                "my-redis",
                "-n",
                ns,
                "-o",
                "json",
            ])?;
            if output.status.success() {
                return Ok(Some(output.stdout));
            }
            println!(
                "v1alpha1 read: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
            Ok(None)
        },
    )
    .await
    .context("a v1alpha1 read (conversion webhook) failed")?;
    let old: Value = serde_json::from_slice(&output)?;
    ensure!(
        old["apiVersion"] == "cache.example.com/v1alpha1",
        "not converted: {}",
        old["apiVersion"]
    );
    Ok(())
}

/// Whether the Deployment `redis-operator` of the operator's namespace has rolled out: every
/// pod is of its newest template and available (what `kubectl rollout status` waits for).
async fn operator_rolled_out(client: &kube::Client) -> anyhow::Result<Option<()>> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "redis-operator");
    let Some(deployment) = deployments.get_opt("redis-operator").await? else {
        return Ok(None);
    };
    let wanted = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let Some(status) = deployment.status else {
        return Ok(None);
    };
    Ok(
        (status.observed_generation >= deployment.metadata.generation
            && status.updated_replicas == Some(wanted)
            && status.replicas == Some(wanted)
            && status.available_replicas == Some(wanted))
        .then_some(()),
    )
}

/// Whether the `replicas` Redis pods of the sample answer as one primary with
/// `replicas - 1` connected replicas, each replica's link to it up.
async fn replication_of(pods: &Api<Pod>, replicas: i32) -> anyhow::Result<bool> {
    let mut primaries = Vec::new();
    let mut replicating = 0;
    for index in 0..replicas {
        let name = format!("my-redis-{index}");
        let Ok(address) = real::pod_address(pods, &name).await else {
            return Ok(false);
        };
        let Ok(info) = real::replication(address, real::NO_AUTH).await else {
            return Ok(false);
        };
        match info.role {
            Role::Primary => primaries.push((name, info.connected_replicas)),
            Role::Replica { link_up: true, .. } => replicating += 1,
            Role::Replica { .. } => return Ok(false),
        }
    }
    Ok(primaries.len() == 1
        && primaries[0].1 == (replicas - 1) as u32
        && replicating == replicas - 1)
}

/// The operator's image, as `bundle-tool build --binary` makes it from the static build.
pub fn operator_image() -> anyhow::Result<bundle_tool::image::BuiltImage> {
    Ok(bundle_tool::image::build_binary_image(
        &real::static_operator_binary()?,
        &BTreeMap::from([(
            "org.opencontainers.image.title".to_string(),
            "redis-operator".to_string(),
        )]),
    )?)
}
