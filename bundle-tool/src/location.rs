//! Where a command's input is: a local file or folder, or an image in a registry.
//!
//! Every command that takes "a folder or an image" decides it here, the same way: a path that
//! exists is local; anything else must be an image reference, and when it is not one either
//! the error says both, so that a mistyped path is not reported only as a bad reference.

use std::path::{Path, PathBuf};

/// A command's input, decided once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A file or folder that exists.
    Local(PathBuf),
    /// An image reference (checked against docker's reference grammar, not pulled yet).
    Image(String),
}

/// The argument is neither an existing path nor an image reference.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{argument}: no such file or folder, and not an image reference either ({why})")]
pub struct LocationError {
    /// The argument as given.
    pub argument: String,
    /// Why it is not an image reference (docker's wording).
    pub why: String,
}

impl Location {
    /// Decides what `argument` names: a path that exists, else an image reference.
    pub fn of(argument: &str) -> Result<Location, LocationError> {
        let path = Path::new(argument);
        if path.exists() {
            return Ok(Location::Local(path.to_path_buf()));
        }
        match crate::image_ref::check(argument) {
            Ok(()) => Ok(Location::Image(argument.to_string())),
            Err(why) => Err(LocationError {
                argument: argument.to_string(),
                why,
            }),
        }
    }

    /// [`Location::of`] for arguments clap has already made paths.
    pub fn of_path(argument: &Path) -> Result<Location, LocationError> {
        if argument.exists() {
            return Ok(Location::Local(argument.to_path_buf()));
        }
        Location::of(&argument.to_string_lossy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_paths_are_local_and_references_are_images() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = dir.path().to_str().expect("utf-8");
        assert_eq!(
            Location::of(text),
            Ok(Location::Local(dir.path().to_path_buf()))
        );
        // A relative path that does not exist but reads as a reference is an image.
        assert_eq!(
            Location::of("quay.io/me/bundle:v1"),
            Ok(Location::Image("quay.io/me/bundle:v1".into()))
        );
        assert_eq!(Location::of("bundle"), Ok(Location::Image("bundle".into())));
    }

    #[test]
    fn neither_says_both() {
        let error = Location::of("/nonexistent").expect_err("neither");
        assert_eq!(
            error.to_string(),
            "/nonexistent: no such file or folder, and not an image reference either (invalid reference format)"
        );
        let error = Location::of_path(Path::new("./no/such:dir")).expect_err("neither");
        assert!(
            error
                .to_string()
                .starts_with("./no/such:dir: no such file or folder")
        );
    }
}
