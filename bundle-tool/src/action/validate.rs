//! `bundle-tool validate`: a bundle folder or image through operator-framework/api's checks,
//! the findings as text grouped by file or as JSON.

use std::path::PathBuf;

use super::{Action, ActionError, Outcome, Output, Status, pulled};
use crate::location::Location;
use crate::validate::Optional;

/// `validate` output formats.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ValidateFormat {
    /// Findings grouped by file.
    Text,
    /// A superset of operator-sdk's `-o json-alpha1` (docs/validate-json.md).
    Json,
}

/// `bundle-tool validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The bundle folder (with `manifests/` and `metadata/`), or a bundle image reference.
    pub dir: PathBuf,
    /// Optional validators, a label selector like operator-sdk's:
    /// `suite=operatorframework`, `name=good-practices`, `suite=operatorframework,name!=good-practices`.
    #[arg(long, value_parser = Optional::select)]
    pub select_optional: Option<Optional>,
    /// Values for optional validators, like operator-sdk: `k8s-version=1.25` (removed
    /// APIs become errors from that version on). Repeatable or comma-separated.
    #[arg(long, value_parser = optional_values)]
    pub optional_values: Vec<String>,
    /// How to reach registries: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: ValidateFormat,
}

/// Checks `--optional-values` when the command line is parsed, so that a bad key is a usage
/// error (exit 2) rather than a validation failure (exit 1).
fn optional_values(values: &str) -> Result<String, String> {
    Optional::default().set_values(values)?;
    Ok(values.to_string())
}

impl Action for ValidateArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let mut optional = self.select_optional.clone().unwrap_or_default();
        for values in &self.optional_values {
            optional.set_values(values).map_err(ActionError::Message)?;
        }
        // The verdict line names the folder validated (for an image, where it was unpacked).
        let (report, shown) = match Location::of_path(&self.dir)? {
            Location::Local(dir) => (crate::validate::validate_bundle_with(&dir, &optional), dir),
            Location::Image(reference) => {
                let image = pulled(&reference, &self.transport.transport())?;
                let root = image.root().to_path_buf();
                (
                    crate::validate::validate_bundle_with(&root, &optional),
                    root,
                )
            }
        };
        let text = match self.output {
            ValidateFormat::Json => format!(
                "{}\n",
                serde_json::to_string_pretty(&report.to_json())
                    .map_err(|e| ActionError::message(e.to_string()))?
            ),
            ValidateFormat::Text => report.to_text(&shown),
        };
        Ok(Outcome {
            output: Output::Text(text),
            notes: Vec::new(),
            status: if report.passed() {
                Status::Success
            } else {
                Status::Failure
            },
            loaded: None,
        })
    }
}
