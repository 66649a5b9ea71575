//! Rendering an [`AuditReport`](super::AuditReport): a terminal table, the JSON schema, Markdown
//! for pull-request comments and a self-contained HTML page.

pub mod html;
pub mod json;
pub mod markdown;
pub mod text;

use super::assessment::{BundleAudit, LevelStatus};
use super::evidence::Outcome;

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
