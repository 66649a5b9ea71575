//! `bundle-tool audit`: find the bundles, audit them in parallel (with a progress bar on a
//! terminal), render the report, and fail when a bundle is below `--min-level` or has a
//! security finding above `--max-risk`.

use std::io::IsTerminal;
use std::path::PathBuf;

use super::{Action, ActionError, Outcome};
use crate::audit::security::Risk;
use crate::audit::source::{self, AuditTarget};
use crate::audit::{AuditReport, live, report};
use crate::location::Location;

/// Report formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditFormat {
    /// A table per bundle, for terminals.
    Text,
    /// The documented JSON schema (`docs/capability-levels.md`).
    Json,
    /// Markdown, for pull-request comments.
    Md,
    /// One self-contained HTML page with charts.
    Html,
}

/// `bundle-tool audit`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// A bundle folder, a folder of bundle folders (`<package>/<version>/`), a file-based
    /// catalog folder, or a bundle or catalog image reference.
    pub target: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: AuditFormat,
    /// Exit 1 unless every audited bundle reaches this level (independently), for release CI.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=5))]
    pub min_level: Option<u8>,
    /// Exit 1 when a bundle has a security finding above this risk, naming each finding (a
    /// catalog entry, which carries no RBAC or pod spec, cannot pass), for release CI.
    #[arg(long, value_enum)]
    pub max_risk: Option<Risk>,
    /// Audit every bundle of a catalog or folder, not only the newest of each package.
    #[arg(long)]
    pub all_bundles: bool,
    /// Also probe a cluster where the operator is installed (metrics, conversion, conditions).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace of the operator's metrics Service (default: search every namespace).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Bundles audited at the same time (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// How to reach registries: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
}

impl Action for AuditArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        // Keeps a pulled image's folder alive until the audit is done.
        let mut _pulled = None;
        let targets = match Location::of(&self.target)? {
            Location::Local(path) => source::targets_in(&path, self.all_bundles)?,
            Location::Image(reference) => {
                let image = crate::image::pull_to_temp(&reference, &self.transport.transport())?;
                let mut targets = source::targets_in(image.root(), self.all_bundles)?;
                for target in &mut targets {
                    if let AuditTarget::Folder { source, .. } = target {
                        *source = self.target.clone();
                    }
                }
                _pulled = Some(image);
                targets
            }
        };
        let probe = match &self.kubeconfig {
            Some(kubeconfig) => Some(live::LiveProbe::new(kubeconfig, self.namespace.clone())?),
            None => None,
        };
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(targets.len() as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "auditing {bar:40} {pos}/{len} bundles ({elapsed})",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        let jobs = self
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        let (audits, errors) = crate::audit::audit_targets(
            &targets,
            jobs,
            &|| {
                if let Some(bar) = &bar {
                    bar.inc(1);
                }
            },
            &|evidence| {
                if let Some(probe) = &probe {
                    evidence.live = Some(probe.probe(evidence));
                }
            },
        );
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let report = AuditReport::new(self.target.clone(), audits, errors);
        let text = match self.output {
            AuditFormat::Text => report::text::render(&report),
            AuditFormat::Json => report::json::render(&report)?,
            AuditFormat::Md => report::markdown::render(&report),
            AuditFormat::Html => report::html::render(&report)?,
        };
        let mut notes: Vec<String> = report
            .errors
            .iter()
            .map(|error| format!("error: {}: {}", error.source, error.message))
            .collect();
        if let Some(min) = self.min_level {
            for audit in report.bundles.iter().filter(|b| b.independent_level < min) {
                notes.push(format!(
                    "error: {} {} reaches level {}, below --min-level {min}",
                    audit.package, audit.version, audit.independent_level
                ));
            }
        }
        if let Some(max) = self.max_risk {
            notes.extend(max_risk_notes(&report, max));
        }
        Ok(Outcome::with_errors(text, notes))
    }
}

/// One error line per finding above `max`, and per bundle that could not be reviewed.
fn max_risk_notes(report: &AuditReport, max: Risk) -> Vec<String> {
    let mut notes = Vec::new();
    for audit in &report.bundles {
        let name = format!("{} {}", audit.package, audit.version);
        if !audit.security.reviewed {
            notes.push(format!(
                "error: {name} was not reviewed (a catalog entry has no manifests), so --max-risk {max} cannot be met: audit the bundle folder or image"
            ));
        }
        for finding in audit.security.above(max) {
            notes.push(format!(
                "error: {name}: {} {} above --max-risk {max}: {}: {}",
                finding.risk, finding.rule, finding.subject, finding.evidence
            ));
        }
    }
    notes
}

/// `--max-risk`'s values are the risk names; the scale itself stays free of CLI concerns.
impl clap::ValueEnum for Risk {
    fn value_variants<'a>() -> &'a [Self] {
        &Risk::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}
