//! The `RedisCluster` API, one module per served version.

pub mod v1alpha1;
