//! The pipeline. Everything is staged first — the bundle generated into a temporary folder,
//! images built in memory, the catalog's new files in a copy of the catalog folder — and the
//! real catalog and OCI layout are written only once every step before has passed, so a
//! failure leaves both as they were. With `--push` (see [`super::publish`]) both images'
//! blobs go up first, then the bundle's manifest (its digest checked), the catalog files,
//! and the catalog's manifest, whose failure is reported with the command that finishes the
//! release.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::catalog_edit::{self, StagedCatalog};
use super::publish::Registries;
use super::summary::{StepStatus, Summary};
use super::{Plan, ReleaseError, bundle_diff};
use crate::action::{BundleInputs, created_at, created_at_of_csv, runnable_catalog_image};
use crate::audit::CapabilityLevel;
use crate::bundle::write::write_scratch_bundle;
use crate::catalog::render::render_bundle_dir;
use crate::durable;
use crate::image::{self, BuiltImage};
use crate::validate::Optional;

/// The catalog image's server layer, being prepared on a thread since the release started.
type ServerLayerPreparing = std::thread::JoinHandle<std::io::Result<(PathBuf, image::ServerLayer)>>;

/// A release that stopped: the summary so far (the failed step marked) and why.
pub struct Failed {
    /// The report up to the failure.
    pub summary: Summary,
    /// The reason.
    pub error: ReleaseError,
}

/// Runs the release; the summary, or where and why it stopped.
pub fn run(plan: &Plan) -> Result<Summary, Box<Failed>> {
    let mut summary = Summary::new(plan);
    match release(plan, &mut summary) {
        Ok(()) => Ok(summary),
        Err(error) => {
            // The step the error names; a refusal is the catalog's verdict, however early it
            // is found. Otherwise the first step that had not run (the pushes run last, so a
            // named step is better than the first one not reached).
            let named = match &error {
                ReleaseError::Immutable { .. } | ReleaseError::ChannelsOfARelease { .. } => {
                    Some("catalog-add")
                }
                ReleaseError::UpgradeUnsafe { .. } => Some("check-upgrade"),
                ReleaseError::BelowLevel { .. } | ReleaseError::AboveRisk { .. } => Some("audit"),
                ReleaseError::Step { step, .. } => Some(*step),
                // The blobs of both images go up before either is tagged: a push error naming
                // the catalog image is push-catalog's, even when push-bundle had not run.
                ReleaseError::Push { reference, .. } if *reference == plan.catalog_image => {
                    Some("push-catalog")
                }
                _ => None,
            };
            if let Some(step) = named.or(summary.next_step()) {
                summary.set(step, StepStatus::Failed, error.to_string());
            }
            summary.message = format!("{}: release failed", plan.bundle_name);
            summary.error = Some(error.to_string());
            Err(Box::new(Failed { summary, error }))
        }
    }
}

fn release(plan: &Plan, summary: &mut Summary) -> Result<(), ReleaseError> {
    // The catalog image's server layer depends on nothing the steps make: it is prepared on
    // another thread while they run (compressing a 27 MB static server takes ~1.5 s when the
    // layer cache does not have it; the steps before build-catalog ~0.4 s).
    let server_layer = (!plan.dry_run).then(|| {
        std::thread::spawn(|| -> std::io::Result<(PathBuf, image::ServerLayer)> {
            let server = image::server_binary()?;
            let layer = image::ServerLayer::prepare(&server)?;
            Ok((server, layer))
        })
    });
    // The registries' sessions open while the steps run; what fails in opening them is
    // reported at the push, the step it belongs to.
    let mut registries = (plan.push && !plan.dry_run).then(|| Registries::open(plan));
    // generate: with the released bundle's createdAt when the version is already in the
    // catalog, so that an unchanged re-release generates the same bytes.
    let released = catalog_edit::released_bundle(&plan.catalog_dir, &plan.bundle_name)?;
    let created_at = match released.as_ref().and_then(released_created_at) {
        Some(kept) => kept,
        None => created_at().map_err(|e| ReleaseError::step("generate", e))?,
    };
    let inputs =
        BundleInputs::read(&plan.config, None).map_err(|e| ReleaseError::step("generate", e))?;
    let generated = inputs
        .generate(&created_at)
        .map_err(|e| ReleaseError::step("generate", e))?;
    let staging = tempfile::Builder::new()
        .prefix("bundle-tool-release-")
        .tempdir()
        .map_err(|e| ReleaseError::step("generate", e))?;
    let bundle_dir = staging.path().join("bundle");
    write_scratch_bundle(&generated, &bundle_dir).map_err(|e| ReleaseError::step("generate", e))?;
    let rendered = render_bundle_dir(&bundle_dir, &plan.bundle_image()).map_err(|e| {
        ReleaseError::Catalog {
            path: bundle_dir.clone(),
            message: e.to_string(),
        }
    })?;
    let mut detail = format!(
        "{} ({} files, createdAt {created_at}) in a temporary folder",
        plan.bundle_name,
        generated.files.len()
    );
    for warning in &generated.warnings {
        detail.push_str(&format!("; warning: {}", warning.0));
    }
    summary.set("generate", StepStatus::Done, detail);

    // Already released: the same content is the same release; anything else is refused.
    let already = match &released {
        Some(bundle) => {
            let differences = bundle_diff::differences(bundle, &rendered);
            if !differences.is_empty() {
                return Err(ReleaseError::Immutable {
                    name: plan.bundle_name.clone(),
                    catalog: plan.catalog_dir.clone(),
                    differences,
                });
            }
            let present =
                catalog_edit::channels_with(&plan.catalog_dir, &plan.package, &plan.bundle_name);
            // The entries' skipRange is part of the release as well as the bundle.
            let skip_range = plan.skip_range.clone().unwrap_or_default();
            let ranges: Vec<String> = present
                .iter()
                .filter(|(channel, range)| plan.channels.contains(channel) && *range != skip_range)
                .map(|(channel, range)| {
                    format!("skipRange in {channel}: the catalog has {range:?}, this release {skip_range:?}")
                })
                .collect();
            if !ranges.is_empty() {
                return Err(ReleaseError::Immutable {
                    name: plan.bundle_name.clone(),
                    catalog: plan.catalog_dir.clone(),
                    differences: ranges,
                });
            }
            let present: Vec<String> = present.into_iter().map(|(channel, _)| channel).collect();
            let missing: Vec<&String> = plan
                .channels
                .iter()
                .filter(|c| !present.contains(c))
                .collect();
            if !missing.is_empty() {
                return Err(ReleaseError::ChannelsOfARelease {
                    name: plan.bundle_name.clone(),
                    present: present.join(", "),
                    missing: missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            true
        }
        None => false,
    };

    if plan.dry_run {
        plan_only(plan, summary, already);
        return Ok(());
    }

    // validate: the operatorframework suite, and olm-v1 when asked; errors fail, warnings
    // are listed.
    let optional = Optional {
        olm_v1: plan.olm_v1,
        ..Optional::operatorframework()
    };
    let report = crate::validate::validate_bundle_with(&bundle_dir, &optional);
    let text = crate::action::validation_text(&report, &bundle_dir);
    if !report.passed() {
        return Err(ReleaseError::Invalid {
            name: plan.bundle_name.clone(),
            report: text,
        });
    }
    let warnings = report.findings.len();
    summary.set(
        "validate",
        StepStatus::Done,
        format!("valid ({warnings} warnings)"),
    );

    // audit: the level assessed from evidence, independently (as `audit --min-level`).
    let targets = crate::audit::source::targets_in(&bundle_dir, false)
        .map_err(|e| ReleaseError::step("audit", e))?;
    let (audits, errors) = crate::audit::audit_targets(&targets, 1, &|| {}, &|_| {});
    if let Some(error) = errors.first() {
        return Err(ReleaseError::step(
            "audit",
            crate::action::ActionError::message(format!("{}: {}", error.source, error.message)),
        ));
    }
    let level = audits
        .first()
        .map(|a| a.independent_level)
        .unwrap_or_default();
    let level_name = CapabilityLevel::from_number(level).map(|l| l.annotation().to_string());
    summary.level = Some(level);
    summary.level_name = level_name.clone();
    if let Some((min, setting)) = &plan.min_level
        && level < *min
    {
        return Err(ReleaseError::BelowLevel {
            name: plan.bundle_name.clone(),
            level,
            min: *min,
            setting: setting.clone(),
        });
    }
    // The security review (as `audit --max-risk`): a finding above the maximum fails.
    let security = audits.first().map(|a| &a.security);
    let risk = security
        .and_then(|s| s.risk)
        .map_or("no finding".to_string(), |r| format!("risk {r}"));
    if let Some((max, setting)) = &plan.max_risk {
        let above: Vec<String> = security
            .into_iter()
            .flat_map(|s| s.above(*max))
            .map(|f| format!("{} {}: {}: {}", f.risk, f.rule, f.subject, f.evidence))
            .collect();
        if !above.is_empty() {
            return Err(ReleaseError::AboveRisk {
                name: plan.bundle_name.clone(),
                max: *max,
                setting: setting.clone(),
                findings: above,
            });
        }
    }
    summary.set(
        "audit",
        StepStatus::Done,
        format!(
            "level {level} ({}), security review: {risk}",
            level_name.as_deref().unwrap_or("none")
        ),
    );

    // build-bundle: deterministic, so a re-release rebuilds the same digest.
    let bundle_image = crate::action::bundle_image(&bundle_dir)
        .map_err(|e| ReleaseError::step("build-bundle", e))?;
    summary.bundle.digest = bundle_image.digest();
    summary.set("build-bundle", StepStatus::Done, bundle_image.digest());
    if let Some(Ok(registries)) = registries.as_mut() {
        registries.send_bundle_blobs(&bundle_image);
    }
    // Nothing reads the generated folder again: it is removed on a thread of its own, not
    // at the end (its ~15 unlinks were ~1.5 ms of a warm release's last steps).
    let mut removing = Removals(vec![remove_aside(staging)]);

    // The catalog, staged (or the catalog as it is, when the release is already in it).
    let mut staged: Option<StagedCatalog> = if already {
        None
    } else {
        Some(catalog_edit::stage(plan, rendered)?)
    };
    let catalog_source: PathBuf = match &staged {
        Some(staged) => staged.copy_path().to_path_buf(),
        None => plan.catalog_dir.clone(),
    };
    // The catalog image is built on a thread of its own while check-upgrade and
    // validate-catalog read the same staged folder (both ~3 ms warm); it is thrown away if
    // either refuses the catalog.
    let (checked, built) = std::thread::scope(|scope| {
        let building = scope.spawn(|| build_catalog(&catalog_source, server_layer));
        let checked = check_catalog(plan, staged.as_ref(), &catalog_source);
        let built = building.join().unwrap_or_else(|_| {
            Err(ReleaseError::step(
                "build-catalog",
                crate::action::ActionError::message("building the catalog image panicked"),
            ))
        });
        (checked, built)
    });
    // The staged copy has been read for the last time as well.
    if let Some(copy) = staged.as_mut().and_then(StagedCatalog::take_copy) {
        removing.0.push(remove_aside(copy));
    }
    let (upgrade_detail, heads) = checked?;
    summary.catalog.channels = heads;
    match &staged {
        Some(staged) => summary.set(
            "catalog-add",
            StepStatus::Done,
            format!("staged: {}", staged.how),
        ),
        None => summary.set(
            "catalog-add",
            StepStatus::Unchanged,
            format!(
                "{} is already released with the same content",
                plan.bundle_name
            ),
        ),
    }
    match upgrade_detail {
        Some(detail) => summary.set("check-upgrade", StepStatus::Done, detail),
        None => summary.set(
            "check-upgrade",
            StepStatus::Unchanged,
            "already released: its upgrade edges were checked then",
        ),
    }
    summary.set("validate-catalog", StepStatus::Done, "valid");
    let catalog_image = built?;
    summary.catalog.digest = catalog_image.digest();
    summary.set("build-catalog", StepStatus::Done, catalog_image.digest());

    if let Some(registries) = registries {
        registries?.publish(
            plan,
            summary,
            &bundle_image,
            &catalog_image,
            staged.as_ref(),
        )?;
    } else {
        publish_to_layout(
            plan,
            summary,
            &bundle_image,
            &catalog_image,
            staged.as_ref(),
        )?;
    }
    summary.changed = staged.is_some();
    if let Some(staged) = &staged {
        summary.catalog.files = staged
            .files
            .iter()
            .map(|(p, _)| p.display().to_string())
            .collect();
        // The catalog-add step's edit is now in place.
        summary.set("catalog-add", StepStatus::Done, staged.how.clone());
    }
    summary.message = if summary.changed {
        format!("released {}", plan.bundle_name)
    } else {
        format!(
            "{} is already released with the same content: nothing changed",
            plan.bundle_name
        )
    };
    Ok(())
}

/// Removes the temporary folder `dir` on a thread of its own.
fn remove_aside(dir: tempfile::TempDir) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || drop(dir))
}

/// Removals under way, waited for when dropped: whatever way the release ends, its
/// temporary folders are gone before the process exits.
struct Removals(Vec<std::thread::JoinHandle<()>>);

impl Drop for Removals {
    fn drop(&mut self) {
        for removal in self.0.drain(..) {
            let _ = removal.join();
        }
    }
}

/// What check-upgrade and validate-catalog say of the catalog as it will be: the
/// check-upgrade detail (none when the release is already in the catalog) and the channels'
/// heads.
fn check_catalog(
    plan: &Plan,
    staged: Option<&StagedCatalog>,
    catalog_source: &Path,
) -> Result<(Option<String>, BTreeMap<String, String>), ReleaseError> {
    let upgrade_detail = match staged {
        Some(staged) => check_upgrade(plan, staged.copy_path())?,
        None => None,
    };
    let (_, model) =
        crate::catalog::model::validate_dir(catalog_source).map_err(|e| ReleaseError::Catalog {
            path: plan.catalog_dir.clone(),
            message: format!("the catalog would not be valid: {e}"),
        })?;
    drop(model);
    let heads = match staged {
        Some(staged) => staged.heads.clone(),
        None => {
            let config = crate::catalog::declcfg::load_dir(&plan.catalog_dir).map_err(|e| {
                ReleaseError::Catalog {
                    path: plan.catalog_dir.clone(),
                    message: e.to_string(),
                }
            })?;
            catalog_edit::heads(&config, &plan.package)
        }
    };
    Ok((upgrade_detail, heads))
}

/// The catalog image of `catalog_source` above the server layer prepared since the start.
fn build_catalog(
    catalog_source: &Path,
    server_layer: Option<ServerLayerPreparing>,
) -> Result<BuiltImage, ReleaseError> {
    let failed = |e| ReleaseError::step("build-catalog", e);
    let (server, server_layer) = server_layer
        .expect("started unless this is a dry run")
        .join()
        .map_err(|_| {
            failed(crate::action::ActionError::message(
                "preparing the server layer panicked",
            ))
        })?
        .map_err(|e| failed(e.into()))?;
    runnable_catalog_image(catalog_source, &server, &server_layer).map_err(failed)
}

/// `check-upgrade` on every edge of the staged catalog into the new bundle (OLD from the
/// catalog's `olm.bundle.object`s, NEW as rendered): an error-level finding stops the release
/// before anything is published. Returns the step's detail.
fn check_upgrade(plan: &Plan, staged_catalog: &Path) -> Result<Option<String>, ReleaseError> {
    let report = crate::upgrade::check_edges_into(staged_catalog, &plan.package, &plan.bundle_name)
        .map_err(|e| ReleaseError::step("check-upgrade", e))?;
    let unsafe_edges: Vec<String> = report
        .edges
        .iter()
        .filter(|edge| edge.report.has_errors())
        .map(|edge| crate::upgrade::render_report(&edge.report, crate::upgrade::Format::Text))
        .collect();
    if !unsafe_edges.is_empty() {
        return Err(ReleaseError::UpgradeUnsafe {
            name: plan.bundle_name.clone(),
            report: unsafe_edges.join("\n"),
        });
    }
    let warnings: usize = report
        .edges
        .iter()
        .map(|edge| edge.report.count(crate::upgrade::Level::Warning))
        .sum();
    let from: Vec<&str> = report.edges.iter().map(|e| e.report.old.as_str()).collect();
    let mut detail = if from.is_empty() {
        "no upgrade edge into it (a first release in its channels)".to_string()
    } else {
        format!("safe from {} ({warnings} warnings)", from.join(", "))
    };
    for note in &report.not_checked {
        detail.push_str(&format!("; {note}"));
    }
    Ok(Some(detail))
}

/// `--dry-run`: every step from validate on, as it would run.
fn plan_only(plan: &Plan, summary: &mut Summary, already: bool) {
    let where_to = |tag: &str, image: String| {
        if plan.push {
            format!("push to {image}")
        } else {
            format!("write {}:{tag}", plan.oci_layout.display())
        }
    };
    let mut min = match &plan.min_level {
        Some((min, setting)) => format!("fail below level {min} ({setting})"),
        None => "no minimum level".into(),
    };
    if let Some((max, setting)) = &plan.max_risk {
        min.push_str(&format!(", fail above risk {max} ({setting})"));
    }
    summary.set("validate", StepStatus::Planned, validate_selector(plan));
    summary.set("audit", StepStatus::Planned, min);
    summary.set("build-bundle", StepStatus::Planned, plan.bundle_image());
    summary.set(
        "push-bundle",
        StepStatus::Planned,
        where_to(&plan.bundle_tag, plan.bundle_image()),
    );
    let edit = if already {
        format!(
            "{} is already released with the same content: no change",
            plan.bundle_name
        )
    } else if plan.catalog_dir.join(catalog_edit::TEMPLATE_FILE).is_file() {
        format!(
            "append {} to {} for {} and render it",
            plan.bundle_image(),
            plan.catalog_dir.join(catalog_edit::TEMPLATE_FILE).display(),
            plan.channels.join(", ")
        )
    } else {
        format!(
            "make {} the head of {} in {}",
            plan.bundle_name,
            plan.channels.join(", "),
            plan.catalog_dir.display()
        )
    };
    summary.set("catalog-add", StepStatus::Planned, edit);
    summary.set(
        "check-upgrade",
        StepStatus::Planned,
        if already {
            "already released: no new upgrade edge".to_string()
        } else {
            format!("every upgrade edge into {}", plan.bundle_name)
        },
    );
    summary.set(
        "validate-catalog",
        StepStatus::Planned,
        plan.catalog_dir.display().to_string(),
    );
    summary.set(
        "build-catalog",
        StepStatus::Planned,
        plan.catalog_image.clone(),
    );
    summary.set(
        "push-catalog",
        StepStatus::Planned,
        where_to(&plan.catalog_tag, plan.catalog_image.clone()),
    );
    summary.changed = !already;
    summary.message = if already {
        format!(
            "dry run: {} is already released with the same content; nothing would change (nothing written)",
            plan.bundle_name
        )
    } else {
        format!(
            "dry run: would release {} (nothing written)",
            plan.bundle_name
        )
    };
}

/// Writes both images into the OCI layout, then the catalog files; if the catalog cannot be
/// written, the layout is put back as it was.
fn publish_to_layout(
    plan: &Plan,
    summary: &mut Summary,
    bundle: &BuiltImage,
    catalog: &BuiltImage,
    staged: Option<&StagedCatalog>,
) -> Result<(), ReleaseError> {
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
        "push-bundle",
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
        "push-catalog",
        status(wrote[1]),
        format!("{}:{}", layout.display(), plan.catalog_tag),
    );
    Ok(())
}

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

/// `createdAt` of the released bundle's CSV, from its `olm.bundle.object`.
fn released_created_at(bundle: &crate::catalog::declcfg::Bundle) -> Option<String> {
    bundle
        .objects()
        .iter()
        .filter_map(|bytes| std::str::from_utf8(bytes).ok())
        .filter(|text| text.contains("\"ClusterServiceVersion\""))
        .find_map(created_at_of_csv)
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

/// What the validate step selects, as the summary shows it: the operatorframework suite, and
/// `name=olm-v1` when the plan asks for it.
fn validate_selector(plan: &Plan) -> &'static str {
    if plan.olm_v1 {
        "suite=operatorframework, name=olm-v1"
    } else {
        "suite=operatorframework"
    }
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
