//! The JSON report: [`AuditReport`] serialized as documented in `docs/capability-levels.md`.

use super::super::AuditReport;

/// Renders `report` as pretty JSON with a final newline.
pub fn render(report: &AuditReport) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(report)? + "\n")
}
