//! The `bundle-tool serve` command line.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::{LoadOptions, ServeConfig, load::parse_bundle_source};

/// `bundle-tool serve`: flags.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The file-based catalog folder.
    pub catalog: PathBuf,
    /// gRPC port.
    #[arg(short, long, default_value_t = 50051)]
    pub port: u16,
    /// Address to listen on (opm listens on every interface; loopback is the safe default).
    #[arg(long, default_value = "127.0.0.1")]
    pub address: IpAddr,
    /// Also serve the catalog as JSON lines, `/metrics` and `/healthz` over HTTP on this port.
    #[arg(long)]
    pub http_port: Option<u16>,
    /// Serve bundles inline (empty bundlePath, CSV and manifests embedded) so that OLM installs
    /// without pulling bundle images: from `olm.bundle.object` properties, `--bundle-source`
    /// folders, or by pulling the bundle image.
    #[arg(long)]
    pub inline_bundles: bool,
    /// A folder standing in for a bundle image, as IMAGE=DIR (repeatable).
    #[arg(long = "bundle-source", value_parser = parse_bundle_source)]
    pub bundle_sources: Vec<(String, PathBuf)>,
    /// Pull bundle images over plain HTTP (local registries).
    #[arg(long)]
    pub plain_http: bool,
    /// Seconds between checks for changed catalog files; 0 turns watching off (SIGHUP still
    /// reloads).
    #[arg(long, default_value_t = 2)]
    pub watch_interval: u64,
    /// MiB of memory for single-bundle answers asked for more than once (beyond it they are
    /// kept in a temporary file); 0 keeps them all in the file.
    #[arg(long, default_value_t = 16)]
    pub answer_memory_mib: usize,
}

/// Runs `bundle-tool serve`.
pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    crate::heap::limit_malloc_arenas();
    crate::heap::merge_small_frees();
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    let config = ServeConfig {
        root: args.catalog,
        address: args.address,
        port: args.port,
        http_port: args.http_port,
        load: LoadOptions {
            inline_bundles: args.inline_bundles,
            bundle_sources: args.bundle_sources.into_iter().collect(),
            plain_http: args.plain_http,
            keep_documents: args.http_port.is_some(),
            answer_memory: args.answer_memory_mib.saturating_mul(1 << 20),
        },
        watch_interval: (args.watch_interval > 0).then(|| Duration::from_secs(args.watch_interval)),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match runtime.block_on(super::run(config)) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(message) => {
            eprintln!("bundle-tool serve: {message}");
            Ok(ExitCode::FAILURE)
        }
    }
}
