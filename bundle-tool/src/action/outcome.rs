//! What a command gives back for the binary to print.

use std::io::{self, Write};

use crate::catalog::declcfg::JsonSpool;

/// Whether a command succeeded: exit code 0, else 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Done, nothing found.
    Success,
    /// Findings (invalid bundle or catalog, a level not reached, an out-of-date bundle) or a
    /// failure reported in the notes.
    Failure,
}

/// What goes to standard output.
#[derive(Default)]
pub enum Output {
    /// Nothing.
    #[default]
    Nothing,
    /// Text, written as it is.
    Text(String),
    /// A rendered catalog spooled in a temporary file (its size does not grow memory), copied
    /// out at the end.
    Spool(JsonSpool),
}

/// A command's result.
pub struct Outcome {
    /// For standard output.
    pub output: Output,
    /// Lines for standard error, in order (warnings, per-item errors, findings for people).
    pub notes: Vec<String>,
    /// The verdict.
    pub status: Status,
    /// Large values the command built (a loaded catalog, a validated model), handed over so
    /// that the binary decides when to free them: a process about to exit need not.
    pub loaded: Option<Box<dyn std::any::Any>>,
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outcome")
            .field("notes", &self.notes)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl Outcome {
    /// A successful command that prints `text`.
    pub fn text(text: impl Into<String>) -> Outcome {
        Outcome {
            output: Output::Text(text.into()),
            notes: Vec::new(),
            status: Status::Success,
            loaded: None,
        }
    }

    /// A successful command that prints `line` and a newline.
    pub fn line(line: impl std::fmt::Display) -> Outcome {
        Outcome::text(format!("{line}\n"))
    }

    /// `text`, and `errors` for standard error: a failure when there is any.
    pub fn with_errors(text: String, errors: Vec<String>) -> Outcome {
        let status = if errors.is_empty() {
            Status::Success
        } else {
            Status::Failure
        };
        Outcome {
            output: Output::Text(text),
            notes: errors,
            status,
            loaded: None,
        }
    }

    /// A command that failed with `notes` and printed nothing.
    pub fn failure(notes: Vec<String>) -> Outcome {
        Outcome {
            output: Output::Nothing,
            notes,
            status: Status::Failure,
            loaded: None,
        }
    }

    /// The same outcome, handing `value` to the binary instead of freeing it here.
    pub fn keeping(mut self, value: impl std::any::Any) -> Outcome {
        self.loaded = Some(Box::new(value));
        self
    }
}

impl Output {
    /// Writes the output to `out` (through the file descriptor when it is spooled, so that
    /// the kernel copies it).
    pub fn write_to<W: Write + std::os::fd::AsFd>(self, out: &mut W) -> io::Result<()> {
        match self {
            Output::Nothing => Ok(()),
            Output::Text(text) => out.write_all(text.as_bytes()),
            Output::Spool(spool) => spool.write_to_fd(out),
        }
    }
}
