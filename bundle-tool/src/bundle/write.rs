//! Writing a bundle so that an interrupted run leaves the previous bundle whole: everything
//! goes to a staging folder beside the target, which is then exchanged with the target in one
//! rename (see [`crate::durable`]).

use std::path::{Path, PathBuf};

use super::GeneratedBundle;
use crate::durable;

/// Writes `bundle` to `dir` (replacing it) and `bundle.Dockerfile` beside it.
/// Returns the Dockerfile's path. Each of the two is replaced atomically on its own: a kill
/// between them leaves the new folder beside the old Dockerfile, whose labels only change
/// when the package or channels do.
pub fn write_bundle(bundle: &GeneratedBundle, dir: &Path) -> std::io::Result<PathBuf> {
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    let staging = durable::staging_dir(dir)?;
    write_files(bundle, staging.path())?;
    staging.commit()?;

    let dockerfile = parent.join("bundle.Dockerfile");
    durable::write_file(&dockerfile, bundle.annotations.dockerfile(&name).as_bytes())?;
    Ok(dockerfile)
}

/// Writes `bundle`'s files into `dir`, a new folder that is thrown away after the run (the
/// release's temporary bundle), and no `bundle.Dockerfile`: without the staging folder and
/// the fsyncs that make [`write_bundle`] safe from a crash, which such a folder does not
/// need. Those fsyncs were ~3 ms of a ~55 ms warm release on this machine's ext4
/// (docs/benchmarks.md, `release`).
pub fn write_scratch_bundle(bundle: &GeneratedBundle, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    write_files(bundle, dir)
}

fn write_files(bundle: &GeneratedBundle, root: &Path) -> std::io::Result<()> {
    for (relative, content) in &bundle.files {
        let path = root.join(relative);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder)?;
        }
        std::fs::write(&path, content)?;
    }
    Ok(())
}

/// What differs between `bundle` and the bundle at `dir` (and its Dockerfile): missing,
/// changed and extra files. `createdAt` is ignored, since it changes on every run unless
/// `SOURCE_DATE_EPOCH` pins it.
pub fn compare(bundle: &GeneratedBundle, dir: &Path) -> std::io::Result<Vec<String>> {
    let mut differences = Vec::new();
    let without_created_at = |text: &str| {
        text.lines()
            .filter(|l| !l.trim_start().starts_with("createdAt:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (relative, content) in &bundle.files {
        match std::fs::read_to_string(dir.join(relative)) {
            Ok(on_disk) if without_created_at(&on_disk) == without_created_at(content) => {}
            Ok(_) => differences.push(format!("{} differs", dir.join(relative).display())),
            Err(_) => differences.push(format!("{} is missing", dir.join(relative).display())),
        }
    }
    for folder in ["manifests", "metadata"] {
        let Ok(entries) = std::fs::read_dir(dir.join(folder)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let relative = format!("{folder}/{}", entry.file_name().to_string_lossy());
            if !bundle.files.contains_key(&relative) {
                differences.push(format!(
                    "{} is not generated any more",
                    dir.join(&relative).display()
                ));
            }
        }
    }
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    let dockerfile = parent.join("bundle.Dockerfile");
    if std::fs::read_to_string(&dockerfile).ok().as_deref()
        != Some(bundle.annotations.dockerfile(&name).as_str())
    {
        differences.push(format!("{} differs", dockerfile.display()));
    }
    Ok(differences)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::BundleAnnotations;
    use std::collections::BTreeMap;

    fn bundle(content: &str) -> GeneratedBundle {
        GeneratedBundle {
            files: BTreeMap::from([
                ("manifests/a.yaml".to_string(), content.to_string()),
                (
                    "metadata/annotations.yaml".to_string(),
                    "annotations: {}\n".to_string(),
                ),
            ]),
            annotations: BundleAnnotations {
                package: "p".into(),
                channels: vec!["alpha".into()],
                default_channel: None,
            },
            warnings: vec![],
        }
    }

    #[test]
    fn replaces_the_previous_bundle_whole() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("bundle");
        write_bundle(&bundle("one"), &dir).unwrap();
        std::fs::write(dir.join("manifests/stale.yaml"), "old").unwrap();
        write_bundle(&bundle("two"), &dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("manifests/a.yaml")).unwrap(),
            "two"
        );
        assert!(
            !dir.join("manifests/stale.yaml").exists(),
            "files of the old bundle must not linger"
        );
        assert!(root.path().join("bundle.Dockerfile").is_file());
        let leftovers: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(
            leftovers.is_empty(),
            "temporary folders left: {leftovers:?}"
        );
    }
}
