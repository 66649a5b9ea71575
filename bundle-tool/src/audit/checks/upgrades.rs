//! Level 2, Seamless Upgrades: upgrade edges, an operand version in the CR, API conversion.

use serde_json::Value;

use super::*;

/// `L2.upgrade-edge`.
pub fn upgrade_edge(evidence: &CapabilityEvidence) -> Verdict {
    let edges = &evidence.upgrade;
    let mut found = Vec::new();
    if let Some(replaces) = &edges.replaces {
        found.push(format!("replaces {replaces}"));
    }
    if !edges.skips.is_empty() {
        found.push(format!("skips {}", edges.skips.join(", ")));
    }
    if let Some(range) = &edges.skip_range {
        found.push(format!("skipRange {range}"));
    }
    if found.is_empty() {
        Verdict::fail(
            "no replaces, skips or olm.skipRange: no upgrade path into this version (a first release has none)",
        )
    } else {
        Verdict::pass(found.join("; "))
    }
}

/// `L2.operand-version-field`.
pub fn operand_version_field(evidence: &CapabilityEvidence) -> Verdict {
    // Spec descriptors are visible in a catalog too.
    let from_descriptors: Vec<String> = evidence
        .owned
        .iter()
        .flat_map(|o| o["specDescriptors"].as_array().into_iter().flatten())
        .filter_map(|d| d["path"].as_str())
        .filter(|p| is_version_field(p))
        .map(str::to_string)
        .collect();
    let from_schema: Option<Vec<String>> = spec_fields(evidence).map(|fields| {
        fields
            .into_iter()
            .filter(|(_, f)| is_version_field(f))
            .map(|(crd, f)| format!("{crd}: spec.{f}"))
            .collect()
    });
    let mut found = from_schema.clone().unwrap_or_default();
    if found.is_empty() {
        found = from_descriptors
            .iter()
            .map(|p| format!("descriptor spec.{p}"))
            .collect();
    }
    found.dedup();
    match (found.is_empty(), from_schema) {
        (false, _) => Verdict::pass(found.into_iter().take(4).collect::<Vec<_>>().join(", ")),
        (true, Some(_)) => Verdict::fail("no version or image field in any owned CRD's spec"),
        (true, None) => {
            Verdict::unknown("no version descriptor, and the catalog carries no CRD schema")
        }
    }
}

/// `L2.semver-version`.
pub fn semver_version(evidence: &CapabilityEvidence) -> Verdict {
    match semver::Version::parse(&evidence.version) {
        Ok(_) => Verdict::pass(format!("version {}", evidence.version)),
        Err(e) => Verdict::fail(format!("version {:?}: {e}", evidence.version)),
    }
}

/// `L2.crd-conversion`.
pub fn crd_conversion(evidence: &CapabilityEvidence) -> Verdict {
    let Some(crds) = evidence.owned_crds() else {
        return evidence.catalog_only();
    };
    let webhooks = evidence.manifests.as_ref().map(|m| &m.webhooks);
    let converted: Vec<&str> = webhooks
        .into_iter()
        .flatten()
        .filter(|w| w["type"].as_str() == Some("ConversionWebhook"))
        .flat_map(|w| strings(&w["conversionCRDs"]))
        .collect();
    let multi: Vec<&Value> = crds
        .into_iter()
        .filter(|crd| {
            crd["spec"]["versions"].as_array().is_some_and(|v| {
                v.iter()
                    .filter(|v| v["served"].as_bool() == Some(true))
                    .count()
                    >= 2
            })
        })
        .collect();
    if multi.is_empty() {
        return Verdict::fail("no owned CRD serves two versions");
    }
    let with_conversion: Vec<&str> = multi
        .iter()
        .map(|crd| crd_name(crd))
        .filter(|name| converted.contains(name))
        .collect();
    if with_conversion.is_empty() {
        Verdict::fail(format!(
            "{} serve(s) several versions but no ConversionWebhook in the CSV converts them",
            multi
                .iter()
                .map(|c| crd_name(c))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else {
        Verdict::pass(format!(
            "conversion webhook for {}",
            with_conversion.join(", ")
        ))
    }
}

/// `L2.live-conversion`.
pub fn live_conversion(evidence: &CapabilityEvidence) -> Verdict {
    live(evidence, "L2.live-conversion")
}
