//! OLM v1's catalogd (operator-controller v1.11.0, `cmd/catalogd`) run as a process against
//! the test control plane, the way its Deployment runs it, with what a pod would give it
//! supplied by the test:
//!
//! - **its ServiceAccount token** at `/var/run/secrets/kubernetes.io/serviceaccount/token`:
//!   catalogd reads that fixed path at start-up (`internal/shared/util/sa`, no flag or
//!   variable) and refuses to start without a token whose subject names a ServiceAccount. The
//!   process runs in a mount namespace of its own (`unshare --mount`) with a tmpfs on the
//!   deepest existing folder of that path, holding a real token of
//!   `olmv1-system/catalogd-controller-manager` from the TokenRequest API; its kubeconfig
//!   authenticates with the same token, so it acts as that account (bound to `cluster-admin`
//!   here, where the chart grants narrower rules).
//! - **TLS**: a serving certificate for 127.0.0.1 from a CA of its own (`--tls-cert`,
//!   `--tls-key`): the catalog server, the metrics server and the webhook server all use it.
//! - **its mutating webhook**, registered as the chart registers it (failurePolicy Fail, the
//!   same match condition) but pointing at `https://127.0.0.1:<port>` with that CA: the
//!   webhook server binds every interface, so the caller must be in an isolated network
//!   namespace ([`crate::require_isolated_network`]).
//! - **image pulls** through containers/image's configuration, read from test-owned files:
//!   `CONTAINERS_REGISTRIES_CONF` (the loopback registry `insecure = true`, which lets
//!   containers/image fall back to plain HTTP), `CONTAINERS_POLICY_JSON` (reject everything but
//!   that registry), and `HOME`/`XDG_*` in the process's folder so no user or host
//!   credentials are read.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::assets::Assets;
use crate::control_plane::ControlPlane;
use crate::process::ManagedProcess;

/// The namespace and ServiceAccount catalogd runs as (the chart's names).
pub const NAMESPACE: &str = "olmv1-system";
/// The chart's ServiceAccount name for catalogd.
pub const SERVICE_ACCOUNT: &str = "catalogd-controller-manager";
const TOKEN_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const WEBHOOK_PATH: &str = "/mutate-olm-operatorframework-io-v1-clustercatalog";

/// How to start catalogd.
#[derive(Clone, Debug, Default)]
pub struct CatalogdOptions {
    /// `--feature-gates APIV1MetasHandler=true`: serve `/api/v1/metas`.
    pub metas_handler: bool,
}

/// A running catalogd.
pub struct Catalogd {
    process: ManagedProcess,
    ca_pem: String,
    catalog_port: u16,
    _dir: tempfile::TempDir,
}

/// One HTTP answer.
#[derive(Debug)]
pub struct HttpAnswer {
    /// The status code.
    pub status: u16,
    /// The header lines, names in lower case, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpAnswer {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Catalogd {
    /// Installs the ClusterCatalog CRD and the webhook, and starts catalogd pulling from
    /// `registry_host` (`127.0.0.1:port`, plain HTTP).
    pub async fn start(
        plane: &ControlPlane,
        registry_host: &str,
        options: CatalogdOptions,
    ) -> anyhow::Result<Catalogd> {
        crate::require_isolated_network()?;
        let assets = Assets::locate()?;
        let program = assets.catalogd()?;
        let client = plane.client().await?;
        for path in assets.catalogd_crds()? {
            let text = std::fs::read_to_string(&path)?;
            let crd = serde_saphyr::from_str(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            crate::apply_crd(&client, &crd).await?;
        }
        crate::apply_objects(
            &client,
            &[
                serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": NAMESPACE}}),
                serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}}),
                serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": "e2e-catalogd-cluster-admin"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole", "name": "cluster-admin"},
                    "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT,
                        "namespace": NAMESPACE}]}),
            ],
        )
        .await?;
        let token = plane
            .service_account_token(NAMESPACE, SERVICE_ACCOUNT)
            .await?;

        let dir = tempfile::Builder::new().prefix("e2e-catalogd-").tempdir()?;
        let root = dir.path();
        let (cert, key, ca_pem) =
            crate::pki::write_serving_pair(root, "catalogd", &["127.0.0.1", "localhost"])?;
        let kubeconfig = root.join("kubeconfig");
        let plane_ca = std::fs::read_to_string(plane.root().join("ca.crt"))?;
        std::fs::write(
            &kubeconfig,
            crate::control_plane::kubeconfig_yaml_for(
                plane.server_url(),
                &plane_ca,
                SERVICE_ACCOUNT,
                &token,
            ),
        )?;
        std::fs::write(root.join("token"), &token)?;
        let registries_conf = root.join("registries.conf");
        std::fs::write(
            &registries_conf,
            format!("[[registry]]\nlocation = \"{registry_host}\"\ninsecure = true\n"),
        )?;
        let policy = root.join("policy.json");
        std::fs::write(
            &policy,
            serde_json::to_vec_pretty(&serde_json::json!({
                "default": [{"type": "reject"}],
                "transports": {"docker": {registry_host: [{"type": "insecureAcceptAnything"}]}}
            }))?,
        )?;
        for sub in ["home/.config", "run", "cache"] {
            std::fs::create_dir_all(root.join(sub))?;
        }

        let catalog_port = crate::free_port()?;
        let probe_port = crate::free_port()?;
        let metrics_port = crate::free_port()?;
        let webhook_port = crate::free_port()?;
        let mount_point = Path::new(TOKEN_DIR)
            .ancestors()
            .find(|p| p.is_dir())
            .filter(|p| *p != Path::new("/"))
            .context("no folder of /var/run/secrets/kubernetes.io/serviceaccount exists")?
            .to_path_buf();
        // sh: mount a tmpfs on the folder, put the token where a pod has it, then exec.
        let script = format!(
            "mount -t tmpfs -o mode=0755 e2e-serviceaccount {mount} && mkdir -p {dir} && \
             cp \"$0\" {dir}/token && printf %s {ns} > {dir}/namespace && exec \"$@\"",
            mount = mount_point.display(),
            dir = TOKEN_DIR,
            ns = NAMESPACE,
        );
        let mut args: Vec<String> = vec![
            "--mount".into(),
            "--propagation".into(),
            "private".into(),
            "--".into(),
            "sh".into(),
            "-c".into(),
            script,
            root.join("token").display().to_string(),
            program.display().to_string(),
        ];
        let addr = |port: u16| format!("127.0.0.1:{port}");
        args.extend([
            format!("--catalogs-server-addr={}", addr(catalog_port)),
            format!("--external-address={}", addr(catalog_port)),
            format!("--health-probe-bind-address={}", addr(probe_port)),
            format!("--metrics-bind-address={}", addr(metrics_port)),
            format!("--webhook-server-port={webhook_port}"),
            format!("--tls-cert={}", cert.display()),
            format!("--tls-key={}", key.display()),
            format!("--cache-dir={}", root.join("cache").display()),
            format!("--system-namespace={NAMESPACE}"),
            format!(
                "--feature-gates=APIV1MetasHandler={}",
                options.metas_handler
            ),
        ]);
        let path = |sub: &str| root.join(sub).display().to_string();
        let (home, run, config) = (path("home"), path("run"), path("home/.config"));
        let (kubeconfig, registries_conf, policy) = (
            kubeconfig.display().to_string(),
            registries_conf.display().to_string(),
            policy.display().to_string(),
        );
        let process = ManagedProcess::spawn(
            "catalogd",
            Path::new("unshare"),
            &args,
            &[
                ("KUBECONFIG", kubeconfig.as_str()),
                ("CONTAINERS_REGISTRIES_CONF", registries_conf.as_str()),
                ("CONTAINERS_POLICY_JSON", policy.as_str()),
                ("HOME", home.as_str()),
                ("XDG_RUNTIME_DIR", run.as_str()),
                ("XDG_CONFIG_HOME", config.as_str()),
                ("DOCKER_CONFIG", home.as_str()),
            ],
            &root.join("catalogd.log"),
        )?;
        process
            .wait_ready(Duration::from_secs(60), || async move {
                crate::http_get(probe_port, "/readyz")
                    .await
                    .map(|(status, _)| status == 200)
                    .or(Ok(false))
            })
            .await?;

        let ca_bundle = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            ca_pem.as_bytes(),
        );
        crate::apply_objects(
            &client,
            &[serde_json::json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "catalogd-mutating-webhook-configuration"},
                "webhooks": [{
                    "name": "inject-metadata-name.olm.operatorframework.io",
                    "admissionReviewVersions": ["v1"],
                    "clientConfig": {
                        "url": format!("https://127.0.0.1:{webhook_port}{WEBHOOK_PATH}"),
                        "caBundle": ca_bundle,
                    },
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "timeoutSeconds": 10,
                    "rules": [{"apiGroups": ["olm.operatorframework.io"], "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"], "resources": ["clustercatalogs"]}],
                    "matchConditions": [{"name": "MissingOrIncorrectMetadataNameLabel",
                        "expression": "'name' in object.metadata && (!has(object.metadata.labels) || !('olm.operatorframework.io/metadata.name' in object.metadata.labels) || object.metadata.labels['olm.operatorframework.io/metadata.name'] != object.metadata.name)"}],
                }],
            })],
        )
        .await?;
        Ok(Catalogd {
            process,
            ca_pem,
            catalog_port,
            _dir: dir,
        })
    }

    /// Creates a ClusterCatalog named `name` on `image` and waits for `Serving=True`;
    /// returns its `status.urls.base`.
    pub async fn serve_catalog(
        &self,
        client: &kube::Client,
        name: &str,
        image: &str,
    ) -> anyhow::Result<String> {
        let gvk =
            kube::core::GroupVersionKind::gvk("olm.operatorframework.io", "v1", "ClusterCatalog");
        let api: kube::Api<kube::api::DynamicObject> =
            kube::Api::all_with(client.clone(), &kube::core::ApiResource::from_gvk(&gvk));
        let object: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": name},
            "spec": {"source": {"type": "Image", "image": {"ref": image}}},
        }))?;
        api.create(&kube::api::PostParams::default(), &object)
            .await?;
        let api = &api;
        crate::eventually(
            Duration::from_secs(120),
            &format!("ClusterCatalog {name} Serving=True"),
            || async move {
                self.process.check_running()?;
                let object = api.get(name).await?;
                let status = &object.data["status"];
                let serving = status["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Serving" && c["status"] == "True");
                Ok(match status["urls"]["base"].as_str() {
                    Some(base) if serving => Some(base.to_string()),
                    _ => None,
                })
            },
        )
        .await
    }

    /// The process (its log, whether it still runs).
    pub fn process(&self) -> &ManagedProcess {
        &self.process
    }

    /// The catalog server's `host:port` on loopback.
    pub fn catalog_address(&self) -> String {
        format!("127.0.0.1:{}", self.catalog_port)
    }

    /// An HTTP/1.0 request over TLS to `url` (an `https://127.0.0.1:port/...` URL catalogd
    /// reports), trusting catalogd's CA only.
    pub async fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<HttpAnswer> {
        let rest = url
            .strip_prefix("https://")
            .with_context(|| format!("{url} is not an https URL"))?;
        let (address, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let tls = self.connect(address).await?;
        raw_request(tls, method, address, path, headers).await
    }

    /// A TLS connection to catalogd's catalog server at `address` (`127.0.0.1:port`),
    /// trusting catalogd's CA only; for clients that keep a connection (benchmarks).
    pub async fn connect(
        &self,
        address: &str,
    ) -> anyhow::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
        let mut roots = rustls::RootCertStore::empty();
        {
            use rustls::pki_types::pem::PemObject;
            for cert in rustls::pki_types::CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
                roots.add(cert?)?;
            }
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
        let name = rustls::pki_types::ServerName::try_from(host.to_string())?;
        let tcp = tokio::net::TcpStream::connect(address).await?;
        Ok(tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await?)
    }
}

/// An HTTP/1.0 request on plain TCP to `address` (`ip:port`).
pub async fn http_request(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<HttpAnswer> {
    let tcp = tokio::net::TcpStream::connect(address).await?;
    raw_request(tcp, method, address, path, headers).await
}

async fn raw_request<S>(
    mut stream: S,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<HttpAnswer>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = format!("{method} {path} HTTP/1.0\r\nHost: {host}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    // A TLS server may end without close_notify; what was read until then is the answer.
    if let Err(error) = stream.read_to_end(&mut answer).await
        && (answer.is_empty() || error.kind() != std::io::ErrorKind::UnexpectedEof)
    {
        return Err(error.into());
    }
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("an answer without the end of its header")?;
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .context("an answer without a status line")?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(HttpAnswer {
        status,
        headers,
        body: answer[end + 4..].to_vec(),
    })
}
