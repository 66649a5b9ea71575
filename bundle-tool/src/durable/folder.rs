//! Whole folders replaced at once: staged beside the target, fsynced, exchanged in.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::file::sync_dir;
use super::stale::{parent_of, prefix_for, sweep};

/// A folder being filled beside `target`, which [`StagedDir::commit`] swaps in. Dropped
/// without a commit, it is removed.
pub struct StagedDir {
    path: PathBuf,
    target: PathBuf,
    /// The staged tree is durable already ([`StagedDir::sync`]).
    synced: bool,
    done: bool,
}

/// Starts staging a replacement of the folder `target` (a symbolic link is followed: the
/// folder it names is replaced, the link stays).
pub fn staging_dir(target: &Path) -> std::io::Result<StagedDir> {
    let target = match std::fs::canonicalize(target) {
        Ok(real) => real,
        Err(_) => target.to_path_buf(),
    };
    let parent = parent_of(&target);
    std::fs::create_dir_all(parent)?;
    sweep(&target);
    let mode = std::fs::metadata(&target)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o777);
    // 0o777 less the umask unless the target has a mode already (tempfile's default is 0o700).
    let path = tempfile::Builder::new()
        .prefix(&prefix_for(&target))
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempdir_in(parent)?
        .keep();
    Ok(StagedDir {
        path,
        target,
        synced: false,
        done: false,
    })
}

impl StagedDir {
    /// Where to write the new folder's content.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the staged tree durable now, so that [`commit`](Self::commit) is only the swap:
    /// a caller can sync while it waits for something else (a release syncs the staged
    /// catalog while its images' blobs go up).
    pub fn sync(&mut self) -> std::io::Result<()> {
        sync_tree(&self.path)?;
        self.synced = true;
        Ok(())
    }

    /// Makes the staged tree durable (unless [`sync`](Self::sync) did) and puts it in the
    /// target's place in one step.
    pub fn commit(self) -> std::io::Result<()> {
        self.swap()?.remove();
        Ok(())
    }

    /// [`commit`](Self::commit) but for removing the old tree, which is left to the
    /// [`OldTree`] returned (a caller may remove it while it waits for something else).
    pub fn swap(mut self) -> std::io::Result<OldTree> {
        if !self.synced {
            sync_tree(&self.path)?;
        }
        let parent = parent_of(&self.target).to_path_buf();
        let mut old = OldTree {
            path: None,
            parent: parent.clone(),
        };
        match exchange(&self.path, &self.target) {
            Ok(()) => {
                // The stage now holds the old tree. Once the swap is durable it can go.
                sync_dir(&parent)?;
                self.done = true;
                old.path = Some(self.path.clone());
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                // First creation: there is nothing to exchange with, so a plain rename.
                std::fs::rename(&self.path, &self.target)?;
                self.done = true;
                sync_dir(&parent)?;
            }
            Err(error) if matches!(error.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
                // A file system without RENAME_EXCHANGE (NFS, some FUSE): two renames, the old
                // tree moved aside first. Not atomic there, which is why it is only a fallback.
                let aside = staging_dir(&self.target)?;
                std::fs::remove_dir(aside.path())?;
                std::fs::rename(&self.target, aside.path())?;
                if let Err(error) = std::fs::rename(&self.path, &self.target) {
                    let _ = std::fs::rename(aside.path(), &self.target);
                    return Err(error);
                }
                self.done = true;
                sync_dir(&parent)?;
                drop(aside);
            }
            Err(error) => return Err(error),
        }
        Ok(old)
    }
}

/// The tree a [`StagedDir::swap`] replaced, still on disk beside the target under the
/// staging name; removed by [`OldTree::remove`] or when dropped. Failing to remove it leaves
/// clutter that the next run sweeps, not a wrong output.
pub struct OldTree {
    path: Option<PathBuf>,
    parent: PathBuf,
}

impl OldTree {
    /// Removes the old tree and makes the removal durable (best effort).
    pub fn remove(mut self) {
        self.remove_now();
    }

    fn remove_now(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_dir_all(&path);
            let _ = sync_dir(&self.parent);
        }
    }
}

impl Drop for OldTree {
    fn drop(&mut self) {
        self.remove_now();
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Writes `files` (paths inside `root`) as one change of the folder `root`: a reader or a
/// killed run sees either every file old or every file new. Unchanged files are carried over
/// as hard links, so the cost is the folder's entries, not its bytes.
pub fn commit_files(root: &Path, files: &[(PathBuf, Vec<u8>)]) -> std::io::Result<()> {
    stage_files(root, files)?.commit()
}

/// The first half of [`commit_files`]: the new tree staged beside `root` and made durable;
/// [`StagedDir::commit`] swaps it in, and dropping it instead leaves `root` as it was.
pub fn stage_files(root: &Path, files: &[(PathBuf, Vec<u8>)]) -> std::io::Result<StagedDir> {
    let mut staged = staging_dir(root)?;
    if root.exists() {
        link_tree(root, staged.path())?;
    }
    for (path, content) in files {
        let relative = path.strip_prefix(root).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not inside {}", path.display(), root.display()),
            )
        })?;
        let target = staged.path().join(relative);
        let write = || -> std::io::Result<()> {
            if let Some(folder) = target.parent() {
                std::fs::create_dir_all(folder)?;
            }
            // The staged name is a hard link to the old file: writing through it would change
            // the old tree in place, so the link goes first and the new content gets its own
            // inode.
            match std::fs::remove_file(&target) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            std::fs::write(&target, content)
        };
        write().map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    }
    staged.sync()?;
    Ok(staged)
}

/// `renameat2(from, to, RENAME_EXCHANGE)`: both names stay, their trees trade places.
fn exchange(from: &Path, to: &Path) -> std::io::Result<()> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both are NUL-terminated paths that live across the call.
    let result = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Copies the tree `from` into the existing folder `to` as hard links (a copy where a link is
/// refused), keeping folders' modes and symbolic links as links.
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            std::fs::set_permissions(&target, std::fs::metadata(&source)?.permissions())?;
            link_tree(&source, &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else if std::fs::hard_link(&source, &target).is_err() {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

/// fsyncs every file and folder below `dir`, and `dir` itself.
fn sync_tree(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            sync_tree(&entry.path())?;
        } else if kind.is_file() {
            std::fs::File::open(entry.path())?.sync_all()?;
        }
    }
    sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_folder_is_created_then_exchanged_and_the_old_tree_removed() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("bundle");
        let first = staging_dir(&target).unwrap();
        std::fs::write(first.path().join("a"), "one").unwrap();
        first.commit().unwrap();
        let second = staging_dir(&target).unwrap();
        std::fs::write(second.path().join("b"), "two").unwrap();
        second.commit().unwrap();
        assert_eq!(names(&target), ["b"]);
        assert_eq!(names(root.path()), ["bundle"], "a staging folder was left");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_ne!(mode & 0o055, 0, "not readable by others: {mode:o}");
    }

    #[test]
    fn committed_files_replace_their_links_not_the_old_files() {
        let root = tempfile::tempdir().unwrap();
        let catalog = root.path().join("catalog");
        std::fs::create_dir_all(catalog.join("p")).unwrap();
        std::fs::write(catalog.join("p/catalog.json"), "old").unwrap();
        std::fs::write(catalog.join("template.yaml"), "old").unwrap();
        std::fs::write(catalog.join("kept"), "kept").unwrap();
        // A reader holding the old file open must keep seeing the old bytes.
        let old = std::fs::File::open(catalog.join("p/catalog.json")).unwrap();
        commit_files(
            &catalog,
            &[
                (catalog.join("p/catalog.json"), b"new".to_vec()),
                (catalog.join("template.yaml"), b"new".to_vec()),
            ],
        )
        .unwrap();
        assert_eq!(
            std::fs::read(catalog.join("p/catalog.json")).unwrap(),
            b"new"
        );
        assert_eq!(
            std::fs::read(catalog.join("template.yaml")).unwrap(),
            b"new"
        );
        assert_eq!(std::fs::read(catalog.join("kept")).unwrap(), b"kept");
        let mut was = String::new();
        std::io::Read::read_to_string(&mut &old, &mut was).unwrap();
        assert_eq!(was, "old", "the old file was written through its link");
        assert_eq!(names(root.path()), ["catalog"]);
    }

    #[test]
    fn staged_files_change_nothing_until_swapped_and_the_old_tree_goes_when_removed() {
        let root = tempfile::tempdir().unwrap();
        let catalog = root.path().join("catalog");
        std::fs::create_dir_all(&catalog).unwrap();
        std::fs::write(catalog.join("catalog.json"), "old").unwrap();
        let files = [(catalog.join("catalog.json"), b"new".to_vec())];
        // Dropped before the swap: the folder is as it was, and no stage is left.
        drop(stage_files(&catalog, &files).unwrap());
        assert_eq!(std::fs::read(catalog.join("catalog.json")).unwrap(), b"old");
        assert_eq!(names(root.path()), ["catalog"]);
        let ready = stage_files(&catalog, &files).unwrap();
        assert_eq!(std::fs::read(catalog.join("catalog.json")).unwrap(), b"old");
        assert_eq!(
            names(root.path()).len(),
            2,
            "the stage sits beside the folder"
        );
        let old = ready.swap().unwrap();
        assert_eq!(std::fs::read(catalog.join("catalog.json")).unwrap(), b"new");
        assert_eq!(
            names(root.path()).len(),
            2,
            "the old tree is kept until removed"
        );
        old.remove();
        assert_eq!(names(root.path()), ["catalog"]);
        // An old tree that is only dropped goes as well.
        let files = [(catalog.join("catalog.json"), b"newer".to_vec())];
        drop(stage_files(&catalog, &files).unwrap().swap().unwrap());
        assert_eq!(names(root.path()), ["catalog"]);
        assert_eq!(
            std::fs::read(catalog.join("catalog.json")).unwrap(),
            b"newer"
        );
    }

    #[test]
    fn an_uncommitted_stage_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let staged = staging_dir(&root.path().join("bundle")).unwrap();
        std::fs::write(staged.path().join("a"), "x").unwrap();
        drop(staged);
        assert!(names(root.path()).is_empty());
    }
}
