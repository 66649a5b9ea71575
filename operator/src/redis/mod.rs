//! Talking to the Redis servers a cluster runs: a small RESP2 client over TCP
//! ([`Connection`]) and the parts of `INFO replication` the operator decides on
//! ([`Replication`]).
//!
//! Why not the `redis` crate: the operator sends five commands (`AUTH`, `INFO`, `REPLICAOF`,
//! `CLIENT PAUSE/UNPAUSE`, `WAIT`-free offset reads) to one server at a time, each under a
//! deadline; a hand-written client of ~150 lines does that with tokio alone, where the crate
//! would bring its connection manager, URL parsing and a second async runtime abstraction.

mod info;
mod resp;

pub use info::{Replication, Role};
pub use resp::{Connection, Error, Reply};
