//! `bundle-tool audit --kubeconfig` against the real control plane with the Redis operator
//! running: the live criteria (conversion at every served version, conditions on a sample
//! CR, metrics through the apiserver's service proxy) pass.
//!
//! The operator runs in this test's process (`redis_operator::run`), its webhook on loopback
//! and its metrics on an extra address of the loopback interface of the test's private network
//! namespace: the apiserver refuses loopback addresses as Service endpoints, and the service
//! proxy needs an endpoint it can dial.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use e2e::ControlPlane;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use redis_operator::crd::{ConversionEndpoint, redis_cluster_crd};

const NAMESPACE: &str = "redis-operator-system";
/// An address added to `lo` inside the test's network namespace (never the host's).
const METRICS_IP: Ipv4Addr = Ipv4Addr::new(10, 250, 0, 1);

fn redis_bundle() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle")
}

async fn apply(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    object: serde_json::Value,
) -> anyhow::Result<()> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let object: DynamicObject = serde_json::from_value(object)?;
    api.patch(
        &name,
        &PatchParams::apply("audit-live").force(),
        &Patch::Apply(&object),
    )
    .await?;
    Ok(())
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_live_criteria_pass_against_the_running_redis_operator() -> anyhow::Result<()> {
    e2e::require_isolated_network()?;
    let started = std::time::Instant::now();
    let plane = ControlPlane::shared().await?;
    println!("control plane up after {:.1?}", started.elapsed());
    let admin = plane.client().await?;

    // The metrics address the service proxy will dial.
    let status = std::process::Command::new("ip")
        .args(["addr", "replace", &format!("{METRICS_IP}/32"), "dev", "lo"])
        .status()?;
    anyhow::ensure!(
        status.success(),
        "ip addr replace {METRICS_IP}/32 dev lo failed"
    );

    // The CRD (conversion webhook on loopback) and the operator's namespace.
    let webhook_port = e2e::free_port()?;
    let metrics_port = e2e::free_port()?;
    apply(
        &admin,
        &resource("", "v1", "Namespace", "namespaces"),
        None,
        serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    )
    .await?;
    e2e::wait_for_default_service_account(&admin, NAMESPACE).await?;
    let crd = redis_cluster_crd(
        &ConversionEndpoint::Url(format!("https://127.0.0.1:{webhook_port}")),
        None,
    );
    e2e::apply_crd(&admin, &crd).await?;

    // The operator, in-process, as the admin (KUBECONFIG is read by `kube::Config::infer`).
    // SAFETY: set before the operator starts; nothing else in this test binary reads it.
    unsafe { std::env::set_var("KUBECONFIG", plane.kubeconfig_path()) };
    let options = redis_operator::run::RunOptions {
        metrics_address: SocketAddr::from((METRICS_IP, metrics_port)),
        webhook_address: SocketAddr::from((Ipv4Addr::LOCALHOST, webhook_port)),
        tls_files: None,
        webhook_names: vec!["127.0.0.1".into(), "localhost".into()],
        lease_namespace: NAMESPACE.into(),
        lease_name: "redis-operator-leader".into(),
        identity: "audit-live-0".into(),
        lease_duration: Duration::from_secs(4),
        // kwok's pods run no Redis to talk to.
        manage_replication: false,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let operator = tokio::spawn(redis_operator::run::run(options, async move {
        let _ = stopped.await;
    }));

    // The bundle's metrics Service, selector-less, with an endpoint at the operator's address.
    let service: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(
        redis_bundle().join("manifests/redis-operator-metrics_v1_service.yaml"),
    )?)?;
    let service_name = service["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let port = service["spec"]["ports"][0].clone();
    apply(&admin, &resource("", "v1", "Service", "services"), Some(NAMESPACE), serde_json::json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": service_name, "namespace": NAMESPACE},
        "spec": {"ports": [{"name": port["name"], "port": port["port"], "targetPort": metrics_port}]},
    })).await?;
    // The apiserver's service proxy only dials endpoints that belong to a Pod with that IP:
    // a Pod no scheduler or node touches, given the operator's address as its IP.
    let pod_name = "redis-operator-audit-live";
    let pods = resource("", "v1", "Pod", "pods");
    apply(&admin, &pods, Some(NAMESPACE), serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod_name, "namespace": NAMESPACE},
        "spec": {"schedulerName": "nobody", "containers": [{"name": "operator", "image": "quay.io/example/redis-operator:0.1.0"}]},
    })).await?;
    let pod_api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), NAMESPACE, &pods);
    pod_api
        .patch_status(
            pod_name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"podIP": METRICS_IP.to_string(), "podIPs": [{"ip": METRICS_IP.to_string()}]}})),
        )
        .await?;
    apply(&admin, &resource("", "v1", "Endpoints", "endpoints"), Some(NAMESPACE), serde_json::json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": service_name, "namespace": NAMESPACE},
        "subsets": [{
            "addresses": [{"ip": METRICS_IP.to_string(), "targetRef": {"kind": "Pod", "namespace": NAMESPACE, "name": pod_name}}],
            "ports": [{"name": port["name"], "port": metrics_port}],
        }],
    })).await?;
    println!(
        "operator and metrics Service set up after {:.1?}",
        started.elapsed()
    );

    // A sample CR from the CSV's alm-examples (v1), reconciled until it has conditions.
    let clusters = resource("cache.example.com", "v1", "RedisCluster", "redisclusters");
    let csv: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(
        redis_bundle().join("manifests/redis-operator.clusterserviceversion.yaml"),
    )?)?;
    let examples: Vec<serde_json::Value> = serde_json::from_str(
        csv["metadata"]["annotations"]["alm-examples"]
            .as_str()
            .unwrap_or("[]"),
    )?;
    let sample = examples
        .into_iter()
        .find(|e| e["apiVersion"] == "cache.example.com/v1")
        .ok_or_else(|| anyhow::anyhow!("no v1 example in alm-examples"))?;
    let api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), "default", &clusters);
    api.create(
        &PostParams::default(),
        &serde_json::from_value(sample.clone())?,
    )
    .await?;
    let name = sample["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    e2e::eventually(
        Duration::from_secs(60),
        "conditions on the sample RedisCluster",
        || async {
            anyhow::ensure!(!operator.is_finished(), "the operator stopped");
            let cr = api.get(&name).await?;
            Ok(cr.data["status"]["conditions"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
                .then_some(()))
        },
    )
    .await?;

    println!("sample reconciled after {:.1?}", started.elapsed());

    // The audit, as users run it.
    let mut command = tokio::process::Command::new(e2e::bundle_tool_binary());
    command
        .arg("audit")
        .arg(redis_bundle())
        .arg("--kubeconfig")
        .arg(plane.kubeconfig_path())
        .args(["-o", "json"]);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output()).await??;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "bundle-tool audit --kubeconfig failed: {stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    println!("audited after {:.1?}", started.elapsed());
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), operator).await;

    assert_eq!(report["errors"], serde_json::json!([]));
    let result = &report["bundles"][0];
    assert_eq!(result["live"], true);
    let criteria = result["criteria"].as_array().expect("criteria");
    for id in [
        "L2.live-conversion",
        "L4.live-conditions",
        "L4.live-metrics",
    ] {
        let criterion = criteria.iter().find(|c| c["id"] == id).expect(id);
        println!("{id}: {} — {}", criterion["outcome"], criterion["detail"]);
        assert_eq!(
            criterion["outcome"], "pass",
            "{id}: {}",
            criterion["detail"]
        );
    }
    assert_eq!(
        result["declared"]["declaredLevelMet"], true,
        "{}",
        result["declared"]["gap"]
    );
    Ok(())
}
