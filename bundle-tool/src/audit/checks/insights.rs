//! Level 4, Deep Insights: metrics, events, conditions shown to users, monitoring objects.

use super::*;

/// `L4.metrics-endpoint`.
pub fn metrics_endpoint(evidence: &CapabilityEvidence) -> Verdict {
    let Some(manifests) = &evidence.manifests else {
        return evidence.catalog_only();
    };
    let monitors = objects_of_kind(evidence, &["ServiceMonitor", "PodMonitor"]);
    if !monitors.is_empty() {
        return Verdict::pass(monitors.join(", "));
    }
    let services: Vec<String> = manifests
        .others
        .iter()
        .filter(|o| o["kind"].as_str() == Some("Service"))
        .filter(|s| {
            s["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.contains("metrics"))
                || s["spec"]["ports"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|p| p["name"].as_str().is_some_and(|n| n.contains("metrics")))
        })
        .map(|s| {
            format!(
                "Service/{}",
                s["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    if !services.is_empty() {
        return Verdict::pass(services.join(", "));
    }
    let ports: Vec<String> = containers(evidence)
        .into_iter()
        .filter(|(_, c)| {
            c["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["name"].as_str().is_some_and(|n| n.contains("metrics")))
        })
        .map(|(name, _)| name)
        .collect();
    if ports.is_empty() {
        Verdict::fail("no metrics Service, metrics port or ServiceMonitor/PodMonitor")
    } else {
        Verdict::pass(format!("metrics port on {}", ports.join(", ")))
    }
}

/// `L4.events`.
pub fn events(evidence: &CapabilityEvidence) -> Verdict {
    if evidence.manifests.is_none() {
        return evidence.catalog_only();
    }
    if granted(evidence, &["", "events.k8s.io"], "events", &["create"]) {
        Verdict::pass("may create events")
    } else {
        Verdict::fail("no right to create events")
    }
}

/// `L4.condition-descriptors`.
pub fn condition_descriptors(evidence: &CapabilityEvidence) -> Verdict {
    let found: Vec<String> = evidence
        .owned
        .iter()
        .filter(|o| {
            o["statusDescriptors"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|d| {
                    strings(&d["x-descriptors"])
                        .contains(&"urn:alm:descriptor:io.kubernetes.conditions")
                })
        })
        .map(owned_api_label)
        .collect();
    if found.is_empty() {
        Verdict::fail("no status descriptor marked io.kubernetes.conditions")
    } else {
        Verdict::pass(format!("conditions descriptor on {}", found.join(", ")))
    }
}

/// `L4.monitoring-objects`.
pub fn monitoring_objects(evidence: &CapabilityEvidence) -> Verdict {
    if evidence.manifests.is_none() {
        return evidence.catalog_only();
    }
    let objects = objects_of_kind(
        evidence,
        &["ServiceMonitor", "PodMonitor", "PrometheusRule"],
    );
    if !objects.is_empty() {
        return Verdict::pass(objects.join(", "));
    }
    for resource in ["servicemonitors", "podmonitors", "prometheusrules"] {
        if granted(
            evidence,
            &["monitoring.coreos.com"],
            resource,
            &["create", "patch", "update"],
        ) {
            return Verdict::pass(format!("may create monitoring.coreos.com/{resource}"));
        }
    }
    Verdict::fail("no ServiceMonitor, PodMonitor or PrometheusRule, and no right to create them")
}

/// `L4.live-metrics`.
pub fn live_metrics(evidence: &CapabilityEvidence) -> Verdict {
    live(evidence, "L4.live-metrics")
}

/// `L4.live-conditions`.
pub fn live_conditions(evidence: &CapabilityEvidence) -> Verdict {
    live(evidence, "L4.live-conditions")
}
