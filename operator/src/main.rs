//! `redis-operator`: runs the controller, or prints the manifests that deploy it.

use std::sync::Arc;

use clap::{Parser, Subcommand};
use redis_operator::api_writes::ApiWriteCounter;
use redis_operator::controller::{self, Context};
use redis_operator::manifests::{self, Target};
use redis_operator::metrics::Metrics;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
    },
    /// Run the controller (kubeconfig from KUBECONFIG / ~/.kube/config, or in-cluster).
    Run {
        /// Address for /metrics, /healthz and /readyz.
        #[arg(long, default_value = "0.0.0.0:8080")]
        metrics_address: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Crd => print!("{}", manifests::crd_yaml()?),
        Command::Manifests { namespace, image } => {
            print!("{}", manifests::objects_yaml(&Target { namespace, image })?)
        }
        Command::Run { metrics_address } => run(&metrics_address).await?,
    }
    Ok(())
}

async fn run(metrics_address: &str) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let writes = ApiWriteCounter::default();
    let client = writes.client(kube::Config::infer().await?)?;
    let metrics = Arc::new(Metrics::new(writes));
    let pod = std::env::var("POD_NAME").unwrap_or_else(|_| "redis-operator".into());
    let context = Arc::new(Context::new(client, metrics.clone(), &pod));

    let listener = tokio::net::TcpListener::bind(metrics_address).await?;
    tracing::info!(
        address = metrics_address,
        "serving /metrics, /healthz, /readyz"
    );
    tokio::spawn(serve_http(listener, metrics));

    let shutdown = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {},
            _ = tokio::signal::ctrl_c() => {},
        }
        tracing::info!("shutting down");
    };
    controller::run(context, shutdown).await;
    Ok(())
}

/// A deliberately small HTTP/1 responder: three GET paths, no keep-alive.
async fn serve_http(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut buffer = [0u8; 2048];
            let Ok(n) = stream.read(&mut buffer).await else {
                return;
            };
            let request = String::from_utf8_lossy(&buffer[..n]);
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let (status, body) = match path {
                "/metrics" => ("200 OK", metrics.render()),
                "/healthz" | "/readyz" => ("200 OK", "ok\n".to_string()),
                _ => ("404 Not Found", "not found\n".to_string()),
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        });
    }
}
