//! Reports as text (one finding per block, for a terminal or CI log), JSON (for tools) or
//! Markdown (for a pull request comment).

use std::fmt::Write as _;

use serde_json::json;

use super::catalog_edges::CatalogReport;
use super::finding::{Finding, Level, Report};
use crate::markdown::cell;

/// Output formats of `check-upgrade` and `catalog check-upgrades`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Findings one block each, then a verdict line.
    Text,
    /// `{old, new, passed, counts, findings}`.
    Json,
    /// A Markdown table.
    Md,
}

/// One pair's report in `format`.
pub fn render_report(report: &Report, format: Format) -> String {
    match format {
        Format::Text => text(report),
        Format::Json => pretty(&report_json(report)),
        Format::Md => markdown(report, 2),
    }
}

/// A catalog's edges in `format`.
pub fn render_catalog(catalog: &CatalogReport, format: Format) -> String {
    match format {
        Format::Text => {
            let mut out = String::new();
            for edge in &catalog.edges {
                let _ = writeln!(
                    out,
                    "[{}] channels {}",
                    edge.package,
                    edge.channels.join(", ")
                );
                out.push_str(&text(&edge.report));
            }
            let _ = writeln!(out, "{}", catalog.summary());
            out
        }
        Format::Json => pretty(&json!({
            "passed": !catalog.has_errors(),
            "edges": catalog.edges.iter().map(|edge| json!({
                "package": edge.package,
                "channels": edge.channels,
                "report": report_json(&edge.report),
            })).collect::<Vec<_>>(),
        })),
        Format::Md => {
            let mut out = format!("# Upgrade checks\n\n{}\n\n", catalog.summary());
            for edge in &catalog.edges {
                out.push_str(&markdown(&edge.report, 2));
            }
            out
        }
    }
}

fn pretty(value: &serde_json::Value) -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(value).unwrap_or_default()
    )
}

fn report_json(report: &Report) -> serde_json::Value {
    json!({
        "old": report.old,
        "new": report.new,
        "passed": !report.has_errors(),
        "counts": {
            "error": report.count(Level::Error),
            "warning": report.count(Level::Warning),
            "info": report.count(Level::Info),
        },
        "findings": report.findings,
    })
}

/// `errors, warnings, info` counts and the verdict.
fn verdict(report: &Report) -> String {
    format!(
        "{} -> {}: {} ({} errors, {} warnings, {} info)",
        report.old,
        report.new,
        if report.has_errors() {
            "unsafe"
        } else {
            "safe"
        },
        report.count(Level::Error),
        report.count(Level::Warning),
        report.count(Level::Info)
    )
}

/// Where a finding is: subject, version, path.
fn location(finding: &Finding) -> String {
    let mut parts = vec![finding.subject.clone()];
    parts.extend(finding.version.clone());
    parts.extend(finding.path.clone());
    parts.join(" ")
}

fn text(report: &Report) -> String {
    let mut out = String::new();
    for finding in &report.findings {
        let _ = writeln!(
            out,
            "{}: {} [{}]: {}",
            finding.level,
            location(finding),
            finding.rule,
            finding.message
        );
        if finding.old.is_some() || finding.new.is_some() {
            let _ = writeln!(
                out,
                "    old: {}  new: {}",
                finding.old.as_deref().unwrap_or("-"),
                finding.new.as_deref().unwrap_or("-")
            );
        }
        let _ = writeln!(out, "    fix: {}", finding.hint);
    }
    let _ = writeln!(out, "{}", verdict(report));
    out
}

/// Markdown cells cannot hold `|` or line breaks.
fn markdown(report: &Report, heading: usize) -> String {
    let mut out = format!(
        "{} {} → {}\n\n{}\n\n",
        "#".repeat(heading),
        report.old,
        report.new,
        verdict(report)
    );
    if report.findings.is_empty() {
        return out;
    }
    out.push_str(
        "| level | rule | where | message | old | new | fix |\n|---|---|---|---|---|---|---|\n",
    );
    for f in &report.findings {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} | {} |",
            f.level,
            f.rule,
            cell(&location(f)),
            cell(&f.message),
            cell(f.old.as_deref().unwrap_or("")),
            cell(f.new.as_deref().unwrap_or("")),
            cell(&f.hint)
        );
    }
    out.push('\n');
    out
}
