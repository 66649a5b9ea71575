//! From criterion verdicts to levels: each level's score and whether it is reached, the
//! highest level reached cumulatively (every lower level too, the pre-2022 reading) and
//! independently (the current reading), and the gap to the declared level.

use std::collections::BTreeMap;

use serde::Serialize;

use super::criteria::{CRITERIA, CapabilityLevel, Criterion, Requirement};
use super::evidence::{CapabilityEvidence, Outcome, Verdict};
use super::security::{self, SecurityReview};

/// One criterion's result for one bundle.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CriterionResult {
    /// The criterion's id.
    pub id: &'static str,
    /// Its level.
    pub level: u8,
    /// How it counts.
    pub requirement: Requirement,
    /// Its title.
    pub title: &'static str,
    /// Pass, fail or unknown.
    pub outcome: Outcome,
    /// What was found.
    pub detail: String,
}

/// Whether a level is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LevelStatus {
    /// Every core criterion passes and every one-of group has a pass.
    Reached,
    /// A core criterion fails, or every criterion of a one-of group fails.
    NotReached,
    /// Nothing fails that decides it, but something deciding it is unknown.
    Undetermined,
}

/// A level's score for one bundle.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LevelScore {
    /// 1 to 5.
    pub level: u8,
    /// The annotation name of the level.
    pub name: &'static str,
    /// Reached or not.
    pub status: LevelStatus,
    /// Criteria passed.
    pub passed: usize,
    /// Criteria failed.
    pub failed: usize,
    /// Criteria unknown.
    pub unknown: usize,
    /// `passed / (passed + failed)` in percent, 0 when nothing could be decided.
    pub score: u8,
}

/// The declared level against the assessed one.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeclaredVsAssessed {
    /// The `capabilities` annotation as written (absent when missing).
    pub annotation: Option<String>,
    /// The level it names, if it is one of OLM's five values.
    pub declared: Option<u8>,
    /// Whether the declared level is reached by the evidence (independently).
    pub declared_level_met: Option<bool>,
    /// In words: what is missing, or that the claim holds.
    pub gap: String,
}

/// The audit of one bundle.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleAudit {
    /// The package.
    pub package: String,
    /// The bundle (CSV) name.
    pub bundle: String,
    /// Its version.
    pub version: String,
    /// Where it came from.
    pub source: String,
    /// `bundle` (manifests seen) or `catalog` (only the FBC entry seen).
    pub evidence_kind: &'static str,
    /// Whether cluster probes ran.
    pub live: bool,
    /// The declared level against the evidence.
    pub declared: DeclaredVsAssessed,
    /// Highest level N such that levels 1..=N are all reached (0 if level 1 is not).
    pub cumulative_level: u8,
    /// Highest level reached on its own (0 if none).
    pub independent_level: u8,
    /// Every level's score, level 1 first.
    pub levels: Vec<LevelScore>,
    /// Every criterion's result, in checklist order.
    pub criteria: Vec<CriterionResult>,
    /// The rights and pod security the bundle asks for, graded by risk.
    pub security: SecurityReview,
}

impl BundleAudit {
    /// The level with number `n`'s score.
    pub fn level(&self, n: u8) -> Option<&LevelScore> {
        self.levels.iter().find(|l| l.level == n)
    }
}

fn level_status(results: &[(&Criterion, Verdict)], level: CapabilityLevel) -> LevelStatus {
    let mut undetermined = false;
    let mut groups: BTreeMap<&str, Vec<Outcome>> = BTreeMap::new();
    for (criterion, verdict) in results.iter().filter(|(c, _)| c.level == level) {
        match criterion.requirement {
            Requirement::Core => match verdict.outcome {
                Outcome::Fail => return LevelStatus::NotReached,
                Outcome::Unknown => undetermined = true,
                Outcome::Pass => {}
            },
            Requirement::OneOf(group) => groups.entry(group).or_default().push(verdict.outcome),
            Requirement::Supporting => {}
        }
    }
    for outcomes in groups.values() {
        if outcomes.contains(&Outcome::Pass) {
            continue;
        }
        if outcomes.iter().all(|o| *o == Outcome::Fail) {
            return LevelStatus::NotReached;
        }
        undetermined = true;
    }
    if undetermined {
        LevelStatus::Undetermined
    } else {
        LevelStatus::Reached
    }
}

/// What keeps `level` from being reached, in words.
fn blockers(results: &[(&Criterion, Verdict)], level: CapabilityLevel) -> Vec<String> {
    let mut out = Vec::new();
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (criterion, verdict) in results.iter().filter(|(c, _)| c.level == level) {
        match criterion.requirement {
            Requirement::Core if verdict.outcome != Outcome::Pass => out.push(format!(
                "{} {} ({})",
                criterion.id,
                match verdict.outcome {
                    Outcome::Fail => "fails",
                    _ => "is unknown",
                },
                verdict.detail
            )),
            Requirement::OneOf(group) if verdict.outcome != Outcome::Pass => {
                groups.entry(group).or_default().push(criterion.id)
            }
            Requirement::OneOf(group) => {
                groups.insert(group, Vec::new());
            }
            _ => {}
        }
    }
    for (group, ids) in groups {
        // A group with a pass was reset to empty above and stays out of the list.
        if !ids.is_empty()
            && results
                .iter()
                .filter(|(c, _)| c.requirement == Requirement::OneOf(group))
                .all(|(_, v)| v.outcome != Outcome::Pass)
        {
            out.push(format!("none of {} passes", ids.join(", ")));
        }
    }
    out
}

/// Runs every criterion over `evidence` and scores the levels.
pub fn assess(evidence: &CapabilityEvidence) -> BundleAudit {
    let results: Vec<(&Criterion, Verdict)> =
        CRITERIA.iter().map(|c| (c, (c.check)(evidence))).collect();
    let mut levels = Vec::new();
    for level in CapabilityLevel::ALL {
        let of_level = results.iter().filter(|(c, _)| c.level == level);
        let count = |o: Outcome| of_level.clone().filter(|(_, v)| v.outcome == o).count();
        let (passed, failed, unknown) = (
            count(Outcome::Pass),
            count(Outcome::Fail),
            count(Outcome::Unknown),
        );
        let decided = passed + failed;
        levels.push(LevelScore {
            level: level.number(),
            name: level.annotation(),
            status: level_status(&results, level),
            passed,
            failed,
            unknown,
            score: (passed * 100).checked_div(decided).unwrap_or(0) as u8,
        });
    }
    let reached = |l: &LevelScore| l.status == LevelStatus::Reached;
    let cumulative_level = levels.iter().take_while(|l| reached(l)).count() as u8;
    let independent_level = levels
        .iter()
        .filter(|l| reached(l))
        .map(|l| l.level)
        .max()
        .unwrap_or(0);
    let annotation = evidence.annotations.get("capabilities").cloned();
    let declared_level = annotation
        .as_deref()
        .and_then(CapabilityLevel::from_annotation);
    let declared = match (&annotation, declared_level) {
        (None, _) => DeclaredVsAssessed {
            annotation: None,
            declared: None,
            declared_level_met: None,
            gap: "no capabilities annotation: nothing is claimed".into(),
        },
        (Some(value), None) => DeclaredVsAssessed {
            annotation: Some(value.clone()),
            declared: None,
            declared_level_met: None,
            gap: format!("{value:?} is not one of OLM's five capability values"),
        },
        (Some(value), Some(level)) => {
            let status = levels[usize::from(level.number()) - 1].status;
            let met = status == LevelStatus::Reached;
            let gap = if met {
                let mut text = format!("the evidence shows level {} ({value})", level.number());
                if cumulative_level < level.number() {
                    let missing =
                        CapabilityLevel::from_number(cumulative_level + 1).expect("1..=5");
                    text.push_str(&format!(
                        "; cumulatively only level {cumulative_level}: {}",
                        blockers(&results, missing).join("; ")
                    ));
                }
                text
            } else {
                format!(
                    "claims level {} ({value}) but it is {}: {}",
                    level.number(),
                    if status == LevelStatus::Undetermined {
                        "undetermined"
                    } else {
                        "not shown"
                    },
                    blockers(&results, level).join("; ")
                )
            };
            DeclaredVsAssessed {
                annotation: Some(value.clone()),
                declared: Some(level.number()),
                declared_level_met: Some(met),
                gap,
            }
        }
    };
    BundleAudit {
        package: evidence.package.clone(),
        bundle: evidence.bundle.clone(),
        version: evidence.version.clone(),
        source: evidence.source.clone(),
        evidence_kind: if evidence.manifests.is_some() {
            "bundle"
        } else {
            "catalog"
        },
        live: evidence.live.is_some(),
        declared,
        cumulative_level,
        independent_level,
        levels,
        criteria: results
            .into_iter()
            .map(|(c, v)| CriterionResult {
                id: c.id,
                level: c.level.number(),
                requirement: c.requirement,
                title: c.title,
                outcome: v.outcome,
                detail: v.detail,
            })
            .collect(),
        security: match &evidence.manifests {
            Some(manifests) => security::review(manifests),
            None => SecurityReview::not_reviewed(),
        },
    }
}
