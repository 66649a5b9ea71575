//! Carrying out the topology plan: each Redis is asked `INFO replication` (concurrently, each
//! under [`REDIS_TIMEOUT`]), [`topology::plan`] decides, and this file promotes, repoints,
//! relabels and deletes pods. A dead pod costs one timeout, never a stuck reconcile.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::events::{Event as KubeEvent, EventType};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use crate::api::v1::RedisCluster;
use crate::context::Context;
use crate::error::Error;
use crate::redis::{Connection, Replication, Role};
use crate::resources::{self, REDIS_PORT, REPLICATION_USER, ROLE_LABEL};
use crate::topology::{self, Member, Probe};

/// How long one Redis call may take.
pub const REDIS_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a controlled switch waits for the chosen replica to catch up with the paused
/// primary before promoting it anyway (the primary stays paused meanwhile, so nothing
/// acknowledged is lost while it waits).
const CATCH_UP: Duration = Duration::from_secs(3);
/// How long the old primary's writes are paused during a controlled switch, at most: it is
/// pointed at the new primary well within this, which makes it read-only for good.
const PAUSE_MS: &str = "10000";

/// What the replication step leaves for the rest of the reconcile.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The primary after this reconcile.
    pub primary: String,
    /// The primary's pod uid, once it has been seen leading (empty before).
    pub primary_uid: String,
    /// Why replication is not what the spec asks yet.
    pub problem: Option<String>,
    /// Look again after this.
    pub recheck_in: Option<Duration>,
}

/// What the cluster's ConfigMap recorded of the primary.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    /// The primary's pod name.
    pub primary: Option<String>,
    /// Its uid, once confirmed.
    pub uid: String,
}

fn ordinal(cluster: &str, pod: &str) -> Option<i32> {
    pod.strip_prefix(cluster)?.strip_prefix('-')?.parse().ok()
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn address(pod: &Pod) -> Option<SocketAddr> {
    let ip: IpAddr = pod.status.as_ref()?.pod_ip.as_deref()?.parse().ok()?;
    Some(SocketAddr::new(ip, REDIS_PORT as u16))
}

async fn connect(address: SocketAddr, password: &str) -> Result<Connection, crate::redis::Error> {
    Connection::open(address, Some((REPLICATION_USER, password)), REDIS_TIMEOUT).await
}

async fn ask(address: Option<SocketAddr>, password: &str) -> Probe {
    let Some(address) = address else {
        return Probe::NoAnswer("no pod IP yet".into());
    };
    let result = async {
        let mut connection = connect(address, password).await?;
        let reply = connection.call(&["INFO", "replication"]).await?;
        Ok::<_, crate::redis::Error>(reply.text().and_then(|t| Replication::parse(&t)))
    }
    .await;
    match result {
        Ok(Some(replication)) => Probe::Answered(replication),
        Ok(None) => Probe::NoAnswer(format!("{address}: INFO replication has no role")),
        Err(error) => Probe::NoAnswer(error.to_string()),
    }
}

async fn call(address: Option<SocketAddr>, password: &str, args: &[&str]) -> Result<(), String> {
    let address = address.ok_or("no pod IP")?;
    let mut connection = connect(address, password)
        .await
        .map_err(|e| e.to_string())?;
    connection.call(args).await.map_err(|e| e.to_string())?;
    Ok(())
}

async fn offset(address: Option<SocketAddr>, password: &str) -> Option<i64> {
    match ask(address, password).await {
        Probe::Answered(r) => Some(r.offset),
        _ => None,
    }
}

/// Observes the cluster's pods and Redis servers, plans, and carries the plan out.
pub async fn converge(
    cluster: &RedisCluster,
    ctx: &Context,
    pods: &[Pod],
    recorded: &Recorded,
    update_revision: Option<&str>,
    password: &str,
) -> Result<Outcome, Error> {
    let name = cluster.name_any();
    let namespace = cluster.namespace().unwrap_or_default();
    let pods: Vec<&Pod> = pods
        .iter()
        .filter(|p| ordinal(&name, &p.name_any()).is_some())
        .collect();
    let probes: Vec<Probe> = if ctx.manage_replication {
        futures::future::join_all(pods.iter().map(|p| ask(address(p), password))).await
    } else {
        vec![Probe::NotAsked; pods.len()]
    };
    let members: Vec<Member> = pods
        .iter()
        .zip(probes)
        .map(|(pod, probe)| {
            let labels = pod.labels();
            Member {
                name: pod.name_any(),
                ordinal: ordinal(&name, &pod.name_any()).unwrap_or(-1),
                ready: is_ready(pod),
                deleting: pod.metadata.deletion_timestamp.is_some(),
                role_label: labels.get(ROLE_LABEL).cloned(),
                revision: labels.get("controller-revision-hash").cloned(),
                probe,
            }
        })
        .collect();
    let by_name: BTreeMap<String, &Pod> = pods.iter().map(|p| (p.name_any(), *p)).collect();
    let recorded_primary = recorded.primary.as_deref();
    // Confirmed: the recorded uid is set (the primary was seen leading). A recreated pod of
    // the same name is the same primary by name but not by data: its absence then is a loss.
    let primary_confirmed = !recorded.uid.is_empty();

    // How long the primary has not answered (kept in memory: a new leader of the operator
    // starts counting afresh, which delays a failover by at most one threshold).
    let key = ObjectRef::from_obj(cluster);
    let down_for = {
        let unanswered = members
            .iter()
            .find(|m| Some(m.name.as_str()) == recorded_primary)
            .is_some_and(|m| {
                matches!(m.probe, Probe::NoAnswer(_)) || (!ctx.manage_replication && !m.ready)
            });
        let mut down = ctx.primary_down_since.lock().expect("not poisoned");
        if unanswered {
            Some(
                down.entry(key.clone())
                    .or_insert_with(Instant::now)
                    .elapsed(),
            )
        } else {
            down.remove(&key);
            None
        }
    };
    let host_of = |pod: &str| resources::pod_host(cluster, pod);
    let plan = topology::plan(&topology::View {
        members: &members,
        primary: recorded_primary,
        primary_confirmed,
        cluster: &name,
        desired: cluster.spec.replicas,
        primary_down_for: down_for,
        threshold: cluster.spec.failover_after(),
        update_revision,
        manage_replication: ctx.manage_replication,
        host_of: &host_of,
    });
    tracing::debug!(?plan, "replication plan");
    let address_of = |pod: &str| by_name.get(pod).and_then(|p| address(p));
    let mut problem = plan.problem.clone();

    if let Some(switch) = &plan.switch {
        let old = address_of(&switch.from);
        let new = address_of(&switch.to);
        if switch.controlled {
            // Stop the old primary's writes, then let the new one catch up with everything it
            // acknowledged: a controlled switch loses no write.
            if call(old, password, &["CLIENT", "PAUSE", PAUSE_MS, "WRITE"])
                .await
                .is_ok()
                && let Some(target) = offset(old, password).await
            {
                let started = Instant::now();
                while started.elapsed() < CATCH_UP {
                    if offset(new, password).await.is_some_and(|o| o >= target) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        if let Err(error) = call(new, password, &["REPLICAOF", "NO", "ONE"]).await {
            return Ok(Outcome {
                primary: switch.from.clone(),
                primary_uid: recorded.uid.clone(),
                problem: Some(format!("promoting {}: {error}", switch.to)),
                recheck_in: Some(Duration::from_secs(1)),
            });
        }
        let verb = if switch.controlled {
            "Switched"
        } else {
            "FailedOver"
        };
        tracing::info!(from = %switch.from, to = %switch.to, reason = %switch.reason, "{verb}");
        // Events are aggregated by reason and action (not note): a rolling update's switch
        // gets an action of its own so that it is not folded into an earlier failover's.
        let action = if switch.reason.starts_with("rolling update") {
            "RollingUpdate"
        } else {
            "Failover"
        };
        publish(
            ctx,
            cluster,
            EventType::Normal,
            verb,
            action,
            format!(
                "{} is the primary: {} (was {})",
                switch.to, switch.reason, switch.from
            ),
        )
        .await;
    }
    if plan.promote_in_place
        && let Err(error) = call(
            address_of(&plan.primary),
            password,
            &["REPLICAOF", "NO", "ONE"],
        )
        .await
    {
        problem = Some(format!("promoting {}: {error}", plan.primary));
    }
    let host = resources::pod_host(cluster, &plan.primary);
    let port = REDIS_PORT.to_string();
    for pod in &plan.repoint {
        if let Err(error) = call(address_of(pod), password, &["REPLICAOF", &host, &port]).await {
            problem = Some(format!("pointing {pod} at {}: {error}", plan.primary));
        }
    }
    if let Some(switch) = plan.switch.as_ref().filter(|s| s.controlled) {
        // Now a replica: its paused clients get READONLY instead of waiting out the pause.
        let _ = call(address_of(&switch.from), password, &["CLIENT", "UNPAUSE"]).await;
    }

    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    for (pod, role) in &plan.labels {
        let patch = serde_json::json!({"metadata": {"labels": {ROLE_LABEL: role}}});
        match api
            .patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => {
                return Err(Error::Kube {
                    action: format!("labelling pod {pod}"),
                    source: e,
                });
            }
        }
    }
    if let Some(pod) = &plan.delete
        && let Some(uid) = by_name.get(pod.as_str()).and_then(|p| p.uid())
    {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(pod, &params).await {
            Ok(_) => {
                publish(
                    ctx,
                    cluster,
                    EventType::Normal,
                    "RollingUpdate",
                    "RollingUpdate",
                    format!("deleted {pod} to start it on the new template"),
                )
                .await;
            }
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
            Err(e) => {
                return Err(Error::Kube {
                    action: format!("deleting pod {pod} for the rolling update"),
                    source: e,
                });
            }
        }
    }

    // The uid of a primary seen leading (or just promoted) is recorded, which arms the
    // restart guard of the start script for it.
    let leading = plan.switch.is_some()
        || plan.promote_in_place
        || members.iter().any(|m| {
            m.name == plan.primary
                && !m.deleting
                && match &m.probe {
                    Probe::Answered(r) => r.role == Role::Primary,
                    Probe::NotAsked => m.ready,
                    Probe::NoAnswer(_) => false,
                }
        });
    let primary_uid = match by_name.get(plan.primary.as_str()) {
        Some(pod) if leading => pod.uid().unwrap_or_default(),
        _ if Some(plan.primary.as_str()) == recorded_primary => recorded.uid.clone(),
        _ => String::new(),
    };
    Ok(Outcome {
        primary: plan.primary.clone(),
        primary_uid,
        problem,
        recheck_in: plan.recheck_in,
    })
}

async fn publish(
    ctx: &Context,
    cluster: &RedisCluster,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    let _ = ctx
        .recorder
        .publish(
            &KubeEvent {
                type_,
                reason: reason.into(),
                note: Some(note),
                action: action.into(),
                secondary: None,
            },
            &cluster.object_ref(&()),
        )
        .await;
}
