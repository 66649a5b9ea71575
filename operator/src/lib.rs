//! The Redis operator: the `RedisCluster` custom resource (`cache.example.com`) and what it
//! is reconciled into.
//!
//! The CRD is generated from the Rust types in [`api`]; nothing here is hand-written YAML.

pub mod api;
pub mod api_writes;
pub mod controller;
pub mod crd;
pub mod manifests;
pub mod metrics;
pub mod rbac;
pub mod resources;
pub mod status;
