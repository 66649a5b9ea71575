//! The capability checklist as data: every criterion with its level, how much it weighs in
//! deciding that level, what evidence proves it and where the tool looks for it.
//!
//! `docs/capability-levels.md` documents the same table; `criteria_are_documented` (a unit
//! test) keeps the two in step.

use serde::Serialize;

use super::checks;
use super::evidence::{CapabilityEvidence, Verdict};

/// One of OLM's five capability levels (the values of the CSV's `capabilities` annotation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum CapabilityLevel {
    /// Level 1: the operator installs and configures its operand from a CR.
    BasicInstall = 1,
    /// Level 2: the operator and its operand upgrade without manual steps.
    SeamlessUpgrades = 2,
    /// Level 3: the operand's whole life: storage, failure, deletion, disruption budgets.
    FullLifecycle = 3,
    /// Level 4: metrics, alerts, events and conditions about the operand.
    DeepInsights = 4,
    /// Level 5: scaling and tuning without a human.
    AutoPilot = 5,
}

impl CapabilityLevel {
    /// All levels, lowest first.
    pub const ALL: [CapabilityLevel; 5] = [
        CapabilityLevel::BasicInstall,
        CapabilityLevel::SeamlessUpgrades,
        CapabilityLevel::FullLifecycle,
        CapabilityLevel::DeepInsights,
        CapabilityLevel::AutoPilot,
    ];

    /// The level's number, 1 to 5.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The level with this number, if it is 1 to 5.
    pub fn from_number(number: u8) -> Option<CapabilityLevel> {
        Self::ALL.get(usize::from(number).checked_sub(1)?).copied()
    }

    /// The exact annotation value OLM accepts for this level.
    pub fn annotation(self) -> &'static str {
        match self {
            CapabilityLevel::BasicInstall => "Basic Install",
            CapabilityLevel::SeamlessUpgrades => "Seamless Upgrades",
            CapabilityLevel::FullLifecycle => "Full Lifecycle",
            CapabilityLevel::DeepInsights => "Deep Insights",
            CapabilityLevel::AutoPilot => "Auto Pilot",
        }
    }

    /// Parses the `capabilities` annotation; like OLM's validator, the match is exact.
    pub fn from_annotation(value: &str) -> Option<CapabilityLevel> {
        Self::ALL.into_iter().find(|l| l.annotation() == value)
    }
}

/// How a criterion counts towards reaching its level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "group")]
pub enum Requirement {
    /// Must pass for the level to be reached.
    Core,
    /// At least one criterion of the named group must pass: the level's definition lists
    /// several features, of which an operator is expected to show some, not all.
    OneOf(&'static str),
    /// Counts in the level's score only.
    Supporting,
}

/// One checklist entry.
#[derive(Clone, Copy, Debug)]
pub struct Criterion {
    /// Stable identifier, `L<level>.<name>` (used in JSON and by the docs).
    pub id: &'static str,
    /// The level it is evidence for.
    pub level: CapabilityLevel,
    /// How it counts.
    pub requirement: Requirement,
    /// One line: what is being claimed.
    pub title: &'static str,
    /// What proves it.
    pub evidence: &'static str,
    /// Where the tool looks.
    pub looks_at: &'static str,
    /// Whether it needs a cluster (`--kubeconfig`); without one it is always unknown.
    pub live: bool,
    /// The check.
    pub check: fn(&CapabilityEvidence) -> Verdict,
}

use CapabilityLevel::*;
use Requirement::*;

/// The checklist, in level order.
pub const CRITERIA: &[Criterion] = &[
    Criterion {
        id: "L1.bundle-valid",
        level: BasicInstall,
        requirement: Core,
        title: "Installable bundle",
        evidence: "the bundle loads and passes the default validators (CSV, CRDs, bundle) with no error",
        looks_at: "manifests/, metadata/ (bundle-tool validate)",
        live: false,
        check: checks::bundle_valid,
    },
    Criterion {
        id: "L1.owned-crd-schema",
        level: BasicInstall,
        requirement: Core,
        title: "Configuration through validated CRs",
        evidence: "at least one owned CRD, and every served version has an openAPIV3Schema",
        looks_at: "CRDs in manifests/",
        live: false,
        check: checks::owned_crd_schema,
    },
    Criterion {
        id: "L1.alm-examples",
        level: BasicInstall,
        requirement: Core,
        title: "A sample for every owned API",
        evidence: "the alm-examples annotation holds a CR of every owned kind",
        looks_at: "CSV metadata.annotations[alm-examples], spec.customresourcedefinitions.owned",
        live: false,
        check: checks::alm_examples,
    },
    Criterion {
        id: "L1.status-subresource",
        level: BasicInstall,
        requirement: Core,
        title: "CRs report status",
        evidence: "every owned CRD's served versions enable the status subresource",
        looks_at: "CRDs in manifests/ (spec.versions[].subresources.status)",
        live: false,
        check: checks::status_subresource,
    },
    Criterion {
        id: "L1.install-modes",
        level: BasicInstall,
        requirement: Core,
        title: "OLM can install it",
        evidence: "at least one install mode is supported",
        looks_at: "CSV spec.installModes",
        live: false,
        check: checks::install_modes,
    },
    Criterion {
        id: "L1.status-descriptors",
        level: BasicInstall,
        requirement: Supporting,
        title: "Status is documented",
        evidence: "every owned API has status descriptors",
        looks_at: "CSV spec.customresourcedefinitions.owned[].statusDescriptors",
        live: false,
        check: checks::status_descriptors,
    },
    Criterion {
        id: "L1.related-images",
        level: BasicInstall,
        requirement: Supporting,
        title: "Operand images are listed",
        evidence: "spec.relatedImages is not empty (disconnected installs, image overrides)",
        looks_at: "CSV spec.relatedImages, or the catalog's relatedImages",
        live: false,
        check: checks::related_images,
    },
    Criterion {
        id: "L2.upgrade-edge",
        level: SeamlessUpgrades,
        requirement: Core,
        title: "Upgrades from an earlier version",
        evidence: "the bundle replaces or skips an earlier version, or declares olm.skipRange",
        looks_at: "CSV spec.replaces, spec.skips, metadata.annotations[olm.skipRange]; catalog channel entries",
        live: false,
        check: checks::upgrade_edge,
    },
    Criterion {
        id: "L2.operand-version-field",
        level: SeamlessUpgrades,
        requirement: Core,
        title: "The operand's version is set in the CR",
        evidence: "an owned CRD's spec has a version or image field (e.g. `version`, `redisVersion`, `image`)",
        looks_at: "CRD spec.versions[].schema; CSV specDescriptors",
        live: false,
        check: checks::operand_version_field,
    },
    Criterion {
        id: "L2.semver-version",
        level: SeamlessUpgrades,
        requirement: Supporting,
        title: "Orderable version",
        evidence: "spec.version is strict semver",
        looks_at: "CSV spec.version; catalog olm.package property",
        live: false,
        check: checks::semver_version,
    },
    Criterion {
        id: "L2.crd-conversion",
        level: SeamlessUpgrades,
        requirement: Supporting,
        title: "Old API versions keep working",
        evidence: "an owned CRD serves two or more versions, one stored, with a conversion webhook declared in the CSV",
        looks_at: "CRD spec.versions, spec.conversion; CSV spec.webhookdefinitions (ConversionWebhook)",
        live: false,
        check: checks::crd_conversion,
    },
    Criterion {
        id: "L2.live-conversion",
        level: SeamlessUpgrades,
        requirement: Supporting,
        title: "Conversion works on the cluster",
        evidence: "every existing CR of an owned CRD reads back at every served version",
        looks_at: "the cluster (--kubeconfig): GET each CR at each served version",
        live: true,
        check: checks::live_conversion,
    },
    Criterion {
        id: "L3.pod-disruption-budget",
        level: FullLifecycle,
        requirement: Core,
        title: "Disruption budgets",
        evidence: "a PodDisruptionBudget in the bundle, or the right to create them (policy/poddisruptionbudgets)",
        looks_at: "manifests/ objects; CSV permissions and clusterPermissions",
        live: false,
        check: checks::pod_disruption_budget,
    },
    Criterion {
        id: "L3.probes",
        level: FullLifecycle,
        requirement: Core,
        title: "Liveness and readiness probes",
        evidence: "every container of the operator's deployments has a liveness and a readiness probe",
        looks_at: "CSV spec.install.spec.deployments",
        live: false,
        check: checks::probes,
    },
    Criterion {
        id: "L3.resource-requests",
        level: FullLifecycle,
        requirement: Core,
        title: "CPU and memory requests",
        evidence: "every container of the operator's deployments requests CPU and memory",
        looks_at: "CSV spec.install.spec.deployments",
        live: false,
        check: checks::resource_requests,
    },
    Criterion {
        id: "L3.backup-restore",
        level: FullLifecycle,
        requirement: OneOf("lifecycle"),
        title: "Backup and restore",
        evidence: "an owned API for backup, restore or snapshots, a `backup` spec field, or rights on snapshot.storage.k8s.io",
        looks_at: "owned CRD kinds and spec schemas; CSV permissions",
        live: false,
        check: checks::backup_restore,
    },
    Criterion {
        id: "L3.finalizers",
        level: FullLifecycle,
        requirement: OneOf("lifecycle"),
        title: "Cleanup on deletion",
        evidence: "the operator may set finalizers on an owned resource (`<plural>/finalizers` update)",
        looks_at: "CSV permissions and clusterPermissions",
        live: false,
        check: checks::finalizers,
    },
    Criterion {
        id: "L3.failure-conditions",
        level: FullLifecycle,
        requirement: OneOf("lifecycle"),
        title: "Failure and recovery reported",
        evidence: "an owned CRD's status schema has a `conditions` list",
        looks_at: "CRD spec.versions[].schema (status.conditions)",
        live: false,
        check: checks::failure_conditions,
    },
    Criterion {
        id: "L3.rolling-update",
        level: FullLifecycle,
        requirement: Supporting,
        title: "Rolling operator updates",
        evidence: "no operator deployment uses the Recreate strategy",
        looks_at: "CSV spec.install.spec.deployments[].spec.strategy",
        live: false,
        check: checks::rolling_update,
    },
    Criterion {
        id: "L4.metrics-endpoint",
        level: DeepInsights,
        requirement: Core,
        title: "Metrics endpoint",
        evidence: "a Service or container port named for metrics, or a ServiceMonitor/PodMonitor",
        looks_at: "manifests/ Services and monitors; deployment container ports",
        live: false,
        check: checks::metrics_endpoint,
    },
    Criterion {
        id: "L4.events",
        level: DeepInsights,
        requirement: Core,
        title: "Kubernetes Events",
        evidence: "the right to create events (core or events.k8s.io)",
        looks_at: "CSV permissions and clusterPermissions",
        live: false,
        check: checks::events,
    },
    Criterion {
        id: "L4.condition-descriptors",
        level: DeepInsights,
        requirement: Core,
        title: "Conditions shown to users",
        evidence: "a status descriptor with x-descriptor urn:alm:descriptor:io.kubernetes.conditions",
        looks_at: "CSV spec.customresourcedefinitions.owned[].statusDescriptors",
        live: false,
        check: checks::condition_descriptors,
    },
    Criterion {
        id: "L4.monitoring-objects",
        level: DeepInsights,
        requirement: Supporting,
        title: "Alerts and scrape configuration",
        evidence: "ServiceMonitor, PodMonitor or PrometheusRule objects, or rights on monitoring.coreos.com",
        looks_at: "manifests/ objects; CSV permissions",
        live: false,
        check: checks::monitoring_objects,
    },
    Criterion {
        id: "L4.live-metrics",
        level: DeepInsights,
        requirement: Supporting,
        title: "Metrics answer on the cluster",
        evidence: "the metrics Service answers in Prometheus text format through the apiserver's service proxy",
        looks_at: "the cluster (--kubeconfig): /api/v1/namespaces/NS/services/NAME:PORT/proxy/metrics",
        live: true,
        check: checks::live_metrics,
    },
    Criterion {
        id: "L4.live-conditions",
        level: DeepInsights,
        requirement: Supporting,
        title: "CRs carry conditions on the cluster",
        evidence: "every existing CR of an owned CRD has status.conditions",
        looks_at: "the cluster (--kubeconfig): CRs of owned CRDs",
        live: true,
        check: checks::live_conditions,
    },
    Criterion {
        id: "L5.autoscaling",
        level: AutoPilot,
        requirement: Core,
        title: "Autoscaling",
        evidence: "HorizontalPodAutoscaler/VerticalPodAutoscaler objects, or rights on autoscaling or autoscaling.k8s.io",
        looks_at: "manifests/ objects; CSV permissions",
        live: false,
        check: checks::autoscaling,
    },
    Criterion {
        id: "L5.metrics-api",
        level: AutoPilot,
        requirement: OneOf("scaling-signal"),
        title: "Reads workload metrics",
        evidence: "rights to read metrics.k8s.io or custom.metrics.k8s.io",
        looks_at: "CSV permissions and clusterPermissions",
        live: false,
        check: checks::metrics_api,
    },
    Criterion {
        id: "L5.autoscaling-spec",
        level: AutoPilot,
        requirement: OneOf("scaling-signal"),
        title: "Scaling bounds in the CR",
        evidence: "an owned CRD's spec has autoscaling, minReplicas or maxReplicas",
        looks_at: "CRD spec.versions[].schema",
        live: false,
        check: checks::autoscaling_spec,
    },
    Criterion {
        id: "L5.auto-tuning",
        level: AutoPilot,
        requirement: Supporting,
        title: "Auto-tuning and anomaly detection",
        evidence: "behaviour under load; no static artifact shows it",
        looks_at: "nothing a bundle carries: always unknown",
        live: false,
        check: checks::auto_tuning,
    },
];

/// The criterion with this id.
pub fn criterion(id: &str) -> Option<&'static Criterion> {
    CRITERIA.iter().find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_prefixed_by_their_level() {
        let mut seen = std::collections::BTreeSet::new();
        for c in CRITERIA {
            assert!(seen.insert(c.id), "duplicate {}", c.id);
            assert!(
                c.id.starts_with(&format!("L{}.", c.level.number())),
                "{}",
                c.id
            );
        }
    }

    #[test]
    fn every_level_has_a_core_criterion() {
        for level in CapabilityLevel::ALL {
            assert!(
                CRITERIA
                    .iter()
                    .any(|c| c.level == level && c.requirement == Requirement::Core),
                "{level:?}"
            );
        }
    }

    #[test]
    fn criteria_are_documented() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/capability-levels.md"),
        )
        .expect("docs/capability-levels.md");
        for c in CRITERIA {
            assert!(
                doc.contains(&format!("`{}`", c.id)),
                "{} is not in the docs",
                c.id
            );
        }
    }

    #[test]
    fn annotation_values_round_trip() {
        for level in CapabilityLevel::ALL {
            assert_eq!(
                CapabilityLevel::from_annotation(level.annotation()),
                Some(level)
            );
            assert_eq!(CapabilityLevel::from_number(level.number()), Some(level));
        }
        assert_eq!(CapabilityLevel::from_annotation("basic install"), None);
        assert_eq!(CapabilityLevel::from_number(6), None);
    }
}
