//! `operator-sdk run bundle` (v1.42.3), the command `bundle-tool run` stands beside, on the
//! same cluster and bundle, with what it needs that `run` does not:
//!
//! - a registry it can pull from over HTTPS: it pulls the index image to the local machine
//!   to read its labels, and that pull ignores `--use-http` and `--skip-tls-verify`
//!   (operator-sdk `internal/olm/fbcutil/util.go`, `internal/registry/image.go`); so a
//!   docker-registry with a CA of its own, which operator-sdk trusts by `SSL_CERT_FILE` and
//!   the node by its containerd `certs.d` ([`e2e::RealNode::trust_registry`]);
//! - an index image with `sh` and `opm` (its registry pod runs `sh -c "opm serve …"`) and
//!   the label that marks a file-based catalog, else it takes the SQLite path;
//! - a decompression image with `sh`, `cat` and `gzip` (the init container unpacks the
//!   catalog from gzip'd ConfigMaps; `internal/olm/operator/registry/fbcindex/fbc_registry_pod.go`);
//! - the bundle as an image in that registry.
//!
//! All three images are built here, from Debian's busybox-static and the pinned opm.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use anyhow::Context as _;
use bundle_tool::image::{
    BuiltImage, ContainerConfig, Credentials, RegistryClient, RootfsEntry, Transport,
    build_rootfs_image, parse_reference,
};
use e2e::node::{RealNode, network::NODE_IP};
use e2e::{OciRegistry, RegistryAuth, RegistryTls};

/// Where the HTTPS registry listens on the node network.
const PORT: u16 = 5443;
/// The label operator-sdk reads to tell a file-based index image (operator-registry
/// `pkg/containertools`, `ConfigsLocationLabel`).
const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";

/// The HTTPS registry and the images operator-sdk is given.
pub struct SdkSetup {
    _registry: OciRegistry,
    dir: tempfile::TempDir,
    ca: PathBuf,
    /// The bundle image.
    pub bundle: String,
    /// The bundle image as built (to push elsewhere with the same digest).
    pub bundle_image: BuiltImage,
    index: String,
    decompression: String,
}

impl SdkSetup {
    /// Starts the registry, has the node trust it, and pushes the images (the bundle from
    /// the folder `bundle_dir`).
    pub async fn prepare(node: &RealNode, bundle_dir: &Path) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new().prefix("e2e-sdk-run-").tempdir()?;
        let address = NODE_IP.to_string();
        let (certificate, key, ca_pem) =
            e2e::write_serving_pair(dir.path(), "sdk-registry", &[&address])?;
        let ca = dir.path().join("sdk-registry-ca.crt");
        let host = format!("{NODE_IP}:{PORT}");
        let registry = OciRegistry::start_configured(
            RegistryAuth::Anonymous,
            &host,
            Some(&RegistryTls { certificate, key }),
        )
        .await
        .context("starting the HTTPS registry for operator-sdk")?;
        node.trust_registry(&host, &ca_pem)?;
        let client = RegistryClient::new(
            &Transport {
                ca_files: vec![ca.clone()],
                ..Transport::default()
            },
            Credentials::Anonymous,
        )?;
        let push = |name: String, image: BuiltImage| {
            let client = &client;
            async move {
                client
                    .push(&parse_reference(&name)?, &image)
                    .await
                    .with_context(|| format!("pushing {name}"))?;
                anyhow::Ok(name)
            }
        };

        let labels = bundle_tool::bundle::read::labels(bundle_dir)?;
        let bundle_image = bundle_tool::image::build_bundle_image_for(
            bundle_dir,
            &labels,
            &[bundle_tool::image::Platform::linux_amd64()],
        )?;
        let bundle = push(
            format!("{host}/sdk/redis-operator-bundle:v0.1.0"),
            bundle_image.clone(),
        )
        .await?;

        let busybox = |applets: &[&str]| {
            let mut entries = vec![RootfsEntry::File {
                path: "/bin/busybox".into(),
                source: PathBuf::from("/bin/busybox"),
                mode: 0o755,
            }];
            entries.extend(applets.iter().map(|applet| RootfsEntry::Symlink {
                path: format!("/bin/{applet}"),
                target: "busybox".into(),
            }));
            entries.push(RootfsEntry::Dir {
                path: "/tmp".into(),
                mode: 0o1777,
            });
            entries
        };
        let opm = e2e::assets::Assets::locate()?.opm()?;
        let mut index_entries = busybox(&["sh"]);
        index_entries.push(RootfsEntry::File {
            path: "/bin/opm".into(),
            source: opm,
            mode: 0o755,
        });
        index_entries.push(RootfsEntry::Dir {
            path: "/configs".into(),
            mode: 0o755,
        });
        let index_image = build_rootfs_image(
            &index_entries,
            &ContainerConfig {
                env: vec!["PATH=/bin".into()],
                labels: BTreeMap::from([(CONFIGS_LABEL.to_string(), "/configs".to_string())]),
                ..ContainerConfig::default()
            },
        )?;
        let index = push(format!("{host}/sdk/opm-index:v1.73.0"), index_image).await?;
        let decompression_image = build_rootfs_image(
            &busybox(&["sh", "cat", "gzip"]),
            &ContainerConfig {
                env: vec!["PATH=/bin".into()],
                ..ContainerConfig::default()
            },
        )?;
        let decompression = push(format!("{host}/sdk/gzip:v1"), decompression_image).await?;
        Ok(SdkSetup {
            _registry: registry,
            dir,
            ca,
            bundle,
            bundle_image,
            index,
            decompression,
        })
    }

    /// `operator-sdk ARGS… -n NAMESPACE --kubeconfig K`, trusting the registry's CA; its
    /// output and wall seconds.
    pub fn operator_sdk(
        &self,
        kubeconfig: &str,
        namespace: &str,
        args: &[&str],
    ) -> anyhow::Result<(Output, f64)> {
        let sdk = e2e::assets::Assets::locate()?.operator_sdk()?;
        let started = Instant::now();
        let output = Command::new(sdk)
            .args(args)
            .args(["-n", namespace, "--kubeconfig", kubeconfig])
            .env("SSL_CERT_FILE", &self.ca)
            .env("HOME", self.dir.path())
            .output()?;
        Ok((output, started.elapsed().as_secs_f64()))
    }

    /// `operator-sdk run bundle` of the bundle image with the index and decompression images.
    pub fn run_bundle(&self, kubeconfig: &str, namespace: &str) -> anyhow::Result<(Output, f64)> {
        self.operator_sdk(
            kubeconfig,
            namespace,
            &[
                "run",
                "bundle",
                &self.bundle,
                "--index-image",
                &self.index,
                "--decompression-image",
                &self.decompression,
                "--timeout",
                "5m",
            ],
        )
    }

    /// `operator-sdk cleanup <package>` (its default `--delete-all`: CRDs and its
    /// OperatorGroup too).
    pub fn cleanup(
        &self,
        kubeconfig: &str,
        namespace: &str,
        package: &str,
    ) -> anyhow::Result<(Output, f64)> {
        self.operator_sdk(
            kubeconfig,
            namespace,
            &["cleanup", package, "--timeout", "5m"],
        )
    }
}
