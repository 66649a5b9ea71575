//! The terminal report: one line per bundle, and for a single bundle every criterion.

use std::fmt::Write as _;

use super::super::AuditReport;
use super::super::security::{RULES, SecurityReview, overall_name};
use super::{
    bundles_per_risk, claim_word, declared_short, level_name, outcome_mark, risk_line, status_word,
};

/// The findings of one bundle, each with its evidence and hint.
fn security_section(out: &mut String, review: &SecurityReview) {
    let _ = writeln!(out, "\nSecurity review: {}", risk_line(review));
    for f in &review.findings {
        let _ = writeln!(out, "  {:<8} {:<34} {}", f.risk.name(), f.rule, f.subject);
        let _ = writeln!(out, "           {}", f.evidence);
        let _ = writeln!(out, "           hint: {}", f.hint);
    }
}

/// Renders `report` as plain text.
pub fn render(report: &AuditReport) -> String {
    let mut out = String::new();
    if let [audit] = report.bundles.as_slice() {
        let _ = writeln!(out, "{} {} ({})", audit.bundle, audit.version, audit.source);
        let _ = writeln!(
            out,
            "declared: {}",
            audit.declared.annotation.as_deref().unwrap_or("(none)")
        );
        let _ = writeln!(
            out,
            "assessed: level {} cumulatively, level {} independently",
            level_name(audit.cumulative_level),
            level_name(audit.independent_level)
        );
        let _ = writeln!(out, "gap: {}", audit.declared.gap);
        let _ = writeln!(out);
        for level in &audit.levels {
            let _ = writeln!(
                out,
                "Level {} {:<18} {:<12} score {:>3}%  ({} pass, {} fail, {} unknown)",
                level.level,
                level.name,
                status_word(level.status),
                level.score,
                level.passed,
                level.failed,
                level.unknown
            );
            for c in audit.criteria.iter().filter(|c| c.level == level.level) {
                let _ = writeln!(
                    out,
                    "  {:<7} {:<26} {}",
                    outcome_mark(c.outcome),
                    c.id,
                    c.detail
                );
            }
        }
        security_section(&mut out, &audit.security);
        return out;
    }
    let width = report
        .bundles
        .iter()
        .map(|b| b.package.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let _ = writeln!(
        out,
        "{:<width$}  {:<14} {:<8} {:<5} {:<5} {:<8} L1   L2   L3   L4   L5   RISK",
        "PACKAGE", "VERSION", "DECLARED", "CUMUL", "INDEP", "CLAIM"
    );
    for audit in &report.bundles {
        let scores: Vec<String> = audit
            .levels
            .iter()
            .map(|l| format!("{:>3}%", l.score))
            .collect();
        let _ = writeln!(
            out,
            "{:<width$}  {:<14} {:<8} {:<5} {:<5} {:<8} {}  {}",
            audit.package,
            truncate(&audit.version, 14),
            declared_short(audit),
            audit.cumulative_level,
            audit.independent_level,
            claim_word(audit),
            scores.join(" "),
            overall_name(&audit.security)
        );
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "\n{} bundles; declared level shown by evidence: {}, not shown: {}; errors: {}",
        s.bundles,
        s.claims_met,
        s.claims_not_met,
        report.errors.len()
    );
    let _ = writeln!(
        out,
        "security review, bundles by highest risk: {}",
        bundles_per_risk(&s.security)
    );
    let fired: Vec<_> = RULES
        .iter()
        .filter_map(|r| s.security.rules.get(r.id).map(|t| (r.id, t)))
        .collect();
    if !fired.is_empty() {
        let _ = writeln!(out, "\n{:<36} {:>8} {:>8}", "RULE", "FINDINGS", "BUNDLES");
        for (id, tally) in fired {
            let _ = writeln!(out, "{id:<36} {:>8} {:>8}", tally.findings, tally.bundles);
        }
    }
    out
}

fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let kept: String = text.chars().take(width - 1).collect();
        format!("{kept}…")
    }
}
