//! The addresses of the test cluster, all inside the test binary's own network namespace.
//!
//! Pod and Service addresses come from 198.18.0.0/15, the block reserved for network testing
//! (RFC 2544), so no test traffic looks like a real private network; none of it leaves the
//! namespace, which has no interface to the outside.

use std::net::Ipv4Addr;
use std::process::Command;

use anyhow::{Context, bail};

/// The node's address: kubelet, kube-proxy, the apiserver's advertised address (the endpoint
/// of the `kubernetes` Service) and the cluster's image registry all answer on it.
pub const NODE_IP: Ipv4Addr = Ipv4Addr::new(198, 19, 255, 1);
/// The next hop of the namespace's default route (kubelet wants one to exist). Nothing answers
/// there: it is the far end of a veth pair whose near end holds [`NODE_IP`].
const GATEWAY_IP: Ipv4Addr = Ipv4Addr::new(198, 19, 255, 254);
/// Every pod address (the controller-manager gives each node a /24 of it).
pub const CLUSTER_CIDR: &str = "198.18.0.0/16";
/// Service ClusterIPs.
pub const SERVICE_CIDR: &str = "198.19.0.0/20";
/// The `kubernetes` Service: the first address of [`SERVICE_CIDR`].
pub const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(198, 19, 0, 1);
/// The `kube-dns` Service.
pub const DNS_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(198, 19, 0, 10);
/// The cluster's DNS domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

const NODE_LINK: &str = "e2e-node";
const GATEWAY_LINK: &str = "e2e-gw";

/// Gives the namespace the node's address and a default route, once. Refuses to run outside
/// a namespace of the test runner's (it changes interfaces and routes).
pub fn prepare() -> anyhow::Result<()> {
    crate::require_isolated_network()?;
    if link_exists(NODE_LINK)? {
        return Ok(());
    }
    let node_address = format!("{NODE_IP}/24");
    let gateway = GATEWAY_IP.to_string();
    for args in [
        &[
            "link",
            "add",
            NODE_LINK,
            "type",
            "veth",
            "peer",
            "name",
            GATEWAY_LINK,
        ][..],
        &["addr", "add", &node_address, "dev", NODE_LINK],
        &["link", "set", NODE_LINK, "up"],
        &["link", "set", GATEWAY_LINK, "up"],
        &[
            "route", "add", "default", "via", &gateway, "dev", NODE_LINK, "onlink",
        ],
    ] {
        ip(args)?;
    }
    // Per namespace: pods' traffic is routed through the bridge to the node's address.
    std::fs::write("/proc/sys/net/ipv4/ip_forward", "1")
        .context("enabling IP forwarding in the test's network namespace")?;
    Ok(())
}

/// Whether an interface is one the harness made in the test's namespace (the node's veth
/// pair, the pods' bridge and the host ends of their veths), not one of the machine's.
pub fn is_harness_link(name: &str) -> bool {
    name == "lo"
        || name == NODE_LINK
        || name == GATEWAY_LINK
        || name == super::cni::BRIDGE
        || name.starts_with("veth")
}

fn link_exists(name: &str) -> anyhow::Result<bool> {
    // Not /sys/class/net: sysfs shows the namespace it was mounted in, the machine's.
    let out = Command::new("ip")
        .args(["-o", "link", "show", name])
        .output()
        .context("running ip (Debian package iproute2)")?;
    Ok(out.status.success())
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (Debian package iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
