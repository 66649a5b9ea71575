//! The security review of `bundle-tool audit`: the rights a bundle asks for and how its pods
//! are sandboxed, each finding graded by [`Risk`] with the rule or field that shows it.
//!
//! - [`risk`]: the scale and the catalogue of rule ids;
//! - [`rbac`]: `permissions`, `clusterPermissions` and shipped ClusterRoles/Roles;
//! - [`pods`]: the install deployments' pod templates.
//!
//! Pure: it reads the [`BundleManifests`] already loaded for the capability audit.

pub mod pods;
pub mod rbac;
pub mod risk;

use std::collections::BTreeMap;

use serde::Serialize;

use super::evidence::BundleManifests;
pub use risk::{RULES, Risk, Rule, UnknownRisk};

/// One thing the review found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// How bad it is.
    pub risk: Risk,
    /// The [`Rule`] id.
    pub rule: &'static str,
    /// Who holds the right or runs the container: a service account, role or deployment.
    pub subject: String,
    /// The RBAC rule as written, or the field path and its value.
    pub evidence: String,
    /// What to change.
    pub hint: &'static str,
}

impl Finding {
    pub(crate) fn new(
        rule: &'static Rule,
        risk: Risk,
        subject: impl Into<String>,
        evidence: impl Into<String>,
    ) -> Self {
        Finding {
            risk,
            rule: rule.id,
            subject: subject.into(),
            evidence: evidence.into(),
            hint: rule.hint,
        }
    }
}

/// The security review of one bundle.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SecurityReview {
    /// Whether manifests were seen; a catalog entry carries no RBAC or pod spec.
    pub reviewed: bool,
    /// The highest risk among the findings; `None` when there are none or nothing was seen.
    pub risk: Option<Risk>,
    /// Findings per risk level (every level present, zero included).
    pub counts: BTreeMap<Risk, usize>,
    /// Every finding, highest risk first.
    pub findings: Vec<Finding>,
}

impl SecurityReview {
    /// The review of a bundle whose manifests could not be seen.
    pub fn not_reviewed() -> Self {
        SecurityReview {
            counts: Risk::ALL.into_iter().map(|r| (r, 0)).collect(),
            ..Default::default()
        }
    }

    /// Findings whose risk is above `max`, for `--max-risk`.
    pub fn above(&self, max: Risk) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.risk > max)
    }

    fn from_findings(mut findings: Vec<Finding>) -> Self {
        let order = |id: &str| RULES.iter().position(|r| r.id == id);
        findings.sort_by(|a, b| {
            b.risk.cmp(&a.risk).then_with(|| {
                (order(a.rule), &a.subject, &a.evidence).cmp(&(
                    order(b.rule),
                    &b.subject,
                    &b.evidence,
                ))
            })
        });
        // One RBAC rule may be listed under several service accounts or twice in a role;
        // the same right in the same place is one finding.
        findings.dedup();
        let mut counts: BTreeMap<Risk, usize> = Risk::ALL.into_iter().map(|r| (r, 0)).collect();
        for finding in &findings {
            *counts.entry(finding.risk).or_default() += 1;
        }
        SecurityReview {
            reviewed: true,
            risk: findings.iter().map(|f| f.risk).max(),
            counts,
            findings,
        }
    }
}

/// Reviews the RBAC and pod templates of a bundle's manifests.
pub fn review(manifests: &BundleManifests) -> SecurityReview {
    let mut findings = rbac::review(manifests);
    findings.extend(pods::review(&manifests.deployments));
    SecurityReview::from_findings(findings)
}

/// Keeps the overall risk name in one place for reports: a level, or why there is none.
pub fn overall_name(review: &SecurityReview) -> &'static str {
    match (review.reviewed, review.risk) {
        (false, _) => "not reviewed",
        (true, None) => "none",
        (true, Some(risk)) => risk.name(),
    }
}
