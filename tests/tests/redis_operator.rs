//! The Redis operator on the real control plane: the user's closed loop from the chapter
//! (apply → Running → scale → upgrade → delete), idempotence counted in API writes, and the
//! apiserver enforcing the generated schema.

use std::sync::Arc;
use std::time::Duration;

use e2e::ControlPlane;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PersistentVolumeClaim, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition,
};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::{conditions, wait::await_condition};
use redis_operator::api::v1::{Phase, RedisCluster};
use redis_operator::api_writes::ApiWriteCounter;
use redis_operator::controller::{self, Context};
use redis_operator::crd::{ConversionEndpoint, redis_cluster_crd};
use redis_operator::metrics::Metrics;

async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Installs the CRD. Conversion is switched off here until the operator serves its webhook
/// over HTTPS (issue #3 is open for it): without it the apiserver could not serve v1alpha1,
/// and this test only uses v1, the stored version.
async fn install_crd(client: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = redis_cluster_crd(
        &ConversionEndpoint::Url("https://127.0.0.1:9443".into()),
        None,
    );
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "None".into(),
        webhook: None,
    });
    let name = crd.metadata.name.clone().expect("named");
    crds.patch(
        &name,
        &PatchParams::apply("e2e").force(),
        &Patch::Apply(&crd),
    )
    .await?;
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(crds, &name, conditions::is_crd_established()),
    )
    .await??;
    Ok(())
}

async fn create_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

fn is_running_with(cluster: &RedisCluster, replicas: i32) -> bool {
    let Some(status) = &cluster.status else {
        return false;
    };
    status.phase == Some(Phase::Running)
        && status.ready_replicas == replicas
        && status.observed_generation == cluster.metadata.generation
        && status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

#[tokio::test]
async fn closed_loop_apply_scale_upgrade_delete() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let admin = plane.client().await?;
    install_crd(&admin).await?;
    create_namespace(&admin, "redis-loop").await?;

    let writes = ApiWriteCounter::default();
    let operator_client = writes.client(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(plane.kubeconfig_path())?,
            &Default::default(),
        )
        .await?,
    )?;
    let metrics = Arc::new(Metrics::new(writes.clone()));
    let context = Arc::new(Context::new(operator_client, metrics.clone(), "e2e"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let operator = tokio::spawn(controller::run(context, async move {
        let _ = stopped.await;
    }));

    let clusters: Api<RedisCluster> = Api::namespaced(admin.clone(), "redis-loop");
    let sample: RedisCluster = serde_saphyr::from_str(&std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../operator/config/samples/cache_v1_rediscluster.yaml"
    ))?)?;
    clusters.create(&PostParams::default(), &sample).await?;
    let name = "my-redis";

    // Apply the sample: StatefulSet and Services exist, then Running with 3 ready replicas.
    let ready = eventually(
        Duration::from_secs(90),
        "3 ready replicas and phase Running",
        || async {
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
            .contains(&controller::FINALIZER.to_string())
    );
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
    let writes_before = writes.get();
    let reconciles_before = metrics.reconciles();
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
        || async { Ok((metrics.reconciles() > reconciles_before).then_some(())) },
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        writes.get(),
        writes_before,
        "a reconcile with nothing to change wrote to the API"
    );

    // Scale to 5.
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

    // Upgrade Redis: the StatefulSet rolls, then the cluster is Running again on the new image.
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
            let rolled = image == Some(Some("docker.io/library/redis:7.0".into()))
                && status.current_revision.is_some()
                && status.current_revision == status.update_revision
                && status.updated_replicas == Some(5);
            Ok((rolled && is_running_with(&clusters.get(name).await?, 5)).then_some(()))
        },
    )
    .await?;

    // Delete: the finalizer removes the claims; owned children are garbage collected.
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

    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(10), operator).await??;
    Ok(())
}

#[tokio::test]
async fn apiserver_rejects_invalid_specs_in_both_versions() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let client = plane.client().await?;
    install_crd(&client).await?;
    create_namespace(&client, "redis-invalid").await?;
    let cases = [
        (
            "v1alpha1",
            serde_json::json!({"replicas": 0}),
            "spec.replicas",
        ),
        (
            "v1alpha1",
            serde_json::json!({"replicas": 1, "version": "5.0"}),
            "spec.version",
        ),
        (
            "v1alpha1",
            serde_json::json!({"version": "7.2"}),
            "spec.replicas",
        ),
        ("v1", serde_json::json!({"replicas": 0}), "spec.replicas"),
        (
            "v1",
            serde_json::json!({"replicas": 1, "redisVersion": "5.0"}),
            "spec.redisVersion",
        ),
        ("v1", serde_json::json!({}), "spec.replicas"),
    ];
    for (index, (version, spec, field)) in cases.into_iter().enumerate() {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("cache.example.com", version, "RedisCluster"),
            "redisclusters",
        );
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), "redis-invalid", &resource);
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": format!("cache.example.com/{version}"),
            "kind": "RedisCluster",
            "metadata": {"name": format!("bad-{index}")},
            "spec": spec,
        }))?;
        let error = api
            .create(&PostParams::default(), &object)
            .await
            .expect_err("invalid spec accepted");
        assert!(
            error.to_string().contains(field),
            "{version} {spec}: expected an error about {field}, got {error}"
        );
    }
    Ok(())
}
