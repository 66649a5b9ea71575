//! Two replicas of the operator: one leader at a time; the leader killed in the middle of
//! work, the other takes over and converges; the killed one comes back as a follower.

mod support;

use std::time::Duration;

use e2e::ControlPlane;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams, PostParams};
use redis_operator::api::v1::RedisCluster;
use support::{OPERATOR_NAMESPACE, Operator, create_namespace, eventually, install, running_with};

const LEASE: &str = "redis-operator-leader";

async fn holder(leases: &Api<Lease>) -> anyhow::Result<Option<String>> {
    Ok(leases
        .get_opt(LEASE)
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity))
}

#[tokio::test]
async fn one_leader_and_failover_after_a_kill() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let admin = plane.client().await?;
    // Only the stored version (v1) is used here, so no conversion is needed when the replica
    // whose port the CRD names is killed.
    let webhook_a = e2e::free_port()?;
    install(&plane, webhook_a).await?;
    let a = Operator::start(&plane, "replica-a", webhook_a).await?;
    let b = Operator::start(&plane, "replica-b", e2e::free_port()?).await?;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), OPERATOR_NAMESPACE);
    let leader_name = eventually(Duration::from_secs(30), "a leader", || async {
        holder(&leases).await
    })
    .await?;
    let (leader, follower) = if leader_name == a.identity {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(leader_name, leader.identity);

    create_namespace(&admin, "redis-ha").await?;
    let clusters: Api<RedisCluster> = Api::namespaced(admin.clone(), "redis-ha");
    let cluster: RedisCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cache.example.com/v1",
        "kind": "RedisCluster",
        "metadata": {"name": "ha"},
        "spec": {"replicas": 2, "persistence": {"size": "1Gi"}}
    }))?;
    clusters.create(&PostParams::default(), &cluster).await?;
    eventually(Duration::from_secs(60), "2 ready replicas", || async {
        Ok(running_with(&clusters.get("ha").await?, 2).then_some(()))
    })
    .await?;
    assert!(leader.metric("redis_operator_reconciles_total").await? > 0.0);
    assert_eq!(
        follower.metric("redis_operator_reconciles_total").await?,
        0.0,
        "the follower reconciled"
    );

    // Change the spec and kill the leader while it is working on it.
    clusters
        .patch(
            "ha",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 4}})),
        )
        .await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    leader.process.kill();

    let new_leader = eventually(
        Duration::from_secs(30),
        "the follower to take the Lease",
        || async { Ok(holder(&leases).await?.filter(|h| *h == follower.identity)) },
    )
    .await?;
    assert_eq!(new_leader, follower.identity);
    eventually(
        Duration::from_secs(90),
        "4 ready replicas under the new leader",
        || async {
            follower.check_running()?;
            Ok(running_with(&clusters.get("ha").await?, 4).then_some(()))
        },
    )
    .await?;
    assert!(follower.metric("redis_operator_reconciles_total").await? > 0.0);

    // The killed replica comes back and waits as a follower.
    let returned = Operator::start(&plane, &leader.identity, e2e::free_port()?).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(holder(&leases).await?, Some(follower.identity.clone()));
    assert_eq!(
        returned.metric("redis_operator_reconciles_total").await?,
        0.0
    );
    returned.check_running()?;
    Ok(())
}
