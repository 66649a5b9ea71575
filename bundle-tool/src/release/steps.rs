//! The pipeline, one function a step. Everything is staged first — the bundle generated
//! into a temporary folder, images built in memory, the catalog's new files in a copy of
//! the catalog folder — and the real catalog and OCI layout are written only once every
//! step before has passed, so a failure leaves both as they were. With `--push` (see
//! [`super::publish`]) both images' blobs go up first, then the bundle's manifest (its
//! digest checked), the catalog files, and the catalog's manifest, whose failure is reported
//! with the command that finishes the release; without it, [`super::layout`] writes the OCI
//! layout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::catalog_edit::{self, StagedCatalog};
use super::installer_rbac;
use super::layout::publish_to_layout;
use super::publish::Registries;
use super::summary::{Step, StepStatus, Summary};
use super::{Outputs, Plan, ReleaseError, StepError, bundle_diff};
use crate::audit::CapabilityLevel;
use crate::bundle::BundleInputs;
use crate::bundle::inputs::{created_at, created_at_of_csv};
use crate::bundle::write::write_scratch_bundle;
use crate::catalog::declcfg::Bundle;
use crate::catalog::render::render_bundle_dir;
use crate::image::{self, BuiltImage};
use crate::validate::Optional;

/// The catalog image's server layer, being prepared on a thread since the release started.
type ServerLayerPreparing =
    std::thread::JoinHandle<Result<(PathBuf, Vec<image::ServerLayer>), StepError>>;

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
                    Some(Step::CatalogAdd)
                }
                ReleaseError::UpgradeUnsafe { .. } => Some(Step::CheckUpgrade),
                ReleaseError::BelowLevel { .. } | ReleaseError::AboveRisk { .. } => {
                    Some(Step::Audit)
                }
                ReleaseError::Step { step, .. } => Some(*step),
                // The blobs of both images go up before either is tagged: a push error naming
                // the catalog image is push-catalog's, even when push-bundle had not run.
                ReleaseError::Push { reference, .. } if *reference == plan.catalog_image => {
                    Some(Step::PushCatalog)
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

/// The steps in their order; each records its own line of the summary.
fn release(plan: &Plan, summary: &mut Summary) -> Result<(), ReleaseError> {
    let server_layer = prepare_server_layer(plan);
    // The registries' sessions open while the steps run; what fails in opening them is
    // reported at the push, the step it belongs to.
    let mut registries = (plan.push && !plan.dry_run).then(|| Registries::open(plan));
    let released = catalog_edit::released_bundle(&plan.catalog_dir, &plan.bundle_name)?;
    let generated = generate(plan, summary, released.as_ref())?;
    let already = match &released {
        Some(bundle) => check_already_released(plan, bundle, &generated.rendered)?,
        None => false,
    };
    if plan.dry_run {
        plan_only(plan, summary, already);
        return Ok(());
    }
    validate(plan, summary, &generated.bundle_dir)?;
    audit(plan, summary, &generated.bundle_dir)?;
    let bundle_image = build_bundle(plan, summary, &generated.bundle_dir)?;
    if let Some(Ok(registries)) = registries.as_mut() {
        registries.send_bundle_blobs(&bundle_image);
    }
    // Nothing reads the generated folder again: it is removed on a thread of its own, not
    // at the end (its ~15 unlinks were ~1.5 ms of a warm release's last steps).
    let mut removing = Removals(vec![remove_aside(generated.staging)]);
    // The catalog, staged (or the catalog as it is, when the release is already in it).
    let mut new_entry = (!already).then_some(generated.rendered);
    if plan.pin_digests
        && let Some(entry) = new_entry.as_mut()
    {
        entry.rename_image(&plan.bundle_image_by_digest(&bundle_image.digest()));
    }
    let (staged, catalog_image) =
        catalog_steps(plan, summary, new_entry, server_layer, &mut removing)?;
    let outputs = Outputs {
        bundle: &bundle_image,
        catalog: &catalog_image,
        staged: staged.as_ref(),
    };
    match registries {
        Some(registries) => registries?.publish(plan, summary, outputs)?,
        None => publish_to_layout(plan, summary, outputs)?,
    }
    finish(plan, summary, staged.as_ref());
    // Written after the catalog it is derived from, so it describes what the catalog serves;
    // a release that changed nothing still brings the file up to date.
    if let Some(rbac) = &plan.olm_v1_installer {
        let (written, bundles) = installer_rbac::write(plan, rbac)?;
        summary.olm_v1_rbac = Some(installer_rbac::describe(&rbac.file, &written, &bundles));
    }
    Ok(())
}

/// The catalog image's server layer depends on nothing the steps make: it is prepared on
/// another thread while they run (compressing a 27 MB static server takes ~1.5 s when the
/// layer cache does not have it; the steps before build-catalog ~0.4 s).
fn prepare_server_layer(plan: &Plan) -> Option<ServerLayerPreparing> {
    let platforms = plan.platforms.clone();
    let given = plan.server_binaries.clone();
    (!plan.dry_run).then(|| {
        std::thread::spawn(move || {
            let servers = image::server_binaries(&platforms, &given)
                .map_err(|e| StepError::Message(e.to_string()))?;
            // Each platform's server on a thread of its own: from a warm layer cache each is
            // a read and a digest check of its compressed layer, apart from the others.
            let layers = std::thread::scope(|scope| {
                let preparing: Vec<_> = servers
                    .iter()
                    .map(|server| scope.spawn(move || image::ServerLayer::prepare(server)))
                    .collect();
                preparing
                    .into_iter()
                    .map(|thread| {
                        thread.join().unwrap_or_else(|_| {
                            Err(std::io::Error::other("preparing a server layer panicked"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })?;
            Ok((servers[0].clone(), layers))
        })
    })
}

/// The bundle generated into a temporary folder, and rendered as the catalog will hold it.
struct Generated {
    /// The temporary folder holding `bundle_dir`.
    staging: tempfile::TempDir,
    /// The bundle folder.
    bundle_dir: PathBuf,
    /// Its `olm.bundle` document.
    rendered: Bundle,
}

/// generate: with the released bundle's createdAt when the version is already in the
/// catalog, so that an unchanged re-release generates the same bytes.
fn generate(
    plan: &Plan,
    summary: &mut Summary,
    released: Option<&Bundle>,
) -> Result<Generated, ReleaseError> {
    let failed = |e: StepError| ReleaseError::step(Step::Generate, e);
    let created_at = match released.and_then(released_created_at) {
        Some(kept) => kept,
        None => created_at().map_err(|e| failed(e.into()))?,
    };
    let inputs = BundleInputs::read(&plan.config, None).map_err(|e| failed(e.into()))?;
    let mut generated = inputs.generate(&created_at).map_err(|e| failed(e.into()))?;
    // Credentials come from the auth files only: the user named for the push is for the
    // release's own registry.
    let pinned = if plan.pin_digests {
        generated
            .pin_images(|images| {
                crate::image::resolve_digests(images, &plan.registry.transport)
                    .map_err(StepError::from)
            })
            .map_err(failed)?
    } else {
        0
    };
    let staging = tempfile::Builder::new()
        .prefix("bundle-tool-release-")
        .tempdir()
        .map_err(|e| failed(e.into()))?;
    let bundle_dir = staging.path().join("bundle");
    write_scratch_bundle(&generated, &bundle_dir).map_err(|e| failed(e.into()))?;
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
    if plan.pin_digests {
        detail.push_str(&format!("; {pinned} image(s) pinned to digests"));
    }
    for warning in &generated.warnings {
        detail.push_str(&format!("; warning: {}", warning.0));
    }
    summary.set(Step::Generate, StepStatus::Done, detail);
    Ok(Generated {
        staging,
        bundle_dir,
        rendered,
    })
}

/// Already released: the same content (and the same entries' skipRange) in every channel
/// asked for is the same release, true; anything else is refused.
fn check_already_released(
    plan: &Plan,
    released: &Bundle,
    rendered: &Bundle,
) -> Result<bool, ReleaseError> {
    // A pinned release records its bundle by the digest of the image built from this
    // content (deterministic, and built only after this check); the content itself is
    // compared object by object below, so the recorded digest stands for this release's.
    let recorded_by_digest = released
        .image
        .starts_with(&format!("{}@", plan.bundle_repository));
    let pinned;
    let rendered = if plan.pin_digests && recorded_by_digest {
        let mut renamed = rendered.clone();
        renamed.rename_image(&released.image);
        pinned = renamed;
        &pinned
    } else {
        rendered
    };
    let differences = bundle_diff::differences(released, rendered);
    if !differences.is_empty() {
        return Err(ReleaseError::Immutable {
            name: plan.bundle_name.clone(),
            catalog: plan.catalog_dir.clone(),
            differences,
        });
    }
    let present = catalog_edit::channels_with(&plan.catalog_dir, &plan.package, &plan.bundle_name);
    // The entries' skipRange is part of the release as well as the bundle.
    let skip_range = plan.skip_range.clone().unwrap_or_default();
    let ranges: Vec<String> = present
        .iter()
        .filter(|(channel, range)| plan.channels.contains(channel) && *range != skip_range)
        .map(|(channel, range)| {
            format!(
                "skipRange in {channel}: the catalog has {range:?}, this release {skip_range:?}"
            )
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
    let missing: Vec<&str> = plan
        .channels
        .iter()
        .filter(|c| !present.contains(c))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(ReleaseError::ChannelsOfARelease {
            name: plan.bundle_name.clone(),
            present: present.join(", "),
            missing: missing.join(", "),
        });
    }
    Ok(true)
}

/// validate: the operatorframework suite, and olm-v1 when asked; errors fail, warnings are
/// listed.
fn validate(plan: &Plan, summary: &mut Summary, bundle_dir: &Path) -> Result<(), ReleaseError> {
    let optional = Optional {
        olm_v1: plan.olm_v1,
        ..Optional::operatorframework()
    };
    let report = crate::validate::validate_bundle_with(bundle_dir, &optional);
    if !report.passed() {
        return Err(ReleaseError::Invalid {
            name: plan.bundle_name.clone(),
            report: report.to_text(bundle_dir),
        });
    }
    let warnings = report.findings.len();
    summary.set(
        Step::Validate,
        StepStatus::Done,
        format!("valid ({warnings} warnings)"),
    );
    Ok(())
}

/// audit: the level assessed from evidence, independently (as `audit --min-level`), and the
/// security review (as `audit --max-risk`): a finding above the maximum fails.
fn audit(plan: &Plan, summary: &mut Summary, bundle_dir: &Path) -> Result<(), ReleaseError> {
    let targets = crate::audit::source::targets_in(bundle_dir, false)
        .map_err(|e| ReleaseError::step(Step::Audit, e))?;
    let (audits, errors) = crate::audit::audit_targets(&targets, 1, &|| {}, &|_| {});
    if let Some(error) = errors.first() {
        return Err(ReleaseError::step(
            Step::Audit,
            StepError::Message(format!("{}: {}", error.source, error.message)),
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
        Step::Audit,
        StepStatus::Done,
        format!(
            "level {level} ({}), security review: {risk}",
            level_name.as_deref().unwrap_or("none")
        ),
    );
    Ok(())
}

/// build-bundle: deterministic, so a re-release rebuilds the same digest.
fn build_bundle(
    plan: &Plan,
    summary: &mut Summary,
    bundle_dir: &Path,
) -> Result<BuiltImage, ReleaseError> {
    let failed = |e: StepError| ReleaseError::step(Step::BuildBundle, e);
    let labels = crate::bundle::read::labels(bundle_dir).map_err(|e| failed(e.into()))?;
    let bundle_image = image::build_bundle_image_for(bundle_dir, &labels, &plan.platforms)
        .map_err(|e| failed(e.into()))?;
    summary.bundle.digest = bundle_image.digest();
    summary.set(Step::BuildBundle, StepStatus::Done, bundle_image.digest());
    Ok(bundle_image)
}

/// catalog-add (staged), check-upgrade, validate-catalog and build-catalog: the catalog as
/// it will be (or as it is, when `rendered` is `None`: the release is already in it), and
/// its image. The image is built on a thread of its own while check-upgrade and
/// validate-catalog read the same staged folder (both ~3 ms warm); it is thrown away if
/// either refuses the catalog.
fn catalog_steps(
    plan: &Plan,
    summary: &mut Summary,
    rendered: Option<Bundle>,
    server_layer: Option<ServerLayerPreparing>,
    removing: &mut Removals,
) -> Result<(Option<StagedCatalog>, BuiltImage), ReleaseError> {
    let mut staged: Option<StagedCatalog> = match rendered {
        Some(rendered) => Some(catalog_edit::stage(plan, rendered)?),
        None => None,
    };
    let catalog_source: PathBuf = match &staged {
        Some(staged) => staged.copy_path().to_path_buf(),
        None => plan.catalog_dir.clone(),
    };
    let (checked, built) = std::thread::scope(|scope| {
        let building =
            scope.spawn(|| build_catalog(&catalog_source, &plan.platforms, server_layer));
        let checked = check_catalog(plan, staged.as_ref(), &catalog_source);
        let built = building.join().unwrap_or_else(|_| {
            Err(ReleaseError::step(
                Step::BuildCatalog,
                StepError::Message("building the catalog image panicked".into()),
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
            Step::CatalogAdd,
            StepStatus::Done,
            format!("staged: {}", staged.how),
        ),
        None => summary.set(
            Step::CatalogAdd,
            StepStatus::Unchanged,
            format!(
                "{} is already released with the same content",
                plan.bundle_name
            ),
        ),
    }
    match upgrade_detail {
        Some(detail) => summary.set(Step::CheckUpgrade, StepStatus::Done, detail),
        None => summary.set(
            Step::CheckUpgrade,
            StepStatus::Unchanged,
            "already released: its upgrade edges were checked then",
        ),
    }
    summary.set(Step::ValidateCatalog, StepStatus::Done, "valid");
    let (catalog_image, warning) = built?;
    summary.notes.extend(warning);
    summary.catalog.digest = catalog_image.digest();
    summary.set(Step::BuildCatalog, StepStatus::Done, catalog_image.digest());
    Ok((staged, catalog_image))
}

/// After publishing: the files written, the catalog-add step's edit now in place, and the
/// line saying what happened.
fn finish(plan: &Plan, summary: &mut Summary, staged: Option<&StagedCatalog>) {
    summary.changed = staged.is_some();
    if let Some(staged) = staged {
        summary.catalog.files = staged
            .files
            .iter()
            .map(|(p, _)| p.display().to_string())
            .collect();
        summary.set(Step::CatalogAdd, StepStatus::Done, staged.how.clone());
    }
    summary.message = if summary.changed {
        format!("released {}", plan.bundle_name)
    } else {
        format!(
            "{} is already released with the same content: nothing changed",
            plan.bundle_name
        )
    };
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

/// The catalog image of `catalog_source` above the server layer prepared since the start,
/// and the warning about a dynamically linked server, if any.
fn build_catalog(
    catalog_source: &Path,
    platforms: &[image::Platform],
    server_layer: Option<ServerLayerPreparing>,
) -> Result<(BuiltImage, Option<String>), ReleaseError> {
    let failed = |e: StepError| ReleaseError::step(Step::BuildCatalog, e);
    let (server, server_layers) = server_layer
        .expect("started unless this is a dry run")
        .join()
        .map_err(|_| {
            failed(StepError::Message(
                "preparing the server layer panicked".into(),
            ))
        })?
        .map_err(failed)?;
    let pairs: Vec<(image::Platform, &image::ServerLayer)> = platforms
        .iter()
        .cloned()
        .zip(server_layers.iter())
        .collect();
    let built =
        image::build_catalog_images(catalog_source, &pairs).map_err(|e| failed(e.into()))?;
    let warning = built.warning(&server);
    Ok((built.image, warning))
}

/// `check-upgrade` on every edge of the staged catalog into the new bundle (OLD from the
/// catalog's `olm.bundle.object`s, NEW as rendered): an error-level finding stops the release
/// before anything is published. Returns the step's detail.
fn check_upgrade(plan: &Plan, staged_catalog: &Path) -> Result<Option<String>, ReleaseError> {
    let report = crate::upgrade::check_edges_into(staged_catalog, &plan.package, &plan.bundle_name)
        .map_err(|e| ReleaseError::step(Step::CheckUpgrade, e))?;
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
    summary.set(Step::Validate, StepStatus::Planned, validate_selector(plan));
    summary.set(Step::Audit, StepStatus::Planned, min);
    summary.set(Step::BuildBundle, StepStatus::Planned, plan.bundle_image());
    summary.set(
        Step::PushBundle,
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
    summary.set(Step::CatalogAdd, StepStatus::Planned, edit);
    summary.set(
        Step::CheckUpgrade,
        StepStatus::Planned,
        if already {
            "already released: no new upgrade edge".to_string()
        } else {
            format!("every upgrade edge into {}", plan.bundle_name)
        },
    );
    summary.set(
        Step::ValidateCatalog,
        StepStatus::Planned,
        plan.catalog_dir.display().to_string(),
    );
    summary.set(
        Step::BuildCatalog,
        StepStatus::Planned,
        plan.catalog_image.clone(),
    );
    summary.set(
        Step::PushCatalog,
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

/// `createdAt` of the released bundle's CSV, from its `olm.bundle.object`.
fn released_created_at(bundle: &crate::catalog::declcfg::Bundle) -> Option<String> {
    bundle
        .objects()
        .iter()
        .filter_map(|bytes| std::str::from_utf8(bytes).ok())
        .filter(|text| text.contains("\"ClusterServiceVersion\""))
        .find_map(created_at_of_csv)
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
