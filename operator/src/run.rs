//! `redis-operator run`: the endpoints, the conversion webhook, leader election and the
//! controller, wired together.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube_lease_manager::LeaseManagerBuilder;

use crate::api_writes::ApiWriteCounter;
use crate::controller::{self, Context};
use crate::http::{self, Response};
use crate::metrics::Metrics;
use crate::webhook::{self, ServingCertificate};

/// Where OLM mounts the certificate of a bundle's webhook.
pub const OLM_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";

/// How the operator runs.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Address for `/metrics`, `/healthz`, `/readyz`.
    pub metrics_address: SocketAddr,
    /// Address for the conversion webhook (HTTPS).
    pub webhook_address: SocketAddr,
    /// Serving certificate and key files; when absent, OLM's mount is used if present, else a
    /// self-signed certificate whose CA the operator writes into the CRD.
    pub tls_files: Option<(PathBuf, PathBuf)>,
    /// Names (DNS or IP) the self-signed certificate is valid for.
    pub webhook_names: Vec<String>,
    /// Namespace of the leader-election Lease.
    pub lease_namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// This replica's identity in the Lease.
    pub identity: String,
    /// How long a leader's Lease lasts without renewal.
    pub lease_duration: Duration,
    /// Talk to each Redis to run replication and failover (see `Context`).
    pub manage_replication: bool,
}

/// Gives memory freed after bursts (the initial list of every cluster and child, a wave of
/// reconciles) back to the system: glibc's allocator otherwise keeps the high-water mark as
/// resident memory for the life of the process.
async fn return_freed_memory() {
    loop {
        tokio::time::sleep(Duration::from_secs(10)).await;
        // SAFETY: malloc_trim only releases free heap pages; it is thread-safe in glibc.
        #[cfg(target_env = "gnu")]
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

/// Runs until `shutdown` resolves (or leadership is lost, which ends the run with an error so
/// that the process restarts as a follower).
pub async fn run(
    options: RunOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One malloc arena per thread (glibc's default, up to 8 per core) keeps freed memory
    // scattered where it cannot be returned; two are plenty for this workload.
    // SAFETY: mallopt only sets an allocator tunable; called before other threads allocate much.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
    let writes = ApiWriteCounter::default();
    let client = writes.client(kube::Config::infer().await?)?;
    let metrics = Arc::new(Metrics::new(writes));

    let endpoints = tokio::net::TcpListener::bind(options.metrics_address).await?;
    tracing::info!(address = %options.metrics_address, "serving /metrics, /healthz, /readyz");
    let rendered = metrics.clone();
    tokio::spawn(http::serve(endpoints, None, move |request| {
        match request.path.as_str() {
            "/metrics" => Response::text(rendered.render()),
            "/healthz" | "/readyz" => Response::text("ok\n"),
            _ => Response::error(::http::StatusCode::NOT_FOUND, "not found\n"),
        }
    }));

    // The webhook runs on every replica: conversion must not wait for an election.
    let olm_cert = PathBuf::from(OLM_CERT_DIR);
    let (certificate, self_signed) = match &options.tls_files {
        Some((cert, key)) => (ServingCertificate::from_files(cert, key)?, false),
        None if olm_cert.join("tls.crt").is_file() => (
            ServingCertificate::from_files(&olm_cert.join("tls.crt"), &olm_cert.join("tls.key"))?,
            false,
        ),
        None => (
            ServingCertificate::self_signed(options.webhook_names.clone())?,
            true,
        ),
    };
    let webhook_listener = tokio::net::TcpListener::bind(options.webhook_address).await?;
    tracing::info!(address = %options.webhook_address, self_signed, "serving the conversion webhook");
    tokio::spawn(http::serve(
        webhook_listener,
        Some(certificate.acceptor()?),
        webhook::handle,
    ));
    if self_signed {
        let client = client.clone();
        let ca = certificate.cert_pem.clone();
        tokio::spawn(async move {
            // The CRD may not exist yet (installed after the operator): keep trying.
            loop {
                match webhook::publish_ca_bundle(&client, &ca).await {
                    Ok(()) => {
                        tracing::info!("conversion webhook CA written to the CRD");
                        break;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot write the webhook CA into the CRD yet")
                    }
                }
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        });
    }

    let lease_seconds = options.lease_duration.as_secs().max(2);
    let manager = LeaseManagerBuilder::new(client.clone(), &options.lease_name)
        .with_namespace(&options.lease_namespace)
        .with_identity(&options.identity)
        .with_duration(lease_seconds)
        .with_grace((lease_seconds / 3).max(1))
        .with_field_manager(controller::FIELD_MANAGER)
        .build()
        .await?;
    let (mut leadership, lease_task) = manager.watch().await;
    let mut shutdown = Box::pin(shutdown);
    tracing::info!(identity = %options.identity, lease = %options.lease_name, "waiting for leadership");
    loop {
        if *leadership.borrow_and_update() {
            break;
        }
        tokio::select! {
            changed = leadership.changed() => changed?,
            _ = &mut shutdown => {
                drop(leadership);
                let _ = lease_task.await;
                return Ok(());
            }
        }
    }
    tracing::info!(identity = %options.identity, "leading: starting the controller");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<&'static str>();
    let watcher_task = tokio::spawn(async move {
        let reason = tokio::select! {
            _ = &mut shutdown => "shutdown",
            _ = async { while leadership.changed().await.is_ok() && *leadership.borrow() {} } => "lost leadership",
        };
        let _ = stop_tx.send(reason);
        leadership
    });
    let mut context = Context::new(client, metrics, &options.identity);
    context.manage_replication = options.manage_replication;
    let context = Arc::new(context);
    tokio::spawn(return_freed_memory());
    let (reason_tx, reason_rx) = tokio::sync::oneshot::channel();
    controller::run(context, async move {
        let reason = stop_rx.await.unwrap_or("shutdown");
        let _ = reason_tx.send(reason);
    })
    .await;
    let reason = reason_rx.await.unwrap_or("shutdown");
    // Closing the channel makes the lease task release the Lease for the next leader.
    drop(watcher_task.await?);
    let _ = lease_task.await;
    if reason == "lost leadership" {
        anyhow::bail!("lost the leader Lease; exiting so that a restart rejoins as a follower");
    }
    tracing::info!("stopped");
    Ok(())
}
