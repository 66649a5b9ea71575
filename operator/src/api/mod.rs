//! The `RedisCluster` API, one module per served version, and the conversion between them.
//!
//! `v1alpha1` is the first version exactly as users first wrote it; `v1` is the storage
//! version and adds what running Redis in production needs. [`conversion`] maps between them
//! without loss.

pub mod conversion;
pub mod v1;
pub mod v1alpha1;

pub use v1alpha1::{Phase, RedisVersion};
