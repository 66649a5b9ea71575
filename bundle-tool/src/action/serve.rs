//! `bundle-tool serve`: the registry server on a catalog folder until SIGTERM.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{Action, ActionError, Outcome};
use crate::catalog::bundle_source::parse_mapping;
use crate::serve::{LoadOptions, ServeConfig};

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
    #[arg(long = "bundle-source", value_parser = parse_mapping)]
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

impl Action for ServeArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let config = ServeConfig {
            root: self.catalog.clone(),
            address: self.address,
            port: self.port,
            http_port: self.http_port,
            load: LoadOptions {
                inline_bundles: self.inline_bundles,
                bundle_sources: self.bundle_sources.iter().cloned().collect(),
                plain_http: self.plain_http,
                keep_documents: self.http_port.is_some(),
                answer_memory: self.answer_memory_mib.saturating_mul(1 << 20),
            },
            watch_interval: (self.watch_interval > 0)
                .then(|| Duration::from_secs(self.watch_interval)),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(match runtime.block_on(crate::serve::run(config)) {
            Ok(()) => Outcome::text(""),
            Err(message) => Outcome::failure(vec![format!("bundle-tool serve: {message}")]),
        })
    }
}
