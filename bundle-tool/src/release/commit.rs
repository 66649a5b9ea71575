//! The catalog edit put in place: the staged files written into the catalog folder as one
//! change, whichever way the release publishes. The layout path does it in one call
//! ([`commit_catalog`]); the registry path stages and fsyncs the new tree while the blobs
//! go up ([`prepare_commit`]) and swaps it in only after the bundle's manifest is pushed
//! ([`swap_in`]).

use std::path::{Path, PathBuf};

use super::ReleaseError;
use super::catalog_edit::StagedCatalog;
use crate::durable;

/// Writes the staged catalog files into place as one change of the catalog folder: a kill
/// leaves every file old or every file new (a template edited without the package file it
/// renders would make the next release refuse the catalog as edited by hand).
pub(super) fn commit_catalog(catalog: &Path, staged: &StagedCatalog) -> Result<(), ReleaseError> {
    let ready = prepare_commit(catalog, staged)?;
    swap_in(catalog, ready)?.remove();
    Ok(())
}

/// The first half of [`commit_catalog`]: the new catalog tree staged beside the folder and
/// made durable (the fsyncs), the folder itself not yet changed.
pub(super) fn prepare_commit(
    catalog: &Path,
    staged: &StagedCatalog,
) -> Result<durable::StagedDir, ReleaseError> {
    let files: Vec<(PathBuf, Vec<u8>)> = staged
        .files
        .iter()
        .map(|(path, content)| (path.clone(), content.clone().into_bytes()))
        .collect();
    durable::stage_files(catalog, &files).map_err(|error| catalog_write_error(catalog, error))
}

/// The second half of [`commit_catalog`]: the prepared tree takes the folder's place; the
/// old tree is left to remove.
pub(super) fn swap_in(
    catalog: &Path,
    ready: durable::StagedDir,
) -> Result<durable::OldTree, ReleaseError> {
    ready
        .swap()
        .map_err(|error| catalog_write_error(catalog, error))
}

fn catalog_write_error(catalog: &Path, error: std::io::Error) -> ReleaseError {
    ReleaseError::Write {
        path: catalog.to_path_buf(),
        message: format!("writing the catalog (left as it was): {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_catalog_write_that_fails_halfway_changes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let written = dir.path().join("catalog.json");
        std::fs::write(&written, "old").unwrap();
        // The second file's folder cannot be made: its parent is a file.
        std::fs::write(dir.path().join("blocker"), "").unwrap();
        let staged = StagedCatalog {
            copy: Some(tempfile::tempdir().unwrap()),
            files: vec![
                (written.clone(), "new".into()),
                (dir.path().join("blocker/template.yaml"), "new".into()),
            ],
            heads: BTreeMap::new(),
            how: String::new(),
        };
        let error = commit_catalog(dir.path(), &staged).unwrap_err();
        assert!(
            error.to_string().contains("blocker/template.yaml"),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&written).unwrap(), "old");
    }
}
