//! The status a RedisCluster shows: phase plus Conditions (Ready, Available, Progressing,
//! Degraded), computed from its StatefulSet. Pure functions, tested without a cluster.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::api::v1::{Phase, RedisClusterStatus};

/// Condition types, in the order they are listed.
pub const CONDITION_TYPES: [&str; 4] = ["Ready", "Available", "Progressing", "Degraded"];

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

/// A condition before timestamps: type, status, reason, message.
type ConditionSpec = (&'static str, bool, &'static str, String);

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
            false,
            "ReconcileComplete",
            format!("{desired} replicas run the requested version"),
        )
    } else if let Some(problem) = &observed.replication_problem {
        ("Progressing", true, "Replication", problem.clone())
    } else if observed.rolling {
        (
            "Progressing",
            true,
            "RollingUpdate",
            format!("{}/{desired} pods updated, one at a time", observed.updated),
        )
    } else if ready < desired {
        (
            "Progressing",
            true,
            "ScalingUp",
            format!("waiting for {} more ready pods", desired - ready),
        )
    } else if ready > desired {
        (
            "Progressing",
            true,
            "ScalingDown",
            format!("{} pods to remove", ready - desired),
        )
    } else {
        (
            "Progressing",
            true,
            "Reconciling",
            "waiting for the StatefulSet controller".to_string(),
        )
    };
    let degraded: ConditionSpec = match error {
        Some(message) => ("Degraded", true, "ReconcileError", message.to_string()),
        None => ("Degraded", false, "AsExpected", "no errors".to_string()),
    };
    let specs: [ConditionSpec; 4] = [
        (
            "Ready",
            observed.converged(),
            if observed.converged() {
                "AllReplicasReady"
            } else {
                "ReplicasNotReady"
            },
            ready_message.clone(),
        ),
        (
            "Available",
            ready > 0,
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
    let conditions = specs
        .into_iter()
        .map(|(type_, is_true, reason, message)| {
            let status = if is_true { "True" } else { "False" };
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
}
