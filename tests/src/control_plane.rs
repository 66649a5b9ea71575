//! A real Kubernetes control plane in the test's network namespace: etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok, with fake nodes and a default
//! StorageClass, ready for a real node ([`ControlPlane::real_node`]) to join.
//!
//! The apiserver listens on every interface of the namespace and advertises the node's
//! address, which is the `kubernetes` Service's endpoint, so pods on the real node reach it;
//! tests and programs outside pods use loopback.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::assets::Assets;
use crate::node::{NodeJoin, RealNode, network};
use crate::pki::write_pki;
use crate::ports::free_port;
use crate::process::ManagedProcess;
use crate::provisioner::{PROVISIONER_NAME, Provisioner, STORAGE_CLASS};

/// How to start a [`ControlPlane`].
#[derive(Clone, Debug)]
pub struct ControlPlaneOptions {
    /// How many fake nodes kwok manages.
    pub nodes: usize,
}

impl Default for ControlPlaneOptions {
    fn default() -> Self {
        ControlPlaneOptions { nodes: 2 }
    }
}

/// A running control plane. Dropping it stops every process (newest first) and removes its
/// folder, unless `E2E_KEEP_DIR` is set, in which case the folder (logs, kubeconfig) stays.
pub struct ControlPlane {
    // Field order is drop order: the provisioner's client goes before the apiserver does.
    provisioner: Option<Provisioner>,
    processes: Vec<ManagedProcess>,
    kubeconfig: PathBuf,
    server: String,
    version: String,
    node_tokens: NodeTokens,
    ca_cert: PathBuf,
    real_node: tokio::sync::OnceCell<Result<RealNode, String>>,
    dir: Option<tempfile::TempDir>,
    kept_dir: Option<PathBuf>,
}

/// The admin user's bearer token file line: a `system:masters` member, like envtest's user.
const ADMIN_TOKEN_USER: &str = "e2e-admin";

/// The real node's credentials, in the apiserver's token file from the start.
struct NodeTokens {
    kubelet: String,
    proxy: String,
}

impl ControlPlane {
    /// The control plane shared by every test of this test binary, started on first use.
    ///
    /// Each test must build its own clients ([`ControlPlane::client`]): a client belongs to
    /// the tokio runtime it was made on, and every `#[tokio::test]` has its own runtime.
    /// The processes outlive the tests and are killed when the test binary exits.
    pub async fn shared() -> anyhow::Result<Arc<ControlPlane>> {
        static SHARED: tokio::sync::Mutex<Option<Result<Arc<ControlPlane>, String>>> =
            tokio::sync::Mutex::const_new(None);
        let mut slot = SHARED.lock().await;
        if slot.is_none() {
            let started = ControlPlane::start(ControlPlaneOptions::default())
                .await
                .map(Arc::new)
                .map_err(|e| format!("{e:#}"));
            *slot = Some(started);
        }
        match slot.as_ref().expect("set above") {
            Ok(plane) => {
                plane.check_running()?;
                Ok(plane.clone())
            }
            // Every test sees the first start-up failure instead of each retrying for a minute.
            Err(message) => bail!("the shared control plane failed to start: {message}"),
        }
    }

    /// Starts a new control plane of its own.
    pub async fn start(options: ControlPlaneOptions) -> anyhow::Result<ControlPlane> {
        let assets = Assets::locate()?;
        remove_stale_dirs();
        let dir = tempfile::Builder::new()
            .prefix("e2e-control-plane-")
            .tempdir()?;
        let root = dir.path().to_path_buf();
        std::fs::write(root.join("owner.pid"), std::process::id().to_string())?;
        std::fs::create_dir_all(root.join("logs"))?;
        let log = |name: &str| root.join("logs").join(format!("{name}.log"));

        network::prepare()?;
        let pki = write_pki(&root)?;
        let token = random_token()?;
        let node_tokens = NodeTokens {
            kubelet: random_token()?,
            proxy: random_token()?,
        };
        let tokens_file = root.join("tokens.csv");
        // The Node authorizer knows kubelets by `system:node:<name>` in `system:nodes`; the
        // bootstrap role `system:node-proxier` is bound to the user `system:kube-proxy`.
        std::fs::write(
            &tokens_file,
            format!(
                "{token},{ADMIN_TOKEN_USER},e2e-admin-uid,\"system:masters\"\n\
                 {},system:node:{},e2e-node-uid,\"system:nodes\"\n\
                 {},system:kube-proxy,e2e-proxy-uid\n",
                node_tokens.kubelet,
                crate::node::NODE_NAME,
                node_tokens.proxy
            ),
        )?;

        let mut processes = Vec::new();

        // etcd
        let etcd_client = free_port()?;
        let etcd_peer = free_port()?;
        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        let etcd = ManagedProcess::spawn(
            "etcd",
            &assets.etcd()?,
            &[
                "--name=e2e".into(),
                format!("--data-dir={}", root.join("etcd").display()),
                format!("--listen-client-urls={etcd_url}"),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-peer-urls={peer_url}"),
                format!("--initial-advertise-peer-urls={peer_url}"),
                format!("--initial-cluster=e2e={peer_url}"),
                "--unsafe-no-fsync=true".into(),
                "--log-level=warn".into(),
            ],
            &[],
            &log("etcd"),
        )?;
        etcd.wait_ready(Duration::from_secs(30), || {
            http_get_ok(etcd_client, "/health")
        })
        .await?;
        processes.push(etcd);

        // kube-apiserver, with an audit log of deletions only: when a test finds an object
        // gone, the log says who deleted it (the garbage collector, an OLM controller, the
        // test). Deletions are rare, so the log stays small.
        let audit_policy = root.join("audit-policy.yaml");
        std::fs::write(&audit_policy, AUDIT_POLICY)?;
        let audit_log = root.join("logs").join("audit-deletions.log");
        let apiserver_port = free_port()?;
        let server = format!("https://127.0.0.1:{apiserver_port}");
        let apiserver = ManagedProcess::spawn(
            "kube-apiserver",
            &assets.kubernetes("kube-apiserver")?,
            &[
                format!("--etcd-servers={etcd_url}"),
                // Every interface of the test's own namespace: loopback and the node's address.
                "--bind-address=0.0.0.0".into(),
                format!("--advertise-address={}", network::NODE_IP),
                format!("--secure-port={apiserver_port}"),
                format!("--cert-dir={}", root.join("apiserver-certs").display()),
                format!("--tls-cert-file={}", pki.serving_cert.display()),
                format!("--tls-private-key-file={}", pki.serving_key.display()),
                format!("--token-auth-file={}", tokens_file.display()),
                "--authorization-mode=Node,RBAC".into(),
                format!("--service-cluster-ip-range={}", network::SERVICE_CIDR),
                format!(
                    "--kubelet-client-certificate={}",
                    pki.kubelet_client_cert.display()
                ),
                format!("--kubelet-client-key={}", pki.kubelet_client_key.display()),
                "--kubelet-preferred-address-types=InternalIP".into(),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
                format!(
                    "--service-account-key-file={}",
                    pki.service_account_public_key.display()
                ),
                format!(
                    "--service-account-signing-key-file={}",
                    pki.service_account_key.display()
                ),
                "--allow-privileged=true".into(),
                // The aggregation layer, for OLM's packageserver (`kubectl get
                // packagemanifests`): requests are proxied with the front-proxy client
                // certificate, straight to the endpoints (the apiserver is not a pod).
                format!(
                    "--requestheader-client-ca-file={}",
                    pki.front_proxy_ca_cert.display()
                ),
                format!(
                    "--requestheader-allowed-names={}",
                    crate::pki::FRONT_PROXY_CLIENT_NAME
                ),
                "--requestheader-username-headers=X-Remote-User".into(),
                "--requestheader-group-headers=X-Remote-Group".into(),
                "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
                format!(
                    "--proxy-client-cert-file={}",
                    pki.front_proxy_client_cert.display()
                ),
                format!(
                    "--proxy-client-key-file={}",
                    pki.front_proxy_client_key.display()
                ),
                "--enable-aggregator-routing=true".into(),
                // Pods that really run need their ServiceAccount token (the ServiceAccount
                // plugin is on by default). A namespace can pin its pods to the real node, as
                // an admin would: a node selector and a toleration from its annotations.
                "--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction".into(),
                "--profiling=false".into(),
                format!("--audit-policy-file={}", audit_policy.display()),
                format!("--audit-log-path={}", audit_log.display()),
                "--audit-log-format=json".into(),
            ],
            &[],
            &log("kube-apiserver"),
        )?;
        let kubeconfig = root.join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_yaml(&server, &pki.ca_pem, &token))?;
        {
            let probe = client_from(&kubeconfig).await?;
            apiserver
                .wait_ready(Duration::from_secs(90), || {
                    let probe = probe.clone();
                    async move { readyz(&probe).await }
                })
                .await?;
        }
        processes.push(apiserver);
        let client = client_from(&kubeconfig).await?;
        let version = client.apiserver_version().await?.git_version;

        let kubeconfig_arg = format!("--kubeconfig={}", kubeconfig.display());
        processes.push(ManagedProcess::spawn(
            "kube-controller-manager",
            &assets.kubernetes("kube-controller-manager")?,
            &[
                kubeconfig_arg.clone(),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                "--secure-port=0".into(),
                format!(
                    "--service-account-private-key-file={}",
                    pki.service_account_key.display()
                ),
                format!("--root-ca-file={}", pki.ca_cert.display()),
                // Each node gets a /24 of the pod range; the real node's bridge uses it.
                "--allocate-node-cidrs=true".into(),
                format!("--cluster-cidr={}", network::CLUSTER_CIDR),
                "--node-cidr-mask-size=24".into(),
                format!("--service-cluster-ip-range={}", network::SERVICE_CIDR),
                "--use-service-account-credentials=true".into(),
                "--profiling=false".into(),
            ],
            &[],
            &log("kube-controller-manager"),
        )?);
        processes.push(ManagedProcess::spawn(
            "kube-scheduler",
            &assets.kubernetes("kube-scheduler")?,
            &[
                kubeconfig_arg.clone(),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                "--secure-port=0".into(),
                "--profiling=false".into(),
            ],
            &[],
            &log("kube-scheduler"),
        )?);

        let mut kwok_args = vec![
            kubeconfig_arg.clone(),
            // Only the fake nodes: the real node keeps its kubelet's status.
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".into(),
            format!("--server-address=127.0.0.1:{}", free_port()?),
            "--cidr=10.244.0.1/16".into(),
            "--node-ip=127.0.0.1".into(),
            // kwok renews each node's Lease, as a kubelet does; with the heartbeat stage this
            // keeps nodes (and so pods) Ready past the node monitor's grace period.
            "--node-lease-duration-seconds=40".into(),
        ];
        for stage in assets.kwok_stages()? {
            kwok_args.push(format!("--config={}", stage.display()));
        }
        processes.push(ManagedProcess::spawn(
            "kwok",
            &assets.kwok()?,
            &kwok_args,
            &[],
            &log("kwok"),
        )?);

        let mut plane = ControlPlane {
            provisioner: None,
            processes,
            kubeconfig,
            server,
            version,
            node_tokens,
            ca_cert: pki.ca_cert.clone(),
            real_node: tokio::sync::OnceCell::new(),
            kept_dir: std::env::var_os("E2E_KEEP_DIR").map(|_| root.clone()),
            dir: Some(dir),
        };
        if let Some(kept) = &plane.kept_dir {
            // The marker keeps the folder from the stale-folder cleanup of later runs.
            std::fs::write(kept.join("kept"), "E2E_KEEP_DIR was set\n")?;
            eprintln!("e2e: control plane folder kept at {}", kept.display());
        }

        create_nodes(&client, options.nodes).await?;
        create_storage_class(&client).await?;
        plane.provisioner = Some(Provisioner::start(
            plane.kubeconfig.clone(),
            root.join("volumes"),
        )?);
        plane.wait_nodes_ready(&client, options.nodes).await?;
        Ok(plane)
    }

    /// The real node of this control plane, started on first use (once per test binary; a
    /// failure is reported to every later caller without starting again).
    pub async fn real_node(&self) -> anyhow::Result<&RealNode> {
        let started = self
            .real_node
            .get_or_init(|| async {
                let client = self.client().await.map_err(|e| format!("{e:#}"))?;
                RealNode::start(
                    NodeJoin {
                        root: self.root(),
                        server: &self.server,
                        ca_cert: &self.ca_cert,
                        kubelet_token: &self.node_tokens.kubelet,
                        proxy_token: &self.node_tokens.proxy,
                        admin_kubeconfig: &self.kubeconfig,
                    },
                    &client,
                )
                .await
                .map_err(|e| format!("{e:#}"))
            })
            .await;
        match started {
            Ok(node) => {
                self.check_running()?;
                node.check_running()?;
                Ok(node)
            }
            Err(message) => bail!("the real node failed to start: {message}"),
        }
    }

    /// Errors with the dead program's log if any control plane process has stopped.
    pub fn check_running(&self) -> anyhow::Result<()> {
        for process in &self.processes {
            process.check_running()?;
        }
        Ok(())
    }

    /// A client authenticated as a cluster admin (`system:masters`).
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        client_from(&self.kubeconfig).await
    }

    /// The admin kubeconfig file, for programs under test (`KUBECONFIG=...`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The apiserver's audit log: one JSON event per line for every delete request
    /// (`verb`, `user.username`, `objectRef`), written when the response is sent.
    pub fn audit_log_path(&self) -> PathBuf {
        self.kubeconfig
            .with_file_name("logs")
            .join("audit-deletions.log")
    }

    /// The deletions in the audit log whose object is in `namespace` (or cluster-scoped, when
    /// `namespace` is empty), as `user verb resource/name` lines in the order they happened.
    /// A missing log is an error: the apiserver always writes one.
    pub fn deletions(&self, namespace: &str) -> anyhow::Result<Vec<String>> {
        let path = self.audit_log_path();
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading the audit log {}", path.display()))?;
        let mut out = Vec::new();
        for line in text.lines() {
            let event: serde_json::Value = serde_json::from_str(line)
                .with_context(|| format!("{}: not a JSON audit event", path.display()))?;
            let object = &event["objectRef"];
            if object["namespace"].as_str().unwrap_or("") != namespace {
                continue;
            }
            out.push(format!(
                "{} {} {} {}/{} -> {}",
                event["requestReceivedTimestamp"].as_str().unwrap_or(""),
                event["user"]["username"].as_str().unwrap_or(""),
                event["verb"].as_str().unwrap_or(""),
                object["resource"].as_str().unwrap_or(""),
                object["name"].as_str().unwrap_or(""),
                event["responseStatus"]["code"]
            ));
        }
        Ok(out)
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server_url(&self) -> &str {
        &self.server
    }

    /// What the apiserver reports as its version (e.g. `v1.36.3`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// A kubeconfig that authenticates as the ServiceAccount `namespace/name` (with a token
    /// from the TokenRequest API, valid for an hour), so a program under test runs with
    /// exactly the rights RBAC grants that account.
    pub async fn service_account_kubeconfig(
        &self,
        namespace: &str,
        name: &str,
    ) -> anyhow::Result<PathBuf> {
        let token = self.service_account_token(namespace, name).await?;
        let ca_pem = self.ca_pem()?;
        let path = self.root().join(format!("kubeconfig-{namespace}-{name}"));
        std::fs::write(&path, kubeconfig_yaml(&self.server, &ca_pem, &token))?;
        Ok(path)
    }

    /// A token of the ServiceAccount `namespace/name` from the TokenRequest API, valid for an
    /// hour: what the kubelet mounts into a pod of that account.
    pub async fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
    ) -> anyhow::Result<String> {
        let client = self.client().await?;
        let request = http::Request::post(format!(
            "/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        ))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600}
        }))?)?;
        let answer: serde_json::Value = client
            .request(request)
            .await
            .context("requesting a ServiceAccount token")?;
        let token = answer["status"]["token"]
            .as_str()
            .context("TokenRequest returned no token")?;
        Ok(token.to_string())
    }

    /// Restarts kube-apiserver (SIGTERM, SIGKILL after 5 s, then the same command line) and
    /// waits until it is ready again; every client's connections and watches break meanwhile.
    pub async fn restart_apiserver(&self) -> anyhow::Result<()> {
        let apiserver = self
            .processes
            .iter()
            .find(|p| p.name() == "kube-apiserver")
            .context("no kube-apiserver among the control plane's processes")?;
        apiserver.restart(Duration::from_secs(5))?;
        let probe = client_from(&self.kubeconfig).await?;
        apiserver
            .wait_ready(Duration::from_secs(90), || {
                let probe = probe.clone();
                async move { readyz(&probe).await }
            })
            .await?;
        // A component still starting when the apiserver went away exits (the controller
        // manager does, if it was building its controllers); in a cluster the kubelet
        // restarts its static pod, here we do.
        for process in &self.processes {
            if let Err(exited) = process.check_running() {
                eprintln!("e2e: restarting after the apiserver's restart: {exited:#}");
                process.restart(Duration::from_secs(1))?;
            }
        }
        Ok(())
    }

    /// The apiserver's CA (PEM).
    pub fn ca_pem(&self) -> anyhow::Result<String> {
        Ok(std::fs::read_to_string(self.root().join("ca.crt"))?)
    }

    /// The control plane's folder (certificates, kubeconfigs, logs).
    pub fn root(&self) -> &Path {
        self.kubeconfig
            .parent()
            .expect("the kubeconfig is inside the folder")
    }

    /// The processes, oldest first (etcd, kube-apiserver, …).
    pub fn processes(&self) -> &[ManagedProcess] {
        &self.processes
    }

    async fn wait_nodes_ready(&self, client: &kube::Client, count: usize) -> anyhow::Result<()> {
        let nodes: Api<Node> = Api::all(client.clone());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            self.check_running()?;
            let ready = nodes
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|n| node_is_ready(n))
                .count();
            if ready >= count {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                let kwok = self.processes.iter().find(|p| p.name() == "kwok");
                bail!(
                    "{ready} of {count} kwok nodes became Ready in 60s; kwok's log:{}",
                    kwok.map(|p| p.log_tail(25)).unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        // The node's programs talk to the apiserver: they stop first.
        self.real_node.take();
        self.provisioner.take();
        while let Some(process) = self.processes.pop() {
            drop(process);
        }
        if self.kept_dir.is_some()
            && let Some(dir) = self.dir.take()
        {
            let _ = dir.keep();
        }
    }
}

/// Removes the folders of control planes whose test binary has exited. The shared control
/// plane lives in a static, which is never dropped, so its folder (etcd data, logs: ~130 MB)
/// would otherwise stay behind after every run.
fn remove_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_ours = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("e2e-control-plane-"));
        if !is_ours || path.join("kept").exists() {
            continue;
        }
        let owner = std::fs::read_to_string(path.join("owner.pid"))
            .ok()
            .and_then(|pid| pid.trim().parse::<libc::pid_t>().ok());
        // SAFETY: kill(pid, 0) only checks whether the process exists.
        let alive = owner.is_some_and(|pid| unsafe { libc::kill(pid, 0) } == 0);
        if owner.is_some() && !alive {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

pub(crate) fn node_is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn create_nodes(client: &kube::Client, count: usize) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    for index in 0..count {
        let name = format!("kwok-node-{index}");
        // Status on create is kept for Nodes: kwok's stages then keep it Ready.
        let node: Node = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok"
                }
            },
            "status": {
                "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250"},
                "capacity": {"cpu": "64", "memory": "256Gi", "pods": "250"}
            }
        }))?;
        nodes
            .create(&PostParams::default(), &node)
            .await
            .with_context(|| format!("creating node {name}"))?;
    }
    Ok(())
}

async fn create_storage_class(client: &kube::Client) -> anyhow::Result<()> {
    let classes: Api<StorageClass> = Api::all(client.clone());
    let class: StorageClass = serde_json::from_value(serde_json::json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}
        },
        "provisioner": PROVISIONER_NAME,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate"
    }))?;
    classes
        .create(&PostParams::default(), &class)
        .await
        .context("creating the default StorageClass")?;
    Ok(())
}

fn kubeconfig_yaml(server: &str, ca_pem: &str, token: &str) -> String {
    kubeconfig_yaml_for(server, ca_pem, ADMIN_TOKEN_USER, token)
}

/// A kubeconfig for `server` that authenticates with a bearer token, the user entry named
/// `user`.
pub(crate) fn kubeconfig_yaml_for(server: &str, ca_pem: &str, user: &str, token: &str) -> String {
    let ca_data = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        ca_pem.as_bytes(),
    );
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: e2e\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca_data}\nusers:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n- name: e2e\n  context:\n    cluster: e2e\n    user: {user}\n    namespace: default\ncurrent-context: e2e\n"
    )
}

pub(crate) async fn client_from(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let config = Kubeconfig::read_from(kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

async fn readyz(client: &kube::Client) -> anyhow::Result<bool> {
    let request = http::Request::get("/readyz").body(Vec::new())?;
    let body = client.request_text(request).await?;
    Ok(body.trim() == "ok")
}

/// A plain-HTTP GET on loopback that succeeds on a 2xx answer.
async fn http_get_ok(port: u16, path: &str) -> anyhow::Result<bool> {
    let (status, _) = crate::http_get(port, path).await?;
    Ok((200..300).contains(&status))
}

fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .context("reading /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Audit policy: deletions at `Metadata` level (who, what, when), nothing else.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [delete, deletecollection]
- level: None
";
