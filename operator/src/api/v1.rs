//! `cache.example.com/v1`: the storage version.
//!
//! Compared with `v1alpha1` it renames `version` to `redisVersion` (the old field is kept,
//! deprecated, and still honoured when `redisVersion` is unset), and adds resources,
//! persistence, a password from a Secret, a metrics exporter sidecar, `observedGeneration` and
//! Conditions. The pods' scheduling fields (`nodeSelector`, `tolerations`, `affinity`,
//! `topologySpreadConstraints`, `priorityClassName`) are in both versions.

// kube's `printcolumn(...)` attributes repeat `type_ = "string"`, which clippy takes for a
// duplicated attribute.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, ResourceRequirements, Toleration, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::v1alpha1::{Phase, RedisVersion};

/// The desired state of a Redis cluster.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1",
    kind = "RedisCluster",
    plural = "redisclusters",
    shortname = "rcl",
    namespaced,
    status = "RedisClusterStatus",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.readyReplicas"
    ),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Primary", type_ = "string", json_path = ".status.primary"),
    printcolumn(name = "Version", type_ = "string", json_path = ".spec.redisVersion"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RedisClusterSpec {
    /// Number of Redis pods.
    #[schemars(range(min = 1))]
    pub replicas: i32,
    /// Redis version to run (default 7.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_version: Option<RedisVersion>,
    /// Deprecated: use `redisVersion`. Kept so that objects written against v1alpha1 keep
    /// working; used only when `redisVersion` is unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<RedisVersion>,
    /// CPU and memory for each Redis container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Persistent storage for each pod; without it data lives in an emptyDir.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence: Option<Persistence>,
    /// The Secret key holding the password clients must use (`requirepass`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret: Option<SecretKeyRef>,
    /// The Prometheus exporter sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsExporter>,
    /// Seconds the primary's Redis may not answer before a replica is promoted (default 5).
    /// A primary whose pod is deleted, or whose Redis restarted, is replaced at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub failover_after_seconds: Option<i32>,
    /// Labels a node must have to run the cluster's pods (the pods' `nodeSelector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Taints the cluster's pods tolerate (the pods' `tolerations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// The pods' `affinity`. Its `podAntiAffinity`, when set, replaces the operator's
    /// default spreading over nodes (preferred anti-affinity on `kubernetes.io/hostname`);
    /// `nodeAffinity` and `podAffinity` combine with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// The pods' `topologySpreadConstraints`; when set, they replace the operator's default
    /// spreading over nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    /// The PriorityClass of the cluster's pods (the pods' `priorityClassName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
}

impl RedisClusterSpec {
    /// The Redis version to run: `redisVersion`, else the deprecated `version`, else the
    /// default.
    pub fn effective_version(&self) -> RedisVersion {
        self.redis_version.or(self.version).unwrap_or_default()
    }

    /// How long an unanswering primary is given before a failover.
    pub fn failover_after(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.failover_after_seconds.unwrap_or(5).max(1) as u64)
    }
}

/// Persistent storage for each Redis pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Persistence {
    /// Volume size, a Kubernetes quantity such as `1Gi`.
    pub size: String,
    /// The StorageClass; the cluster's default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

/// A key in a Secret of the cluster's namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SecretKeyRef {
    /// The Secret's name.
    pub name: String,
    /// The key within the Secret.
    pub key: String,
}

/// The Prometheus redis_exporter sidecar.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricsExporter {
    /// Run the exporter next to each Redis container.
    #[serde(default)]
    pub enabled: bool,
    /// The exporter image; a pinned default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// The observed state of a Redis cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedisClusterStatus {
    /// Pods that are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Coarse lifecycle phase; details are in `conditions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The pod whose Redis takes writes (the client Service selects it alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<String>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready, Available, Progressing, Degraded and SpreadOverNodes (`False`, reason
    /// `AllPodsOnOneNode`, when every pod of a cluster of several runs on one node), following
    /// Kubernetes conventions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
