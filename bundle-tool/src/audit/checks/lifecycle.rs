//! Level 3, Full Lifecycle: disruption budgets, probes, requests, backup, finalizers, conditions.

use super::*;

/// `L3.pod-disruption-budget`.
pub fn pod_disruption_budget(evidence: &CapabilityEvidence) -> Verdict {
    if evidence.manifests.is_none() {
        return evidence.catalog_only();
    }
    let objects = objects_of_kind(evidence, &["PodDisruptionBudget"]);
    if !objects.is_empty() {
        return Verdict::pass(objects.join(", "));
    }
    if granted(
        evidence,
        &["policy"],
        "poddisruptionbudgets",
        &["create", "patch", "update"],
    ) {
        return Verdict::pass("may create policy/poddisruptionbudgets for its operands");
    }
    Verdict::fail("no PodDisruptionBudget and no right to create one")
}

/// `L3.probes`.
pub fn probes(evidence: &CapabilityEvidence) -> Verdict {
    if evidence.manifests.is_none() {
        return evidence.catalog_only();
    }
    let all = containers(evidence);
    if all.is_empty() {
        return Verdict::fail("no deployment in the install strategy");
    }
    let missing: Vec<String> = all
        .iter()
        .filter(|(_, c)| !c["livenessProbe"].is_object() || !c["readinessProbe"].is_object())
        .map(|(name, _)| name.clone())
        .collect();
    if missing.is_empty() {
        Verdict::pass(format!(
            "{} container(s) with liveness and readiness probes",
            all.len()
        ))
    } else {
        Verdict::fail(format!(
            "missing a liveness or readiness probe: {}",
            missing.join(", ")
        ))
    }
}

/// `L3.resource-requests`.
pub fn resource_requests(evidence: &CapabilityEvidence) -> Verdict {
    if evidence.manifests.is_none() {
        return evidence.catalog_only();
    }
    let all = containers(evidence);
    if all.is_empty() {
        return Verdict::fail("no deployment in the install strategy");
    }
    let missing: Vec<String> = all
        .iter()
        .filter(|(_, c)| {
            let requests = &c["resources"]["requests"];
            requests["cpu"].is_null() || requests["memory"].is_null()
        })
        .map(|(name, _)| name.clone())
        .collect();
    if missing.is_empty() {
        Verdict::pass(format!("{} container(s) request CPU and memory", all.len()))
    } else {
        Verdict::fail(format!("no CPU or memory request: {}", missing.join(", ")))
    }
}

/// `L3.backup-restore`.
pub fn backup_restore(evidence: &CapabilityEvidence) -> Verdict {
    let kinds: Vec<String> = evidence
        .owned_kinds()
        .into_iter()
        .filter(|k| is_backup_word(k))
        .collect();
    if !kinds.is_empty() {
        return Verdict::pass(format!("owned API(s) {}", kinds.join(", ")));
    }
    if granted(
        evidence,
        &["snapshot.storage.k8s.io"],
        "volumesnapshots",
        &["create"],
    ) {
        return Verdict::pass("may create snapshot.storage.k8s.io/volumesnapshots");
    }
    match spec_fields(evidence) {
        None => Verdict::unknown(
            "no backup or restore kind among the owned APIs; the catalog carries no CRD schema to look for backup fields",
        ),
        Some(fields) => {
            let found: Vec<String> = fields
                .into_iter()
                .filter(|(_, f)| is_backup_word(&last_segment(f)))
                .map(|(crd, f)| format!("{crd}: spec.{f}"))
                .collect();
            if found.is_empty() {
                Verdict::fail("no backup/restore/snapshot API, field or right")
            } else {
                Verdict::pass(found.into_iter().take(3).collect::<Vec<_>>().join(", "))
            }
        }
    }
}

/// `L3.finalizers`.
pub fn finalizers(evidence: &CapabilityEvidence) -> Verdict {
    let Some(manifests) = &evidence.manifests else {
        return evidence.catalog_only();
    };
    let owned_plurals: Vec<String> = evidence
        .owned
        .iter()
        .filter_map(|o| o["name"].as_str())
        .map(|n| n.split('.').next().unwrap_or(n).to_string())
        .collect();
    let found: Vec<String> = manifests
        .rules
        .iter()
        .filter(|r| {
            strings(&r["verbs"])
                .iter()
                .any(|v| matches!(*v, "update" | "patch" | "*"))
        })
        .flat_map(|r| strings(&r["resources"]))
        .filter(|r| {
            r.strip_suffix("/finalizers")
                .is_some_and(|plural| owned_plurals.iter().any(|p| p == plural))
                || *r == "*"
        })
        .map(str::to_string)
        .collect();
    if found.is_empty() {
        Verdict::fail("no right to set finalizers on an owned resource")
    } else {
        Verdict::pass(format!("may update {}", found.join(", ")))
    }
}

/// `L3.failure-conditions`.
pub fn failure_conditions(evidence: &CapabilityEvidence) -> Verdict {
    let Some(crds) = evidence.owned_crds() else {
        return evidence.catalog_only();
    };
    let found: Vec<&str> = crds
        .iter()
        .filter(|crd| {
            schemas(crd).iter().any(|(_, s)| {
                s.is_some_and(|s| s["properties"]["status"]["properties"]["conditions"].is_object())
            })
        })
        .map(|crd| crd_name(crd))
        .collect();
    if found.is_empty() {
        Verdict::fail("no owned CRD has status.conditions in its schema")
    } else {
        Verdict::pass(format!("status.conditions in {}", found.join(", ")))
    }
}

/// `L3.rolling-update`.
pub fn rolling_update(evidence: &CapabilityEvidence) -> Verdict {
    let Some(manifests) = &evidence.manifests else {
        return evidence.catalog_only();
    };
    if manifests.deployments.is_empty() {
        return Verdict::fail("no deployment in the install strategy");
    }
    let recreate: Vec<&str> = manifests
        .deployments
        .iter()
        .filter(|d| d["spec"]["strategy"]["type"].as_str() == Some("Recreate"))
        .filter_map(|d| d["name"].as_str())
        .collect();
    if recreate.is_empty() {
        Verdict::pass("rolling update (the default) for every deployment")
    } else {
        Verdict::fail(format!("Recreate strategy: {}", recreate.join(", ")))
    }
}
