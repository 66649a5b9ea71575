//! The reconcile loop: a RedisCluster (v1) becomes its children, server-side applied, and its
//! status is written through the status subresource.
//!
//! Writes happen only when something changed: each child carries a hash of what was last
//! applied, and the status is patched only when it differs. So a reconcile with nothing to do
//! makes no API write, and converged clusters cost nothing but the periodic resync.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event as KubeEvent, EventType};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::api::v1::{RedisCluster, RedisClusterStatus};
pub use crate::context::Context;
pub use crate::error::Error;
use crate::error::kube_err;
use crate::replication::{self, Recorded};
use crate::resources;
use crate::status::{self, Observed};

/// The field manager for server-side apply.
pub const FIELD_MANAGER: &str = "redis-operator";
/// The finalizer that removes a cluster's PersistentVolumeClaims before it goes.
pub const FINALIZER: &str = "cache.example.com/finalizer";
/// Annotation on each child: a hash of what the operator last applied.
pub const APPLIED_HASH_ANNOTATION: &str = "cache.example.com/applied-hash";
/// Reconciles running at the same time, at most.
pub const RECONCILE_CONCURRENCY: u16 = 16;
/// How often a converged cluster is looked at again.
pub const RESYNC: Duration = Duration::from_secs(300);
/// How often a converged cluster whose Redis servers the operator manages is looked at:
/// pod events wake it at once for deletions, restarts and readiness changes, this catches
/// a primary that stops answering without its pod noticing.
pub const REPLICATION_RESYNC: Duration = Duration::from_secs(10);
/// How often a cluster that is still changing is looked at.
pub const PROGRESS_REQUEUE: Duration = Duration::from_secs(2);

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let client = context.client.clone();
    let clusters: Api<RedisCluster> = Api::all(client.clone());
    // Every watch backs off on its own, as client-go's reflectors do. The controller's own
    // back-off (one for all its watches together) stops polling every watch while it
    // waits, so after an apiserver restart one watch's error held back the others'
    // retries, each wait doubling to 30 s: a change took 37–176 s to be seen
    // (operator/tests/faults.rs; docs/testing.md, Faults).
    let (store, writer) = reflector::store();
    let main = watcher(clusters, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .applied_objects();
    // A bounded number of reconciles at once: a burst of N new clusters should not hold N
    // reconciles (and their buffers) in memory at the same time.
    let controller = Controller::for_stream(main, store.clone())
        .with_config(
            kube::runtime::controller::Config::default().concurrency(RECONCILE_CONCURRENCY),
        )
        .trigger_backoff(NoPause);
    let metrics = context.metrics.clone();
    let gauge = tokio::spawn(async move {
        loop {
            metrics.set_managed_clusters(store.state().len() as u64);
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    });
    controller
        .owns_stream(owned::<StatefulSet>(&client))
        .owns_stream(owned::<Service>(&client))
        .owns_stream(owned::<ConfigMap>(&client))
        .owns_stream(owned::<PodDisruptionBudget>(&client))
        // Pods belong to the StatefulSet, not to the cluster: mapped by their instance label,
        // so a deleted or restarted Redis wakes its cluster's reconcile at once.
        .watches_stream(
            watcher(
                Api::<Pod>::all(client.clone()),
                watcher::Config::default().labels(&format!(
                    "app.kubernetes.io/name=redis,{}",
                    resources::INSTANCE_LABEL
                )),
            )
            .default_backoff()
            .touched_objects(),
            |pod| {
                let cluster = pod.labels().get(resources::INSTANCE_LABEL)?.clone();
                Some(ObjectRef::<RedisCluster>::new(&cluster).within(&pod.namespace()?))
            },
        )
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile failed");
            }
        })
        .await;
    gauge.abort();
}

/// The metadata of every `K` in the cluster, watched with its own back-off (what
/// `Controller::owns` watches, with the back-off moved into the stream).
fn owned<K>(
    client: &kube::Client,
) -> impl futures::Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    watcher(
        Api::<PartialObjectMeta<K>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .touched_objects()
}

/// The controller's back-off over all its watches together: none, each watch has its own.
struct NoPause;

impl Iterator for NoPause {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(Duration::ZERO)
    }
}

impl Backoff for NoPause {
    fn reset(&mut self) {}
}

/// One reconcile of one RedisCluster.
pub async fn reconcile(cluster: Arc<RedisCluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    // Inside kube-runtime's "reconciling object" span, which names the trigger (reason).
    tracing::debug!(generation = cluster.metadata.generation, "reconcile");
    let namespace = cluster.namespace().unwrap_or_default();
    let api: Api<RedisCluster> = Api::namespaced(ctx.client.clone(), &namespace);
    let result = finalizer(&api, FINALIZER, cluster.clone(), |event| async {
        match event {
            Finalizer::Apply(cluster) => apply(&cluster, &ctx).await,
            Finalizer::Cleanup(cluster) => cleanup(&cluster, &ctx).await,
        }
    })
    .await
    .map_err(|e| match e {
        kube::runtime::finalizer::Error::ApplyFailed(e)
        | kube::runtime::finalizer::Error::CleanupFailed(e) => e,
        other => Error::Finalizer(Box::new(other)),
    });
    ctx.metrics
        .observe_reconcile(started.elapsed(), result.as_ref().err().map(Error::reason));
    match &result {
        Ok(_) => {
            if let Ok(mut failures) = ctx.failures.lock() {
                failures.remove(&ObjectRef::from_obj(&*cluster));
            }
        }
        Err(error) => report_failure(&cluster, &ctx, error).await,
    }
    result
}

/// How soon a reconcile that failed on a conflict runs again.
pub const CONFLICT_RETRY: Duration = Duration::from_millis(500);

/// When a failed reconcile runs again. A conflict (409: another writer changed the object
/// first) is retried after [`CONFLICT_RETRY`] and does not lengthen the back-off: the retry
/// reads the other write and usually succeeds, and every child already applied is skipped.
/// Other failures back off per cluster: 1 s, 2 s, 4 s … capped at 5 minutes. Measured in
/// `tests/faults.rs`: with every third write refused by a 409, the doubling alone reached
/// 32 s after three failed rounds and the cluster took minutes to converge.
pub fn error_policy(cluster: Arc<RedisCluster>, error: &Error, ctx: Arc<Context>) -> Action {
    if error.reason() == "Conflict" {
        return Action::requeue(CONFLICT_RETRY);
    }
    let failures = ctx
        .failures
        .lock()
        .map(|mut f| {
            let n = f.entry(ObjectRef::from_obj(&*cluster)).or_insert(0);
            *n = n.saturating_add(1);
            *n
        })
        .unwrap_or(1);
    Action::requeue(backoff(failures))
}

/// The wait after the `failures`-th failure in a row (1-based): 1 s doubling, capped at the
/// resync period (the cap is [`RESYNC`] alone; a shift too wide for `u64` counts as past it).
pub fn backoff(failures: u32) -> Duration {
    let seconds = 1u64
        .checked_shl(failures.saturating_sub(1))
        .unwrap_or(u64::MAX);
    Duration::from_secs(seconds).min(RESYNC)
}

async fn apply(cluster: &RedisCluster, ctx: &Context) -> Result<Action, Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let client = &ctx.client;
    let password_version = match &cluster.spec.password_secret {
        Some(secret) => Some(password_version(client, &namespace, &secret.name).await?),
        None => None,
    };
    let replication_password = replication_password(cluster, ctx).await?;
    apply_child(client, &namespace, resources::headless_service(cluster)).await?;
    apply_child(
        client,
        &namespace,
        resources::pod_disruption_budget(cluster),
    )
    .await?;

    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let recorded = maps
        .get_opt(&resources::config_map_name(&name))
        .await
        .map_err(kube_err("reading the ConfigMap"))?
        .and_then(|map| map.data)
        .map(|data| Recorded {
            primary: data
                .get("primary")
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty()),
            uid: data
                .get("primary-uid")
                .map(|u| u.trim().to_string())
                .unwrap_or_default(),
        })
        .unwrap_or_default();
    // The ConfigMap is the record pods start from; status is its copy for users, and the
    // fallback when the ConfigMap was deleted.
    let recorded = Recorded {
        primary: recorded
            .primary
            .or_else(|| cluster.status.as_ref().and_then(|s| s.primary.clone())),
        ..recorded
    };
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &namespace);
    let existing_set = sets
        .get_opt(&name)
        .await
        .map_err(kube_err("reading the StatefulSet"))?;
    let update_revision = existing_set
        .as_ref()
        .and_then(|s| s.status.as_ref())
        .and_then(|s| s.update_revision.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let pods = pods
        .list(&ListParams::default().labels(&format!("{}={name}", resources::INSTANCE_LABEL)))
        .await
        .map_err(kube_err("listing the pods"))?
        .items;
    let outcome = replication::converge(
        cluster,
        ctx,
        &pods,
        &recorded,
        update_revision.as_deref(),
        &replication_password,
    )
    .await?;

    apply_child(
        client,
        &namespace,
        resources::config_map(cluster, &outcome.primary, &outcome.primary_uid),
    )
    .await?;
    apply_child(client, &namespace, resources::client_service(cluster)).await?;
    apply_child(client, &namespace, resources::replicas_service(cluster)).await?;
    // A scale-down keeps the primary's pod until it has been switched away from.
    let primary_ordinal = outcome
        .primary
        .strip_prefix(&format!("{name}-"))
        .and_then(|o| o.parse::<i32>().ok())
        .unwrap_or(0);
    let replicas = if ctx.manage_replication {
        cluster.spec.replicas.max(primary_ordinal + 1)
    } else {
        cluster.spec.replicas
    };
    let set = apply_child(
        client,
        &namespace,
        resources::stateful_set(
            cluster,
            &resources::SetInputs {
                replicas,
                password_version,
            },
        ),
    )
    .await?;

    let mut observed = Observed::from_stateful_set(cluster.spec.replicas, Some(&set));
    observed.primary = Some(outcome.primary.clone());
    observed.replication_problem = outcome.problem.clone();
    observed.node_spread = Some(status::node_spread(&pods));
    write_status(cluster, ctx, &observed, None).await?;
    let next = if observed.converged() {
        if ctx.manage_replication {
            REPLICATION_RESYNC
        } else {
            RESYNC
        }
    } else {
        PROGRESS_REQUEUE
    };
    Ok(Action::requeue(
        outcome.recheck_in.map_or(next, |r| r.min(next)),
    ))
}

/// The password Secret's resourceVersion, read as metadata only: the operator never holds the
/// client password (the pods read it from the Secret themselves).
async fn password_version(
    client: &kube::Client,
    namespace: &str,
    secret: &str,
) -> Result<String, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    match secrets.get_metadata_opt(secret).await {
        Ok(Some(meta)) => Ok(meta.metadata.resource_version.unwrap_or_default()),
        Ok(None) => Err(Error::Secret(format!(
            "the password Secret {namespace}/{secret} does not exist"
        ))),
        Err(e) => Err(kube_err(format!("reading Secret {secret}"))(e)),
    }
}

/// The replication user's password: from the cluster's replication Secret, which is created
/// (with a random password, owned by the cluster) when missing.
async fn replication_password(cluster: &RedisCluster, ctx: &Context) -> Result<String, Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = resources::replication_secret_name(&cluster.name_any());
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let read = |secret: Secret| {
        secret
            .data
            .and_then(|d| d.get(resources::REPLICATION_PASSWORD_KEY).cloned())
            .and_then(|b| String::from_utf8(b.0).ok())
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                Error::Secret(format!(
                    "Secret {namespace}/{name} has no {} key",
                    resources::REPLICATION_PASSWORD_KEY
                ))
            })
    };
    if let Some(secret) = secrets
        .get_opt(&name)
        .await
        .map_err(kube_err(format!("reading Secret {name}")))?
    {
        return read(secret);
    }
    let password =
        random_password().map_err(|e| Error::Secret(format!("generating a password: {e}")))?;
    match secrets
        .create(
            &PostParams::default(),
            &resources::replication_secret(cluster, &password),
        )
        .await
    {
        Ok(_) => Ok(password),
        // Another reconcile (or leader) created it first: use theirs.
        Err(kube::Error::Api(status)) if status.code == 409 => read(
            secrets
                .get(&name)
                .await
                .map_err(kube_err(format!("reading Secret {name}")))?,
        ),
        Err(e) => Err(kube_err(format!("creating Secret {name}"))(e)),
    }
}

/// 32 hex digits from the kernel's random source (128 bits).
fn random_password() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Deletes the StatefulSet first (so no pod holds a claim), then the claims; the finalizer is
/// removed after this returns, and the other children go with the owner.
async fn cleanup(cluster: &RedisCluster, ctx: &Context) -> Result<Action, Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &namespace);
    match sets.delete(&name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(e) => return Err(kube_err("deleting the StatefulSet")(e)),
    }
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    let selector = format!("{}={name}", resources::INSTANCE_LABEL);
    let existing = claims
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(kube_err("listing PersistentVolumeClaims"))?;
    if !existing.items.is_empty() {
        claims
            .delete_collection(
                &DeleteParams::background(),
                &ListParams::default().labels(&selector),
            )
            .await
            .map_err(kube_err("deleting PersistentVolumeClaims"))?;
    }
    let _ = ctx
        .recorder
        .publish(
            &KubeEvent {
                type_: EventType::Normal,
                reason: "Deleted".into(),
                note: Some(format!(
                    "removed the StatefulSet and {} PersistentVolumeClaims",
                    existing.items.len()
                )),
                action: "Cleanup".into(),
                secondary: None,
            },
            &cluster.object_ref(&()),
        )
        .await;
    Ok(Action::await_change())
}

/// Server-side applies `desired` unless the object already carries the same applied hash;
/// returns the object as it is in the cluster.
async fn apply_child<K>(client: &kube::Client, namespace: &str, mut desired: K) -> Result<K, Error>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let name = desired.meta().name.clone().unwrap_or_default();
    let kind = K::kind(&());
    let hash = {
        let bytes = serde_json::to_vec(&desired).expect("objects serialize");
        let digest = Sha256::digest(&bytes);
        digest
            .iter()
            .take(12)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    if let Some(existing) = api
        .get_opt(&name)
        .await
        .map_err(kube_err(format!("reading {kind} {name}")))?
        && existing.annotations().get(APPLIED_HASH_ANNOTATION) == Some(&hash)
    {
        return Ok(existing);
    }
    desired
        .annotations_mut()
        .insert(APPLIED_HASH_ANNOTATION.into(), hash);
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&desired),
    )
    .await
    .map_err(kube_err(format!("applying {kind} {name}")))
}

async fn write_status(
    cluster: &RedisCluster,
    ctx: &Context,
    observed: &Observed,
    error: Option<&str>,
) -> Result<(), Error> {
    let now = Time(
        k8s_openapi::jiff::Timestamp::from_second(k8s_openapi::jiff::Timestamp::now().as_second())
            .expect("now is in range"),
    );
    let new = status::compute(
        observed,
        cluster.metadata.generation,
        error,
        cluster.status.as_ref(),
        now,
    );
    if cluster.status.as_ref() == Some(&new) {
        return Ok(());
    }
    let api: Api<RedisCluster> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    let patch = serde_json::json!({
        "apiVersion": "cache.example.com/v1",
        "kind": "RedisCluster",
        "status": new,
    });
    api.patch_status(
        &cluster.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map_err(kube_err("writing status"))?;
    Ok(())
}

/// Marks the cluster Degraded (keeping what is known of its replicas) and records an Event.
async fn report_failure(cluster: &RedisCluster, ctx: &Context, error: &Error) {
    let message = error.to_string();
    let previous: Option<&RedisClusterStatus> = cluster.status.as_ref();
    let observed = Observed {
        desired: cluster.spec.replicas,
        ready: previous.map(|s| s.ready_replicas).unwrap_or(0),
        primary: previous.and_then(|s| s.primary.clone()),
        ..Default::default()
    };
    if let Err(status_error) = write_status(cluster, ctx, &observed, Some(&message)).await {
        tracing::warn!(%status_error, "could not record the failure in status");
    }
    let _ = ctx
        .recorder
        .publish(
            &KubeEvent {
                type_: EventType::Warning,
                reason: "ReconcileError".into(),
                note: Some(message.chars().take(1000).collect()),
                action: "Reconcile".into(),
                secondary: None,
            },
            &cluster.object_ref(&()),
        )
        .await;
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Error, RESYNC, backoff};

    fn api_error(code: u16) -> Error {
        Error::Kube {
            action: "applying".into(),
            source: kube::Error::Api(
                kube::core::Status::failure("refused", "Reason")
                    .with_code(code)
                    .boxed(),
            ),
        }
    }

    #[test]
    fn the_backoff_doubles_from_a_second_to_the_resync_period() {
        let waits: Vec<u64> = (1..=10).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]);
        assert_eq!(RESYNC, Duration::from_secs(300));
        assert_eq!(backoff(64), RESYNC);
        assert_eq!(backoff(u32::MAX), RESYNC);
    }

    #[test]
    fn only_a_conflict_is_read_as_one() {
        assert_eq!(api_error(409).reason(), "Conflict");
        assert_ne!(api_error(500).reason(), "Conflict");
        assert_ne!(api_error(403).reason(), "Conflict");
    }
}
