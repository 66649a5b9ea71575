//! Lossless conversion between `v1alpha1` and `v1`.
//!
//! Going down to `v1alpha1`, the fields it has no place for are kept as JSON in the
//! [`V1_FIELDS_ANNOTATION`] annotation; coming back up, they are restored from it and the
//! annotation is removed. So `v1 → v1alpha1 → v1` gives back the same object.

use serde::{Deserialize, Serialize};

use super::{v1, v1alpha1};

/// Annotation that carries the v1-only fields of an object served as v1alpha1.
pub const V1_FIELDS_ANNOTATION: &str = "cache.example.com/v1-fields";

/// What v1 has and v1alpha1 lacks.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V1OnlyFields {
    /// v1's deprecated `version`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deprecated_version: Option<v1::RedisVersion>,
    /// True when v1alpha1's `version` came from v1's deprecated field, not `redisVersion`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    redis_version_unset: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    persistence: Option<v1::Persistence>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    password_secret: Option<v1::SecretKeyRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metrics: Option<v1::MetricsExporter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failover_after_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    primary: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
}

impl V1OnlyFields {
    fn is_empty(&self) -> bool {
        *self == V1OnlyFields::default()
    }
}

/// Converts a stored v1 object to v1alpha1.
pub fn to_v1alpha1(object: v1::RedisCluster) -> v1alpha1::RedisCluster {
    let v1::RedisCluster {
        mut metadata,
        spec,
        status,
    } = object;
    // v1alpha1's `version` is v1's `redisVersion`; v1's deprecated `version` and the fact
    // that `redisVersion` was set at all must survive the round trip.
    let kept = V1OnlyFields {
        deprecated_version: spec.version,
        redis_version_unset: spec.redis_version.is_none() && spec.version.is_some(),
        resources: spec.resources,
        persistence: spec.persistence,
        password_secret: spec.password_secret,
        metrics: spec.metrics,
        failover_after_seconds: spec.failover_after_seconds,
        observed_generation: status.as_ref().and_then(|s| s.observed_generation),
        primary: status.as_ref().and_then(|s| s.primary.clone()),
        conditions: status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default(),
    };
    let annotations = metadata.annotations.get_or_insert_with(Default::default);
    annotations.remove(V1_FIELDS_ANNOTATION);
    if !kept.is_empty() {
        annotations.insert(
            V1_FIELDS_ANNOTATION.to_string(),
            serde_json::to_string(&kept).expect("plain data serializes"),
        );
    }
    if annotations.is_empty() {
        metadata.annotations = None;
    }
    v1alpha1::RedisCluster {
        metadata,
        spec: v1alpha1::RedisClusterSpec {
            replicas: spec.replicas,
            version: spec.redis_version.or(spec.version),
            // Both versions have the scheduling fields: copied as they are.
            node_selector: spec.node_selector,
            tolerations: spec.tolerations,
            affinity: spec.affinity,
            topology_spread_constraints: spec.topology_spread_constraints,
            priority_class_name: spec.priority_class_name,
        },
        status: status.map(|s| v1alpha1::RedisClusterStatus {
            ready_replicas: s.ready_replicas,
            phase: s.phase,
        }),
    }
}

/// Converts a v1alpha1 object to v1, restoring what an earlier down-conversion kept.
pub fn to_v1(object: v1alpha1::RedisCluster) -> v1::RedisCluster {
    let v1alpha1::RedisCluster {
        mut metadata,
        spec,
        status,
    } = object;
    let kept: Option<V1OnlyFields> = metadata
        .annotations
        .as_mut()
        .and_then(|a| a.remove(V1_FIELDS_ANNOTATION))
        .and_then(|json| serde_json::from_str(&json).ok());
    if metadata.annotations.as_ref().is_some_and(|a| a.is_empty()) {
        metadata.annotations = None;
    }
    let (redis_version, version) = match kept
        .as_ref()
        .and_then(|k| k.deprecated_version.map(|d| (d, k)))
    {
        // Came from a v1 object that used the deprecated field: put it back where it was.
        Some((deprecated, k)) => (
            if k.redis_version_unset {
                None
            } else {
                spec.version
            },
            Some(deprecated),
        ),
        // Otherwise v1alpha1's `version` is v1's `redisVersion`.
        None => (spec.version, None),
    };
    let kept = kept.unwrap_or_default();
    let status = match status {
        Some(s) => Some(v1::RedisClusterStatus {
            ready_replicas: s.ready_replicas,
            phase: s.phase,
            primary: kept.primary,
            observed_generation: kept.observed_generation,
            conditions: kept.conditions,
        }),
        None if kept.observed_generation.is_some()
            || !kept.conditions.is_empty()
            || kept.primary.is_some() =>
        {
            Some(v1::RedisClusterStatus {
                primary: kept.primary,
                observed_generation: kept.observed_generation,
                conditions: kept.conditions,
                ..Default::default()
            })
        }
        None => None,
    };
    v1::RedisCluster {
        metadata,
        spec: v1::RedisClusterSpec {
            replicas: spec.replicas,
            redis_version,
            version,
            resources: kept.resources,
            persistence: kept.persistence,
            password_secret: kept.password_secret,
            metrics: kept.metrics,
            failover_after_seconds: kept.failover_after_seconds,
            node_selector: spec.node_selector,
            tolerations: spec.tolerations,
            affinity: spec.affinity,
            topology_spread_constraints: spec.topology_spread_constraints,
            priority_class_name: spec.priority_class_name,
        },
        status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use serde_json::json;

    fn full_v1() -> v1::RedisCluster {
        serde_json::from_value(json!({
            "apiVersion": "cache.example.com/v1",
            "kind": "RedisCluster",
            "metadata": {"name": "r", "namespace": "ns", "annotations": {"keep": "me"}, "generation": 4},
            "spec": {
                "replicas": 3,
                "redisVersion": "7.0",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                "persistence": {"size": "1Gi", "storageClassName": "fast"},
                "passwordSecret": {"name": "redis-auth", "key": "password"},
                "metrics": {"enabled": true},
                "failoverAfterSeconds": 9,
                "nodeSelector": {"disktype": "ssd"},
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "redis", "effect": "NoSchedule"}],
                "affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                    ]}},
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "r"}}}
                    ]}
                },
                "topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "r"}}
                }],
                "priorityClassName": "redis-critical"
            },
            "status": {
                "readyReplicas": 3,
                "phase": "Running",
                "observedGeneration": 4,
                "primary": "r-1",
                "conditions": [{
                    "type": "Ready", "status": "True", "reason": "AllReplicasReady",
                    "message": "3/3 replicas are ready", "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "observedGeneration": 4
                }]
            }
        }))
        .unwrap()
    }

    #[test]
    fn v1_round_trips_through_v1alpha1_without_loss() {
        let original = full_v1();
        let down = to_v1alpha1(original.clone());
        assert_eq!(down.spec.version, Some(RedisVersionAlias::V7_0));
        assert!(
            down.metadata
                .annotations
                .as_ref()
                .unwrap()
                .contains_key(V1_FIELDS_ANNOTATION)
        );
        assert_eq!(value(to_v1(down)), value(&original));
    }

    type RedisVersionAlias = v1::RedisVersion;

    /// The custom resource types have no `PartialEq`; compare what the apiserver would store.
    fn value(object: impl serde::Serialize) -> serde_json::Value {
        serde_json::to_value(object).unwrap()
    }

    #[test]
    fn v1alpha1_round_trips_through_v1_without_loss() {
        let original: v1alpha1::RedisCluster = serde_json::from_value(json!({
            "apiVersion": "cache.example.com/v1alpha1",
            "kind": "RedisCluster",
            "metadata": {"name": "r"},
            "spec": {"replicas": 2, "version": "6.2"},
            "status": {"readyReplicas": 1, "phase": "Pending"}
        }))
        .unwrap();
        let up = to_v1(original.clone());
        assert_eq!(up.spec.redis_version, Some(v1::RedisVersion::V6_2));
        assert_eq!(up.spec.version, None);
        assert_eq!(value(to_v1alpha1(up)), value(&original));
    }

    #[test]
    fn scheduling_fields_cross_versions_as_they_are_without_the_annotation() {
        let mut original = full_v1();
        // Only what v1alpha1 has: nothing needs to ride in the annotation.
        original.spec.resources = None;
        original.spec.persistence = None;
        original.spec.password_secret = None;
        original.spec.metrics = None;
        original.spec.failover_after_seconds = None;
        original.status = None;
        let down = to_v1alpha1(original.clone());
        let annotations = down.metadata.annotations.clone().unwrap_or_default();
        assert!(
            !annotations.contains_key(V1_FIELDS_ANNOTATION),
            "{annotations:?}"
        );
        let down_spec = value(&down.spec);
        let full_spec = value(&original.spec);
        for field in [
            "nodeSelector",
            "tolerations",
            "affinity",
            "topologySpreadConstraints",
            "priorityClassName",
        ] {
            assert!(!full_spec[field].is_null(), "the fixture sets {field}");
            assert_eq!(down_spec[field], full_spec[field], "{field} in v1alpha1");
        }
        assert_eq!(value(to_v1(down.clone())), value(&original));

        // And up from v1alpha1, where a user wrote them first; an empty list stays a list.
        let mut written_old = down;
        written_old.spec.tolerations = Some(Vec::new());
        let up = to_v1(written_old.clone());
        assert_eq!(up.spec.tolerations, Some(Vec::new()));
        assert_eq!(value(&up.spec.affinity), full_spec["affinity"]);
        assert_eq!(value(to_v1alpha1(up)), value(&written_old));
    }

    #[test]
    fn the_deprecated_v1_field_survives_a_round_trip() {
        let mut original = full_v1();
        original.spec.redis_version = None;
        original.spec.version = Some(v1::RedisVersion::V6_2);
        let down = to_v1alpha1(original.clone());
        assert_eq!(down.spec.version, Some(v1::RedisVersion::V6_2));
        assert_eq!(value(to_v1(down)), value(&original));
        assert_eq!(original.spec.effective_version(), v1::RedisVersion::V6_2);
    }

    #[test]
    fn a_bare_v1_object_gets_no_annotation() {
        let bare = v1::RedisCluster::new(
            "r",
            v1::RedisClusterSpec {
                replicas: 1,
                ..Default::default()
            },
        );
        let down = to_v1alpha1(bare.clone());
        assert_eq!(down.metadata.annotations, None);
        assert_eq!(value(to_v1(down)), value(&bare));
    }

    #[test]
    fn conditions_keep_their_timestamps() {
        let original = full_v1();
        let back = to_v1(to_v1alpha1(original));
        let condition: &Condition = &back.status.unwrap().conditions[0];
        assert_eq!(
            condition.last_transition_time,
            Time(condition.last_transition_time.0)
        );
        assert_eq!(condition.reason, "AllReplicasReady");
    }
}
