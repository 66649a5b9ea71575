//! `redis-operator`: prints the operator's manifests (and, later, runs the controller).

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(version, about = "A Kubernetes operator for Redis (RedisCluster, cache.example.com)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the RedisCluster CustomResourceDefinition as YAML.
    Crd,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Crd => print!("{}", redis_operator::crd::redis_cluster_crd_yaml()?),
    }
    Ok(())
}
