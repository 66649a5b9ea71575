//! Level 5, Auto Pilot: autoscaling and what drives it.

use super::*;

/// `L5.autoscaling`.
pub fn autoscaling(evidence: &CapabilityEvidence) -> Verdict {
    if evidence.manifests.is_none() {
        return evidence.catalog_only();
    }
    let objects = objects_of_kind(
        evidence,
        &["HorizontalPodAutoscaler", "VerticalPodAutoscaler"],
    );
    if !objects.is_empty() {
        return Verdict::pass(objects.join(", "));
    }
    if granted(
        evidence,
        &["autoscaling"],
        "horizontalpodautoscalers",
        &["create", "patch", "update"],
    ) {
        return Verdict::pass("may create autoscaling/horizontalpodautoscalers");
    }
    if granted(
        evidence,
        &["autoscaling.k8s.io"],
        "verticalpodautoscalers",
        &["create", "patch", "update"],
    ) {
        return Verdict::pass("may create autoscaling.k8s.io/verticalpodautoscalers");
    }
    Verdict::fail("no autoscaler object and no right to create one")
}

/// `L5.metrics-api`.
pub fn metrics_api(evidence: &CapabilityEvidence) -> Verdict {
    if evidence.manifests.is_none() {
        return evidence.catalog_only();
    }
    for group in [
        "metrics.k8s.io",
        "custom.metrics.k8s.io",
        "external.metrics.k8s.io",
    ] {
        for resource in ["pods", "nodes", "*"] {
            if granted(evidence, &[group], resource, &["get", "list"]) {
                return Verdict::pass(format!("may read {group}"));
            }
        }
    }
    Verdict::fail("no right to read the metrics APIs")
}

/// `L5.autoscaling-spec`.
pub fn autoscaling_spec(evidence: &CapabilityEvidence) -> Verdict {
    let Some(fields) = spec_fields(evidence) else {
        return evidence.catalog_only();
    };
    let found: Vec<String> = fields
        .into_iter()
        .filter(|(_, f)| {
            let name = last_segment(f);
            name.contains("autoscal") || name == "minreplicas" || name == "maxreplicas"
        })
        .map(|(crd, f)| format!("{crd}: spec.{f}"))
        .collect();
    if found.is_empty() {
        Verdict::fail("no autoscaling, minReplicas or maxReplicas in any owned CRD's spec")
    } else {
        Verdict::pass(found.into_iter().take(3).collect::<Vec<_>>().join(", "))
    }
}

/// `L5.auto-tuning`.
pub fn auto_tuning(_: &CapabilityEvidence) -> Verdict {
    Verdict::unknown("behaviour under load cannot be seen in a bundle")
}
