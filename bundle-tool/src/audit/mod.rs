//! `bundle-tool audit`: assessing an operator's capability level from evidence, for one
//! bundle or a whole catalog, instead of trusting the CSV's `capabilities` annotation.
//!
//! - [`criteria`]: the checklist as data (level, weight, evidence, where to look);
//! - [`evidence`]: what can be seen of a bundle (folder, image, or catalog entry);
//! - [`checks`]: one pure function per criterion, a file per level;
//! - [`assessment`]: from verdicts to level scores, cumulative and independent levels, and the
//!   gap to the declared level;
//! - [`source`]: which bundles an argument names; [`live`]: the `--kubeconfig` probes;
//! - [`security`]: the security review (RBAC rights and pod security, graded by risk);
//! - [`report`]: text, JSON, Markdown and HTML.

pub mod assessment;
pub mod checks;
pub mod criteria;
pub mod evidence;
pub mod live;
pub mod report;
pub mod security;
pub mod source;

use std::collections::BTreeMap;

use serde::Serialize;

pub use assessment::{BundleAudit, LevelStatus, assess};
pub use criteria::{CRITERIA, CapabilityLevel, Criterion, Requirement};
pub use evidence::{CapabilityEvidence, Outcome, Verdict};
pub use source::AuditTarget;

/// The version of the JSON report's schema (`docs/capability-levels.md`); bumped only on an
/// incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// A bundle that could not be audited, and why.
#[derive(Clone, Debug, Serialize)]
pub struct AuditError {
    /// The folder, image or catalog concerned.
    pub source: String,
    /// What went wrong, naming the file.
    pub message: String,
}

/// Pass/fail/unknown counts of one criterion across the audited bundles.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CriterionTally {
    /// Bundles passing it.
    pub pass: usize,
    /// Bundles failing it.
    pub fail: usize,
    /// Bundles where it could not be seen.
    pub unknown: usize,
}

/// Counts across every audited bundle.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditSummary {
    /// Bundles audited.
    pub bundles: usize,
    /// Bundles per declared annotation value (`none` when absent, the raw text when invalid).
    pub declared: BTreeMap<String, usize>,
    /// Bundles per cumulative assessed level (`"0"` … `"5"`).
    pub cumulative: BTreeMap<String, usize>,
    /// Bundles per independent assessed level (`"0"` … `"5"`).
    pub independent: BTreeMap<String, usize>,
    /// Bundles whose declared level the evidence shows.
    pub claims_met: usize,
    /// Bundles whose declared level is not shown (failed or undetermined).
    pub claims_not_met: usize,
    /// Per criterion id.
    pub criteria: BTreeMap<String, CriterionTally>,
    /// The security review across bundles.
    pub security: SecuritySummary,
}

/// Security review counts across every audited bundle.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecuritySummary {
    /// Bundles per overall risk: the four levels, `none` (no finding) and `notReviewed`
    /// (catalog entries, which carry no manifests).
    pub bundles: BTreeMap<String, usize>,
    /// Findings per risk level.
    pub findings: BTreeMap<String, usize>,
    /// Per rule id: how many findings, and in how many bundles.
    pub rules: BTreeMap<String, RuleTally>,
}

/// How often one security rule fired.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RuleTally {
    /// Findings of the rule.
    pub findings: usize,
    /// Bundles with at least one.
    pub bundles: usize,
}

impl SecuritySummary {
    fn count(&mut self, review: &security::SecurityReview) {
        let overall = match (review.reviewed, review.risk) {
            (false, _) => "notReviewed",
            (true, None) => "none",
            (true, Some(risk)) => risk.name(),
        };
        *self.bundles.entry(overall.into()).or_default() += 1;
        for finding in &review.findings {
            *self.findings.entry(finding.risk.name().into()).or_default() += 1;
            self.rules.entry(finding.rule.into()).or_default().findings += 1;
        }
        let mut fired: Vec<&str> = review.findings.iter().map(|f| f.rule).collect();
        fired.sort();
        fired.dedup();
        for rule in fired {
            self.rules.entry(rule.into()).or_default().bundles += 1;
        }
    }

    fn zeroed() -> Self {
        let mut summary = SecuritySummary::default();
        for risk in security::Risk::ALL {
            summary.bundles.insert(risk.name().into(), 0);
            summary.findings.insert(risk.name().into(), 0);
        }
        summary.bundles.insert("none".into(), 0);
        summary.bundles.insert("notReviewed".into(), 0);
        summary
    }
}

/// The result of one `bundle-tool audit` run.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// What was audited, as given on the command line.
    pub input: String,
    /// Counts across bundles.
    pub summary: AuditSummary,
    /// One entry per bundle, sorted by package then version.
    pub bundles: Vec<BundleAudit>,
    /// Bundles that could not be audited.
    pub errors: Vec<AuditError>,
}

impl AuditReport {
    /// Builds the report and its summary.
    pub fn new(input: String, mut bundles: Vec<BundleAudit>, errors: Vec<AuditError>) -> Self {
        bundles.sort_by(|a, b| {
            (&a.package, &a.version, &a.source).cmp(&(&b.package, &b.version, &b.source))
        });
        let mut summary = AuditSummary {
            bundles: bundles.len(),
            security: SecuritySummary::zeroed(),
            ..Default::default()
        };
        for n in 0..=5 {
            summary.cumulative.insert(n.to_string(), 0);
            summary.independent.insert(n.to_string(), 0);
        }
        for audit in &bundles {
            let declared = audit
                .declared
                .annotation
                .clone()
                .unwrap_or_else(|| "none".into());
            *summary.declared.entry(declared).or_default() += 1;
            *summary
                .cumulative
                .entry(audit.cumulative_level.to_string())
                .or_default() += 1;
            *summary
                .independent
                .entry(audit.independent_level.to_string())
                .or_default() += 1;
            match audit.declared.declared_level_met {
                Some(true) => summary.claims_met += 1,
                Some(false) => summary.claims_not_met += 1,
                None => {}
            }
            summary.security.count(&audit.security);
            for result in &audit.criteria {
                let tally = summary.criteria.entry(result.id.to_string()).or_default();
                match result.outcome {
                    Outcome::Pass => tally.pass += 1,
                    Outcome::Fail => tally.fail += 1,
                    Outcome::Unknown => tally.unknown += 1,
                }
            }
        }
        AuditReport {
            schema_version: SCHEMA_VERSION,
            input,
            summary,
            bundles,
            errors,
        }
    }
}

/// Reads one target into evidence: a folder is loaded and validated once here.
pub fn gather(target: &AuditTarget) -> Result<CapabilityEvidence, AuditError> {
    match target {
        AuditTarget::Catalog(evidence) => Ok((**evidence).clone()),
        AuditTarget::Folder {
            package,
            dir,
            source,
        } => {
            let bundle = crate::validate::load_bundle(dir).map_err(|findings| AuditError {
                source: source.clone(),
                message: findings
                    .iter()
                    .map(|f| match &f.file {
                        Some(file) => format!("{file}: {}", f.detail),
                        None => f.detail.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            })?;
            let package = source::annotated_package(dir)
                .or_else(|| package.clone())
                .unwrap_or_default();
            Ok(CapabilityEvidence::from_loaded(&bundle, &package, source))
        }
    }
}

/// Audits `targets` on up to `jobs` threads, calling `progress` after each bundle; `enrich`
/// may add evidence (the live probes) before the criteria run.
pub fn audit_targets(
    targets: &[AuditTarget],
    jobs: usize,
    progress: &(dyn Fn() + Sync),
    enrich: &(dyn Fn(&mut CapabilityEvidence) + Sync),
) -> (Vec<BundleAudit>, Vec<AuditError>) {
    // Taken by the next free worker: bundles differ a lot in size.
    let outcomes = crate::parallel::map_dynamic_on(jobs.max(1), targets, |target| {
        let outcome = gather(target).map(|mut evidence| {
            enrich(&mut evidence);
            assess(&evidence)
        });
        progress();
        outcome
    });
    let (mut audits, mut errors) = (Vec::new(), Vec::new());
    for outcome in outcomes {
        match outcome {
            Ok(audit) => audits.push(audit),
            Err(error) => errors.push(error),
        }
    }
    (audits, errors)
}
