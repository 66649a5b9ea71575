//! The Markdown report, sized for a pull-request comment: a summary table, then the
//! criteria of each bundle whose claim is not shown (or of the only bundle) in a fold.

use std::fmt::Write as _;

use super::super::AuditReport;
use super::super::assessment::BundleAudit;
use super::super::security::{RULES, Risk, overall_name};
use super::{bundles_per_risk, claim_word, declared_short, outcome_mark, risk_line, status_word};
use crate::markdown::cell;

/// One bundle's security findings as a table (folded when the report has several bundles).
fn security_findings(out: &mut String, audit: &BundleAudit, folded: bool) {
    let review = &audit.security;
    if folded {
        let _ = writeln!(
            out,
            "<details><summary>{} {}: security {}</summary>\n",
            cell(&audit.package),
            cell(&audit.version),
            cell(&risk_line(review))
        );
    } else {
        let _ = writeln!(out, "### Security review\n\n{}\n", risk_line(review));
    }
    if !review.findings.is_empty() {
        let _ = writeln!(
            out,
            "| risk | rule | subject | evidence | hint |\n|---|---|---|---|---|"
        );
        for f in &review.findings {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | `{}` | {} |",
                f.risk,
                f.rule,
                cell(&f.subject),
                cell(&f.evidence).replace('`', "'"),
                cell(f.hint)
            );
        }
        let _ = writeln!(out);
    }
    if folded {
        let _ = writeln!(out, "</details>\n");
    }
}

/// Bundles per highest risk and findings per rule, for a report of several bundles.
fn security_summary(out: &mut String, report: &AuditReport) {
    let security = &report.summary.security;
    let _ = writeln!(out, "### Security review\n");
    let _ = writeln!(
        out,
        "Bundles by highest risk: {}.\n",
        bundles_per_risk(security)
    );
    let _ = writeln!(out, "| rule | findings | bundles |\n|---|---|---|");
    for rule in RULES {
        if let Some(tally) = security.rules.get(rule.id) {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} |",
                rule.id, tally.findings, tally.bundles
            );
        }
    }
    let findings: Vec<String> = Risk::ALL
        .iter()
        .rev()
        .map(|r| {
            format!(
                "{} {r}",
                security.findings.get(r.name()).copied().unwrap_or(0)
            )
        })
        .collect();
    let _ = writeln!(out, "\nFindings: {}.\n", findings.join(", "));
}

fn details(out: &mut String, audit: &BundleAudit) {
    let _ = writeln!(
        out,
        "<details><summary>{} {}: {}</summary>\n",
        cell(&audit.package),
        cell(&audit.version),
        cell(&audit.declared.gap)
    );
    let _ = writeln!(out, "| level | status | score |\n|---|---|---|");
    for l in &audit.levels {
        let _ = writeln!(
            out,
            "| {} {} | {} | {}% |",
            l.level,
            l.name,
            status_word(l.status),
            l.score
        );
    }
    let _ = writeln!(out, "\n| criterion | result | evidence |\n|---|---|---|");
    for c in &audit.criteria {
        let _ = writeln!(
            out,
            "| `{}` {} | {} | {} |",
            c.id,
            cell(c.title),
            outcome_mark(c.outcome),
            cell(&c.detail)
        );
    }
    let _ = writeln!(out, "\n</details>\n");
}

/// Bundles per declared level (rows) and assessed level (columns), both readings.
fn declared_vs_assessed(out: &mut String, report: &AuditReport) {
    let _ = writeln!(out, "### Declared vs assessed\n");
    let _ = writeln!(
        out,
        "Rows: the `capabilities` annotation. Columns: the highest level the evidence shows, independently (I0–I5) and cumulatively (C0–C5).\n"
    );
    let _ = writeln!(
        out,
        "| declared | bundles | I0 | I1 | I2 | I3 | I4 | I5 | C0 | C1 | C2 | C3 | C4 | C5 | claim shown |"
    );
    let _ = writeln!(
        out,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let mut rows: Vec<(String, Option<u8>)> =
        (1..=5u8).map(|n| (level_label(n), Some(n))).collect();
    rows.push(("none or invalid".into(), None));
    for (label, level) in rows {
        let of: Vec<&BundleAudit> = report
            .bundles
            .iter()
            .filter(|b| b.declared.declared == level)
            .collect();
        let count = |f: &dyn Fn(&BundleAudit) -> bool| of.iter().filter(|b| f(b)).count();
        let mut cells = vec![of.len().to_string()];
        for n in 0..=5u8 {
            cells.push(count(&|b| b.independent_level == n).to_string());
        }
        for n in 0..=5u8 {
            cells.push(count(&|b| b.cumulative_level == n).to_string());
        }
        cells.push(if level.is_some() {
            count(&|b| b.declared.declared_level_met == Some(true)).to_string()
        } else {
            "-".into()
        });
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    }
    let _ = writeln!(out);
}

fn level_label(n: u8) -> String {
    super::super::CapabilityLevel::from_number(n)
        .map(|l| format!("{n} {}", l.annotation()))
        .unwrap_or_default()
}

/// Renders `report` as Markdown.
pub fn render(report: &AuditReport) -> String {
    let mut out = String::new();
    let s = &report.summary;
    let _ = writeln!(out, "## Capability audit of `{}`\n", cell(&report.input));
    let _ = writeln!(
        out,
        "{} bundle(s); declared level shown by evidence: {}, not shown: {}.\n",
        s.bundles, s.claims_met, s.claims_not_met
    );
    if report.bundles.len() > 1 {
        declared_vs_assessed(&mut out, report);
        let _ = writeln!(out, "### Bundles\n");
    }
    let _ = writeln!(
        out,
        "| package | version | declared | cumulative | independent | claim | L1 | L2 | L3 | L4 | L5 | risk |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for audit in &report.bundles {
        let scores: Vec<String> = audit
            .levels
            .iter()
            .map(|l| format!("{}%", l.score))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&audit.package),
            cell(&audit.version),
            declared_short(audit),
            audit.cumulative_level,
            audit.independent_level,
            claim_word(audit),
            scores.join(" | "),
            overall_name(&audit.security)
        );
    }
    let _ = writeln!(out);
    let single = report.bundles.len() == 1;
    for audit in report
        .bundles
        .iter()
        .filter(|a| single || a.declared.declared_level_met == Some(false))
    {
        details(&mut out, audit);
    }
    if !single {
        security_summary(&mut out, report);
    }
    for audit in report
        .bundles
        .iter()
        .filter(|a| single || !a.security.findings.is_empty())
    {
        security_findings(&mut out, audit, !single);
    }
    for error in &report.errors {
        let _ = writeln!(
            out,
            "- error: `{}`: {}",
            cell(&error.source),
            cell(&error.message)
        );
    }
    out
}
