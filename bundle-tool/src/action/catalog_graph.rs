//! `bundle-tool catalog graph`: the options, and the graph drawn by `catalog/graph/`.

use std::path::PathBuf;

use super::{Action, ActionError, Outcome};
use crate::catalog::graph::{self, GraphFormat};

/// How the graph is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphOutput {
    /// Mermaid flowchart text, as `opm alpha render-graph`.
    #[default]
    Mermaid,
    /// One HTML file with an inline SVG (no scripts, no network).
    Html,
}

impl From<GraphOutput> for GraphFormat {
    fn from(output: GraphOutput) -> GraphFormat {
        match output {
            GraphOutput::Mermaid => GraphFormat::Mermaid,
            GraphOutput::Html => GraphFormat::Html,
        }
    }
}

/// `bundle-tool catalog graph`.
#[derive(clap::Args, Debug)]
pub struct GraphArgs {
    /// The catalog folder.
    pub dir: PathBuf,
    /// Only this package.
    #[arg(short, long)]
    pub package: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "mermaid")]
    pub output: GraphOutput,
    /// Mermaid: mark bundles skipped by a newer entry and the edges OLMv0 ignores.
    #[arg(long)]
    pub draw_v0_semantics: bool,
}

impl Action for GraphArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let text = graph::run(
            &self.dir,
            self.package.as_deref(),
            self.output.into(),
            self.draw_v0_semantics,
        )?;
        Ok(Outcome::text(text))
    }
}
