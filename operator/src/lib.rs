//! The Redis operator: the `RedisCluster` custom resource (`cache.example.com`) and what it
//! is reconciled into.
//!
//! The CRD is generated from the Rust types in [`api`]; nothing here is hand-written YAML.

pub mod api;
pub mod api_writes;
pub mod context;
pub mod controller;
pub mod crd;
pub mod error;
pub mod http;
pub mod manifests;
pub mod metrics;
pub mod rbac;
pub mod redis;
pub mod replication;
pub mod resources;
pub mod run;
pub mod status;
pub mod topology;
pub mod webhook;
