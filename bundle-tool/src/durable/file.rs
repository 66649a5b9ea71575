//! One file replaced durably: temporary file, fsync, rename, fsync of the folder.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::stale::{parent_of, prefix_for, sweep};

/// Replaces (or creates) `path` with `content`. A reader, or a run after a kill or a power
/// loss, sees the old content or the new, whole; the temporary file lives in `path`'s folder
/// (a rename is atomic only within one file system) and is named for [`super::is_staging_name`].
pub fn write_file(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let parent = parent_of(path);
    sweep(path);
    // 0o666 less the umask, what a plain create gives (tempfile's default is 0o600).
    let mut file = tempfile::Builder::new()
        .prefix(&prefix_for(path))
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(parent)?;
    file.write_all(content)?;
    // The data must be on disk before the rename is: otherwise a power loss can leave the new
    // name pointing at an empty file.
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    sync_dir(parent)
}

/// fsyncs the folder `dir`, making the renames and creations in it durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_content_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.json");
        write_file(&path, b"one").unwrap();
        write_file(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["index.json"]);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_ne!(mode & 0o044, 0, "not readable by others: {mode:o}");
    }
}
