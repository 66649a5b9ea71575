//! Level 1, Basic Install: a valid bundle, validated CRDs with status, samples, install modes.

use serde_json::Value;

use super::*;

/// `L1.bundle-valid`.
pub fn bundle_valid(evidence: &CapabilityEvidence) -> Verdict {
    let Some(manifests) = &evidence.manifests else {
        return evidence.catalog_only();
    };
    match manifests.validation_errors.as_slice() {
        [] => Verdict::pass("loads and passes the default validators"),
        [first, rest @ ..] => Verdict::fail(format!(
            "{} validation error(s); first: {first}",
            rest.len() + 1
        )),
    }
}

/// `L1.owned-crd-schema`.
pub fn owned_crd_schema(evidence: &CapabilityEvidence) -> Verdict {
    let Some(crds) = evidence.owned_crds() else {
        return evidence.catalog_only();
    };
    if crds.is_empty() {
        return Verdict::fail("no owned CRD in manifests/: nothing to configure the operand with");
    }
    let missing: Vec<String> = crds
        .iter()
        .flat_map(|crd| {
            schemas(crd)
                .into_iter()
                .filter(|(_, s)| s.is_none())
                .map(|(v, _)| format!("{} {v}", crd_name(crd)))
        })
        .collect();
    if missing.is_empty() {
        Verdict::pass(format!(
            "{} owned CRD(s), every served version has a schema",
            crds.len()
        ))
    } else {
        Verdict::fail(format!("no openAPIV3Schema: {}", missing.join(", ")))
    }
}

/// `L1.alm-examples`.
pub fn alm_examples(evidence: &CapabilityEvidence) -> Verdict {
    let kinds = evidence.owned_kinds();
    if kinds.is_empty() {
        return Verdict::fail("the CSV owns no API");
    }
    let Some(text) = evidence.annotations.get("alm-examples") else {
        return Verdict::fail("no alm-examples annotation");
    };
    let examples: Vec<Value> = match serde_json::from_str(text) {
        Ok(Value::Array(examples)) => examples,
        _ => return Verdict::fail("alm-examples is not a JSON list"),
    };
    let missing: Vec<&String> = kinds
        .iter()
        .filter(|k| {
            !examples
                .iter()
                .any(|e| e["kind"].as_str() == Some(k.as_str()))
        })
        .collect();
    if missing.is_empty() {
        Verdict::pass(format!("examples for {}", kinds.join(", ")))
    } else {
        Verdict::fail(format!(
            "no example of {}",
            missing
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// `L1.status-subresource`.
pub fn status_subresource(evidence: &CapabilityEvidence) -> Verdict {
    let Some(crds) = evidence.owned_crds() else {
        return evidence.catalog_only();
    };
    if crds.is_empty() {
        return Verdict::fail("no owned CRD in manifests/");
    }
    let without: Vec<String> = crds
        .iter()
        .flat_map(|crd| {
            let shared = crd["spec"]["subresources"]["status"].is_object();
            let versions = crd["spec"]["versions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut missing = Vec::new();
            if versions.is_empty() && !shared {
                missing.push(crd_name(crd).to_string());
            }
            for v in versions
                .iter()
                .filter(|v| v["served"].as_bool() != Some(false))
            {
                if !shared && !v["subresources"]["status"].is_object() {
                    missing.push(format!(
                        "{} {}",
                        crd_name(crd),
                        v["name"].as_str().unwrap_or_default()
                    ));
                }
            }
            missing
        })
        .collect();
    if without.is_empty() {
        Verdict::pass("status subresource on every served version")
    } else {
        Verdict::fail(format!("no status subresource: {}", without.join(", ")))
    }
}

/// `L1.install-modes`.
pub fn install_modes(evidence: &CapabilityEvidence) -> Verdict {
    let supported: Vec<&str> = evidence
        .install_modes
        .iter()
        .filter(|m| m["supported"].as_bool() == Some(true))
        .filter_map(|m| m["type"].as_str())
        .collect();
    if supported.is_empty() {
        Verdict::fail("no supported install mode")
    } else {
        Verdict::pass(format!("supports {}", supported.join(", ")))
    }
}

/// `L1.status-descriptors`.
pub fn status_descriptors(evidence: &CapabilityEvidence) -> Verdict {
    if evidence.owned.is_empty() {
        return Verdict::fail("the CSV owns no API");
    }
    let without: Vec<String> = evidence
        .owned
        .iter()
        .filter(|o| o["statusDescriptors"].as_array().is_none_or(Vec::is_empty))
        .map(owned_api_label)
        .collect();
    if without.is_empty() {
        Verdict::pass("every owned API has status descriptors")
    } else {
        Verdict::fail(format!("no status descriptors: {}", without.join(", ")))
    }
}

/// `L1.related-images`.
pub fn related_images(evidence: &CapabilityEvidence) -> Verdict {
    match evidence.related_images.len() {
        0 => Verdict::fail("no related images"),
        n => Verdict::pass(format!("{n} related image(s)")),
    }
}
