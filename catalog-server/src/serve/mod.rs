//! `bundle-tool serve`: a file-based catalog served over OLM's registry gRPC API
//! (`api.Registry`), wire-compatible with `opm serve`.
//!
//! Start-up is load → validate (the rules of `catalog validate`) → index in memory → serve;
//! there is no cache directory that could go stale. The catalog is reloaded on SIGHUP and when
//! its files change: the new one is loaded and validated beside the old one and swapped in
//! whole, or rejected with the old one still serving.
//!
//! - [`api`]: the generated types, client and server of `registry.proto`; [`encoded`]: the
//!   server that sends `Bundle` answers encoded once.
//! - [`index`]: one snapshot, indexed for every RPC; [`csv`]: opm's synthesized CSV.
//! - [`registry`]: the ten RPCs; [`direct_bundle`]: `GetBundle` and `GetBundleForChannel`
//!   sent from the index's bytes without a copy; [`state`]: the swappable snapshot and
//!   counters.
//! - [`memory`]: heap trimming after bursts of requests.
//! - [`load`]: catalog folder → snapshot (with `--inline-bundles`); [`metas`], [`http`]: the
//!   HTTP view; [`reload`]: SIGHUP and file watching.

pub mod accept;
pub mod api;
pub mod byte_ranges;
pub mod csv;
pub mod direct_bundle;
pub mod encoded;
pub mod http;
pub mod index;
pub mod load;
pub mod memory;
pub mod metas;
pub mod registry;
pub mod reload;
pub mod spill;
pub mod state;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tonic::codegen::tokio_stream;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse, health_check_response};

pub use load::{
    BoxedError, BundleManifestsError, LoadOptions, PullBundle, PulledBundle, SnapshotError,
    load_snapshot,
};
pub use state::CatalogHandle;

/// Everything `bundle-tool serve` needs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The catalog folder.
    pub root: PathBuf,
    /// The address to listen on.
    pub address: IpAddr,
    /// The gRPC port (0 picks a free one).
    pub port: u16,
    /// The HTTP view's port, if wanted.
    pub http_port: Option<u16>,
    /// How the catalog is loaded.
    pub load: LoadOptions,
    /// How often to look for changed files (`None`: only SIGHUP reloads).
    pub watch_interval: Option<Duration>,
}

/// The health service as opm runs it: every service name is SERVING (OLM's probes ask for
/// `Registry`, others for ""), and `Watch` is not offered.
struct AlwaysServing;

#[tonic::async_trait]
impl Health for AlwaysServing {
    async fn check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(HealthCheckResponse {
            status: health_check_response::ServingStatus::Serving as i32,
        }))
    }

    type WatchStream = tokio_stream::Empty<Result<HealthCheckResponse, Status>>;

    async fn watch(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("health watch is not implemented"))
    }
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The catalog could not be loaded (the validation errors of an invalid catalog).
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The loading task did not finish.
    #[error("{0}")]
    LoadTask(#[from] tokio::task::JoinError),
    /// A port could not be bound.
    #[error("failed to listen on {address}: {error}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        error: std::io::Error,
    },
    /// A bound socket's address could not be read.
    #[error("{0}")]
    LocalAddress(std::io::Error),
    /// The reflection service could not be built.
    #[error("{0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The gRPC server failed.
    #[error("serve: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Loads the catalog, serves it until SIGTERM or SIGINT, then stops gracefully (in-flight
/// RPCs finish). `Err` is a start-up failure, with the validation errors of an invalid catalog.
pub async fn run(config: ServeConfig) -> Result<(), ServeError> {
    let started = Instant::now();
    match accept::raise_open_files_limit() {
        Ok(limit) => tracing::debug!(limit, "open files"),
        Err(error) => tracing::warn!(%error, "could not raise the open files limit"),
    }
    let snapshot = {
        let (root, options) = (config.root.clone(), config.load.clone());
        tokio::task::spawn_blocking(move || load_snapshot(&root, &options)).await??
    };
    let catalog = CatalogHandle::new(snapshot.index, snapshot.metas);

    let grpc_address = SocketAddr::new(config.address, config.port);
    let listener = accept::listen(grpc_address).map_err(|error| ServeError::Listen {
        address: grpc_address,
        error,
    })?;
    let grpc_address = listener.local_addr().map_err(ServeError::LocalAddress)?;

    let http_address = match config.http_port {
        Some(port) => {
            let address = SocketAddr::new(config.address, port);
            let http_listener =
                accept::listen(address).map_err(|error| ServeError::Listen { address, error })?;
            let address = http_listener
                .local_addr()
                .map_err(ServeError::LocalAddress)?;
            tokio::spawn(http::serve_http(
                accept::Acceptor::new(http_listener),
                catalog.clone(),
            ));
            Some(address)
        }
        None => None,
    };

    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;

    tokio::spawn(reload::watch(
        config.root.clone(),
        config.load.clone(),
        catalog.clone(),
        config.watch_interval,
    ));

    tokio::spawn(memory::trim_after_bursts(catalog.clone()));

    let index = catalog.snapshot();
    tracing::info!(
        address = %grpc_address,
        http = ?http_address,
        packages = index.packages().len(),
        bundles = index.bundle_count(),
        startup_ms = started.elapsed().as_millis() as u64,
        "serving registry"
    );
    drop(index);

    tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(direct_bundle::RegistryRoutes::new(catalog.clone()))
        .add_service(HealthServer::new(AlwaysServing))
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .serve_with_incoming_shutdown(
            accept::Acceptor::new(listener).into_incoming(),
            shutdown_signal(),
        )
        .await?;
    tracing::info!("shut down");
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    tracing::info!("shutting down server");
}
