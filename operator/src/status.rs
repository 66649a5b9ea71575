//! The status a RedisCluster shows: phase plus Conditions (Ready, Available, Progressing,
//! Degraded, SpreadOverNodes), computed from its StatefulSet and its pods. Pure functions,
//! tested without a cluster.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::api::v1::{Phase, RedisClusterStatus};

/// Condition types, in the order they are listed.
pub const CONDITION_TYPES: [&str; 5] = [
    "Ready",
    "Available",
    "Progressing",
    "Degraded",
    SPREAD_CONDITION,
];

/// The condition that says whether the pods run on more than one node: `False` with reason
/// [`ALL_PODS_ON_ONE_NODE`] when losing one node stops the whole cluster.
pub const SPREAD_CONDITION: &str = "SpreadOverNodes";
/// [`SPREAD_CONDITION`]'s reason when every scheduled pod (at least two) is on one node.
pub const ALL_PODS_ON_ONE_NODE: &str = "AllPodsOnOneNode";

/// How a cluster's pods sit on nodes, read from their `spec.nodeName`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeSpread {
    /// At most one pod: there is nothing to spread.
    OnePod,
    /// Fewer than two of the `pods` have a node yet, so nothing is known.
    NotScheduled {
        /// Pods with a node.
        scheduled: usize,
        /// Pods.
        pods: usize,
    },
    /// Every scheduled pod, at least two, runs on `node`.
    OneNode {
        /// The node.
        node: String,
        /// Pods on it.
        scheduled: usize,
        /// Pods, scheduled or not.
        pods: usize,
    },
    /// The scheduled pods run on `nodes` nodes (two or more).
    SeveralNodes {
        /// Distinct nodes.
        nodes: usize,
        /// Pods with a node.
        scheduled: usize,
    },
}

/// How `pods` (a cluster's, as listed by its instance label) sit on nodes. Pods being
/// deleted are left out: they are about to leave their node.
pub fn node_spread(pods: &[Pod]) -> NodeSpread {
    let live: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let nodes: Vec<&str> = live
        .iter()
        .filter_map(|p| p.spec.as_ref()?.node_name.as_deref())
        .filter(|n| !n.is_empty())
        .collect();
    let distinct: BTreeSet<&str> = nodes.iter().copied().collect();
    match (live.len(), nodes.len(), distinct.first()) {
        (0 | 1, _, _) => NodeSpread::OnePod,
        (pods, scheduled @ (0 | 1), _) => NodeSpread::NotScheduled { scheduled, pods },
        (pods, scheduled, Some(node)) if distinct.len() == 1 => NodeSpread::OneNode {
            node: node.to_string(),
            scheduled,
            pods,
        },
        (_, scheduled, _) => NodeSpread::SeveralNodes {
            nodes: distinct.len(),
            scheduled,
        },
    }
}

impl NodeSpread {
    /// The [`SPREAD_CONDITION`] condition's status, reason and message.
    fn condition(&self) -> ConditionSpec {
        match self {
            NodeSpread::OnePod => (
                SPREAD_CONDITION,
                "True",
                "OnePod",
                "the cluster has one pod: nothing to spread".into(),
            ),
            NodeSpread::NotScheduled { scheduled, pods } => (
                SPREAD_CONDITION,
                "Unknown",
                "PodsNotScheduled",
                format!("{scheduled}/{pods} pods have a node"),
            ),
            NodeSpread::OneNode {
                node,
                scheduled,
                pods,
            } => {
                let mut message = format!(
                    "all {scheduled} scheduled pods run on node {node}: losing it stops the whole cluster"
                );
                if scheduled < pods {
                    message.push_str(&format!("; {} pods have no node yet", pods - scheduled));
                }
                (SPREAD_CONDITION, "False", ALL_PODS_ON_ONE_NODE, message)
            }
            NodeSpread::SeveralNodes { nodes, scheduled } => (
                SPREAD_CONDITION,
                "True",
                "PodsOnSeveralNodes",
                format!("{scheduled} pods run on {nodes} nodes"),
            ),
        }
    }
}

/// What the StatefulSet reports, reduced to what the status needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// Desired replicas (from the RedisCluster).
    pub desired: i32,
    /// Ready pods.
    pub ready: i32,
    /// Pods running the current template.
    pub updated: i32,
    /// The StatefulSet controller has seen the latest StatefulSet spec.
    pub set_observed: bool,
    /// A rolling update is under way (pods not yet on the update revision).
    pub rolling: bool,
    /// The primary pod.
    pub primary: Option<String>,
    /// Why replication is not what the spec asks yet (a failover waiting, a replica
    /// syncing).
    pub replication_problem: Option<String>,
    /// How the pods sit on nodes; `None` when the pods were not read (the previous
    /// SpreadOverNodes condition is kept).
    pub node_spread: Option<NodeSpread>,
}

impl Observed {
    /// Reads a StatefulSet (or its absence) against the desired replica count.
    pub fn from_stateful_set(desired: i32, set: Option<&StatefulSet>) -> Self {
        let Some(set) = set else {
            return Observed {
                desired,
                ..Default::default()
            };
        };
        let status = set.status.clone().unwrap_or_default();
        let set_observed = status
            .observed_generation
            .is_some_and(|g| Some(g) >= set.metadata.generation);
        // Under `OnDelete` the StatefulSet never moves currentRevision; the pods on the
        // update revision are what tells a rolling update from a finished one.
        let rolling = status.updated_replicas.unwrap_or(0) < status.replicas;
        Observed {
            desired,
            ready: status.ready_replicas.unwrap_or(0),
            updated: status.updated_replicas.unwrap_or(0),
            set_observed,
            rolling,
            primary: None,
            replication_problem: None,
            node_spread: None,
        }
    }

    /// Everything is where the spec wants it.
    pub fn converged(&self) -> bool {
        self.set_observed
            && !self.rolling
            && self.ready == self.desired
            && self.updated == self.desired
            && self.replication_problem.is_none()
    }
}

/// A condition before timestamps: type, status (`True`, `False`, `Unknown`), reason, message.
type ConditionSpec = (&'static str, &'static str, &'static str, String);

fn status_of(is_true: bool) -> &'static str {
    if is_true { "True" } else { "False" }
}

/// The status for `observed`; `error` is the last reconcile error, if any.
/// Conditions whose status did not change keep their `lastTransitionTime` from `previous`.
pub fn compute(
    observed: &Observed,
    generation: Option<i64>,
    error: Option<&str>,
    previous: Option<&RedisClusterStatus>,
    now: Time,
) -> RedisClusterStatus {
    let Observed { desired, ready, .. } = *observed;
    let mut ready_message = format!("{ready}/{desired} replicas are ready");
    if let Some(primary) = &observed.primary {
        ready_message.push_str(&format!("; {primary} is the primary"));
    }
    let progressing: ConditionSpec = if observed.converged() {
        (
            "Progressing",
            "False",
            "ReconcileComplete",
            format!("{desired} replicas run the requested version"),
        )
    } else if let Some(problem) = &observed.replication_problem {
        ("Progressing", "True", "Replication", problem.clone())
    } else if observed.rolling {
        (
            "Progressing",
            "True",
            "RollingUpdate",
            format!("{}/{desired} pods updated, one at a time", observed.updated),
        )
    } else if ready < desired {
        (
            "Progressing",
            "True",
            "ScalingUp",
            format!("waiting for {} more ready pods", desired - ready),
        )
    } else if ready > desired {
        (
            "Progressing",
            "True",
            "ScalingDown",
            format!("{} pods to remove", ready - desired),
        )
    } else {
        (
            "Progressing",
            "True",
            "Reconciling",
            "waiting for the StatefulSet controller".to_string(),
        )
    };
    let degraded: ConditionSpec = match error {
        Some(message) => ("Degraded", "True", "ReconcileError", message.to_string()),
        None => ("Degraded", "False", "AsExpected", "no errors".to_string()),
    };
    let mut specs: Vec<ConditionSpec> = vec![
        (
            "Ready",
            status_of(observed.converged()),
            if observed.converged() {
                "AllReplicasReady"
            } else {
                "ReplicasNotReady"
            },
            ready_message.clone(),
        ),
        (
            "Available",
            status_of(ready > 0),
            if ready > 0 {
                "MinimumReplicasReady"
            } else {
                "NoReplicasReady"
            },
            ready_message,
        ),
        progressing,
        degraded,
    ];
    if let Some(spread) = &observed.node_spread {
        specs.push(spread.condition());
    }
    let mut conditions: Vec<Condition> = specs
        .into_iter()
        .map(|(type_, status, reason, message)| {
            let last_transition_time = previous
                .and_then(|p| p.conditions.iter().find(|c| c.type_ == type_))
                .filter(|c| c.status == status)
                .map(|c| c.last_transition_time.clone())
                .unwrap_or_else(|| now.clone());
            Condition {
                type_: type_.to_string(),
                status: status.to_string(),
                reason: reason.to_string(),
                message,
                last_transition_time,
                observed_generation: generation,
            }
        })
        .collect();
    // Pods not read this time (a failed reconcile): the last word on their nodes stands.
    if observed.node_spread.is_none()
        && let Some(kept) =
            previous.and_then(|p| p.conditions.iter().find(|c| c.type_ == SPREAD_CONDITION))
    {
        conditions.push(kept.clone());
    }
    let phase = if error.is_some() {
        Phase::Failed
    } else if observed.converged() {
        Phase::Running
    } else {
        Phase::Pending
    };
    RedisClusterStatus {
        ready_replicas: ready,
        phase: Some(phase),
        primary: observed.primary.clone(),
        observed_generation: generation,
        conditions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn condition<'a>(status: &'a RedisClusterStatus, type_: &str) -> &'a Condition {
        status.conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn converged_cluster_is_running_and_ready() {
        let observed = Observed {
            desired: 3,
            ready: 3,
            updated: 3,
            set_observed: true,
            rolling: false,
            ..Default::default()
        };
        let status = compute(&observed, Some(2), None, None, t("2026-01-01T00:00:00Z"));
        assert_eq!(status.phase, Some(Phase::Running));
        assert_eq!(condition(&status, "Ready").status, "True");
        assert_eq!(
            condition(&status, "Ready").message,
            "3/3 replicas are ready"
        );
        assert_eq!(condition(&status, "Progressing").status, "False");
        assert_eq!(condition(&status, "Degraded").status, "False");
        assert_eq!(status.observed_generation, Some(2));
    }

    #[test]
    fn scaling_up_is_pending_and_progressing() {
        let observed = Observed {
            desired: 5,
            ready: 3,
            updated: 5,
            set_observed: true,
            rolling: false,
            ..Default::default()
        };
        let status = compute(&observed, Some(3), None, None, t("2026-01-01T00:00:00Z"));
        assert_eq!(status.phase, Some(Phase::Pending));
        assert_eq!(condition(&status, "Progressing").reason, "ScalingUp");
        assert_eq!(condition(&status, "Available").status, "True");
    }

    #[test]
    fn errors_make_it_degraded_and_failed() {
        let observed = Observed {
            desired: 1,
            ..Default::default()
        };
        let status = compute(
            &observed,
            Some(1),
            Some("forbidden"),
            None,
            t("2026-01-01T00:00:00Z"),
        );
        assert_eq!(status.phase, Some(Phase::Failed));
        assert_eq!(condition(&status, "Degraded").status, "True");
        assert_eq!(condition(&status, "Degraded").message, "forbidden");
    }

    #[test]
    fn unchanged_conditions_keep_their_transition_time() {
        let observed = Observed {
            desired: 1,
            ready: 1,
            updated: 1,
            set_observed: true,
            rolling: false,
            ..Default::default()
        };
        let first = compute(&observed, Some(1), None, None, t("2026-01-01T00:00:00Z"));
        let second = compute(
            &observed,
            Some(1),
            None,
            Some(&first),
            t("2026-02-02T00:00:00Z"),
        );
        assert_eq!(
            first, second,
            "a second computation with nothing new changes nothing"
        );
        let rolling = Observed {
            rolling: true,
            ..observed.clone()
        };
        let third = compute(
            &rolling,
            Some(2),
            None,
            Some(&second),
            t("2026-03-03T00:00:00Z"),
        );
        assert_eq!(
            condition(&third, "Progressing").last_transition_time,
            t("2026-03-03T00:00:00Z")
        );
        assert_eq!(
            condition(&third, "Available").last_transition_time,
            t("2026-01-01T00:00:00Z")
        );
    }

    fn pod(name: &str, node: Option<&str>) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"containers": [], "nodeName": node},
        }))
        .unwrap()
    }

    #[test]
    fn pods_on_one_node_are_reported() {
        let pods = [
            pod("r-0", Some("node-a")),
            pod("r-1", Some("node-a")),
            pod("r-2", Some("node-a")),
        ];
        assert_eq!(
            node_spread(&pods),
            NodeSpread::OneNode {
                node: "node-a".into(),
                scheduled: 3,
                pods: 3
            }
        );
        let observed = Observed {
            desired: 3,
            node_spread: Some(node_spread(&pods)),
            ..Default::default()
        };
        let status = compute(&observed, Some(1), None, None, t("2026-01-01T00:00:00Z"));
        let spread = condition(&status, SPREAD_CONDITION);
        assert_eq!(
            (spread.status.as_str(), spread.reason.as_str()),
            ("False", ALL_PODS_ON_ONE_NODE)
        );
        assert!(spread.message.contains("node-a"), "{}", spread.message);
    }

    #[test]
    fn pods_on_several_nodes_are_spread_and_one_pod_has_nothing_to_spread() {
        let spread = node_spread(&[
            pod("r-0", Some("node-a")),
            pod("r-1", Some("node-b")),
            pod("r-2", Some("node-a")),
        ]);
        assert_eq!(
            spread,
            NodeSpread::SeveralNodes {
                nodes: 2,
                scheduled: 3
            }
        );
        assert_eq!(spread.condition().1, "True");
        assert_eq!(
            node_spread(&[pod("r-0", Some("node-a"))]),
            NodeSpread::OnePod
        );
        assert_eq!(node_spread(&[]), NodeSpread::OnePod);
        assert_eq!(NodeSpread::OnePod.condition().1, "True");
    }

    #[test]
    fn unscheduled_and_deleted_pods_do_not_count_as_placed() {
        let waiting = [
            pod("r-0", Some("node-a")),
            pod("r-1", None),
            pod("r-2", Some("")),
        ];
        assert_eq!(
            node_spread(&waiting),
            NodeSpread::NotScheduled {
                scheduled: 1,
                pods: 3
            }
        );
        assert_eq!(node_spread(&waiting).condition().1, "Unknown");
        let two_on_a = [
            pod("r-0", Some("node-a")),
            pod("r-1", Some("node-a")),
            pod("r-2", None),
        ];
        let (_, status, reason, message) = node_spread(&two_on_a).condition();
        assert_eq!((status, reason), ("False", ALL_PODS_ON_ONE_NODE));
        assert!(message.contains("1 pods have no node yet"), "{message}");

        let mut leaving = pod("r-1", Some("node-b"));
        leaving.metadata.deletion_timestamp = Some(t("2026-01-01T00:00:00Z"));
        assert_eq!(
            node_spread(&[
                pod("r-0", Some("node-a")),
                leaving,
                pod("r-2", Some("node-a"))
            ]),
            NodeSpread::OneNode {
                node: "node-a".into(),
                scheduled: 2,
                pods: 2
            },
            "a pod being deleted does not spread the cluster"
        );
    }

    #[test]
    fn the_spread_condition_stands_when_the_pods_were_not_read() {
        let observed = Observed {
            desired: 2,
            node_spread: Some(NodeSpread::OneNode {
                node: "node-a".into(),
                scheduled: 2,
                pods: 2,
            }),
            ..Default::default()
        };
        let first = compute(&observed, Some(1), None, None, t("2026-01-01T00:00:00Z"));
        let failed = Observed {
            node_spread: None,
            ..observed
        };
        let second = compute(
            &failed,
            Some(1),
            Some("forbidden"),
            Some(&first),
            t("2026-02-02T00:00:00Z"),
        );
        assert_eq!(
            condition(&second, SPREAD_CONDITION),
            condition(&first, SPREAD_CONDITION)
        );
        let fresh = compute(&failed, Some(1), None, None, t("2026-01-01T00:00:00Z"));
        assert!(
            fresh.conditions.iter().all(|c| c.type_ != SPREAD_CONDITION),
            "nothing known, nothing said"
        );
        let types: Vec<&str> = first.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, CONDITION_TYPES);
    }
}
