//! Names of staging files and folders, and sweeping those a killed process left behind.

use std::path::{Path, PathBuf};

/// The marker every staging name carries: `.<target name>.bundle-tool-<pid>-<random>`.
const MARKER: &str = ".bundle-tool-";

/// The prefix of staging entries for `target`'s name, with this process's id.
pub(super) fn prefix_for(target: &Path) -> String {
    format!(
        ".{}{MARKER}{}-",
        target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    )
}

/// Whether `name` is a staging file or folder of this module (a harness uses this to tell a
/// leftover from an output).
pub fn is_staging_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(MARKER)
}

/// The folder `path` is in (`.` for a bare name).
pub(super) fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Removes the staging entries of `target` whose process no longer runs. Best effort: a
/// leftover that cannot be removed is only clutter, never read as an output. Every write of
/// this module sweeps first; a command that finds nothing to write calls it itself, so that
/// its re-run after a kill still clears what the killed run left.
pub fn sweep(target: &Path) {
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let prefix = format!(".{name}{MARKER}");
    let Ok(entries) = std::fs::read_dir(parent_of(target)) else {
        return;
    };
    let stale: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let entry_name = entry.file_name().to_string_lossy().into_owned();
            let pid: i32 = entry_name
                .strip_prefix(&prefix)?
                .split('-')
                .next()?
                .parse()
                .ok()?;
            (!process_runs(pid)).then(|| entry.path())
        })
        .collect();
    for path in stale {
        let _ = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
    }
}

fn process_runs(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // Signal 0 checks existence only. EPERM means it exists under another user.
    // SAFETY: kill with signal 0 sends nothing.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_of_dead_processes_go_and_those_of_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("index.json");
        // PID 0 never names a process that could still be writing.
        let dead = dir.path().join(".index.json.bundle-tool-0-abc");
        let live = dir.path().join(prefix_for(&target) + "def");
        let other = dir.path().join(".other.bundle-tool-0-abc");
        for path in [&dead, &live, &other] {
            std::fs::write(path, "x").unwrap();
        }
        sweep(&target);
        assert!(!dead.exists(), "a dead process's temporary file stays");
        assert!(
            live.exists(),
            "a running process's temporary file was removed"
        );
        assert!(
            other.exists(),
            "another target's temporary file was removed"
        );
        assert!(is_staging_name(".index.json.bundle-tool-0-abc"));
        assert!(!is_staging_name("index.json"));
    }
}
