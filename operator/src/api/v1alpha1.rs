//! `cache.example.com/v1alpha1`: the first version as users first wrote it, plus the pods'
//! scheduling fields, which both versions carry alike (so objects written against either
//! version can place their pods, and conversion copies them as they are).

// kube's `printcolumn(...)` attributes repeat `type_ = "string"`, which clippy takes for a
// duplicated attribute.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, Toleration, TopologySpreadConstraint};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The Redis versions this operator can run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum RedisVersion {
    /// Redis 6.2.
    #[serde(rename = "6.2")]
    V6_2,
    /// Redis 7.0.
    #[serde(rename = "7.0")]
    V7_0,
    /// Redis 7.2, the default.
    #[default]
    #[serde(rename = "7.2")]
    V7_2,
}

impl RedisVersion {
    /// The version as users write it (`"7.2"`).
    pub fn as_str(self) -> &'static str {
        match self {
            RedisVersion::V6_2 => "6.2",
            RedisVersion::V7_0 => "7.0",
            RedisVersion::V7_2 => "7.2",
        }
    }
}

/// The desired state of a Redis cluster.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1alpha1",
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
    printcolumn(name = "Version", type_ = "string", json_path = ".spec.version"),
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
    /// Redis version to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<RedisVersion>,
    /// Labels a node must have to run the cluster's pods (the pods' `nodeSelector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Taints the cluster's pods tolerate (the pods' `tolerations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// The pods' `affinity`. Its `podAntiAffinity`, when set, replaces the operator's
    /// default spreading over nodes.
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

/// Coarse lifecycle of a Redis cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Phase {
    /// Created, not all replicas ready yet.
    Pending,
    /// All replicas ready.
    Running,
    /// Reconciliation failed.
    Failed,
}

/// The observed state of a Redis cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedisClusterStatus {
    /// Pods that are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Coarse lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
}
