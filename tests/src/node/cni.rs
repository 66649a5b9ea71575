//! Pod networking: a Linux bridge with the node's pod CIDR (the CNI bridge, host-local and
//! portmap plugins from Debian's containernetworking-plugins), masquerading, hairpin on so a
//! pod reaches itself through its own Service.

use std::path::Path;

/// The bridge pods are attached to.
pub const BRIDGE: &str = "cni0";
/// Where Debian installs the plugins.
pub const PLUGIN_DIR: &str = "/usr/lib/cni";

/// Writes the network configuration for `pod_cidr` into `conf_dir` (containerd watches it) and
/// keeps the address allocations in `ipam_dir`.
pub fn write_config(conf_dir: &Path, ipam_dir: &Path, pod_cidr: &str) -> anyhow::Result<()> {
    for plugin in ["bridge", "host-local", "loopback", "portmap"] {
        anyhow::ensure!(
            Path::new(PLUGIN_DIR).join(plugin).is_file(),
            "{PLUGIN_DIR}/{plugin} is missing: install Debian's containernetworking-plugins \
             (the README test command does)"
        );
    }
    std::fs::create_dir_all(conf_dir)?;
    let config = serde_json::json!({
        "cniVersion": "0.4.0",
        "name": "e2e-pods",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": true,
                "ipMasq": true,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": pod_cidr}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": ipam_dir,
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": true}},
        ],
    });
    // Written whole and renamed in: containerd reloads on change and must never read half.
    let temporary = conf_dir.join(".10-e2e.conflist.tmp");
    std::fs::write(&temporary, serde_json::to_vec_pretty(&config)?)?;
    std::fs::rename(&temporary, conf_dir.join("10-e2e.conflist"))?;
    Ok(())
}
