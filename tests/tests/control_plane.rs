//! Smoke tests of the real control plane: the things every later end-to-end test relies on.

use std::time::Duration;

use e2e::ControlPlane;
use e2e::assets::Assets;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use redis_operator::api::v1alpha1::RedisCluster;

async fn namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    Ok(())
}

#[tokio::test]
async fn apiserver_reports_the_pinned_version() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let expected = Assets::locate()?
        .kubernetes_version()
        .map(str::to_string)
        .expect("the asset index names the Kubernetes version");
    assert!(
        expected.starts_with("v1.36."),
        "pinned version is {expected}"
    );
    // What the binaries were built from, as `go build` recorded it (the version string
    // below is stamped by the asset build, so alone it proves nothing).
    let assets = Assets::locate()?;
    for program in ["kube-apiserver", "kubelet", "kube-proxy", "kubectl"] {
        assert_eq!(
            e2e::assets::compiled_module_version(
                &assets.kubernetes(program)?,
                "k8s.io/kubernetes"
            )?,
            expected,
            "{program}"
        );
    }
    assert_eq!(
        e2e::assets::compiled_module_version(
            &assets.program("COREDNS", "coredns")?,
            "github.com/coredns/coredns"
        )?,
        assets
            .version_of("COREDNS")
            .expect("the index names CoreDNS")
    );
    let info = plane.client().await?.apiserver_version().await?;
    assert_eq!(info.git_version, expected);
    assert_eq!((info.major.as_str(), info.minor.as_str()), ("1", "36"));
    assert_eq!(plane.version(), expected);
    Ok(())
}

#[tokio::test]
async fn custom_resource_is_created_and_watched() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let client = plane.client().await?;
    namespace(&client, "smoke-crd").await?;

    // A single-version CRD: this smoke test is about the apiserver, not the operator's webhook.
    e2e::apply_crd(&client, &<RedisCluster as kube::CustomResourceExt>::crd()).await?;

    let clusters: Api<RedisCluster> = Api::namespaced(client.clone(), "smoke-crd");
    let watch = watcher(clusters.clone(), watcher::Config::default()).applied_objects();
    let mut watch = Box::pin(watch);

    let sample: RedisCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cache.example.com/v1alpha1",
        "kind": "RedisCluster",
        "metadata": {"name": "watched"},
        "spec": {"replicas": 3, "version": "7.2"}
    }))?;
    clusters.create(&PostParams::default(), &sample).await?;

    let seen = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = watch.next().await {
            let cluster = event?;
            if cluster.metadata.name.as_deref() == Some("watched") {
                return anyhow::Ok(cluster);
            }
        }
        anyhow::bail!("watch ended")
    })
    .await??;
    assert_eq!(seen.spec.replicas, 3);

    // The apiserver itself enforces the schema generated from the Rust types.
    let bad: RedisCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "cache.example.com/v1alpha1",
        "kind": "RedisCluster",
        "metadata": {"name": "zero"},
        "spec": {"replicas": 0}
    }))?;
    let error = clusters
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("replicas 0 is invalid");
    assert!(
        error.to_string().contains("spec.replicas"),
        "unexpected error: {error}"
    );
    Ok(())
}

#[tokio::test]
async fn deployment_becomes_available_on_kwok_nodes() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let client = plane.client().await?;
    namespace(&client, "smoke-deploy").await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "smoke-deploy");
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "example.invalid/web:1"}]}
            }
        }
    }))?;
    deployments
        .create(&PostParams::default(), &deployment)
        .await?;
    e2e::eventually(
        Duration::from_secs(60),
        "Deployment web to be Available",
        || async {
            let d = deployments.get("web").await?;
            let available = d
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Available" && c.status == "True");
            Ok(available.then_some(()))
        },
    )
    .await?;
    plane.check_running()?;
    Ok(())
}

#[tokio::test]
async fn statefulset_with_volume_claims_gets_three_ready_replicas() -> anyhow::Result<()> {
    let plane = ControlPlane::shared().await?;
    let client = plane.client().await?;
    namespace(&client, "smoke-sts").await?;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "smoke-sts");
    let set: StatefulSet = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{
                    "name": "db",
                    "image": "example.invalid/db:1",
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]
                }]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    }))?;
    sets.create(&PostParams::default(), &set).await?;
    e2e::eventually(
        Duration::from_secs(90),
        "StatefulSet db to have 3 ready replicas",
        || async {
            let ready = sets
                .get("db")
                .await?
                .status
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0);
            Ok((ready == 3).then_some(()))
        },
    )
    .await?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "smoke-sts");
    let bound: Vec<String> = claims
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(bound.len(), 3, "bound claims: {bound:?}");
    Ok(())
}
