//! The CRD's two versions through the operator's real conversion webhook, the apiserver
//! enforcing the generated schemas, and the CRD's short name resolving to RedisClusters in
//! the apiserver's discovery and in kubectl.

mod support;

use std::time::Duration;

use e2e::ControlPlane;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use redis_operator::api::conversion::V1_FIELDS_ANNOTATION;
use redis_operator::api::{v1, v1alpha1};
use redis_operator::crd::SHORT_NAME;
use support::{Operator, create_namespace, install, wait_for_ca_bundle};

fn dynamic(client: &kube::Client, ns: &str, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cache.example.com", version, "RedisCluster"),
        "redisclusters",
    );
    Api::namespaced_with(client.clone(), ns, &resource)
}

#[tokio::test]
async fn versions_round_trip_through_the_webhook_and_schemas_are_enforced() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let admin = plane.client().await?;
    let webhook_port = e2e::free_port()?;
    install(&plane, webhook_port).await?;
    let operator = Operator::start(&plane, "conversion-0", webhook_port).await?;
    wait_for_ca_bundle(&admin).await?;
    create_namespace(&admin, "redis-conversion").await?;

    // The v1alpha1 sample, written as the user first wrote it, reads back as v1.
    let old_api: Api<v1alpha1::RedisCluster> = Api::namespaced(admin.clone(), "redis-conversion");
    let new_api: Api<v1::RedisCluster> = Api::namespaced(admin.clone(), "redis-conversion");
    let sample: v1alpha1::RedisCluster = serde_saphyr::from_str(include_str!(
        "../config/samples/cache_v1alpha1_rediscluster.yaml"
    ))?;
    // The apiserver may try the webhook before its CA reaches every watch cache: retry briefly.
    support::eventually(
        Duration::from_secs(20),
        "the v1alpha1 sample to be accepted",
        || async { Ok(old_api.create(&PostParams::default(), &sample).await.ok()) },
    )
    .await?;
    let as_v1 = new_api.get("my-redis").await?;
    assert_eq!(as_v1.spec.replicas, 3);
    assert_eq!(as_v1.spec.redis_version, Some(v1::RedisVersion::V7_2));
    assert_eq!(as_v1.spec.version, None);

    // A v1 object with fields v1alpha1 lacks: read as v1alpha1 they ride in an annotation,
    // and read as v1 again nothing is lost.
    let full: v1::RedisCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cache.example.com/v1",
        "kind": "RedisCluster",
        "metadata": {"name": "full"},
        "spec": {
            "replicas": 2,
            "redisVersion": "7.0",
            "persistence": {"size": "2Gi"},
            "passwordSecret": {"name": "auth", "key": "password"},
            "metrics": {"enabled": true},
            "resources": {"requests": {"cpu": "200m"}},
            "nodeSelector": {"disktype": "ssd"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "redis", "effect": "NoSchedule"}],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 50,
                "podAffinityTerm": {"topologyKey": "topology.kubernetes.io/zone",
                                    "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "full"}}}
            }]}},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                           "whenUnsatisfiable": "ScheduleAnyway"}],
            "priorityClassName": "redis-critical"
        }
    }))?;
    new_api.create(&PostParams::default(), &full).await?;
    let as_old = old_api.get("full").await?;
    assert_eq!(as_old.spec.version, Some(v1::RedisVersion::V7_0));
    // The scheduling fields are v1alpha1's too: served there as they were written.
    assert_eq!(
        serde_json::to_value(&as_old.spec.affinity)?,
        serde_json::to_value(&full.spec.affinity)?
    );
    assert_eq!(
        as_old.spec.priority_class_name.as_deref(),
        Some("redis-critical")
    );
    assert_eq!(
        serde_json::to_value(&as_old.spec.tolerations)?,
        serde_json::to_value(&full.spec.tolerations)?
    );
    let annotations = as_old.metadata.annotations.clone().unwrap_or_default();
    assert!(
        annotations.contains_key(V1_FIELDS_ANNOTATION),
        "annotations: {annotations:?}"
    );
    let back = new_api.get("full").await?;
    assert_eq!(
        serde_json::to_value(&back.spec)?,
        serde_json::to_value(&full.spec)?
    );
    assert!(
        !back
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(V1_FIELDS_ANNOTATION)
    );

    // An update through v1alpha1 keeps the v1-only fields.
    // The operator writes to the object too (finalizer, status): read-modify-write until our
    // update is based on the latest version, as any client must.
    let _ = as_old;
    let mut attempts = 0;
    loop {
        let mut edited = old_api.get("full").await?;
        edited.spec.replicas = 4;
        match old_api
            .replace("full", &PostParams::default(), &edited)
            .await
        {
            Ok(_) => break,
            Err(kube::Error::Api(status)) if status.code == 409 && attempts < 10 => attempts += 1,
            Err(other) => return Err(other.into()),
        }
    }
    let after = new_api.get("full").await?;
    assert_eq!(after.spec.replicas, 4);
    assert_eq!(
        serde_json::to_value(&after.spec.topology_spread_constraints)?,
        serde_json::to_value(&full.spec.topology_spread_constraints)?
    );
    assert_eq!(after.spec.node_selector, full.spec.node_selector);
    assert_eq!(
        after.spec.persistence.map(|p| p.size),
        Some("2Gi".to_string())
    );
    assert_eq!(
        after.spec.password_secret.map(|s| s.name),
        Some("auth".to_string())
    );
    operator.check_running()?;

    // In the same test, as they share the installed CRD: the short name resolves to
    // RedisClusters, and the apiserver enforces both schemas.
    the_short_name_is_ours_alone(&plane, &admin).await?;
    rejects_invalid_specs_in_both_versions(&admin).await
}

/// Every resource of the apiserver's discovery (the core API and every group) that claims
/// `short_name`, as `group/resource`.
async fn claimants(client: &kube::Client, short_name: &str) -> anyhow::Result<Vec<String>> {
    let mut lists = vec![client.list_core_api_resources("v1").await?];
    for group in client.list_api_groups().await?.groups {
        for version in group.versions {
            lists.push(
                client
                    .list_api_group_resources(&version.group_version)
                    .await?,
            );
        }
    }
    let mut found: Vec<String> = lists
        .iter()
        .flat_map(|list| {
            list.resources
                .iter()
                .filter(|r| r.short_names.iter().flatten().any(|s| s == short_name))
                .map(|r| format!("{}/{}", list.group_version, r.name))
        })
        .collect();
    found.sort();
    found.dedup();
    Ok(found)
}

/// `rcl` is claimed by the CRD alone among the APIs that a control plane of the Kubernetes
/// version the tests run serves by default (no `ShortNames()` of Kubernetes' own registries,
/// `pkg/registry/...`, returns `rcl` either), and `kubectl get rcl` lists RedisClusters. `rc`
/// is the core API's (ReplicationControllers), which is why the CRD no longer claims it.
async fn the_short_name_is_ours_alone(
    plane: &ControlPlane,
    client: &kube::Client,
) -> anyhow::Result<()> {
    let ours = claimants(client, SHORT_NAME).await?;
    assert_eq!(
        ours,
        [
            "cache.example.com/v1/redisclusters",
            "cache.example.com/v1alpha1/redisclusters"
        ],
        "only the RedisCluster CRD may claim {SHORT_NAME} on Kubernetes {}",
        plane.version()
    );
    let rc = claimants(client, "rc").await?;
    assert_eq!(rc, ["v1/replicationcontrollers"], "who claims rc");

    let kubectl = e2e::assets::Assets::locate()?.kubernetes("kubectl")?;
    let output = std::process::Command::new(kubectl)
        .arg(format!(
            "--kubeconfig={}",
            plane.kubeconfig_path().display()
        ))
        .args(["get", SHORT_NAME, "-n", "redis-conversion", "-o", "name"])
        .output()?;
    let listed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "kubectl get {SHORT_NAME}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut names: Vec<&str> = listed.lines().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "rediscluster.cache.example.com/full",
            "rediscluster.cache.example.com/my-redis"
        ]
    );
    Ok(())
}

async fn rejects_invalid_specs_in_both_versions(client: &kube::Client) -> anyhow::Result<()> {
    create_namespace(client, "redis-invalid").await?;
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
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": format!("cache.example.com/{version}"),
            "kind": "RedisCluster",
            "metadata": {"name": format!("bad-{index}")},
            "spec": spec,
        }))?;
        let error = dynamic(client, "redis-invalid", version)
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
