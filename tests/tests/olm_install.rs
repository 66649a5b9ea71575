//! The whole product path with real OLM: `bundle-tool serve --inline-bundles` serves the Redis
//! operator's catalog (`catalog/`), the manifests in `olm/` (CatalogSource with `spec.address`,
//! OperatorGroup, Subscription) are applied to the test control plane where OLM v0.46.0's
//! olm-operator and catalog-operator run, and OLM installs the operator and upgrades it along
//! the channel — with no bundle image pulled and no unpack Job.

use std::path::{Path, PathBuf};
use std::time::Duration;

use e2e::ControlPlane;
use e2e::olm::{Olm, apply_file};
use e2e::registry_server::{RegistryServer, ServerKind};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

const NAMESPACE: &str = "redis-operator";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Each InstallPlan's phase and the steps that are not done, for failure messages.
fn describe_plans_blocking(plans: &Api<DynamicObject>) -> String {
    let plans = plans.clone();
    let list = std::thread::spawn(move || {
        tokio::runtime::Runtime::new()
            .ok()?
            .block_on(plans.list(&ListParams::default()))
            .ok()
    })
    .join()
    .ok()
    .flatten();
    let Some(list) = list else {
        return "install plans: unavailable".into();
    };
    let mut out = String::new();
    for plan in list.items {
        out.push_str(&format!(
            "plan {} {} phase {}\n",
            plan.metadata.name.unwrap_or_default(),
            plan.data["spec"]["clusterServiceVersionNames"],
            plan.data["status"]["phase"]
        ));
        for step in plan.data["status"]["plan"].as_array().into_iter().flatten() {
            let status = step["status"].as_str().unwrap_or("");
            if status != "Created" && status != "Present" {
                out.push_str(&format!(
                    "  step {} {} {}: {status}\n",
                    step["resource"]["kind"], step["resource"]["name"], step["resource"]["group"]
                ));
            }
        }
        out.push_str(&format!(
            "  conditions {}\n",
            plan.data["status"]["conditions"]
        ));
    }
    out
}

async fn get(api: &Api<DynamicObject>, name: &str) -> Option<Value> {
    api.get_opt(name)
        .await
        .ok()
        .flatten()
        .map(|o| serde_json::to_value(o).unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_installs_and_upgrades_the_redis_operator_from_bundle_tool_serve() {
    let control_plane = ControlPlane::shared().await.unwrap();
    let client = control_plane.client().await.unwrap();
    let olm = Olm::start(&control_plane).await.unwrap();

    let server = RegistryServer::start(
        ServerKind::BundleTool,
        &repo().join("catalog"),
        &["--inline-bundles"],
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let address = format!("127.0.0.1:{}", server.port);
    let olm_dir = repo().join("olm");
    apply_file(
        &client,
        &olm_dir.join("catalogsource.yaml"),
        &[("127.0.0.1:50051", &address)],
    )
    .await
    .unwrap();
    apply_file(&client, &olm_dir.join("operatorgroup.yaml"), &[])
        .await
        .unwrap();
    // Start on the channel with every release, at the oldest, to see OLM walk the upgrade
    // edges the catalog declares.
    apply_file(
        &client,
        &olm_dir.join("subscription.yaml"),
        &[(
            "channel: stable-v0",
            "channel: candidate-v0\n  startingCSV: redis-operator.v0.1.0",
        )],
    )
    .await
    .unwrap();

    let subscriptions: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &resource(
            "operators.coreos.com",
            "v1alpha1",
            "Subscription",
            "subscriptions",
        ),
    );
    let csvs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &resource(
            "operators.coreos.com",
            "v1alpha1",
            "ClusterServiceVersion",
            "clusterserviceversions",
        ),
    );
    let install_plans: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &resource(
            "operators.coreos.com",
            "v1alpha1",
            "InstallPlan",
            "installplans",
        ),
    );

    // OLM installs 0.1.0, then upgrades to the channel head.
    let head = "redis-operator.v0.3.0";
    let waited = e2e::eventually(
        Duration::from_secs(300),
        "the subscription to reach the channel head with its CSV Succeeded",
        || async {
            olm.check_running()?;
            server.process().check_running()?;
            let Some(subscription) = get(&subscriptions, "redis-operator").await else {
                return Ok(None);
            };
            let installed = subscription["status"]["installedCSV"]
                .as_str()
                .unwrap_or("");
            if installed != head {
                return Ok(None);
            }
            let phase = get(&csvs, head)
                .await
                .and_then(|c| c["status"]["phase"].as_str().map(str::to_string));
            Ok((phase.as_deref() == Some("Succeeded")).then_some(subscription))
        },
    )
    .await;
    let subscription = match waited {
        Ok(subscription) => subscription,
        Err(error) => {
            let subscription = get(&subscriptions, "redis-operator").await;
            let plans = install_plans.list(&ListParams::default()).await.ok();
            panic!(
                "{error}\nsubscription status: {}\ninstall plans: {}\n{}",
                subscription
                    .map(|s| s["status"].to_string())
                    .unwrap_or_default(),
                plans
                    .map(|p| p
                        .items
                        .iter()
                        .map(|i| serde_json::to_string(&i.data["status"]).unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join("\n"))
                    .unwrap_or_default(),
                olm.log_tails(30)
            );
        }
    };
    assert_eq!(subscription["status"]["state"], "AtLatestKnown");

    // The path taken: an InstallPlan for 0.1.0, then one for the head (0.3.0 skips 0.1.0).
    // The head's plan reports Complete shortly after its CSV succeeds. The first plan may end
    // Failed instead: OLM can still be retrying its steps when the upgrade has already
    // replaced and deleted that CSV ("... not found"), a race inside OLM.
    let plans = e2e::eventually(
        Duration::from_secs(60),
        "the head's InstallPlan Complete",
        || async {
            let plans = install_plans.list(&ListParams::default()).await?;
            let done = plans.items.iter().any(|p| {
                p.data["spec"]["clusterServiceVersionNames"] == json!([head])
                    && p.data["status"]["phase"] == "Complete"
            });
            Ok((done && plans.items.len() >= 2).then_some(plans))
        },
    )
    .await
    .unwrap_or_else(|error| {
        panic!(
            "{error}:\n{}\n{}",
            describe_plans_blocking(&install_plans),
            olm.log_tails(40)
        )
    });
    let mut installed: Vec<String> = plans
        .items
        .iter()
        .flat_map(|p| {
            p.data["spec"]["clusterServiceVersionNames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    installed.sort();
    assert_eq!(installed, ["redis-operator.v0.1.0", head], "install plans");
    for plan in &plans.items {
        assert!(
            plan.data["status"]["bundleLookups"].is_null(),
            "an inline bundle needs no lookup/unpack: {}",
            plan.data["status"]["bundleLookups"]
        );
    }
    // No unpack Job anywhere: the bundles came inline.
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::all(client.clone());
    assert!(
        jobs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // The operator's Deployment is available; the old CSV is gone.
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), NAMESPACE);
    let deployment = deployments.get("redis-operator").await.unwrap();
    let available = deployment
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .any(|c| c.type_ == "Available" && c.status == "True");
    assert!(available, "the operator Deployment is Available");
    e2e::eventually(
        Duration::from_secs(120),
        "the replaced CSV to be deleted",
        || async {
            Ok(get(&csvs, "redis-operator.v0.1.0")
                .await
                .is_none()
                .then_some(()))
        },
    )
    .await
    .unwrap();

    // Moving to the default channel, where 0.3.0 is also the head: nothing to do.
    subscriptions
        .patch(
            "redis-operator",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"channel": "stable-v0"}})),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let subscription = get(&subscriptions, "redis-operator").await.unwrap();
    assert_eq!(subscription["status"]["installedCSV"], head);
    assert_eq!(
        get(&csvs, head).await.unwrap()["status"]["phase"],
        "Succeeded"
    );
    olm.check_running().unwrap();
}
