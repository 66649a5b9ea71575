//! Findings: a level, the field and value concerned, and the detail — printed the way
//! operator-framework/api prints them.

use std::fmt;

use serde::Serialize;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The bundle is invalid.
    Error,
    /// Worth fixing; the bundle is still valid.
    Warning,
}

/// One problem.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    /// Error or warning.
    pub level: Level,
    /// The field concerned, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The offending value, if any (may be empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// What is wrong.
    pub detail: String,
    /// The file it is about, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl Finding {
    /// An error with a value.
    pub fn error(value: impl Into<String>, detail: impl Into<String>) -> Self {
        Finding {
            level: Level::Error,
            field: None,
            value: Some(value.into()),
            detail: detail.into(),
            file: None,
        }
    }

    /// A warning with a value.
    pub fn warning(value: impl Into<String>, detail: impl Into<String>) -> Self {
        Finding {
            level: Level::Warning,
            field: None,
            value: Some(value.into()),
            detail: detail.into(),
            file: None,
        }
    }

    /// The same finding, about `file`.
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }
}

impl fmt::Display for Finding {
    /// `Error: Field F, Value V: detail` — operator-framework/api's `Error()` text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Error => "Error",
            Level::Warning => "Warning",
        };
        let detail = if self.detail.is_empty() {
            String::new()
        } else {
            format!(": {}", self.detail)
        };
        let body = match (&self.field, &self.value) {
            (Some(field), Some(value)) => format!("Field {field}, Value {value}{detail}"),
            (Some(field), None) => format!("Field {field}{detail}"),
            (None, Some(value)) => format!("Value {value}{detail}"),
            (None, None) => detail.trim_start_matches(": ").to_string(),
        };
        write!(f, "{level}: {body}")
    }
}

/// Every finding of one validation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The findings, errors first.
    pub findings: Vec<Finding>,
}

impl Report {
    /// True when there is no error (warnings do not fail a bundle).
    pub fn passed(&self) -> bool {
        !self.findings.iter().any(|f| f.level == Level::Error)
    }

    /// The JSON output: `{passed, outputs: [{type, message, ...}]}`, shaped like
    /// operator-sdk's `-o json-alpha1` so that tools reading one can read the other.
    pub fn to_json(&self) -> serde_json::Value {
        let outputs: Vec<serde_json::Value> = self
            .findings
            .iter()
            .map(|f| {
                let mut out = serde_json::json!({
                    "type": match f.level { Level::Error => "error", Level::Warning => "warning" },
                    "message": f.to_string(),
                    "detail": f.detail,
                });
                if let Some(field) = &f.field {
                    out["field"] = serde_json::json!(field);
                }
                if let Some(value) = &f.value {
                    out["value"] = serde_json::json!(value);
                }
                if let Some(file) = &f.file {
                    out["file"] = serde_json::json!(file);
                }
                out
            })
            .collect();
        serde_json::json!({"passed": self.passed(), "outputs": outputs})
    }

    /// The text output: findings grouped by file, as people fix them file by file; `DIR:
    /// valid` when it passed (`dir` is the folder validated).
    pub fn to_text(&self, dir: &std::path::Path) -> String {
        use fmt::Write as _;
        let mut out = String::new();
        let mut current_file: Option<&str> = None;
        for finding in &self.findings {
            let file = finding.file.as_deref();
            if file.is_some() && file != current_file {
                let _ = writeln!(out, "{}:", file.unwrap_or_default());
            }
            current_file = file;
            let indent = if file.is_some() { "  " } else { "" };
            let _ = writeln!(out, "{indent}{finding}");
        }
        if self.passed() {
            let _ = writeln!(out, "{}: valid", dir.display());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_operator_framework_api() {
        assert_eq!(
            Finding::error("sa", "bad").to_string(),
            "Error: Value sa: bad"
        );
        assert_eq!(
            Finding::error("", "(x.v1) bad").to_string(),
            "Error: Value : (x.v1) bad"
        );
        let field = Finding {
            level: Level::Warning,
            field: Some("spec.x".into()),
            value: None,
            detail: "d".into(),
            file: None,
        };
        assert_eq!(field.to_string(), "Warning: Field spec.x: d");
    }
}
