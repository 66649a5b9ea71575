//! Rendering an [`AuditReport`](super::AuditReport): a terminal table, the JSON schema, Markdown
//! for pull-request comments and a self-contained HTML page.

pub mod html;
pub mod json;
pub mod markdown;
pub mod text;

use super::assessment::{BundleAudit, LevelStatus};
use super::evidence::Outcome;
use super::security::{Risk, SecurityReview, overall_name};

/// `3 (Full Lifecycle)`, or `none`.
pub fn level_name(level: u8) -> String {
    match super::CapabilityLevel::from_number(level) {
        Some(l) => format!("{level} ({})", l.annotation()),
        None => "0 (none)".into(),
    }
}

/// The declared annotation in a short form: the level number, `none` or `invalid`.
pub fn declared_short(audit: &BundleAudit) -> String {
    match (&audit.declared.annotation, audit.declared.declared) {
        (None, _) => "none".into(),
        (Some(_), None) => "invalid".into(),
        (Some(_), Some(n)) => n.to_string(),
    }
}

/// One mark per outcome.
pub fn outcome_mark(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "pass",
        Outcome::Fail => "FAIL",
        Outcome::Unknown => "unknown",
    }
}

/// One word per level status.
pub fn status_word(status: LevelStatus) -> &'static str {
    match status {
        LevelStatus::Reached => "reached",
        LevelStatus::NotReached => "not reached",
        LevelStatus::Undetermined => "undetermined",
    }
}

/// "met", "NOT MET" or "-" for the declared claim.
pub fn claim_word(audit: &BundleAudit) -> &'static str {
    match audit.declared.declared_level_met {
        Some(true) => "met",
        Some(false) => "NOT MET",
        None => "-",
    }
}

/// A review's findings per level, highest first: `0 critical, 1 high, 0 medium, 5 low`.
pub fn risk_counts(review: &SecurityReview) -> String {
    Risk::ALL
        .iter()
        .rev()
        .map(|r| format!("{} {r}", review.counts.get(r).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The one-line verdict of a review: `risk high (0 critical, 1 high, …)`, `risk none`, or
/// why there is none.
pub fn risk_line(review: &SecurityReview) -> String {
    match review.risk {
        Some(_) => format!("risk {} ({})", overall_name(review), risk_counts(review)),
        None if review.reviewed => "risk none (no findings)".into(),
        None => "not reviewed: a catalog entry carries no RBAC rules or pod templates".into(),
    }
}

/// Bundles per overall risk across a report, highest first, as `N critical, N high, …`.
pub fn bundles_per_risk(summary: &super::SecuritySummary) -> String {
    let mut keys: Vec<&str> = Risk::ALL.iter().rev().map(|r| r.name()).collect();
    keys.extend(["none", "notReviewed"]);
    keys.iter()
        .map(|k| {
            let n = summary.bundles.get(*k).copied().unwrap_or(0);
            let label = if *k == "notReviewed" {
                "not reviewed"
            } else {
                k
            };
            format!("{n} {label}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}
