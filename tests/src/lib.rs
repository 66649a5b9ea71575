//! The real parts the end-to-end tests run against, started on loopback by Rust code:
//!
//! - [`ControlPlane`]: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
//!   (fake nodes whose pods become Running/Ready), a default StorageClass with a small
//!   provisioner so that `volumeClaimTemplates` bind, and a kubeconfig. [`ControlPlane::shared`]
//!   gives every test of a binary the same one.
//! - [`RealNode`]: a real node of that control plane (containerd, runc, CNI, kubelet,
//!   kube-proxy, CoreDNS, a registry), started on first use by [`ControlPlane::real_node`].
//! - [`OciRegistry`]: Debian's `docker-registry`, anonymous or with htpasswd basic auth.
//! - [`TokenRegistry`]: `docker-registry` over HTTPS (a test CA) with `auth: token`, and the
//!   [`token_server`] it sends clients to.
//! - [`assets`]: where the pinned Go programs (and `opm`, `operator-sdk`, OLM) are.
//!
//! Nothing here downloads anything: `tests/assets/build-go-assets.sh` (run by the README test
//! command) fills the cache, and a missing binary is an error that says what to run.
//! Test binaries run in a network namespace of their own (see `.cargo/config.toml` and
//! `tests/assets/netns-runner.sh`), so processes that bind every interface stay local.

mod api_fault_proxy;
pub mod assets;
pub mod bench_run;
pub mod catalogd;
mod control_plane;
pub mod corpus;
mod fault_proxy;
pub mod node;
pub mod olm;
pub mod olm_on_node;
pub mod olm_v1_on_node;
pub mod operator_sdk;
mod pki;
mod ports;
mod process;
mod provisioner;
mod registry;
pub mod registry_server;
pub mod release_inputs;
mod token_registry;
pub mod token_server;
pub mod upgrade_pairs;
pub mod validate_report;

pub use api_fault_proxy::ApiFaultProxy;
pub(crate) use control_plane::client_from as control_plane_client;
pub use control_plane::{ControlPlane, ControlPlaneOptions};
pub use fault_proxy::FaultyProxy;
pub use node::RealNode;
pub use pki::write_serving_pair;
pub use process::ManagedProcess;
pub use registry::{OciRegistry, RegistryAuth, RegistryTls};
pub use token_registry::{TokenRegistry, policy as token_policy};

/// Fails unless this process is in a network namespace whose only interface is loopback, as
/// the cargo runner (`tests/assets/netns-runner.sh`) arranges. Call it before starting a
/// program that binds every interface (OLM, `opm serve`).
pub fn require_isolated_network() -> anyhow::Result<()> {
    // /proc/self/net follows this process's namespace; /sys/class/net follows sysfs's mount.
    let devices = std::fs::read_to_string("/proc/self/net/dev")?;
    let interfaces: Vec<String> = devices
        .lines()
        .skip(2)
        .filter_map(|line| line.split(':').next())
        .map(|name| name.trim().to_string())
        .filter(|name| !node::network::is_harness_link(name))
        .collect();
    anyhow::ensure!(
        interfaces.is_empty(),
        "this test starts programs that bind every interface, so it must run in a network \
         namespace with only loopback and the test cluster's own links (found \
         {interfaces:?}); run it through `cargo test`, whose runner \
         (tests/assets/netns-runner.sh) provides one"
    );
    Ok(())
}

/// A plain HTTP/1.0 GET on `127.0.0.1:port`: the status code and the body.
pub async fn http_get(port: u16, path: &str) -> anyhow::Result<(u16, String)> {
    http_get_at(&format!("127.0.0.1:{port}"), path).await
}

/// A plain HTTP/1.0 GET on `address` (`ip:port`): the status code and the body.
pub async fn http_get_at(address: &str, path: &str) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes())
        .await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    ports::free_port()
}

/// The `bundle-tool` binary of this build (beside the test binaries' folder), for tests that
/// run it as users do. The README test command builds it first. A binary older than any of
/// its sources is refused: `cargo test` does not rebuild it, and an old binary would test old
/// code.
pub fn bundle_tool_binary() -> std::path::PathBuf {
    static CHECKED: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| workspace_binary("bundle-tool", &["bundle-tool/src", SERVER_INPUTS]))
        .clone()
}

/// The `catalog-server` binary of this build (beside `bundle-tool`): the server every catalog
/// image built by `bundle-tool` from that folder carries. Refused when older than its sources,
/// as [`bundle_tool_binary`] is.
pub fn catalog_server_binary() -> std::path::PathBuf {
    static CHECKED: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| workspace_binary("catalog-server", &[SERVER_INPUTS]))
        .clone()
}

/// The server's inputs, which `bundle-tool` is built from as well (a space-separated list of
/// paths in the workspace).
const SERVER_INPUTS: &str =
    "catalog-server/src catalog-server/proto catalog-server/build.rs catalog-model/src";

/// The program `name` of this build, checked newer than every file of `inputs` (paths in the
/// workspace, space-separated within an item: the binary's inputs only, since tests and
/// fixtures are not, and `cargo build` does not relink the binary when they change).
fn workspace_binary(name: &str, inputs: &[&str]) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let path = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("the target folder")
        .join(name);
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for input in inputs.iter().flat_map(|item| item.split(' ')) {
        if let Err(why) = check_built_after(&path, &workspace.join(input)) {
            panic!("{why}: run `cargo build --workspace` (the README test command does)");
        }
    }
    path
}

/// Fails unless `binary` exists and is newer than `sources` (a file, or every file below a
/// folder, outside `target/` folders).
fn check_built_after(binary: &std::path::Path, sources: &std::path::Path) -> Result<(), String> {
    let built = std::fs::metadata(binary)
        .and_then(|m| m.modified())
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    if sources.is_file() {
        let modified = std::fs::metadata(sources)
            .and_then(|m| m.modified())
            .map_err(|e| format!("{}: {e}", sources.display()))?;
        if modified > built {
            return Err(format!(
                "{} is older than {}",
                binary.display(),
                sources.display()
            ));
        }
        return Ok(());
    }
    let mut stack = vec![sources.to_path_buf()];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                if entry.file_name() != "target" {
                    stack.push(path);
                }
                continue;
            }
            files += 1;
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if modified > built {
                return Err(format!(
                    "{} is older than {}",
                    binary.display(),
                    path.display()
                ));
            }
        }
    }
    if files == 0 {
        return Err(format!("no source files below {}", sources.display()));
    }
    Ok(())
}

/// Copies a folder tree.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)?.filter_map(Result::ok) {
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()))?;
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Polls `check` every 200 ms until it returns `Some`, or fails after `timeout` naming `what`.
pub async fn eventually<T, F, Fut>(
    timeout: std::time::Duration,
    what: &str,
    mut check: F,
) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Server-side applies a CRD and waits (up to 30 s) until the apiserver serves it.
pub async fn apply_crd(
    client: &kube::Client,
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, Patch, PatchParams};
    use kube::runtime::{conditions, wait::await_condition};
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd
        .metadata
        .name
        .clone()
        .ok_or_else(|| anyhow::anyhow!("the CRD has no name"))?;
    crds.patch(
        &name,
        &PatchParams::apply("e2e").force(),
        &Patch::Apply(crd),
    )
    .await?;
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        await_condition(crds, &name, conditions::is_crd_established()),
    )
    .await??;
    Ok(())
}

/// Server-side applies objects given as JSON (any kind the apiserver serves; the resource is
/// found by discovery), as `kubectl apply --server-side` does, with field manager `e2e`. A
/// namespaced object without a namespace goes to `default`.
pub async fn apply_objects(
    client: &kube::Client,
    objects: &[serde_json::Value],
) -> anyhow::Result<()> {
    use anyhow::Context;
    use kube::api::{Api, DynamicObject, Patch, PatchParams};
    use kube::core::GroupVersionKind;
    use kube::discovery::{ApiCapabilities, ApiResource, Scope};
    // Each kind is looked up in its own group version, once: a discovery of every group
    // fails with a bare 404 when a CRD's group goes away while it runs (an uninstall
    // removing its CRDs beside the apply).
    let mut kinds: std::collections::HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)> =
        std::collections::HashMap::new();
    for object in objects {
        let api_version = object["apiVersion"]
            .as_str()
            .context("a manifest without apiVersion")?;
        let kind = object["kind"].as_str().context("a manifest without kind")?;
        let name = object["metadata"]["name"]
            .as_str()
            .context("a manifest without a name")?;
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = match kinds.get(&gvk) {
            Some(found) => found.clone(),
            None => {
                let found = kube::discovery::pinned_kind(client, &gvk)
                    .await
                    .with_context(|| format!("the cluster does not serve {gvk:?}"))?;
                kinds.insert(gvk.clone(), found.clone());
                found
            }
        };
        let api: Api<DynamicObject> = match (
            &capabilities.scope,
            object["metadata"]["namespace"].as_str(),
        ) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
            (Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &resource),
            (Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
        };
        api.patch(
            name,
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(object),
        )
        .await
        .with_context(|| format!("apply {kind} {name}"))?;
    }
    Ok(())
}

/// Creates the namespace `name` (with `annotations`, if any) and waits until its `default`
/// ServiceAccount exists: the ServiceAccount admission plugin refuses pods until then, and
/// the controller-manager makes it a moment after the namespace.
pub async fn create_namespace(
    client: &kube::Client,
    name: &str,
    annotations: Option<serde_json::Value>,
) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, PostParams};
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut metadata = serde_json::json!({"name": name});
    if let Some(annotations) = annotations {
        metadata["annotations"] = annotations;
    }
    let namespace: Namespace = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": metadata,
    }))?;
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .map_err(|e| anyhow::anyhow!("creating the namespace {name}: {e}"))?;
    wait_for_default_service_account(client, name).await
}

/// Waits (up to 30 s) for the `default` ServiceAccount of `namespace`.
pub async fn wait_for_default_service_account(
    client: &kube::Client,
    namespace: &str,
) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use kube::api::Api;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    eventually(
        std::time::Duration::from_secs(30),
        &format!("the default ServiceAccount of {namespace}"),
        || {
            let accounts = accounts.clone();
            async move { Ok(accounts.get_opt("default").await?.map(|_| ())) }
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::check_built_after;

    #[test]
    fn a_binary_older_than_a_source_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sources = dir.path().join("src");
        std::fs::create_dir_all(sources.join("nested")).unwrap();
        let binary = dir.path().join("bin");
        std::fs::write(&binary, "").unwrap();
        assert!(check_built_after(&binary, &sources).is_err(), "no sources");
        let source = sources.join("nested/a.rs");
        std::fs::write(&source, "").unwrap();
        let file = std::fs::File::options().write(true).open(&source).unwrap();
        let later = std::fs::metadata(&binary).unwrap().modified().unwrap()
            + std::time::Duration::from_secs(5);
        file.set_modified(later).unwrap();
        let err = check_built_after(&binary, &sources).unwrap_err();
        assert!(err.contains("nested/a.rs"), "{err}");
        let bin = std::fs::File::options().write(true).open(&binary).unwrap();
        bin.set_modified(later + std::time::Duration::from_secs(1))
            .unwrap();
        assert_eq!(check_built_after(&binary, &sources), Ok(()));
        assert_eq!(check_built_after(&binary, &source), Ok(()));
        assert!(check_built_after(&dir.path().join("missing"), &sources).is_err());
        assert!(check_built_after(&binary, &dir.path().join("missing")).is_err());
    }
}
