//! The checks behind each criterion of [`super::criteria::CRITERIA`]: pure functions from a
//! bundle's [`CapabilityEvidence`] to a [`Verdict`]. Each names what it found, so that a
//! report explains itself.

use serde_json::Value;

use super::evidence::{CapabilityEvidence, Verdict};

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// RBAC rules of the CSV granting any of `verbs` on `group`/`resource` (`*` counts).
fn granted(evidence: &CapabilityEvidence, groups: &[&str], resource: &str, verbs: &[&str]) -> bool {
    let Some(manifests) = &evidence.manifests else {
        return false;
    };
    manifests.rules.iter().any(|rule| {
        let rule_groups = strings(&rule["apiGroups"]);
        let resources = strings(&rule["resources"]);
        let rule_verbs = strings(&rule["verbs"]);
        rule_groups.iter().any(|g| *g == "*" || groups.contains(g))
            && resources.iter().any(|r| *r == "*" || *r == resource)
            && rule_verbs.iter().any(|v| *v == "*" || verbs.contains(v))
    })
}

/// Objects of `manifests/` whose kind is one of `kinds`, as `Kind/name`.
fn objects_of_kind(evidence: &CapabilityEvidence, kinds: &[&str]) -> Vec<String> {
    evidence
        .manifests
        .iter()
        .flat_map(|m| &m.others)
        .filter(|o| o["kind"].as_str().is_some_and(|k| kinds.contains(&k)))
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// `(deployment/container, container)` for every container of the install deployments.
fn containers(evidence: &CapabilityEvidence) -> Vec<(String, &Value)> {
    evidence
        .manifests
        .iter()
        .flat_map(|m| &m.deployments)
        .flat_map(|d| {
            let name = d["name"].as_str().unwrap_or_default();
            d["spec"]["template"]["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |c| {
                    (
                        format!("{name}/{}", c["name"].as_str().unwrap_or_default()),
                        c,
                    )
                })
        })
        .collect()
}

/// `(version name, openAPIV3Schema)` of a CRD, for apiextensions v1 and v1beta1.
fn schemas(crd: &Value) -> Vec<(String, Option<&Value>)> {
    let shared = crd["spec"]["validation"]["openAPIV3Schema"]
        .as_object()
        .map(|_| &crd["spec"]["validation"]["openAPIV3Schema"]);
    let versions = crd["spec"]["versions"].as_array();
    match versions {
        Some(versions) if !versions.is_empty() => versions
            .iter()
            .filter(|v| v["served"].as_bool() != Some(false))
            .map(|v| {
                let own = v["schema"]["openAPIV3Schema"]
                    .as_object()
                    .map(|_| &v["schema"]["openAPIV3Schema"]);
                (
                    v["name"].as_str().unwrap_or_default().to_string(),
                    own.or(shared),
                )
            })
            .collect(),
        _ => vec![(
            crd["spec"]["version"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            shared,
        )],
    }
}

fn crd_name(crd: &Value) -> &str {
    crd["metadata"]["name"].as_str().unwrap_or_default()
}

/// Property names under `spec` (two levels deep) of every owned CRD, as `crd: path`.
fn spec_fields(evidence: &CapabilityEvidence) -> Option<Vec<(String, String)>> {
    let crds = evidence.owned_crds()?;
    let mut fields = Vec::new();
    for crd in crds {
        for (_, schema) in schemas(crd) {
            let Some(spec) = schema.and_then(|s| s["properties"]["spec"]["properties"].as_object())
            else {
                continue;
            };
            for (name, child) in spec {
                fields.push((crd_name(crd).to_string(), name.clone()));
                for nested in child["properties"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                {
                    fields.push((crd_name(crd).to_string(), format!("{name}.{nested}")));
                }
            }
        }
    }
    fields.sort();
    fields.dedup();
    Some(fields)
}

fn last_segment(path: &str) -> String {
    path.rsplit('.').next().unwrap_or(path).to_ascii_lowercase()
}

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
        .map(|o| {
            format!(
                "{} {}",
                o["kind"].as_str().unwrap_or_default(),
                o["version"].as_str().unwrap_or_default()
            )
        })
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

/// Names that say "the operand's version or image".
fn is_version_field(name: &str) -> bool {
    let name = last_segment(name);
    name == "version" || name == "image" || name.ends_with("version") || name.ends_with("image")
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

fn live(evidence: &CapabilityEvidence, id: &str) -> Verdict {
    match &evidence.live {
        None => Verdict::unknown("needs a cluster: run with --kubeconfig"),
        Some(live) => live
            .verdicts
            .get(id)
            .cloned()
            .unwrap_or_else(|| Verdict::unknown("not probed")),
    }
}

/// `L2.live-conversion`.
pub fn live_conversion(evidence: &CapabilityEvidence) -> Verdict {
    live(evidence, "L2.live-conversion")
}

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

fn is_backup_word(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["backup", "restore", "snapshot"]
        .iter()
        .any(|w| name.contains(w))
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
        .map(|o| {
            format!(
                "{} {}",
                o["kind"].as_str().unwrap_or_default(),
                o["version"].as_str().unwrap_or_default()
            )
        })
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
