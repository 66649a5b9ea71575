//! What `run` and `run cleanup` did, one line per step, or JSON for CI.

use serde::Serialize;

/// Where progress lines go while a command runs (a terminal), if anywhere.
pub type Progress = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// One step: what was done to which object, and how long it took.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// `created`, `unchanged`, `updated`, `approved`, `deleted`, `kept`, `pushed`, `ready`,
    /// `succeeded`, `note`.
    pub action: String,
    /// `Kind namespace/name` or an image reference.
    pub object: String,
    /// More words, if any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// Seconds since the command started, when the step ended.
    pub at_seconds: f64,
}

/// The steps of one command and its end.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// In order.
    pub steps: Vec<Step>,
    /// Whether anything on the cluster changed.
    pub changed: bool,
    /// The CSV installed (run) or removed (cleanup), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csv: Option<String>,
    /// The error that stopped the command, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The whole command.
    pub seconds: f64,
}

impl Step {
    /// The step as one line: seconds, action, object, detail.
    pub fn line(&self) -> String {
        let mut out = format!("{:>6.1}s {} {}", self.at_seconds, self.action, self.object);
        if !self.detail.is_empty() {
            out.push_str(&format!(": {}", self.detail));
        }
        out
    }
}

impl Report {
    /// One line per step.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for step in &self.steps {
            out.push_str(&step.line());
            out.push('\n');
        }
        out
    }

    /// The report as JSON (one object, pretty).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_has_a_line_per_step() {
        let report = Report {
            steps: vec![
                Step {
                    action: "created".into(),
                    object: "Pod ns/p".into(),
                    detail: String::new(),
                    at_seconds: 1.25,
                },
                Step {
                    action: "succeeded".into(),
                    object: "ClusterServiceVersion ns/op.v1".into(),
                    detail: "phase Succeeded".into(),
                    at_seconds: 12.0,
                },
            ],
            changed: true,
            csv: Some("op.v1".into()),
            error: None,
            seconds: 12.0,
        };
        assert_eq!(
            report.to_text(),
            "   1.2s created Pod ns/p\n  12.0s succeeded ClusterServiceVersion ns/op.v1: phase Succeeded\n"
        );
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["steps"][1]["action"], "succeeded");
        assert_eq!(json["changed"], true);
        assert!(json.get("error").is_none());
    }
}
