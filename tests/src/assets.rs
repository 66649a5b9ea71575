//! Where the pinned Go programs are.
//!
//! `KUBEBUILDER_ASSETS` (the envtest convention: one folder holding `kube-apiserver`, `etcd`,
//! …) wins for any program it holds; everything else comes from the cache that
//! `tests/assets/build-go-assets.sh` fills and indexes in `index.env`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

const BUILD_HINT: &str = "run `tests/assets/build-go-assets.sh` (the README test command does) \
                          or point KUBEBUILDER_ASSETS at a folder with the binaries";

/// The asset cache folder: `$ASSET_CACHE`, else `$XDG_CACHE_HOME` or `~/.cache`, then
/// `redis-olm-toolchain/assets`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ASSET_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join("redis-olm-toolchain").join("assets")
}

/// The programs and data files the tests use.
#[derive(Clone, Debug)]
pub struct Assets {
    index: HashMap<String, String>,
    kubebuilder_assets: Option<PathBuf>,
}

impl Assets {
    /// Reads the cache index (and `KUBEBUILDER_ASSETS`).
    pub fn locate() -> anyhow::Result<Self> {
        let index_path = cache_dir().join("index.env");
        let index = match std::fs::read_to_string(&index_path) {
            Ok(text) => text
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect(),
            Err(_) => HashMap::new(),
        };
        let kubebuilder_assets = std::env::var_os("KUBEBUILDER_ASSETS").map(PathBuf::from);
        if index.is_empty() && kubebuilder_assets.is_none() {
            bail!(
                "no test binaries: {} is missing; {BUILD_HINT}",
                index_path.display()
            );
        }
        Ok(Assets {
            index,
            kubebuilder_assets,
        })
    }

    fn component(&self, key: &str) -> anyhow::Result<PathBuf> {
        self.index
            .get(key)
            .map(PathBuf::from)
            .with_context(|| format!("the asset index has no {key}; {BUILD_HINT}"))
    }

    /// The path of a program: from `KUBEBUILDER_ASSETS` if it is there, else from the cache
    /// entry `component` (one of ETCD, KUBERNETES, KWOK, OLM, OPM, OPERATOR_SDK, COREDNS).
    pub fn program(&self, component: &str, name: &str) -> anyhow::Result<PathBuf> {
        if let Some(dir) = &self.kubebuilder_assets {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
        let path = self.component(component)?.join("bin").join(name);
        if !path.is_file() {
            bail!("{} is missing; {BUILD_HINT}", path.display());
        }
        Ok(path)
    }

    /// `etcd`.
    pub fn etcd(&self) -> anyhow::Result<PathBuf> {
        self.program("ETCD", "etcd")
    }

    /// `kube-apiserver`, `kube-controller-manager`, `kube-scheduler`, `kubelet`, `kube-proxy`
    /// or `kubectl`.
    pub fn kubernetes(&self, name: &str) -> anyhow::Result<PathBuf> {
        self.program("KUBERNETES", name)
    }

    /// The version a component was built at: the part of its cache folder's name after the
    /// component (`coredns-v1.15.0` gives `v1.15.0`).
    pub fn version_of(&self, component: &str) -> Option<String> {
        let dir = self.index.get(component)?;
        version_in_folder_name(&Path::new(dir).file_name()?.to_string_lossy())
    }

    /// The Kubernetes version the binaries were built as (e.g. `v1.36.3`).
    pub fn kubernetes_version(&self) -> Option<&str> {
        self.index.get("KUBERNETES_VERSION").map(String::as_str)
    }

    /// `kwok`.
    pub fn kwok(&self) -> anyhow::Result<PathBuf> {
        self.program("KWOK", "kwok")
    }

    /// The kwok "fast" node and pod Stage files, from the same kwok release.
    pub fn kwok_stages(&self) -> anyhow::Result<Vec<PathBuf>> {
        yaml_files(&self.component("KWOK")?.join("stages"))
    }

    /// `opm`.
    pub fn opm(&self) -> anyhow::Result<PathBuf> {
        self.program("OPM", "opm")
    }

    /// `operator-sdk`.
    pub fn operator_sdk(&self) -> anyhow::Result<PathBuf> {
        self.program("OPERATOR_SDK", "operator-sdk")
    }

    /// OLM's `olm` (olm-operator) or `catalog` (catalog-operator).
    pub fn olm(&self, name: &str) -> anyhow::Result<PathBuf> {
        self.program("OLM", name)
    }

    /// OLM's install manifests from the same release (`olm.yaml`, `crds.yaml`: the
    /// quickstart an admin applies).
    pub fn olm_deploy(&self, name: &str) -> anyhow::Result<PathBuf> {
        let path = self.component("OLM")?.join("deploy").join(name);
        if !path.is_file() {
            bail!("{} is missing; {BUILD_HINT}", path.display());
        }
        Ok(path)
    }

    /// grpc-ecosystem's `grpc_health_probe` (its binary is named `grpc-health-probe`).
    pub fn grpc_health_probe(&self) -> anyhow::Result<PathBuf> {
        self.program("GRPC_HEALTH_PROBE", "grpc-health-probe")
    }

    /// OLM v1's `catalogd` (operator-controller's `cmd/catalogd`).
    pub fn catalogd(&self) -> anyhow::Result<PathBuf> {
        self.program("CATALOGD", "catalogd")
    }

    /// The ClusterCatalog CustomResourceDefinition of catalogd's release (the chart's
    /// standard feature set).
    pub fn catalogd_crds(&self) -> anyhow::Result<Vec<PathBuf>> {
        yaml_files(&self.component("CATALOGD")?.join("crds"))
    }

    /// OLM v1's install manifest as the module has it (`manifests/standard.yaml`: the Helm
    /// chart rendered with the standard feature set).
    pub fn olm_v1_manifest(&self) -> anyhow::Result<PathBuf> {
        self.file("CATALOGD", "manifests/standard.yaml")
    }

    /// OLM v1 that installs (v1.5.1): `operator-controller` or `catalogd` of one release.
    pub fn olm_v1(&self, name: &str) -> anyhow::Result<PathBuf> {
        self.program("OLM_V1", name)
    }

    /// That release's `manifests/experimental.yaml` (operator-controller with the
    /// WebhookProviderCertManager and PreflightPermissions gates, catalogd).
    pub fn olm_v1_experimental_manifest(&self) -> anyhow::Result<PathBuf> {
        self.file("OLM_V1", "manifests/experimental.yaml")
    }

    /// cert-manager's `controller`, `cainjector` or `webhook`.
    pub fn cert_manager(&self, name: &str) -> anyhow::Result<PathBuf> {
        self.program("CERT_MANAGER", name)
    }

    /// cert-manager's static manifest, rendered from its chart as its release renders
    /// `cert-manager.yaml` (namespace, CRDs, RBAC, the three Deployments, the webhooks).
    pub fn cert_manager_manifest(&self) -> anyhow::Result<PathBuf> {
        self.file("CERT_MANAGER", "manifests/cert-manager.yaml")
    }

    fn file(&self, component: &str, relative: &str) -> anyhow::Result<PathBuf> {
        let path = self.component(component)?.join(relative);
        if !path.is_file() {
            bail!("{} is missing; {BUILD_HINT}", path.display());
        }
        Ok(path)
    }

    /// OLM's CustomResourceDefinitions from the same release.
    pub fn olm_crds(&self) -> anyhow::Result<Vec<PathBuf>> {
        yaml_files(&self.component("OLM")?.join("crds"))
    }
}

/// `cert-manager-v1.11.5` → `v1.11.5`, `olm-v0.46.0+images` → `v0.46.0`: the version starts
/// at the last `-v` (component names have dashes of their own), the cache key's `+…` dropped.
fn version_in_folder_name(name: &str) -> Option<String> {
    let version = &name[name.rfind("-v")? + 1..];
    Some(version.split('+').next().unwrap_or(version).to_string())
}

fn yaml_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}; {BUILD_HINT}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no YAML files in {}; {BUILD_HINT}", dir.display());
    }
    Ok(files)
}

/// The version of `module` that the Go toolchain compiled into `binary`, from the build
/// information every Go binary carries (`go version -m` prints it): the `mod` line of the
/// main package's module or a `dep` line, `<mod|dep>\t<path>\t<version>`. The asset build
/// stamps version strings with `-ldflags -X`, so what a program prints about itself proves
/// nothing; this is written by `go build` from the module graph.
pub fn compiled_module_version(binary: &std::path::Path, module: &str) -> anyhow::Result<String> {
    let bytes = std::fs::read(binary)?;
    for kind in ["mod", "dep"] {
        let needle = format!("{kind}\t{module}\t");
        if let Some(at) = bytes
            .windows(needle.len())
            .position(|w| w == needle.as_bytes())
        {
            let rest = &bytes[at + needle.len()..];
            let end = rest
                .iter()
                .position(|b| *b == b'\t' || *b == b'\n')
                .unwrap_or(rest.len());
            return Ok(String::from_utf8_lossy(&rest[..end]).into_owned());
        }
    }
    anyhow::bail!("{} has no build information for {module}", binary.display())
}

#[cfg(test)]
mod tests {
    use super::version_in_folder_name;

    #[test]
    fn a_version_is_read_after_the_component_name_with_its_dashes() {
        for (name, version) in [
            ("coredns-v1.15.0", "v1.15.0"),
            ("cert-manager-v1.11.5", "v1.11.5"),
            ("grpc-health-probe-v0.4.62", "v0.4.62"),
            ("olm-v0.46.0+images", "v0.46.0"),
        ] {
            assert_eq!(
                version_in_folder_name(name).as_deref(),
                Some(version),
                "{name}"
            );
        }
        assert_eq!(version_in_folder_name("unversioned"), None);
    }
}
