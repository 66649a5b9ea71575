//! The HTML report: one self-contained page (inline CSS and SVG, no script, nothing fetched)
//! with the level distribution across bundles, criterion pass rates, and a section per
//! package with every criterion's evidence.

use serde::Serialize;

use super::super::security::{RULES, Risk, overall_name};
use super::super::{AuditReport, CRITERIA};
use super::{bundles_per_risk, claim_word, declared_short, outcome_mark, risk_line, status_word};

const TEMPLATE: &str = include_str!("audit.html.j2");

/// One bar of the level distribution chart (bundles at a level, three series).
#[derive(Serialize)]
struct LevelBar {
    label: String,
    declared: usize,
    cumulative: usize,
    independent: usize,
    declared_height: f64,
    cumulative_height: f64,
    independent_height: f64,
    x: f64,
}

/// One row of the criterion pass-rate chart.
#[derive(Serialize)]
struct RateRow {
    id: &'static str,
    title: &'static str,
    pass: usize,
    fail: usize,
    unknown: usize,
    pass_width: f64,
    fail_width: f64,
    unknown_width: f64,
    y: f64,
}

/// Renders `report` as one HTML page.
pub fn render(report: &AuditReport) -> anyhow::Result<String> {
    let summary = &report.summary;
    let max = [&summary.cumulative, &summary.independent]
        .iter()
        .flat_map(|m| m.values().copied())
        .chain(std::iter::once(1))
        .max()
        .unwrap_or(1) as f64;
    let declared_at = |level: u8| {
        report
            .bundles
            .iter()
            .filter(|b| b.declared.declared.unwrap_or(0) == level)
            .count()
    };
    let max = max.max((0..=5).map(declared_at).max().unwrap_or(0) as f64);
    let chart_height = 160.0;
    let level_bars: Vec<LevelBar> = (0u8..=5)
        .map(|level| {
            let key = level.to_string();
            let cumulative = summary.cumulative.get(&key).copied().unwrap_or(0);
            let independent = summary.independent.get(&key).copied().unwrap_or(0);
            let declared = declared_at(level);
            let height = |n: usize| (n as f64 / max * chart_height).round();
            LevelBar {
                label: if level == 0 {
                    "none".into()
                } else {
                    format!("L{level}")
                },
                declared,
                cumulative,
                independent,
                declared_height: height(declared),
                cumulative_height: height(cumulative),
                independent_height: height(independent),
                x: 50.0 + f64::from(level) * 100.0,
            }
        })
        .collect();
    let width = 420.0;
    let rates: Vec<RateRow> = CRITERIA
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let tally = summary.criteria.get(c.id).cloned().unwrap_or_default();
            let total = (tally.pass + tally.fail + tally.unknown).max(1) as f64;
            RateRow {
                id: c.id,
                title: c.title,
                pass: tally.pass,
                fail: tally.fail,
                unknown: tally.unknown,
                pass_width: tally.pass as f64 / total * width,
                fail_width: tally.fail as f64 / total * width,
                unknown_width: tally.unknown as f64 / total * width,
                y: i as f64 * 22.0,
            }
        })
        .collect();
    let bundles: Vec<serde_json::Value> = report
        .bundles
        .iter()
        .map(|b| {
            serde_json::json!({
                "audit": b,
                "declaredShort": declared_short(b),
                "claim": claim_word(b),
                // Class-safe: `not reviewed` becomes `not-reviewed`.
                "risk": overall_name(&b.security).replace(' ', "-"),
                "riskLine": risk_line(&b.security),
                "levels": b.levels.iter().map(|l| serde_json::json!({
                    "level": l.level, "name": l.name, "status": status_word(l.status), "score": l.score,
                    "passed": l.passed, "failed": l.failed, "unknown": l.unknown,
                })).collect::<Vec<_>>(),
                "criteria": b.criteria.iter().map(|c| serde_json::json!({
                    "id": c.id, "title": c.title, "level": c.level,
                    "outcome": outcome_mark(c.outcome), "class": format!("{:?}", c.outcome).to_lowercase(),
                    "detail": c.detail,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let security_rules: Vec<serde_json::Value> = RULES
        .iter()
        .filter_map(|r| {
            let tally = summary.security.rules.get(r.id)?;
            Some(serde_json::json!({
                "id": r.id, "title": r.title, "findings": tally.findings, "bundles": tally.bundles,
            }))
        })
        .collect();
    let security_findings = Risk::ALL
        .iter()
        .rev()
        .map(|r| {
            let n = summary
                .security
                .findings
                .get(r.name())
                .copied()
                .unwrap_or(0);
            format!("{n} {r}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut env = minijinja::Environment::new();
    env.add_template("audit.html", TEMPLATE)?;
    let context = serde_json::json!({
        "input": report.input,
        "summary": summary,
        "level_bars": level_bars,
        "rates_height": rates.len() as f64 * 22.0,
        "rates": rates,
        "bundles": bundles,
        "errors": report.errors,
        "security_bundles": bundles_per_risk(&summary.security),
        "security_findings": security_findings,
        "security_rules": security_rules,
    });
    let page = env
        .get_template("audit.html")?
        .render(minijinja::Value::from(minijinja::value::Serde(&context)))?;
    Ok(page)
}
