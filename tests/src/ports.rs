//! Free loopback ports.

use std::collections::HashSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::Mutex;

/// A TCP port on 127.0.0.1 that was free a moment ago.
///
/// Picked between 20000 and 29999, below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`): a port the
/// kernel handed out for `bind(0)` could, between our listener closing and the program binding
/// it, become the source port of one of the many outgoing connections inside the namespace
/// (the apiserver's to etcd, catalogd's to the registry). That happened once in the catalogd
/// test ("Address already in use"). Below that range only explicit binds compete, and this
/// process never hands out a port twice.
pub fn free_port() -> anyhow::Result<u16> {
    static GIVEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    let low = ephemeral_low().unwrap_or(32768);
    // From 20000: under it sit the fixed ports of the node's components (kubelet 10250,
    // kube-proxy 10249/10256, the controller-manager 10257, the scheduler 10259); from 30000
    // Services' NodePorts.
    let (first, last) = (20_000u16, low.min(30_000).saturating_sub(1).max(20_001));
    let span = u64::from(last - first) + 1;
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let given = given.get_or_insert_with(HashSet::new);
    let mut seed = seed();
    for _ in 0..200 {
        // xorshift: enough to spread the picks of parallel test processes.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let port = first + (seed % span) as u16;
        if given.contains(&port) {
            continue;
        }
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            given.insert(port);
            return Ok(port);
        }
    }
    // A crowded namespace: let the kernel pick, as before.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// The first port of the kernel's ephemeral range.
fn ephemeral_low() -> Option<u16> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    (nanos ^ (u64::from(std::process::id()) << 32)) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_below_the_ephemeral_range_distinct_and_bindable() {
        let low = ephemeral_low().unwrap_or(32768);
        let ports: Vec<u16> = (0..20).map(|_| free_port().unwrap()).collect();
        let distinct: HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        for port in ports {
            assert!((20_000..low.min(30_000)).contains(&port), "{port}");
            TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
        }
    }
}
