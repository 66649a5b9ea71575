//! OLM v0 installed the way an admin installs it, running as pods on the real node: the
//! release's quickstart manifests (`crds.yaml`, then `olm.yaml`: olm-operator,
//! catalog-operator, and packageserver as a CSV that olm-operator installs behind the
//! `packages.operators.coreos.com` APIService), applied as written but for two things:
//!
//! - the OLM image, which `olm.yaml` pins by a digest of upstream's build, is replaced by an
//!   image made here of the pinned v0.46.0 binaries (`olm`, `catalog`, `package-server`,
//!   `copy-content`, `cpb`, with busybox's `cp` as upstream's image has one); the images
//!   OLM names by tag (the opm image of bundle unpack Jobs, `quay.io/operator-framework/opm:
//!   latest`) are pushed to the cluster registry, which mirrors quay.io;
//! - the `operatorhubio-catalog` CatalogSource is left out: its image is on the internet.
//!
//! Two faults of the v0.46.0 quickstart in the module source (upstream's release job renders
//! the Helm chart instead) are mended as the chart has them: it lacks the OLMConfig CRD, so the
//! CRDs are the chart's (`deploy/chart/crds`); and it passes catalog-operator single-dash long
//! flags (`-namespace`, `-util-image`, `-configmapServerImage=…`), which the cobra command line
//! of v0.46.0 refuses ("unknown shorthand flag"), so those get their second dash.
//!
//! The `olm` and `operators` namespaces are created first, pinned to the real node.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;
use serde_json::Value;

use crate::assets::Assets;
use crate::node::{ContainerConfig, RealNode, RootfsEntry};
use crate::{ControlPlane, eventually};

/// The namespace OLM runs in (and where global CatalogSources live).
pub const OLM_NAMESPACE: &str = "olm";

/// The digest-pinned upstream image `olm.yaml` names.
const UPSTREAM_OLM_IMAGE_PREFIX: &str = "quay.io/operator-framework/olm@sha256:";

/// What runs once OLM is up.
pub struct OlmOnNode {
    /// The OLM image (olm, catalog, package-server, copy-content, cpb) as pods name it.
    pub olm_image: String,
    /// opm and grpc-ecosystem's grpc_health_probe, as catalog-operator's default names it.
    pub opm_image: String,
}

/// An `ApiResource` for an OLM kind.
pub fn olm_resource(version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "operators.coreos.com".into(),
        version: version.into(),
        api_version: format!("operators.coreos.com/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

impl OlmOnNode {
    /// Builds the images, applies the quickstart, and waits until olm-operator and
    /// catalog-operator are available and packageserver's CSV has Succeeded with its
    /// APIService available.
    pub async fn deploy(control_plane: &ControlPlane, node: &RealNode) -> anyhow::Result<Self> {
        let assets = Assets::locate()?;
        let client = control_plane.client().await?;
        let olm_image = push_olm_image(node, &assets).await?;
        let opm_image = push_opm_image(node, &assets).await?;

        for namespace in [OLM_NAMESPACE, "operators"] {
            node.namespace(&client, namespace).await?;
        }
        for file in assets.olm_crds()? {
            let text = std::fs::read_to_string(&file)?;
            let crd = serde_saphyr::from_str(&text)
                .with_context(|| format!("parse {}", file.display()))?;
            crate::apply_crd(&client, &crd)
                .await
                .with_context(|| format!("apply {}", file.display()))?;
        }
        let quickstart = std::fs::read_to_string(assets.olm_deploy("olm.yaml")?)?;
        let mut objects = Vec::new();
        for mut document in documents(&quickstart)? {
            if document["kind"] == "CatalogSource" {
                continue;
            }
            swap_olm_image(&mut document, &olm_image);
            if document["kind"] == "Deployment" {
                for container in document["spec"]["template"]["spec"]["containers"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    for arg in container["args"].as_array_mut().into_iter().flatten() {
                        if let Some(text) = arg.as_str().and_then(long_flag_with_one_dash) {
                            *arg = Value::from(text);
                        }
                    }
                }
            }
            objects.push(document);
        }
        crate::apply_objects(&client, &objects).await?;
        let olm = OlmOnNode {
            olm_image,
            opm_image,
        };
        olm.wait_ready(&client, node).await?;
        Ok(olm)
    }

    async fn wait_ready(&self, client: &kube::Client, node: &RealNode) -> anyhow::Result<()> {
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), OLM_NAMESPACE);
        let csvs: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            OLM_NAMESPACE,
            &olm_resource(
                "v1alpha1",
                "ClusterServiceVersion",
                "clusterserviceversions",
            ),
        );
        let api_services: Api<DynamicObject> = Api::all_with(
            client.clone(),
            &ApiResource {
                group: "apiregistration.k8s.io".into(),
                version: "v1".into(),
                api_version: "apiregistration.k8s.io/v1".into(),
                kind: "APIService".into(),
                plural: "apiservices".into(),
            },
        );
        eventually(
            Duration::from_secs(240),
            "OLM (olm-operator, catalog-operator, packageserver) to be up",
            || async {
                node.check_running()?;
                for name in ["olm-operator", "catalog-operator"] {
                    let available = deployments
                        .get_opt(name)
                        .await?
                        .and_then(|d| d.status)
                        .and_then(|s| s.available_replicas)
                        .unwrap_or(0);
                    if available < 1 {
                        return Ok(None);
                    }
                }
                let phase = csvs
                    .get_opt("packageserver")
                    .await?
                    .map(|csv| csv.data["status"]["phase"].clone());
                if phase != Some(Value::from("Succeeded")) {
                    return Ok(None);
                }
                let available = api_services
                    .get_opt("v1.packages.operators.coreos.com")
                    .await?
                    .is_some_and(|service| {
                        service.data["status"]["conditions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|c| c["type"] == "Available" && c["status"] == "True")
                    });
                Ok(available.then_some(()))
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", self.describe(node)))
    }

    /// OLM's pods and the end of each controller's log, for failure messages.
    pub fn describe(&self, node: &RealNode) -> String {
        let mut out = String::new();
        if let Ok(pods) = node.kubectl(&["get", "pods", "-A", "-o", "wide"]) {
            out.push_str(&String::from_utf8_lossy(&pods.stdout));
        }
        for deployment in ["olm-operator", "catalog-operator", "packageserver"] {
            out.push_str(&deployment_log(node, OLM_NAMESPACE, deployment));
        }
        out
    }
}

/// The end of a Deployment's log (or why it could not be read), headed by its name, for
/// failure messages.
pub(crate) fn deployment_log(node: &RealNode, namespace: &str, deployment: &str) -> String {
    let target = format!("deployment/{deployment}");
    match node.kubectl(&["logs", "-n", namespace, &target, "--tail=30"]) {
        Ok(logs) => format!(
            "--- {deployment} ---\n{}{}",
            String::from_utf8_lossy(&logs.stdout),
            String::from_utf8_lossy(&logs.stderr)
        ),
        Err(error) => format!("--- {deployment} ---\n{error:#}\n"),
    }
}

/// The documents of a YAML stream as JSON, comments-only ones left out.
pub(crate) fn documents(text: &str) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    for document in text.split("\n---") {
        let value: Value = serde_saphyr::from_str(document)
            .with_context(|| format!("parse a manifest:\n{document}"))?;
        if value.is_object() && !value["kind"].is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// `-namespace` → `--namespace`: a long flag written with one dash, as Go's `flag` package
/// takes it and cobra does not. `-v=4` (a one-letter flag) and values are left alone.
fn long_flag_with_one_dash(arg: &str) -> Option<String> {
    let name = arg.strip_prefix('-')?;
    let name = name.split('=').next().unwrap_or(name);
    (!name.starts_with('-')
        && name.len() > 1
        && name.starts_with(|c: char| c.is_ascii_alphabetic()))
    .then(|| format!("-{arg}"))
}

/// Replaces every string naming the upstream OLM image (container images and the
/// `-util-image` argument) with `image`.
fn swap_olm_image(value: &mut Value, image: &str) {
    match value {
        Value::String(text) if text.trim().starts_with(UPSTREAM_OLM_IMAGE_PREFIX) => {
            *text = image.to_string();
        }
        Value::Array(items) => items.iter_mut().for_each(|v| swap_olm_image(v, image)),
        Value::Object(map) => map.values_mut().for_each(|v| swap_olm_image(v, image)),
        _ => {}
    }
}

/// OLM's image as upstream's Dockerfile lays it out: the binaries in /bin, `cp` for unpack
/// Jobs, user 1001, `/bin/olm` the entrypoint.
async fn push_olm_image(node: &RealNode, assets: &Assets) -> anyhow::Result<String> {
    let busybox = Path::new("/bin/busybox");
    anyhow::ensure!(
        busybox.is_file(),
        "/bin/busybox is missing: install Debian's busybox-static (the README test command does)"
    );
    let mut entries = vec![
        RootfsEntry::File {
            path: "/bin/busybox".into(),
            source: busybox.into(),
            mode: 0o755,
        },
        RootfsEntry::Symlink {
            path: "/bin/cp".into(),
            target: "busybox".into(),
        },
        RootfsEntry::Dir {
            path: "/tmp".into(),
            mode: 0o1777,
        },
    ];
    for program in ["olm", "catalog", "package-server", "copy-content", "cpb"] {
        entries.push(RootfsEntry::File {
            path: format!("/bin/{program}"),
            source: assets.olm(program)?,
            mode: 0o755,
        });
    }
    let image = bundle_tool::image::build_rootfs_image(
        &entries,
        &ContainerConfig {
            entrypoint: vec!["/bin/olm".into()],
            user: "1001".into(),
            env: vec!["PATH=/bin".into()],
            ..ContainerConfig::default()
        },
    )?;
    let version = assets.version_of("OLM").unwrap_or_else(|| "dev".into());
    node.push_as(&format!("quay.io/operator-framework/olm:{version}"), &image)
        .await
}

/// A catalog image as opm's generated Dockerfile makes one (the oracle for ours): the opm
/// image's files, the catalog folder at `/configs`, the cache its `RUN opm serve /configs
/// --cache-dir=/tmp/cache --cache-only` step builds (opm refuses to serve from an empty cache
/// folder), and `opm serve /configs --cache-dir=/tmp/cache` as the command.
pub fn opm_catalog_image(
    assets: &Assets,
    catalog: &Path,
) -> anyhow::Result<bundle_tool::image::BuiltImage> {
    let mut entries = opm_entries(assets)?;
    entries.push(RootfsEntry::Dir {
        path: "/configs".into(),
        mode: 0o755,
    });
    let scratch = tempfile::tempdir()?;
    let cache = scratch.path().join("cache");
    let output = std::process::Command::new(assets.opm()?)
        .arg("serve")
        .arg(catalog)
        .arg(format!("--cache-dir={}", cache.display()))
        .arg("--cache-only")
        .output()
        .context("running opm serve --cache-only")?;
    anyhow::ensure!(
        output.status.success(),
        "opm serve --cache-only {}: {}",
        catalog.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    // opm opens the cache read-write (a lock file in it): its Dockerfile builds the cache as
    // the image's user, 1001; entries here are root's, so its folders and files are open to all.
    entries.push(RootfsEntry::Dir {
        path: "/tmp/cache".into(),
        mode: 0o777,
    });
    let mut folders = vec![
        (catalog.to_path_buf(), "/configs".to_string()),
        (cache, "/tmp/cache".to_string()),
    ];
    while let Some((dir, at)) = folders.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = format!("{at}/{}", entry.file_name().to_string_lossy());
            if entry.file_type()?.is_dir() {
                let mode = if path.starts_with("/tmp/cache") {
                    0o777
                } else {
                    0o755
                };
                entries.push(RootfsEntry::Dir {
                    path: path.clone(),
                    mode,
                });
                folders.push((entry.path(), path));
            } else {
                let mode = if path.starts_with("/tmp/cache") {
                    0o666
                } else {
                    0o644
                };
                entries.push(RootfsEntry::File {
                    path,
                    source: entry.path(),
                    mode,
                });
            }
        }
    }
    Ok(bundle_tool::image::build_rootfs_image(
        &entries,
        &ContainerConfig {
            entrypoint: vec!["/bin/opm".into()],
            cmd: ["serve", "/configs", "--cache-dir=/tmp/cache"]
                .map(String::from)
                .to_vec(),
            user: "1001".into(),
            env: vec!["PATH=/bin".into()],
            labels: std::collections::BTreeMap::from([(
                bundle_tool::image::CATALOG_CONFIGS_LABEL.to_string(),
                "/configs".to_string(),
            )]),
        },
    )?)
}

fn opm_entries(assets: &Assets) -> anyhow::Result<Vec<RootfsEntry>> {
    Ok(vec![
        RootfsEntry::File {
            path: "/bin/opm".into(),
            source: assets.opm()?,
            mode: 0o755,
        },
        RootfsEntry::File {
            path: "/bin/grpc_health_probe".into(),
            source: assets.grpc_health_probe()?,
            mode: 0o755,
        },
        RootfsEntry::Dir {
            path: "/tmp".into(),
            mode: 0o1777,
        },
    ])
}

/// opm's image as upstream's: `/bin/opm`, `/bin/grpc_health_probe`, a writable `/tmp`.
async fn push_opm_image(node: &RealNode, assets: &Assets) -> anyhow::Result<String> {
    let entries = opm_entries(assets)?;
    let image = bundle_tool::image::build_rootfs_image(
        &entries,
        &ContainerConfig {
            entrypoint: vec!["/bin/opm".into()],
            user: "1001".into(),
            env: vec!["PATH=/bin".into()],
            ..ContainerConfig::default()
        },
    )?;
    node.push_as("quay.io/operator-framework/opm:latest", &image)
        .await
}
