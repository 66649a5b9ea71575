//! `bundle-tool catalog template [TYPE] FILE`: the options, and the template rendered by
//! `catalog/template/`.

use super::{Action, ActionError, Outcome};
use crate::catalog::template::{self, TemplateFormat};

/// How a rendered template is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TemplateOutput {
    /// opm's JSON stream.
    #[default]
    Json,
    /// opm's YAML documents.
    Yaml,
    /// The upgrade graph as mermaid, with OLMv0 semantics (as opm's `-o mermaid`).
    Mermaid,
}

impl From<TemplateOutput> for TemplateFormat {
    fn from(output: TemplateOutput) -> TemplateFormat {
        match output {
            TemplateOutput::Json => TemplateFormat::Json,
            TemplateOutput::Yaml => TemplateFormat::Yaml,
            TemplateOutput::Mermaid => TemplateFormat::Mermaid,
        }
    }
}

/// `bundle-tool catalog template [TYPE] FILE`.
#[derive(clap::Args, Debug)]
pub struct TemplateArgs {
    /// `[basic|semver] FILE`: the template type (detected from the file's `schema` when
    /// left out) and the template file (`-` for standard input).
    #[arg(required = true, num_args = 1..=2, value_name = "[TYPE] FILE")]
    pub args: Vec<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "json")]
    pub output: TemplateOutput,
    /// How to reach registries: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
    /// Render the bundle image REF from the local bundle folder DIR instead of pulling it
    /// (repeatable); the rendered `image` is still REF.
    #[arg(long = "bundle-source", value_name = "REF=DIR")]
    pub bundle_sources: Vec<String>,
}

impl Action for TemplateArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let text = template::run(
            &self.args,
            self.output.into(),
            &self.transport.transport(),
            &self.bundle_sources,
        )?;
        Ok(Outcome::text(text))
    }
}
