//! What `check-upgrade` reports: findings with a level, a rule, where, old and new value,
//! and a one-line hint; and the report of one upgrade edge.

use serde::Serialize;

/// bundle-tool's rule for a CRD in OLD that NEW does not ship (not one of the preflight's).
pub const CRD_REMOVED: &str = "crdRemoved";

/// The preflight's rules about the whole CRD (reported without a version and path prefix).
const CRD_WIDE_RULES: [&str; 3] = ["existingFieldRemoval", "scope", "storedVersionRemoval"];

/// Whether `rule` is one of the preflight's CRD-wide rules.
pub fn is_crd_wide(rule: &str) -> bool {
    CRD_WIDE_RULES.contains(&rule)
}

/// How bad a finding is. Errors fail the command (exit 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// OLM refuses the upgrade, or installed users break.
    Error,
    /// A reviewer should look: the upgrade goes through but changes what users get.
    Warning,
    /// Recorded for the release notes (an image changed, permissions removed).
    Info,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Info => "info",
        })
    }
}

/// Which part of the bundle a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Area {
    /// A CRD: operator-controller's preflight rules, and a CRD dropped.
    Crd,
    /// The upgrade graph.
    Graph,
    /// The CSV: install modes, APIs, webhooks, permissions, images.
    Operator,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// Its level.
    pub level: Level,
    /// Its area.
    pub area: Area,
    /// The rule: operator-controller's name for CRD rules (`enum`, `storedVersionRemoval`,
    /// `unhandled`…), bundle-tool's for the others (`upgradeEdge`, `installModes`…).
    pub rule: String,
    /// What it is about: a CRD's name, or the CSV's.
    pub subject: String,
    /// The CRD version (`v1`) or served-version pair (`v1alpha1 -> v1`), for schema rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The field path (`^.spec.size`), or the CSV field (`spec.installModes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The message; for CRD rules crdify's text (`allowed enum values removed : ["b"]`).
    pub message: String,
    /// The value in OLD, when there is one to show.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The value in NEW.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// How to fix it, in one line.
    pub hint: String,
}

impl Finding {
    /// A finding about NEW's CSV, whose name is `subject`.
    pub fn about_csv(
        subject: &str,
        level: Level,
        rule: &str,
        path: &str,
        message: String,
        values: (Option<String>, Option<String>),
        hint: &str,
    ) -> Finding {
        Finding {
            level,
            area: Area::Operator,
            rule: rule.into(),
            subject: subject.into(),
            version: None,
            path: Some(path.into()),
            message,
            old: values.0,
            new: values.1,
            hint: hint.into(),
        }
    }

    /// The line operator-controller's preflight prints for this finding, inside
    /// `validating upgrade for CRD "NAME": …` (CRD schema findings only).
    pub fn preflight_text(&self) -> Option<String> {
        if self.area != Area::Crd || self.rule == CRD_REMOVED {
            return None;
        }
        if is_crd_wide(&self.rule) {
            return Some(format!("{}: {}", self.rule, self.message));
        }
        Some(match (&self.version, &self.path) {
            (Some(version), Some(path)) => {
                format!("{version}: {path}: {}: {}", self.rule, self.message)
            }
            _ => format!("{}: {}", self.rule, self.message),
        })
    }
}

/// The findings for one upgrade, OLD to NEW.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// OLD's bundle name (its CSV's), or where it was read from.
    pub old: String,
    /// NEW's.
    pub new: String,
    /// Findings, errors first, then by area, subject, version, path and rule.
    pub findings: Vec<Finding>,
}

impl Report {
    /// A report with its findings in their stable order.
    pub fn new(old: String, new: String, mut findings: Vec<Finding>) -> Report {
        findings.sort_by(|a, b| {
            (
                a.level, a.area, &a.subject, &a.version, &a.path, &a.rule, &a.message,
            )
                .cmp(&(
                    b.level, b.area, &b.subject, &b.version, &b.path, &b.rule, &b.message,
                ))
        });
        Report { old, new, findings }
    }

    /// Whether any finding is an error: OLM would refuse, or users would break.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Error)
    }

    /// How many findings of `level`.
    pub fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }
}
