//! kubelet and kube-proxy of the real node, configured for this machine: cgroup v1 with the
//! cgroupfs driver (containerd 1.6 cannot tell kubelet its driver), swap not refused, no
//! image ever pulled from outside, every folder below the node's own.

use std::path::Path;

use super::network::{CLUSTER_CIDR, CLUSTER_DOMAIN, DNS_SERVICE_IP, NODE_IP};
use crate::process::ManagedProcess;

/// The taint that keeps pods off the real node unless they ask for it (a toleration, or a
/// namespace from [`super::RealNode::namespace`]): the kwok tests' pods must not land there.
pub const TAINT_KEY: &str = "e2e.example.com/node";
/// The label (and taint) value of the real node.
pub const TAINT_VALUE: &str = "real";

/// Where kubelet keeps what and how it reaches the rest.
pub struct KubeletSettings<'a> {
    /// The Node's name.
    pub node_name: &'a str,
    /// Its folder (`--root-dir`, certificates, config).
    pub dir: &'a Path,
    /// containerd's socket.
    pub runtime_socket: &'a Path,
    /// The kubeconfig it authenticates with (a `system:node:<name>` token).
    pub kubeconfig: &'a Path,
    /// The cluster CA, for clients (the apiserver) that present certificates.
    pub client_ca: &'a Path,
    /// The cgroup under which it creates `kubepods`.
    pub cgroup_root: &'a str,
}

/// Starts kubelet.
pub fn start(settings: &KubeletSettings<'_>, log: &Path) -> anyhow::Result<ManagedProcess> {
    let dir = settings.dir;
    std::fs::create_dir_all(dir.join("root"))?;
    // Pods' resolv.conf comes from clusterDNS; this file only gives a `Default`-policy pod (none
    // here) its upstream, and there is no upstream.
    let resolv = dir.join("resolv.conf");
    std::fs::write(&resolv, "options ndots:5\n")?;
    let config = serde_json::json!({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        // Facts of this machine: hybrid cgroups (v1 for every controller); containerd 1.6
        // lacks the CRI RuntimeConfig call, so the driver is set here; swap may be on.
        "failCgroupV1": false,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": settings.cgroup_root,
        "cgroupsPerQOS": true,
        "failSwapOn": false,
        "containerRuntimeEndpoint": format!("unix://{}", settings.runtime_socket.display()),
        "address": NODE_IP.to_string(),
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "clusterDNS": [DNS_SERVICE_IP.to_string()],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": resolv,
        // The apiserver (kubectl logs/exec/port-forward) presents a client certificate of the
        // cluster CA; every request is authorized by the apiserver (SubjectAccessReview).
        "authentication": {
            "x509": {"clientCAFile": settings.client_ca},
            "webhook": {"enabled": true},
            "anonymous": {"enabled": false},
        },
        "authorization": {"mode": "Webhook"},
        "volumePluginDir": dir.join("volume-plugins"),
        "registerNode": true,
        "registerWithTaints": [{"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"}],
        "serializeImagePulls": false,
        // The machine's disk is shared with everything else: no eviction for disk use the
        // node did not cause, and no image garbage collection in the middle of a test.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "maxPods": 110,
        "shutdownGracePeriod": "0s",
        "shutdownGracePeriodCriticalPods": "0s",
        "logging": {"format": "text"},
    });
    let config_path = dir.join("config.yaml");
    std::fs::write(&config_path, serde_json::to_vec_pretty(&config)?)?;
    let kubelet = crate::assets::Assets::locate()?.kubernetes("kubelet")?;
    ManagedProcess::spawn(
        "kubelet",
        &kubelet,
        &[
            format!("--config={}", config_path.display()),
            format!("--kubeconfig={}", settings.kubeconfig.display()),
            format!("--root-dir={}", dir.join("root").display()),
            format!("--cert-dir={}", dir.join("pki").display()),
            format!("--hostname-override={}", settings.node_name),
            format!("--node-ip={NODE_IP}"),
            format!("--node-labels={TAINT_KEY}={TAINT_VALUE}"),
        ],
        &[],
        log,
    )
}

/// Starts kube-proxy in iptables mode for the node's namespace.
pub fn start_proxy(
    node_name: &str,
    kubeconfig: &Path,
    log: &Path,
) -> anyhow::Result<ManagedProcess> {
    let proxy = crate::assets::Assets::locate()?.kubernetes("kube-proxy")?;
    ManagedProcess::spawn(
        "kube-proxy",
        &proxy,
        &[
            format!("--kubeconfig={}", kubeconfig.display()),
            "--proxy-mode=iptables".into(),
            format!("--cluster-cidr={CLUSTER_CIDR}"),
            format!("--hostname-override={node_name}"),
            // 0 leaves the host-wide nf_conntrack_max alone; the timeouts are per namespace.
            "--conntrack-max-per-core=0".into(),
            "--metrics-bind-address=127.0.0.1:10249".into(),
            "--healthz-bind-address=127.0.0.1:10256".into(),
        ],
        &[],
        log,
    )
}
