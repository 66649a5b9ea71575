//! Running the real `redis-operator` binary on the shared control plane, the way it runs in
//! a cluster: under its own ServiceAccount bound only to the generated roles, with its
//! conversion webhook trusted by the apiserver.

#![allow(dead_code)] // each test binary uses a different part

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use e2e::{ControlPlane, ManagedProcess};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use redis_operator::crd::{ConversionEndpoint, redis_cluster_crd};
use redis_operator::manifests::{self, Target};

/// The namespace the operator's ServiceAccount and Lease live in.
pub const OPERATOR_NAMESPACE: &str = "redis-operator-system";

pub use e2e::eventually;

/// Creates a namespace.
pub async fn create_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .patch(name, &PatchParams::apply("e2e").force(), &Patch::Apply(&ns))
        .await?;
    Ok(())
}

async fn apply<K>(api: Api<K>, object: &serde_json::Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let name = object["metadata"]["name"].as_str().context("named")?;
    api.patch(
        name,
        &PatchParams::apply("e2e").force(),
        &Patch::Apply(object),
    )
    .await?;
    Ok(())
}

/// Installs what `redis-operator manifests` prints, except the Deployment and Services (the
/// operator runs as a local process, not a pod): the ServiceAccount and the generated RBAC,
/// and the CRD, whose conversion webhook points at `webhook_port` on loopback. The CA is left
/// empty: the operator writes its own at start-up.
pub async fn install(plane: &ControlPlane, webhook_port: u16) -> anyhow::Result<()> {
    let client = plane.client().await?;
    create_namespace(&client, OPERATOR_NAMESPACE).await?;
    let target = Target {
        namespace: OPERATOR_NAMESPACE.into(),
        ..Default::default()
    };
    for object in manifests::objects(&target) {
        let ns = OPERATOR_NAMESPACE;
        match object["kind"].as_str().unwrap_or_default() {
            "ServiceAccount" => {
                apply(
                    Api::<ServiceAccount>::namespaced(client.clone(), ns),
                    &object,
                )
                .await?
            }
            "ClusterRole" => apply(Api::<ClusterRole>::all(client.clone()), &object).await?,
            "ClusterRoleBinding" => {
                apply(Api::<ClusterRoleBinding>::all(client.clone()), &object).await?
            }
            "Role" => apply(Api::<Role>::namespaced(client.clone(), ns), &object).await?,
            "RoleBinding" => {
                apply(Api::<RoleBinding>::namespaced(client.clone(), ns), &object).await?
            }
            _ => {}
        }
    }
    let crd = redis_cluster_crd(
        &ConversionEndpoint::Url(format!("https://127.0.0.1:{webhook_port}")),
        None,
    );
    e2e::apply_crd(&client, &crd).await
}

/// One running `redis-operator run` process.
pub struct Operator {
    /// The process (killed on drop).
    pub process: ManagedProcess,
    /// Its `/metrics` port.
    pub metrics_port: u16,
    /// Its Lease identity.
    pub identity: String,
}

impl Operator {
    /// Starts the operator binary as the operator's ServiceAccount, serving its webhook on
    /// `webhook_port`, and waits until `/readyz` answers.
    pub async fn start(
        plane: &ControlPlane,
        identity: &str,
        webhook_port: u16,
    ) -> anyhow::Result<Operator> {
        let kubeconfig = plane
            .service_account_kubeconfig(OPERATOR_NAMESPACE, manifests::NAME)
            .await?;
        Self::start_with_kubeconfig(plane, identity, webhook_port, &kubeconfig, 4).await
    }

    /// [`Operator::start`] with another kubeconfig (e.g. one that goes through a proxy) and
    /// Lease duration (the tests' 4 s makes failover quick; an apiserver restart takes longer,
    /// and a leader that cannot renew for a whole Lease exits by design).
    pub async fn start_with_kubeconfig(
        plane: &ControlPlane,
        identity: &str,
        webhook_port: u16,
        kubeconfig: &std::path::Path,
        lease_seconds: u64,
    ) -> anyhow::Result<Operator> {
        let metrics_port = e2e::free_port()?;
        // E2E_OPERATOR_LOG overrides the operator's log filter (e.g. `debug,kube_runtime=trace`).
        let filter = std::env::var("E2E_OPERATOR_LOG")
            .unwrap_or_else(|_| "info,redis_operator=debug".into());
        let log: PathBuf = plane
            .root()
            .join("logs")
            .join(format!("redis-operator-{identity}.log"));
        let process = ManagedProcess::spawn(
            &format!("redis-operator ({identity})"),
            std::path::Path::new(env!("CARGO_BIN_EXE_redis-operator")),
            &[
                "run".into(),
                format!("--metrics-address=127.0.0.1:{metrics_port}"),
                format!("--webhook-address=127.0.0.1:{webhook_port}"),
                format!("--lease-namespace={OPERATOR_NAMESPACE}"),
                format!("--lease-duration-seconds={lease_seconds}"),
                // These tests run on kwok, whose pods run no Redis; replication and failover
                // are tested on the real node (tests/redis_on_a_real_node.rs).
                "--manage-replication=false".into(),
            ],
            &[
                ("KUBECONFIG", kubeconfig.to_str().context("utf-8 path")?),
                ("POD_NAME", identity),
                ("RUST_LOG", filter.as_str()),
            ],
            &log,
        )?;
        process
            .wait_ready(Duration::from_secs(30), || async move {
                Ok(e2e::http_get(metrics_port, "/readyz")
                    .await
                    .map(|(s, _)| s == 200)
                    .unwrap_or(false))
            })
            .await?;
        Ok(Operator {
            process,
            metrics_port,
            identity: identity.to_string(),
        })
    }

    /// A metric's value from `/metrics`; an error when the metric is missing or not a number
    /// (the operator exports every metric from the start, at 0), so that a check on its value
    /// cannot pass because the metric vanished.
    pub async fn metric(&self, name: &str) -> anyhow::Result<f64> {
        let (status, body) = e2e::http_get(self.metrics_port, "/metrics").await?;
        anyhow::ensure!(status == 200, "/metrics answered {status}: {body}");
        parse_metric(&body, name)
    }

    /// Fails with the operator's log if it is no longer running.
    pub fn check_running(&self) -> anyhow::Result<()> {
        self.process.check_running()
    }
}

/// The cluster is Running with `replicas` ready, as of its current generation.
pub fn running_with(cluster: &redis_operator::api::v1::RedisCluster, replicas: i32) -> bool {
    cluster.status.as_ref().is_some_and(|s| {
        s.phase == Some(redis_operator::api::v1::Phase::Running)
            && s.ready_replicas == replicas
            && s.observed_generation == cluster.metadata.generation
    })
}

/// Waits until the CRD's conversion webhook has a CA (written by the operator).
pub async fn wait_for_ca_bundle(client: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    eventually(
        Duration::from_secs(30),
        "the operator to write the webhook CA into the CRD",
        || async {
            let crd = crds.get(redis_operator::crd::CRD_NAME).await?;
            let has_ca = crd
                .spec
                .conversion
                .and_then(|c| c.webhook)
                .and_then(|w| w.client_config)
                .and_then(|c| c.ca_bundle)
                .is_some_and(|b| !b.0.is_empty());
            Ok(has_ca.then_some(()))
        },
    )
    .await
}

/// The value of the sample `name` (no labels) in a Prometheus text exposition.
pub fn parse_metric(body: &str, name: &str) -> anyhow::Result<f64> {
    let value = body
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .ok_or_else(|| anyhow::anyhow!("metric {name} is not in /metrics:\n{body}"))?;
    value
        .trim()
        .parse()
        .map_err(|e| anyhow::anyhow!("metric {name} has the value {value:?}: {e}"))
}

#[test]
fn a_missing_metric_is_an_error_not_zero() {
    let body = "# TYPE redis_operator_reconciles_total counter\nredis_operator_reconciles_total 3\nredis_operator_api_writes_total_x 1\n";
    assert_eq!(
        parse_metric(body, "redis_operator_reconciles_total").unwrap(),
        3.0
    );
    assert!(parse_metric(body, "redis_operator_api_writes_total").is_err());
    assert!(
        parse_metric(
            "redis_operator_api_writes_total NaN?\n",
            "redis_operator_api_writes_total"
        )
        .is_err()
    );
}
