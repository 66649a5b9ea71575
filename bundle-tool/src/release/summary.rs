//! The report of a release: what was published where, the channel heads, the assessed
//! level and each step's status — as text for people or JSON for CI (`-o json`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::Plan;

/// The steps, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// The bundle generated into a temporary folder.
    Generate,
    /// The generated bundle validated.
    Validate,
    /// Its capability level and security review.
    Audit,
    /// The bundle image built.
    BuildBundle,
    /// The bundle image written or pushed.
    PushBundle,
    /// The bundle added to the catalog (staged, then committed).
    CatalogAdd,
    /// Every upgrade edge into the new bundle checked.
    CheckUpgrade,
    /// The catalog as it will be, validated.
    ValidateCatalog,
    /// The catalog image built.
    BuildCatalog,
    /// The catalog image written or pushed.
    PushCatalog,
}

impl Step {
    /// Every step, in order.
    pub const ALL: [Step; 10] = [
        Step::Generate,
        Step::Validate,
        Step::Audit,
        Step::BuildBundle,
        Step::PushBundle,
        Step::CatalogAdd,
        Step::CheckUpgrade,
        Step::ValidateCatalog,
        Step::BuildCatalog,
        Step::PushCatalog,
    ];

    /// Its name in the report and in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Step::Generate => "generate",
            Step::Validate => "validate",
            Step::Audit => "audit",
            Step::BuildBundle => "build-bundle",
            Step::PushBundle => "push-bundle",
            Step::CatalogAdd => "catalog-add",
            Step::CheckUpgrade => "check-upgrade",
            Step::ValidateCatalog => "validate-catalog",
            Step::BuildCatalog => "build-catalog",
            Step::PushCatalog => "push-catalog",
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a step went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepStatus {
    /// It ran and changed or published something.
    Done,
    /// It ran and found everything already as it should be.
    Unchanged,
    /// `--dry-run`: it would run.
    Planned,
    /// It failed; the release stopped here.
    Failed,
    /// An earlier step failed (or the release was refused) before it.
    NotRun,
}

/// One step's line.
#[derive(Clone, Debug, Serialize)]
pub struct StepLine {
    /// The step.
    pub name: Step,
    /// How it went.
    pub status: StepStatus,
    /// What it did, or why it failed.
    pub detail: String,
}

/// An image and where it went.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ImageSummary {
    /// Its reference.
    pub image: String,
    /// Its manifest digest (empty until built).
    pub digest: String,
    /// Where it was written: `REF` when pushed, `LAYOUT:TAG` otherwise.
    pub location: String,
}

/// The catalog after the release.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CatalogSummary {
    /// The catalog folder.
    pub dir: String,
    /// The catalog image.
    pub image: String,
    /// Its manifest digest.
    pub digest: String,
    /// Where the image was written.
    pub location: String,
    /// Each channel of the package and its head.
    pub channels: BTreeMap<String, String>,
    /// The catalog files written (none when nothing changed).
    pub files: Vec<String>,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The version released.
    pub version: String,
    /// The package.
    pub package: String,
    /// The bundle name, `<package>.v<version>`.
    pub name: String,
    /// Whether the catalog changed (false: already released with the same content).
    pub changed: bool,
    /// Whether this was `--dry-run`.
    pub dry_run: bool,
    /// Whether images went to registries (else the OCI layout).
    pub pushed: bool,
    /// The bundle image.
    pub bundle: ImageSummary,
    /// The catalog.
    pub catalog: CatalogSummary,
    /// The capability level the audit assessed (independently), once audited.
    pub level: Option<u8>,
    /// Its name.
    pub level_name: Option<String>,
    /// The minimum asked for.
    pub min_level: Option<u8>,
    /// The OLM v1 installer RBAC file (`release.olmV1Installer`): the file, whether it was
    /// written or unchanged, and the bundles it covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub olm_v1_rbac: Option<String>,
    /// Every step.
    pub steps: Vec<StepLine>,
    /// One line saying what happened.
    pub message: String,
    /// Why the release stopped, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the user should hear of besides the report (a dynamically linked server), for
    /// standard error: not part of the report.
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl Summary {
    /// A summary with every step not run yet.
    pub fn new(plan: &Plan) -> Summary {
        let location = |tag: &str, image: String| {
            if plan.push {
                image
            } else {
                format!("{}:{tag}", plan.oci_layout.display())
            }
        };
        Summary {
            version: plan.version.clone(),
            package: plan.package.clone(),
            name: plan.bundle_name.clone(),
            changed: false,
            dry_run: plan.dry_run,
            pushed: plan.push,
            bundle: ImageSummary {
                image: plan.bundle_image(),
                digest: String::new(),
                location: location(&plan.bundle_tag, plan.bundle_image()),
            },
            catalog: CatalogSummary {
                dir: plan.catalog_dir.display().to_string(),
                image: plan.catalog_image.clone(),
                location: location(&plan.catalog_tag, plan.catalog_image.clone()),
                ..CatalogSummary::default()
            },
            level: None,
            level_name: None,
            min_level: plan.min_level.as_ref().map(|(n, _)| *n),
            olm_v1_rbac: None,
            steps: Step::ALL
                .into_iter()
                .map(|name| StepLine {
                    name,
                    status: StepStatus::NotRun,
                    detail: String::new(),
                })
                .collect(),
            message: String::new(),
            error: None,
            notes: Vec::new(),
        }
    }

    /// Records how `step` went.
    pub fn set(&mut self, step: Step, status: StepStatus, detail: impl Into<String>) {
        // Every step has its line from [`Summary::new`] on, in the order of [`Step::ALL`].
        let line = &mut self.steps[step as usize];
        line.status = status;
        line.detail = detail.into();
        // With RUST_LOG=bundle_tool=debug, the log's timestamps say where a release's
        // time goes (docs/benchmarks.md's breakdowns come from it).
        tracing::debug!(step = step.name(), ?status, "release step");
    }

    /// The first step not run yet, for marking where a failure happened.
    pub fn next_step(&self) -> Option<Step> {
        self.steps
            .iter()
            .find(|s| s.status == StepStatus::NotRun)
            .map(|s| s.name)
    }

    /// The JSON report.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The text report.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.message);
        let image = |i: &ImageSummary| {
            if i.digest.is_empty() {
                i.image.clone()
            } else {
                let written = if i.location == i.image {
                    "pushed".to_string()
                } else {
                    i.location.clone()
                };
                format!("{}@{} ({written})", i.image, i.digest)
            }
        };
        let _ = writeln!(out, "bundle    {}", image(&self.bundle));
        let catalog = ImageSummary {
            image: self.catalog.image.clone(),
            digest: self.catalog.digest.clone(),
            location: self.catalog.location.clone(),
        };
        let _ = writeln!(out, "catalog   {}", image(&catalog));
        if !self.catalog.channels.is_empty() {
            let heads: Vec<String> = self
                .catalog
                .channels
                .iter()
                .map(|(c, h)| format!("{c} -> {h}"))
                .collect();
            let _ = writeln!(out, "channels  {}", heads.join(", "));
        }
        if let Some(level) = self.level {
            let name = self.level_name.as_deref().unwrap_or("none");
            let min = match self.min_level {
                Some(min) => format!(", minimum {min}"),
                None => String::new(),
            };
            let _ = writeln!(out, "level     {level} ({name}){min}");
        }
        if let Some(rbac) = &self.olm_v1_rbac {
            let _ = writeln!(out, "olm-v1    {rbac}");
        }
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|s| {
                let status = serde_json::to_value(s.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                format!("{} {status}", s.name)
            })
            .collect();
        let _ = writeln!(out, "steps     {}", steps.join(", "));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_is_at_its_own_place() {
        for (place, step) in Step::ALL.into_iter().enumerate() {
            assert_eq!(step as usize, place, "{step}");
        }
        let names: Vec<String> = Step::ALL
            .iter()
            .map(|s| {
                serde_json::to_value(s)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let shown: Vec<&str> = Step::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, shown);
    }
}
