//! The `catalog-server` command line: `serve` (what a catalog image's entrypoint runs) and,
//! called as `grpc_health_probe`, the probe OLM's registry pods exec. The serve flags are
//! also `bundle-tool serve`'s, which adds image pulls on top ([`ServeFlags`] flattened).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use catalog_model::bundle_mapping::parse_mapping;

use crate::serve::{LoadOptions, PullBundle, ServeConfig};

/// How the registry server serves a catalog folder: the flags `opm serve` users know, and
/// the inline bundles that spare OLM an unpack Job.
#[derive(Debug, clap::Args)]
pub struct ServeFlags {
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
    /// folders, or (bundle-tool serve only) by pulling the bundle image.
    #[arg(long)]
    pub inline_bundles: bool,
    /// A folder standing in for a bundle image, as IMAGE=DIR (repeatable).
    #[arg(long = "bundle-source", value_parser = parse_mapping)]
    pub bundle_sources: Vec<(String, PathBuf)>,
    /// Seconds between checks for changed catalog files; 0 turns watching off (SIGHUP still
    /// reloads).
    #[arg(long, default_value_t = 2)]
    pub watch_interval: u64,
    /// MiB of memory for single-bundle answers asked for more than once (beyond it they are
    /// kept in a temporary file); 0 keeps them all in the file.
    #[arg(long, default_value_t = 16)]
    pub answer_memory_mib: usize,
}

impl ServeFlags {
    /// The server's settings, with `bundle_images` pulling what inline serving needs and no
    /// folder or property holds (`None`: such a bundle is refused).
    pub fn config(&self, bundle_images: Option<Arc<dyn PullBundle>>) -> ServeConfig {
        ServeConfig {
            root: self.catalog.clone(),
            address: self.address,
            port: self.port,
            http_port: self.http_port,
            load: LoadOptions {
                inline_bundles: self.inline_bundles,
                bundle_sources: self.bundle_sources.iter().cloned().collect(),
                bundle_images,
                keep_documents: self.http_port.is_some(),
                answer_memory: self.answer_memory_mib.saturating_mul(1 << 20),
            },
            watch_interval: (self.watch_interval > 0)
                .then(|| Duration::from_secs(self.watch_interval)),
        }
    }
}

/// `catalog-server`'s commands.
#[derive(Debug, clap::Parser)]
#[command(
    name = "catalog-server",
    version,
    about = "OLM's registry gRPC API over a file-based catalog, as a catalog image runs it"
)]
pub enum Command {
    /// Serve a file-based catalog over OLM's registry gRPC API, like `opm serve`, with hot
    /// reload.
    Serve(ServeFlags),
}

/// Runs the server until SIGTERM, with the allocator settings and logging a long-running
/// server wants; the exit code.
pub fn serve(flags: &ServeFlags, bundle_images: Option<Arc<dyn PullBundle>>) -> u8 {
    crate::heap::limit_malloc_arenas();
    crate::heap::merge_small_frees();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: starting the runtime: {error}");
            return 1;
        }
    };
    match runtime.block_on(crate::serve::run(flags.config(bundle_images))) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("catalog-server serve: {error}");
            1
        }
    }
}

/// Logs as text on standard error, at `RUST_LOG` or `info`.
pub fn init_logging() {
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
}

/// Runs the probe when the program was called as `grpc_health_probe` (the catalog image
/// links that name to the server): its exit code, or `None` for any other name.
pub fn run_as_health_probe() -> Option<u8> {
    let mut args = std::env::args();
    let called_as = args.next().unwrap_or_default();
    if std::path::Path::new(&called_as).file_name()
        != Some(std::ffi::OsStr::new(crate::health_probe::PROGRAM_NAME))
    {
        return None;
    }
    let code = crate::health_probe::run(&args.collect::<Vec<_>>());
    Some(u8::try_from(code).unwrap_or(1))
}
