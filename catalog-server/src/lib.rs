//! `catalog-server`: what a catalog image runs — OLM's registry gRPC API over a file-based
//! catalog, like `opm serve`, with a catalogd-like HTTP view and hot reload.
//!
//! It builds on [`catalog_model`] only, so the `catalog-server` binary carries no registry
//! client, Kubernetes client or report engine (sizes in docs/benchmarks.md). `bundle-tool
//! serve` is the same server with bundle images pulled for `--inline-bundles`
//! ([`serve::PullBundle`]).
//!
//! - [`serve`]: load → model → index → state → RPC, one way.
//! - [`health_probe`]: `grpc_health_probe` built in, for the catalog image's exec probes.
//! - [`heap`]: allocator settings for processes that hold whole catalogs.
//! - [`command`]: the `catalog-server` binary's command line.

pub mod command;
pub mod health_probe;
pub mod heap;
pub mod serve;
