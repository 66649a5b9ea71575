//! `redis-operator`: runs the controller, or prints the manifests that deploy it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use redis_operator::manifests::{self, Target};
use redis_operator::run::{RunOptions, run};

#[derive(Parser)]
#[command(
    version,
    about = "A Kubernetes operator for Redis (RedisCluster, cache.example.com)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the RedisCluster CustomResourceDefinition as YAML.
    Crd,
    /// Print every object that deploys the operator (CRD, RBAC, Deployment, Services).
    Manifests {
        /// The operator's namespace.
        #[arg(long, default_value = manifests::DEFAULT_NAMESPACE)]
        namespace: String,
        /// The operator image.
        #[arg(long, default_value = manifests::DEFAULT_IMAGE)]
        image: String,
        /// For an OLM bundle: leave out the right to write the CRD's webhook CA (OLM does it).
        #[arg(long)]
        olm: bool,
    },
    /// Run the operator (kubeconfig from KUBECONFIG / ~/.kube/config, or in-cluster).
    Run(RunArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Address for /metrics, /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8080")]
    metrics_address: SocketAddr,
    /// Address for the conversion webhook (HTTPS).
    #[arg(long, default_value = "0.0.0.0:9443")]
    webhook_address: SocketAddr,
    /// Webhook serving certificate (PEM); with --tls-key-file.
    #[arg(long, requires = "tls_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// Webhook serving key (PEM); with --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    tls_key_file: Option<PathBuf>,
    /// Extra names (DNS or IP) for the self-signed webhook certificate.
    #[arg(long, value_delimiter = ',')]
    webhook_name: Vec<String>,
    /// Namespace of the leader-election Lease (default: $POD_NAMESPACE, else "default").
    #[arg(long)]
    lease_namespace: Option<String>,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "redis-operator-leader")]
    lease_name: String,
    /// Seconds a leader's Lease lasts without renewal.
    #[arg(long, default_value_t = 15)]
    lease_duration_seconds: u64,
    /// Run replication and failover by talking to each Redis over the pod network. Off
    /// (`=false`), ordinal 0 is always the primary and the operator only keeps the role
    /// labels: for a cluster whose pod network the operator cannot reach.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    manage_replication: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Crd => print!("{}", manifests::crd_yaml()?),
        Command::Manifests {
            namespace,
            image,
            olm,
        } => {
            print!(
                "{}",
                manifests::objects_yaml(&Target {
                    namespace,
                    image,
                    olm
                })?
            )
        }
        Command::Run(args) => {
            tracing_subscriber::fmt()
                .json()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| "info".into()),
                )
                .init();
            let namespace = args
                .lease_namespace
                .or_else(|| std::env::var("POD_NAMESPACE").ok())
                .unwrap_or_else(|| "default".into());
            let identity = std::env::var("POD_NAME").unwrap_or_else(|_| {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
                format!("{}-{}", host.trim(), std::process::id())
            });
            let mut names = vec![
                format!("{}.{namespace}.svc", manifests::WEBHOOK_SERVICE),
                format!(
                    "{}.{namespace}.svc.cluster.local",
                    manifests::WEBHOOK_SERVICE
                ),
                "localhost".to_string(),
                "127.0.0.1".to_string(),
            ];
            names.extend(args.webhook_name);
            let options = RunOptions {
                metrics_address: args.metrics_address,
                webhook_address: args.webhook_address,
                tls_files: args.tls_cert_file.zip(args.tls_key_file),
                webhook_names: names,
                lease_namespace: namespace,
                lease_name: args.lease_name,
                identity,
                lease_duration: Duration::from_secs(args.lease_duration_seconds),
                manage_replication: args.manage_replication,
            };
            run(options, shutdown_signal()).await?;
        }
    }
    Ok(())
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("install a SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {},
        _ = tokio::signal::ctrl_c() => {},
    }
    tracing::info!("signal received, shutting down");
}
