//! Free loopback ports.

use std::net::{Ipv4Addr, TcpListener};

/// A TCP port on 127.0.0.1 that was free a moment ago.
///
/// The kernel picks it; the small window between closing our listener and the program binding
/// it is acceptable inside the test network namespace, where nothing else runs.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}
