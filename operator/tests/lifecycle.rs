//! The user's closed loop from the chapter, on the real control plane, with the real operator
//! binary running under its generated least-privilege RBAC: apply the sample → Running with 3
//! ready replicas → scale to 5 → upgrade Redis (rolling) → delete (claims removed by the
//! finalizer, children garbage collected). Idempotence is measured in API writes.

mod support;

use std::time::Duration;

use e2e::ControlPlane;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use redis_operator::api::v1::RedisCluster;
use support::{Operator, create_namespace, eventually, install, wait_for_ca_bundle};

fn is_running_with(cluster: &RedisCluster, replicas: i32) -> bool {
    support::running_with(cluster, replicas)
        && cluster.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

#[tokio::test]
async fn closed_loop_apply_scale_upgrade_delete() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let admin = plane.client().await?;
    let webhook_port = e2e::free_port()?;
    install(&plane, webhook_port).await?;
    let operator = Operator::start(&plane, "lifecycle-0", webhook_port).await?;
    wait_for_ca_bundle(&admin).await?;
    create_namespace(&admin, "redis-loop").await?;

    let clusters: Api<RedisCluster> = Api::namespaced(admin.clone(), "redis-loop");
    let sample: RedisCluster =
        serde_saphyr::from_str(include_str!("../config/samples/cache_v1_rediscluster.yaml"))?;
    clusters.create(&PostParams::default(), &sample).await?;
    let name = "my-redis";

    let ready = eventually(
        Duration::from_secs(90),
        "3 ready replicas and phase Running",
        || async {
            operator.check_running()?;
            let c = clusters.get(name).await?;
            Ok(is_running_with(&c, 3).then_some(c))
        },
    )
    .await?;
    assert!(
        ready
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&redis_operator::controller::FINALIZER.to_string())
    );
    // Two fake nodes and the default anti-affinity: the three pods use both, and status
    // reads that from the pods' nodes.
    let spread = eventually(Duration::from_secs(30), "SpreadOverNodes=True", || async {
        Ok(spread_condition(&clusters.get(name).await?).filter(|c| c.status == "True"))
    })
    .await?;
    assert_eq!(spread.reason, "PodsOnSeveralNodes", "{}", spread.message);
    assert_eq!(spread.message, "3 pods run on 2 nodes");
    let sets: Api<StatefulSet> = Api::namespaced(admin.clone(), "redis-loop");
    let services: Api<Service> = Api::namespaced(admin.clone(), "redis-loop");
    let maps: Api<ConfigMap> = Api::namespaced(admin.clone(), "redis-loop");
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(admin.clone(), "redis-loop");
    assert!(
        services.get_opt(name).await?.is_some()
            && services.get_opt("my-redis-headless").await?.is_some()
    );
    assert!(maps.get_opt("my-redis-config").await?.is_some());
    assert!(budgets.get_opt(name).await?.is_some());

    // Nothing to do → no write: touch the object (a reconcile, no spec change) and count.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let writes_before = operator.metric("redis_operator_api_writes_total").await?;
    let reconciles_before = operator.metric("redis_operator_reconciles_total").await?;
    clusters
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"annotations": {"e2e/touch": "1"}}})),
        )
        .await?;
    eventually(
        Duration::from_secs(20),
        "a reconcile after the touch",
        || async {
            Ok(
                (operator.metric("redis_operator_reconciles_total").await? > reconciles_before)
                    .then_some(()),
            )
        },
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        operator.metric("redis_operator_api_writes_total").await?,
        writes_before,
        "a reconcile with nothing to change wrote to the API"
    );
    assert_eq!(
        operator.metric("redis_operator_managed_clusters").await?,
        1.0
    );

    clusters
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 5}})),
        )
        .await?;
    eventually(Duration::from_secs(90), "5 ready replicas", || async {
        Ok(is_running_with(&clusters.get(name).await?, 5).then_some(()))
    })
    .await?;

    clusters
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"redisVersion": "7.0"}})),
        )
        .await?;
    eventually(
        Duration::from_secs(120),
        "the rolling update to Redis 7.0 to finish",
        || async {
            let set = sets.get(name).await?;
            let image = set
                .spec
                .as_ref()
                .and_then(|s| s.template.spec.as_ref())
                .map(|p| p.containers[0].image.clone());
            let status = set.status.clone().unwrap_or_default();
            // OnDelete: the operator deletes the pods one at a time, and the StatefulSet never
            // moves currentRevision, so the pods on the update revision are the measure.
            let rolled = image == Some(Some("docker.io/library/redis:7.0".into()))
                && status.update_revision.is_some()
                && status.updated_replicas == Some(5);
            Ok((rolled && is_running_with(&clusters.get(name).await?, 5)).then_some(()))
        },
    )
    .await?;

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(admin.clone(), "redis-loop");
    assert_eq!(
        claims.list(&ListParams::default()).await?.items.len(),
        5,
        "one claim per pod"
    );
    clusters.delete(name, &DeleteParams::default()).await?;
    eventually(
        Duration::from_secs(90),
        "the RedisCluster and everything it owned to be gone",
        || async {
            let gone = clusters.get_opt(name).await?.is_none()
                && claims.list(&ListParams::default()).await?.items.is_empty()
                && sets.get_opt(name).await?.is_none()
                && services
                    .list(&ListParams::default())
                    .await?
                    .items
                    .is_empty()
                && maps.get_opt("my-redis-config").await?.is_none();
            Ok(gone.then_some(()))
        },
    )
    .await?;
    let events: Api<Event> = Api::namespaced(admin.clone(), "redis-loop");
    let reasons: Vec<String> = events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        reasons.iter().any(|r| r == "Deleted"),
        "no cleanup Event among {reasons:?}"
    );

    // A cluster whose `nodeSelector` pins it to one node cannot spread; status says so.
    let pinned: RedisCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cache.example.com/v1",
        "kind": "RedisCluster",
        "metadata": {"name": "pinned"},
        "spec": {"replicas": 2, "nodeSelector": {"kubernetes.io/hostname": "kwok-node-0"}},
    }))?;
    clusters.create(&PostParams::default(), &pinned).await?;
    let one_node = eventually(
        Duration::from_secs(60),
        "SpreadOverNodes=False for the pinned cluster",
        || async {
            Ok(spread_condition(&clusters.get("pinned").await?).filter(|c| c.status == "False"))
        },
    )
    .await?;
    assert_eq!(one_node.reason, "AllPodsOnOneNode", "{}", one_node.message);
    assert!(
        one_node.message.contains("kwok-node-0"),
        "{}",
        one_node.message
    );
    clusters.delete("pinned", &DeleteParams::default()).await?;
    operator.check_running()?;
    Ok(())
}

fn spread_condition(cluster: &RedisCluster) -> Option<Condition> {
    cluster
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == redis_operator::status::SPREAD_CONDITION)
        .cloned()
}
