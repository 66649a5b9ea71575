//! `bundle-tool objects`: the Kubernetes objects in manifests, each with where it starts.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::{Action, ActionError, Outcome};
use crate::manifest::{self, KubeObject};

/// `bundle-tool objects`.
#[derive(Debug, clap::Args)]
pub struct ObjectsArgs {
    /// Files or folders to read.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

impl Action for ObjectsArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let mut text = String::new();
        let mut notes = Vec::new();
        for path in &self.paths {
            let documents = match read(path) {
                Ok(documents) => documents,
                // What was listed before stays listed; reading stops at the first bad file.
                Err(error) => {
                    notes.push(format!("error: {error}"));
                    break;
                }
            };
            for document in documents {
                let location = document.location.clone();
                match KubeObject::from_document(document) {
                    Ok(object) => {
                        let _ = writeln!(text, "{location}\t{}", object.id);
                    }
                    Err(why) => {
                        notes.push(format!("error: {location}: not a Kubernetes object: {why}"))
                    }
                }
            }
        }
        Ok(Outcome::with_errors(text, notes))
    }
}

fn read(path: &std::path::Path) -> Result<Vec<manifest::Document>, ActionError> {
    Ok(if path.as_os_str() == "-" {
        let input = std::io::read_to_string(std::io::stdin())?;
        manifest::read_stream(path, &input)?
    } else {
        manifest::read_path(path)?
    })
}
