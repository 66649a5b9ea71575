//! Who is the primary, and what to do about it: a pure function from what the operator sees
//! of a cluster's pods (Kubernetes' view and each Redis's `INFO replication`) to a [`Plan`].
//! `replication.rs` gathers the view and carries the plan out; this file decides, and is
//! tested without a cluster.
//!
//! The rules, in order:
//! 1. The primary is `status.primary` (ordinal 0 before the first one is recorded).
//! 2. It is *lost* when its pod is gone or terminating, or its Redis restarted (it comes back
//!    as a replica of [`RESTARTED_PRIMARY_HOST`], see the start script in `resources.rs`),
//!    and *down* when its Redis does not answer; lost fails over at once, down after the
//!    cluster's threshold.
//! 3. Failover promotes the replica with the highest replication offset among the pods that
//!    stay after a scale-down; when none answers, nothing is promoted and the cluster says so.
//! 4. Every other Redis is pointed at the primary; labels follow (`role=primary` on exactly
//!    one pod, which is all the client Service selects).
//! 5. Rolling updates delete one outdated pod at a time, replicas first (highest ordinal
//!    first); the primary last, after a controlled switch to an updated replica.

use std::time::Duration;

use crate::redis::{Replication, Role};

/// What a primary whose Redis restarted is told to follow, by the start script: a name that
/// never resolves (RFC 2606's `.invalid`), so it takes no writes and serves nothing until the
/// operator decides, and the operator can tell it from a replica of a real pod.
pub const RESTARTED_PRIMARY_HOST: &str = "restarted-primary.invalid";

/// Redis's answer, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// `INFO replication` answered.
    Answered(Replication),
    /// No answer (connect refused, timeout, no pod IP yet): the reason.
    NoAnswer(String),
    /// Not asked (the operator does not manage replication).
    NotAsked,
}

/// One pod of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Pod name (`<cluster>-<ordinal>`).
    pub name: String,
    /// Its StatefulSet ordinal.
    pub ordinal: i32,
    /// The kubelet reports it Ready.
    pub ready: bool,
    /// It has a deletionTimestamp.
    pub deleting: bool,
    /// Its `role` label.
    pub role_label: Option<String>,
    /// Its `controller-revision-hash` label.
    pub revision: Option<String>,
    /// What its Redis said.
    pub probe: Probe,
}

/// What the plan is made from.
#[derive(Clone)]
pub struct View<'a> {
    /// The cluster's pods.
    pub members: &'a [Member],
    /// The recorded primary (None before the first).
    pub primary: Option<&'a str>,
    /// The primary has been seen running as primary at least once (so its absence means it
    /// is lost, not that it is still being created).
    pub primary_confirmed: bool,
    /// The cluster's name (pods are `<name>-<ordinal>`).
    pub cluster: &'a str,
    /// `spec.replicas`.
    pub desired: i32,
    /// How long the primary has been down, if it is.
    pub primary_down_for: Option<Duration>,
    /// How long down before a failover.
    pub threshold: Duration,
    /// The StatefulSet's update revision.
    pub update_revision: Option<&'a str>,
    /// The operator talks to Redis (failover, repointing); off, the primary is ordinal 0 and
    /// only labels are kept.
    pub manage_replication: bool,
    /// The host name replicas follow for a pod (`<pod>.<headless>.<namespace>.svc`).
    pub host_of: &'a dyn Fn(&str) -> String,
}

/// The role label's values.
pub const PRIMARY: &str = "primary";
/// The role label's value on every other pod.
pub const REPLICA: &str = "replica";

/// A promotion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    /// The old primary.
    pub from: String,
    /// The replica promoted.
    pub to: String,
    /// Why, for the Event and the condition.
    pub reason: String,
    /// The old primary still answers: pause its writes and let `to` catch up first.
    pub controlled: bool,
}

/// What to do now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The primary after this plan.
    pub primary: String,
    /// A failover or a controlled switch.
    pub switch: Option<Switch>,
    /// Promote the recorded primary in place (`REPLICAOF NO ONE`): a one-pod cluster whose
    /// Redis restarted has nothing better.
    pub promote_in_place: bool,
    /// Pods to point at the primary (`REPLICAOF <host> 6379`).
    pub repoint: Vec<String>,
    /// Role labels to set, (pod, value); the primary's last, so two pods never both carry
    /// `role=primary`.
    pub labels: Vec<(String, &'static str)>,
    /// A pod to delete for a rolling update.
    pub delete: Option<String>,
    /// Why the replication is not (yet) what the spec asks, if it is not.
    pub problem: Option<String>,
    /// Waiting for the primary to stay down past the threshold: look again after this.
    pub recheck_in: Option<Duration>,
}

enum PrimaryState {
    Healthy,
    Lost(String),
    Down(String),
    /// Not created yet, or restarting, before it was ever confirmed.
    Starting,
}

fn ordinal_name(cluster: &str, ordinal: i32) -> String {
    format!("{cluster}-{ordinal}")
}

/// The plan for `view`.
pub fn plan(view: &View<'_>) -> Plan {
    let members = view.members;
    let find = |name: &str| members.iter().find(|m| m.name == name);
    let mut primary = match (view.manage_replication, view.primary) {
        (true, Some(p)) => p.to_string(),
        // No record (the ConfigMap was lost): a Redis that leads keeps leading, rather than
        // ordinal 0 being made primary over it and its writes dropped.
        (true, None) => leading_member(members).unwrap_or_else(|| ordinal_name(view.cluster, 0)),
        (false, _) => ordinal_name(view.cluster, 0),
    };
    let mut plan = Plan::default();

    let state = primary_state(view, find(&primary));
    let scaled_away = find(&primary).is_some_and(|m| m.ordinal >= view.desired);
    let mut switch_reason = match &state {
        PrimaryState::Lost(why) => Some((why.clone(), false)),
        PrimaryState::Down(why) => match view.primary_down_for {
            Some(down) if down >= view.threshold => Some((
                format!(
                    "{why} for {}s (threshold {}s)",
                    down.as_secs(),
                    view.threshold.as_secs()
                ),
                false,
            )),
            down => {
                let waited = down.unwrap_or_default();
                plan.recheck_in = Some(
                    view.threshold
                        .saturating_sub(waited)
                        .max(Duration::from_millis(500)),
                );
                plan.problem = Some(format!("primary {primary}: {why}"));
                None
            }
        },
        PrimaryState::Healthy if scaled_away => Some((
            format!("{primary} is removed by the scale-down to {}", view.desired),
            true,
        )),
        _ => None,
    };
    if !view.manage_replication {
        switch_reason = None;
    }
    // Rolling update: only the primary is left outdated → a controlled switch first.
    let outdated = |m: &Member| {
        view.update_revision
            .is_some_and(|rev| m.revision.as_deref().is_some_and(|r| r != rev))
    };
    let settled =
        members.len() as i32 == view.desired && members.iter().all(|m| m.ready && !m.deleting);
    if switch_reason.is_none()
        && view.manage_replication
        && matches!(state, PrimaryState::Healthy)
        && settled
        && view.desired > 1
        && find(&primary).is_some_and(outdated)
        && members
            .iter()
            .filter(|m| m.name != primary)
            .all(|m| !outdated(m))
    {
        switch_reason = Some(("rolling update: the primary goes last".to_string(), true));
    }

    if let Some((reason, planned)) = switch_reason {
        let old = find(&primary);
        let controlled = planned
            || old
                .is_some_and(|m| matches!(&m.probe, Probe::Answered(r) if r.role == Role::Primary));
        match best_replica(view, &primary) {
            Some(to) => {
                plan.switch = Some(Switch {
                    from: primary.clone(),
                    to: to.clone(),
                    reason,
                    controlled,
                });
                primary = to;
                plan.recheck_in = None;
                plan.problem = None;
            }
            None if view.desired == 1
                && matches!(state, PrimaryState::Lost(_))
                && old.is_some_and(|m| !m.deleting && matches!(m.probe, Probe::Answered(_))) =>
            {
                plan.promote_in_place = true;
            }
            None => {
                plan.problem = Some(format!(
                    "primary {primary}: {reason}; no replica answers to take over"
                ));
                plan.recheck_in = Some(Duration::from_secs(2));
            }
        }
    }

    // Point every other Redis at the primary.
    let host = (view.host_of)(&primary);
    if view.manage_replication {
        let primary_ready = plan.switch.is_some()
            || plan.promote_in_place
            || matches!(state, PrimaryState::Healthy);
        for member in members.iter().filter(|m| m.name != primary && !m.deleting) {
            match &member.probe {
                Probe::Answered(r) => {
                    let follows = matches!(&r.role, Role::Replica { host: h, .. } if *h == host);
                    if !follows && primary_ready {
                        plan.repoint.push(member.name.clone());
                    } else if follows
                        && plan.switch.is_none()
                        && !matches!(&r.role, Role::Replica { link_up: true, .. })
                        && plan.problem.is_none()
                    {
                        plan.problem =
                            Some(format!("{} is not in sync with {primary} yet", member.name));
                    }
                }
                Probe::NoAnswer(why) if plan.problem.is_none() => {
                    plan.problem = Some(format!("{}: {why}", member.name));
                }
                _ => {}
            }
        }
        if !plan.repoint.is_empty() && plan.problem.is_none() {
            plan.problem = Some(format!("{} pointed at {primary}", plan.repoint.join(", ")));
        }
    }

    // Labels: demotions first (a terminating old primary too: kube-proxy falls back to
    // terminating endpoints when a Service has no ready one), the primary's last.
    let mut promote_label = None;
    for member in members {
        let want = if member.name == primary {
            PRIMARY
        } else {
            REPLICA
        };
        if member.role_label.as_deref() != Some(want) {
            if want == PRIMARY {
                promote_label = Some((member.name.clone(), want));
            } else {
                plan.labels.push((member.name.clone(), want));
            }
        }
    }
    plan.labels.extend(promote_label);

    // Rolling update: one outdated pod at a time, when nothing else is going on.
    if plan.switch.is_none() && plan.problem.is_none() && plan.repoint.is_empty() && settled {
        let mut candidates: Vec<&Member> = members
            .iter()
            .filter(|m| {
                outdated(m) && (m.name != primary || !view.manage_replication || view.desired == 1)
            })
            .collect();
        // Replicas first, highest ordinal first (what a StatefulSet does), the primary last.
        candidates.sort_by_key(|m| (m.name == primary, -m.ordinal));
        plan.delete = candidates.first().map(|m| m.name.clone());
    }
    plan.primary = primary;
    plan
}

/// The member that answers as primary with the most replicas, then the highest offset, then
/// the lowest ordinal.
fn leading_member(members: &[Member]) -> Option<String> {
    members
        .iter()
        .filter(|m| !m.deleting)
        .filter_map(|m| match &m.probe {
            Probe::Answered(r) if r.role == Role::Primary => Some((m, r)),
            _ => None,
        })
        .max_by_key(|(m, r)| (r.connected_replicas, r.offset, -m.ordinal))
        .map(|(m, _)| m.name.clone())
}

fn primary_state(view: &View<'_>, member: Option<&Member>) -> PrimaryState {
    let Some(member) = member else {
        return if view.primary_confirmed {
            PrimaryState::Lost("its pod is gone".into())
        } else {
            PrimaryState::Starting
        };
    };
    if member.deleting {
        return PrimaryState::Lost("its pod is being deleted".into());
    }
    if !view.manage_replication {
        return if member.ready {
            PrimaryState::Healthy
        } else {
            PrimaryState::Down("not ready".into())
        };
    }
    match &member.probe {
        Probe::Answered(r) => match &r.role {
            Role::Primary => PrimaryState::Healthy,
            Role::Replica { host, .. } if host == RESTARTED_PRIMARY_HOST => {
                if view.primary_confirmed {
                    PrimaryState::Lost(
                        "its Redis restarted and holds no data it can be trusted with".into(),
                    )
                } else {
                    PrimaryState::Starting
                }
            }
            Role::Replica { host, .. } => {
                PrimaryState::Lost(format!("it follows {host} instead of leading"))
            }
        },
        Probe::NoAnswer(why) if view.primary_confirmed => PrimaryState::Down(why.clone()),
        _ => PrimaryState::Starting,
    }
}

/// The replica to promote: it answers, stays after a scale-down, is not being deleted; the
/// highest offset wins, then an updated revision, then the lowest ordinal.
fn best_replica(view: &View<'_>, primary: &str) -> Option<String> {
    view.members
        .iter()
        .filter(|m| m.name != primary && !m.deleting && m.ordinal < view.desired)
        .filter_map(|m| match &m.probe {
            Probe::Answered(r) => match &r.role {
                Role::Replica { host, .. } if host == RESTARTED_PRIMARY_HOST => None,
                _ => Some((m, r.offset)),
            },
            _ => None,
        })
        .max_by_key(|(m, offset)| {
            let updated =
                view.update_revision.is_some() && m.revision.as_deref() == view.update_revision;
            (*offset, updated, -m.ordinal)
        })
        .map(|(m, _)| m.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(pod: &str) -> String {
        format!("{pod}.c-headless.ns.svc")
    }

    fn replication(role: Role, offset: i64) -> Probe {
        Probe::Answered(Replication {
            role,
            offset,
            connected_replicas: 0,
            replication_id: "id".into(),
        })
    }

    fn follower(of: &str, offset: i64) -> Probe {
        replication(
            Role::Replica {
                host: host(of),
                port: 6379,
                link_up: true,
            },
            offset,
        )
    }

    fn member(ordinal: i32, probe: Probe, role: &str) -> Member {
        Member {
            name: format!("c-{ordinal}"),
            ordinal,
            ready: true,
            deleting: false,
            role_label: Some(role.into()),
            revision: Some("r1".into()),
            probe,
        }
    }

    fn healthy() -> Vec<Member> {
        vec![
            member(0, replication(Role::Primary, 100), PRIMARY),
            member(1, follower("c-0", 100), REPLICA),
            member(2, follower("c-0", 90), REPLICA),
        ]
    }

    fn view<'a>(members: &'a [Member], primary: Option<&'a str>) -> View<'a> {
        View {
            members,
            primary,
            primary_confirmed: primary.is_some(),
            cluster: "c",
            desired: members.len() as i32,
            primary_down_for: None,
            threshold: Duration::from_secs(5),
            update_revision: Some("r1"),
            manage_replication: true,
            host_of: &host,
        }
    }

    #[test]
    fn a_converged_cluster_needs_nothing() {
        let members = healthy();
        let plan = plan(&view(&members, Some("c-0")));
        assert_eq!(
            plan,
            Plan {
                primary: "c-0".into(),
                ..Default::default()
            }
        );
    }

    #[test]
    fn first_start_labels_ordinal_zero_and_points_the_rest_at_it() {
        let mut members = healthy();
        for m in &mut members {
            m.role_label = None;
        }
        members[2].probe = replication(Role::Primary, 0);
        let plan = plan(&view(&members, None));
        assert_eq!(plan.primary, "c-0");
        assert_eq!(plan.repoint, vec!["c-2".to_string()]);
        assert_eq!(
            plan.labels,
            vec![
                ("c-1".to_string(), REPLICA),
                ("c-2".to_string(), REPLICA),
                ("c-0".to_string(), PRIMARY)
            ],
            "the primary's label comes last"
        );
        assert!(plan.switch.is_none());
    }

    #[test]
    fn without_a_record_the_redis_that_leads_stays_primary() {
        let mut members = healthy();
        members[0].probe = follower("c-1", 100);
        members[1].probe = Probe::Answered(Replication {
            role: Role::Primary,
            offset: 100,
            connected_replicas: 2,
            replication_id: "id".into(),
        });
        members[2].probe = follower("c-1", 100);
        let plan = plan(&view(&members, None));
        assert_eq!(plan.primary, "c-1");
        assert!(plan.switch.is_none() && plan.repoint.is_empty(), "{plan:?}");
    }

    #[test]
    fn before_the_primary_is_confirmed_its_absence_is_not_a_failover() {
        let members = vec![member(1, follower("c-0", 0), REPLICA)];
        let mut v = view(&members, Some("c-0"));
        v.primary_confirmed = false;
        v.desired = 3;
        let plan = plan(&v);
        assert!(plan.switch.is_none());
        assert_eq!(plan.primary, "c-0");
    }

    #[test]
    fn a_deleted_primary_fails_over_at_once_to_the_highest_offset() {
        let mut members = healthy();
        members[0].deleting = true;
        members[0].probe = Probe::NoAnswer("connection refused".into());
        members[1].probe = follower("c-0", 80);
        members[2].probe = follower("c-0", 95);
        let plan = plan(&view(&members, Some("c-0")));
        let switch = plan.switch.unwrap();
        assert_eq!((switch.from.as_str(), switch.to.as_str()), ("c-0", "c-2"));
        assert!(!switch.controlled);
        assert_eq!(plan.primary, "c-2");
        assert_eq!(plan.repoint, vec!["c-1".to_string()]);
        assert_eq!(
            plan.labels,
            vec![("c-0".to_string(), REPLICA), ("c-2".to_string(), PRIMARY)],
            "the terminating old primary is demoted before the new one is labelled"
        );
    }

    #[test]
    fn a_primary_that_does_not_answer_waits_for_the_threshold() {
        let mut members = healthy();
        members[0].probe = Probe::NoAnswer("timed out".into());
        let mut v = view(&members, Some("c-0"));
        v.primary_down_for = Some(Duration::from_secs(2));
        let waiting = plan(&v);
        assert!(waiting.switch.is_none());
        assert_eq!(waiting.recheck_in, Some(Duration::from_secs(3)));
        assert!(waiting.problem.unwrap().contains("timed out"));
        v.primary_down_for = Some(Duration::from_secs(5));
        let failed_over = plan(&v);
        assert_eq!(failed_over.switch.unwrap().to, "c-1");
    }

    #[test]
    fn a_restarted_primary_fails_over_and_then_follows() {
        let mut members = healthy();
        members[0].probe = replication(
            Role::Replica {
                host: RESTARTED_PRIMARY_HOST.into(),
                port: 6379,
                link_up: false,
            },
            0,
        );
        let plan = plan(&view(&members, Some("c-0")));
        assert_eq!(plan.switch.as_ref().unwrap().to, "c-1");
        assert!(
            !plan.switch.unwrap().controlled,
            "a restarted Redis has nothing to pause"
        );
        assert_eq!(plan.repoint, vec!["c-0".to_string(), "c-2".to_string()]);
    }

    #[test]
    fn a_single_restarted_primary_is_promoted_in_place() {
        let members = vec![member(
            0,
            replication(
                Role::Replica {
                    host: RESTARTED_PRIMARY_HOST.into(),
                    port: 6379,
                    link_up: false,
                },
                0,
            ),
            PRIMARY,
        )];
        let plan = plan(&view(&members, Some("c-0")));
        assert!(plan.promote_in_place);
        assert!(plan.switch.is_none());
    }

    #[test]
    fn no_answering_replica_means_no_promotion_and_a_problem() {
        let mut members = healthy();
        members[0].deleting = true;
        members[1].probe = Probe::NoAnswer("refused".into());
        members[2].probe = Probe::NoAnswer("refused".into());
        let plan = plan(&view(&members, Some("c-0")));
        assert!(plan.switch.is_none());
        assert_eq!(plan.primary, "c-0");
        assert!(plan.problem.unwrap().contains("no replica answers"));
    }

    #[test]
    fn scaling_down_past_the_primary_switches_to_a_staying_pod_first() {
        let mut members = healthy();
        members[0].probe = follower("c-2", 100);
        members[0].role_label = Some(REPLICA.into());
        members[1].probe = follower("c-2", 100);
        members[2].probe = replication(Role::Primary, 100);
        members[2].role_label = Some(PRIMARY.into());
        let mut v = view(&members, Some("c-2"));
        v.desired = 2;
        let plan = plan(&v);
        let switch = plan.switch.unwrap();
        assert_eq!(
            switch.to, "c-0",
            "equal offsets: the lowest ordinal that stays"
        );
        assert!(switch.controlled);
    }

    #[test]
    fn a_rolling_update_goes_replicas_first_then_switches_then_the_old_primary() {
        let mut members = healthy();
        for m in &mut members {
            m.revision = Some("r0".into());
        }
        let first = plan(&view(&members, Some("c-0")));
        assert_eq!(first.delete.as_deref(), Some("c-2"));
        members[2].revision = Some("r1".into());
        assert_eq!(
            plan(&view(&members, Some("c-0"))).delete.as_deref(),
            Some("c-1")
        );
        members[1].revision = Some("r1".into());
        let switch = plan(&view(&members, Some("c-0")));
        assert!(switch.delete.is_none());
        let to = switch.switch.unwrap();
        assert!(to.controlled);
        assert_eq!(to.to, "c-1", "the updated replica with the highest offset");
        // After the switch, c-0 is an outdated replica: deleted last.
        members[0].probe = follower("c-1", 100);
        members[0].role_label = Some(REPLICA.into());
        members[1].probe = replication(Role::Primary, 100);
        members[1].role_label = Some(PRIMARY.into());
        members[2].probe = follower("c-1", 100);
        assert_eq!(
            plan(&view(&members, Some("c-1"))).delete.as_deref(),
            Some("c-0")
        );
    }

    #[test]
    fn a_rolling_update_waits_while_a_pod_is_not_ready() {
        let mut members = healthy();
        for m in &mut members {
            m.revision = Some("r0".into());
        }
        members[1].ready = false;
        assert_eq!(plan(&view(&members, Some("c-0"))).delete, None);
    }

    #[test]
    fn without_replication_management_ordinal_zero_leads_and_nothing_is_asked() {
        let members: Vec<Member> = healthy()
            .into_iter()
            .map(|mut m| {
                m.probe = Probe::NotAsked;
                m.revision = Some("r0".into());
                m
            })
            .collect();
        let mut v = view(&members, Some("c-2"));
        v.manage_replication = false;
        let plan = plan(&v);
        assert_eq!(plan.primary, "c-0");
        assert!(plan.repoint.is_empty() && plan.switch.is_none());
        assert_eq!(plan.delete.as_deref(), Some("c-2"));
    }
}
