//! Publishing a release into an OCI image layout (no `--push`): both images written with
//! one index update, then the catalog edit committed; when the catalog cannot be written,
//! the layout is put back byte for byte as it was.

use std::path::{Path, PathBuf};

use super::commit::commit_catalog;
use super::summary::{Step, StepStatus, Summary};
use super::{Outputs, Plan, ReleaseError};
use crate::durable;
use crate::image::{self, BuiltImage};

/// Writes both images into the OCI layout, then the catalog files; if the catalog cannot be
/// written, the layout is put back as it was.
pub(super) fn publish_to_layout(
    plan: &Plan,
    summary: &mut Summary,
    outputs: Outputs,
) -> Result<(), ReleaseError> {
    let Outputs {
        bundle,
        catalog,
        staged,
    } = outputs;
    let layout = &plan.oci_layout;
    // A re-run after a kill may have nothing to write to the catalog; what the killed run
    // staged beside it goes all the same.
    durable::sweep(&plan.catalog_dir);
    let before = LayoutSnapshot::take(layout);
    let written = (|| -> std::io::Result<[bool; 2]> {
        let images = [
            (plan.bundle_tag.as_str(), bundle),
            (plan.catalog_tag.as_str(), catalog),
        ];
        let wrote = images.map(|(tag, image)| {
            image::layout_digest(layout, tag).as_deref() != Some(image.digest().as_str())
        });
        // Both tags in one index update: a kill never leaves the new bundle tagged beside the
        // old catalog image.
        let changed: Vec<(&str, &BuiltImage)> = images
            .into_iter()
            .zip(wrote)
            .filter_map(|(image, wrote)| wrote.then_some(image))
            .collect();
        if !changed.is_empty() {
            image::write_images(layout, &changed)?;
        }
        Ok(wrote)
    })();
    let wrote = match written {
        Ok(wrote) => wrote,
        Err(error) => {
            before.restore(layout);
            return Err(ReleaseError::Write {
                path: layout.clone(),
                message: format!("writing the OCI layout (put back as it was): {error}"),
            });
        }
    };
    let status = |wrote: bool| {
        if wrote {
            StepStatus::Done
        } else {
            StepStatus::Unchanged
        }
    };
    summary.set(
        Step::PushBundle,
        status(wrote[0]),
        format!("{}:{}", layout.display(), plan.bundle_tag),
    );
    if let Some(staged) = staged
        && let Err(error) = commit_catalog(&plan.catalog_dir, staged)
    {
        before.restore(layout);
        return Err(error);
    }
    summary.set(
        Step::PushCatalog,
        status(wrote[1]),
        format!("{}:{}", layout.display(), plan.catalog_tag),
    );
    Ok(())
}

/// What an OCI layout folder held before a release wrote to it: its index and its blob
/// files, so that a failed release can remove what it added.
struct LayoutSnapshot {
    existed: bool,
    index: Option<Vec<u8>>,
    marker: Option<Vec<u8>>,
    blobs: std::collections::BTreeSet<PathBuf>,
}

impl LayoutSnapshot {
    fn take(layout: &Path) -> LayoutSnapshot {
        LayoutSnapshot {
            existed: layout.exists(),
            index: std::fs::read(layout.join("index.json")).ok(),
            marker: std::fs::read(layout.join("oci-layout")).ok(),
            blobs: blob_files(layout),
        }
    }

    /// Puts the layout back: the old index and marker, no new blobs.
    fn restore(&self, layout: &Path) {
        if !self.existed {
            let _ = std::fs::remove_dir_all(layout);
            return;
        }
        for blob in blob_files(layout).difference(&self.blobs) {
            let _ = std::fs::remove_file(blob);
        }
        for (name, old) in [("index.json", &self.index), ("oci-layout", &self.marker)] {
            let path = layout.join(name);
            let _ = match old {
                Some(bytes) => durable::write_file(&path, bytes),
                None => std::fs::remove_file(&path),
            };
        }
    }
}

fn blob_files(layout: &Path) -> std::collections::BTreeSet<PathBuf> {
    std::fs::read_dir(layout.join("blobs").join("sha256"))
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn image(content: &str) -> BuiltImage {
        let dir = tempfile::tempdir().unwrap();
        for folder in ["manifests", "metadata"] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        }
        std::fs::write(dir.path().join("manifests/file.yaml"), content).unwrap();
        crate::image::build_bundle_image(dir.path(), &BTreeMap::new()).unwrap()
    }

    fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(folder) = stack.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    out.insert(path.clone(), std::fs::read(&path).unwrap());
                }
            }
        }
        out
    }

    #[test]
    fn a_restored_layout_is_byte_for_byte_what_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let layout = dir.path().join("oci");
        image::write_layout(&layout, "v1", &image("one")).unwrap();
        let before = files(&layout);
        let snapshot = LayoutSnapshot::take(&layout);
        image::write_layout(&layout, "v2", &image("two")).unwrap();
        image::write_layout(&layout, "v1", &image("three")).unwrap();
        assert_ne!(files(&layout), before);
        snapshot.restore(&layout);
        assert_eq!(files(&layout), before);

        // A layout the release created is removed again.
        let fresh = dir.path().join("new");
        let snapshot = LayoutSnapshot::take(&fresh);
        image::write_layout(&fresh, "v1", &image("one")).unwrap();
        snapshot.restore(&fresh);
        assert!(!fresh.exists());
    }
}
