//! The `audit` subcommand's arguments and its run: find the bundles, audit them in parallel
//! (with a progress bar on a terminal), print the report, and set the exit code.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::source::{self, AuditTarget};
use super::{AuditReport, live, report};

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
    /// Pull image references over plain HTTP.
    #[arg(long)]
    pub plain_http: bool,
}

/// Runs `bundle-tool audit`.
pub fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let path = Path::new(&args.target);
    // Keeps a pulled image's folder alive until the audit is done.
    let mut _pulled = None;
    let looks_like_path = ["/", "./", "../"]
        .iter()
        .any(|p| args.target.starts_with(p));
    anyhow::ensure!(
        path.exists() || !looks_like_path,
        "{}: no such file or folder",
        args.target
    );
    let targets = if path.exists() {
        source::targets_in(path, args.all_bundles)?
    } else {
        let (folder, root) = source::pull_image(&args.target, args.plain_http)?;
        let mut targets = source::targets_in(&root, args.all_bundles)?;
        for target in &mut targets {
            if let AuditTarget::Folder { source, .. } = target {
                *source = args.target.clone();
            }
        }
        _pulled = Some(folder);
        targets
    };
    let probe = match &args.kubeconfig {
        Some(kubeconfig) => Some(live::LiveProbe::new(kubeconfig, args.namespace.clone())?),
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
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let (audits, errors) = super::audit_targets(
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
    let report = AuditReport::new(args.target.clone(), audits, errors);
    let text = match args.output {
        AuditFormat::Text => report::text::render(&report),
        AuditFormat::Json => report::json::render(&report)?,
        AuditFormat::Md => report::markdown::render(&report),
        AuditFormat::Html => report::html::render(&report)?,
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    for error in &report.errors {
        eprintln!("error: {}: {}", error.source, error.message);
    }
    let mut ok = report.errors.is_empty();
    if let Some(min) = args.min_level {
        for audit in report.bundles.iter().filter(|b| b.independent_level < min) {
            eprintln!(
                "error: {} {} reaches level {}, below --min-level {min}",
                audit.package, audit.version, audit.independent_level
            );
            ok = false;
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
