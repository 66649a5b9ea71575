//! `bundle-tool serve`: the registry server on a catalog folder until SIGTERM — the
//! `catalog-server` crate's server, with bundle images pulled for `--inline-bundles`.

use std::sync::Arc;

use catalog_server::command::ServeFlags;

use super::{Action, ActionError, Outcome};
use crate::image::BundleImagePuller;

/// `bundle-tool serve`: flags.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The server's own flags, as `catalog-server serve` takes them.
    #[command(flatten)]
    pub flags: ServeFlags,
    /// How to reach registries: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
}

impl Action for ServeArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let puller = BundleImagePuller {
            transport: self.transport.transport(),
        };
        let config = self.flags.config(Some(Arc::new(puller)));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(match runtime.block_on(crate::serve::run(config)) {
            Ok(()) => Outcome::text(""),
            Err(message) => Outcome::failure(vec![format!("bundle-tool serve: {message}")]),
        })
    }
}
