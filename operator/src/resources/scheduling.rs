//! Where a cluster's pods may run: the spec's scheduling fields, copied into the pod
//! template, and the operator's default of spreading the pods over nodes.
//!
//! The default is a *preferred* pod anti-affinity on `kubernetes.io/hostname` against the
//! cluster's own pods (docs/redis-operator.md says why it is not a topology spread
//! constraint). A user's `affinity.podAntiAffinity` (even `{}`) or non-empty
//! `topologySpreadConstraints` replace it: both say how the pods are to be spread, and two
//! spreading rules the user did not write together could pull against each other. The
//! user's `nodeAffinity` and `podAffinity` combine with it, as they say where pods may run,
//! not how they spread.

use k8s_openapi::api::core::v1::{
    Affinity, PodAffinityTerm, PodAntiAffinity, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Map, Value, json};

use super::selector_labels;
use crate::api::v1::RedisClusterSpec;

/// The node label the default spreads over: one value per node.
pub const HOSTNAME_TOPOLOGY_KEY: &str = "kubernetes.io/hostname";
/// The weight of the default anti-affinity term: the highest the API allows (1-100), so the
/// preference counts as much as a preference can.
pub const DEFAULT_SPREAD_WEIGHT: i32 = 100;

/// The default: prefer a node that runs no other pod of the cluster `cluster_name`. Only
/// preferred, so a cluster with more pods than nodes (or a one-node cluster) still runs.
pub fn default_pod_anti_affinity(cluster_name: &str) -> PodAntiAffinity {
    PodAntiAffinity {
        preferred_during_scheduling_ignored_during_execution: Some(vec![WeightedPodAffinityTerm {
            weight: DEFAULT_SPREAD_WEIGHT,
            pod_affinity_term: PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some(selector_labels(cluster_name)),
                    ..Default::default()
                }),
                topology_key: HOSTNAME_TOPOLOGY_KEY.into(),
                ..Default::default()
            },
        }]),
        ..Default::default()
    }
}

/// Whether the user's spec says how the pods spread, replacing the default.
pub fn spreads_itself(spec: &RedisClusterSpec) -> bool {
    let anti_affinity = spec
        .affinity
        .as_ref()
        .is_some_and(|a| a.pod_anti_affinity.is_some());
    let constraints = spec
        .topology_spread_constraints
        .as_ref()
        .is_some_and(|c| !c.is_empty());
    anti_affinity || constraints
}

/// The pods' affinity: the user's, with the default anti-affinity added unless the user's
/// spec spreads the pods itself.
pub fn pod_affinity(spec: &RedisClusterSpec, cluster_name: &str) -> Option<Affinity> {
    if spreads_itself(spec) {
        return spec.affinity.clone();
    }
    let mut affinity = spec.affinity.clone().unwrap_or_default();
    affinity.pod_anti_affinity = Some(default_pod_anti_affinity(cluster_name));
    Some(affinity)
}

/// The pod spec's scheduling fields for the cluster `cluster_name`, those that are set.
pub fn pod_spec_fields(spec: &RedisClusterSpec, cluster_name: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    let mut set = |name: &str, value: Value| {
        if !value.is_null() {
            fields.insert(name.into(), value);
        }
    };
    set("affinity", json!(pod_affinity(spec, cluster_name)));
    set("nodeSelector", json!(spec.node_selector));
    set("tolerations", json!(spec.tolerations));
    set(
        "topologySpreadConstraints",
        json!(spec.topology_spread_constraints),
    );
    set("priorityClassName", json!(spec.priority_class_name));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> RedisClusterSpec {
        serde_json::from_value(value).unwrap()
    }

    fn default_term(affinity: &Affinity) -> &WeightedPodAffinityTerm {
        let terms = affinity
            .pod_anti_affinity
            .as_ref()
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .expect("preferred anti-affinity");
        assert_eq!(terms.len(), 1);
        &terms[0]
    }

    #[test]
    fn by_default_pods_prefer_nodes_without_another_pod_of_their_cluster() {
        let affinity = pod_affinity(&spec(json!({"replicas": 3})), "cache").unwrap();
        let term = default_term(&affinity);
        assert_eq!(term.weight, 100);
        assert_eq!(
            term.pod_affinity_term.topology_key,
            "kubernetes.io/hostname"
        );
        assert_eq!(
            term.pod_affinity_term
                .label_selector
                .as_ref()
                .and_then(|s| s.match_labels.clone()),
            Some(selector_labels("cache")),
            "only the cluster's own pods repel each other"
        );
        assert!(
            affinity
                .pod_anti_affinity
                .as_ref()
                .unwrap()
                .required_during_scheduling_ignored_during_execution
                .is_none(),
            "never required: a one-node cluster must still run every pod"
        );
        assert_eq!(affinity.node_affinity, None);
    }

    #[test]
    fn node_affinity_combines_with_the_default() {
        let s = spec(json!({"replicas": 2, "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
            ]}
        }}}));
        let affinity = pod_affinity(&s, "cache").unwrap();
        assert_eq!(
            affinity.node_affinity,
            s.affinity.as_ref().unwrap().node_affinity
        );
        default_term(&affinity);
    }

    #[test]
    fn the_users_pod_anti_affinity_replaces_the_default_even_when_empty() {
        let s = spec(json!({"replicas": 2, "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {"a": "b"}}}
            ]
        }}}));
        assert!(spreads_itself(&s));
        assert_eq!(pod_affinity(&s, "cache"), s.affinity);

        let opted_out = spec(json!({"replicas": 2, "affinity": {"podAntiAffinity": {}}}));
        let affinity = pod_affinity(&opted_out, "cache").unwrap();
        assert_eq!(affinity.pod_anti_affinity, Some(PodAntiAffinity::default()));
    }

    #[test]
    fn topology_spread_constraints_replace_the_default_unless_empty() {
        let s = spec(json!({"replicas": 3, "topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "cache"}}
        }]}));
        assert_eq!(pod_affinity(&s, "cache"), None);
        let fields = pod_spec_fields(&s, "cache");
        assert!(!fields.contains_key("affinity"), "{fields:?}");
        assert_eq!(
            fields["topologySpreadConstraints"][0]["whenUnsatisfiable"],
            "DoNotSchedule"
        );

        let empty = spec(json!({"replicas": 3, "topologySpreadConstraints": []}));
        assert!(!spreads_itself(&empty));
        default_term(&pod_affinity(&empty, "cache").unwrap());
    }

    #[test]
    fn the_other_fields_are_copied_as_written_and_left_out_when_unset() {
        let s = spec(json!({
            "replicas": 1,
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
            "priorityClassName": "redis-critical"
        }));
        let fields = pod_spec_fields(&s, "cache");
        assert_eq!(fields["nodeSelector"], json!({"disk": "ssd"}));
        assert_eq!(
            fields["tolerations"],
            json!([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}])
        );
        assert_eq!(fields["priorityClassName"], "redis-critical");

        let bare = pod_spec_fields(&spec(json!({"replicas": 1})), "cache");
        let mut keys: Vec<&str> = bare.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["affinity"], "only the default is added");
    }
}
