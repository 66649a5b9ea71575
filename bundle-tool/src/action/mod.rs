//! Every command of `bundle-tool`, as the library runs it.
//!
//! One shape for all, like operator-registry's `alpha/action`: a verb is a struct of options
//! (its clap arguments) implementing [`Action`], whose `run` does the work and returns an
//! [`Outcome`] — what to print on standard output, the lines meant for people on standard
//! error, and whether the command succeeded. Actions never print and never exit (one
//! exception: `run` on a terminal hands `olm_run` a sink that shows each step on standard
//! error as it happens, since a wait of minutes cannot wait for the outcome); the binary
//! prints the outcome and maps it to an exit code: 0 success, 1 findings or failure (an
//! [`ActionError`] is a failure too), 2 usage (clap's own). Process-wide choices — allocator
//! settings, logging, not freeing what the process is about to drop — belong to the binary.
//!
//! A new command is a new file here with its options and `impl Action`, and one line in
//! `main.rs`'s list of commands.

mod audit;
mod build;
mod catalog;
mod catalog_edit;
mod catalog_graph;
mod catalog_template;
mod check_upgrade;
mod error;
mod generate;
mod init;
mod objects;
mod olm_v1_rbac;
mod outcome;
mod push;
mod registry_args;
mod release;
mod run;
mod serve;
mod validate;

pub use audit::{AuditArgs, AuditFormat};
pub use build::{BuildArgs, ManifestFormat};
pub use catalog::{CatalogRenderArgs, CatalogValidateArgs, RenderFormat};
pub use catalog_edit::{AddArgs, DeprecateArgs};
pub use catalog_graph::{GraphArgs, GraphOutput};
pub use catalog_template::{TemplateArgs, TemplateOutput};
pub use check_upgrade::{CatalogCheckUpgradesArgs, CheckUpgradeArgs, UpgradeFormat};
pub use error::ActionError;
pub use generate::GenerateArgs;
pub use init::InitArgs;
pub use objects::ObjectsArgs;
pub use olm_v1_rbac::{OlmV1RbacArgs, RbacFormat};
pub use outcome::{Outcome, Output, Status};
pub use push::{InspectArgs, PullArgs, PushAllArgs, PushArgs};
pub use registry_args::{RegistryArgs, TransportArgs, runtime};
pub use release::{ReleaseArgs, ReleaseFormat};
pub use run::{RunArgs, RunCleanupArgs, RunCommand, RunFormat, RunSubcommand};
pub use serve::ServeArgs;
pub use validate::{ValidateArgs, ValidateFormat};

/// A command: its options, and running it.
pub trait Action {
    /// Runs the command; everything it has to say is in the outcome or the error.
    fn run(&self) -> Result<Outcome, ActionError>;
}

/// Pulls an image to read it as a folder; it must be a bundle or a catalog image.
fn pulled(
    reference: &str,
    transport: &crate::image::Transport,
) -> Result<crate::image::PulledImage, ActionError> {
    let image = crate::image::pull_to_temp(reference, transport)?;
    match image.kind {
        Some(_) => Ok(image),
        None => Err(ActionError::message(format!(
            "{reference}: image type could not be determined (no catalog or bundle labels)"
        ))),
    }
}
