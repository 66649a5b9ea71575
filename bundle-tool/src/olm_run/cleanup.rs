//! `run cleanup <package>`: removes what `run` made for the package — its Subscription, the
//! CSV that Subscription installed, the InstallPlans the Subscription owns, the
//! CatalogSource, the catalog servers (pods and Services) and the ConfigMaps of a
//! `--server-image` catalog, the OperatorGroup when `run` made
//! it and no other Subscription is left in the namespace, and with `--delete-crds` the CRDs
//! the CSV owns — and nothing else. Everything is found by `run`'s labels (or, for what OLM
//! made, through the labelled Subscription), listed as it is deleted, and waited for until
//! gone.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::RunError;
use super::cluster::{Cluster, Kind, describe, name};
use super::objects::{self, Names};
use super::report::Report;
use super::steps::Steps;

/// What `run cleanup` is asked to do.
pub struct CleanupRequest {
    /// The package.
    pub package: String,
    /// The namespace (else the kubeconfig's).
    pub namespace: Option<String>,
    /// The kubeconfig (else the usual inference).
    pub kubeconfig: Option<PathBuf>,
    /// Delete the CRDs the CSV owns too.
    pub delete_crds: bool,
    /// The bound on the whole command.
    pub timeout: Duration,
    /// Where each step goes as it happens.
    pub progress: Option<super::report::Progress>,
}

/// Runs `run cleanup`.
pub fn cleanup(request: &CleanupRequest) -> (Report, Option<RunError>) {
    let started = Instant::now();
    let mut steps = Steps::new(started, request.progress.clone());
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RunError::Io)
        .and_then(|runtime| runtime.block_on(remove(request, &mut steps)));
    let mut report = steps.report;
    report.seconds = started.elapsed().as_secs_f64();
    report.changed = report.steps.iter().any(|s| s.action == "deleted");
    match result {
        Ok(csv) => {
            report.csv = csv;
            (report, None)
        }
        Err(error) => {
            report.error = Some(error.to_string());
            (report, Some(error))
        }
    }
}

/// The objects to delete, in order, by kind and name.
fn owned_by(object: &Value, uid: &str) -> bool {
    object["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|owner| owner["uid"] == uid)
}

/// The CRDs a CSV owns.
pub fn owned_crds(csv: &Value) -> Vec<String> {
    csv["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|crd| crd["name"].as_str().map(str::to_string))
        .collect()
}

async fn remove(request: &CleanupRequest, steps: &mut Steps) -> Result<Option<String>, RunError> {
    let cluster =
        Cluster::connect(request.kubeconfig.as_deref(), request.namespace.as_deref()).await?;
    let missing_v0 = cluster.missing_olm_crd().await?;
    let has_v1 = cluster.has_crd(super::request::OLM_V1_CRD).await?;
    if let (Some(missing), false) = (&missing_v0, has_v1) {
        return Err(RunError::NoOlm {
            missing: missing.clone(),
        });
    }
    let names = Names {
        package: request.package.clone(),
        namespace: cluster.namespace.clone(),
    };
    let selector = objects::selector(&names.package);
    let mut doomed: Vec<(Kind, Value)> = Vec::new();
    let mut csv_name = None;
    if has_v1 {
        // The ClusterExtension first, while its installer may still remove what it made.
        let extensions = cluster.list(Kind::ClusterExtension, &selector).await?;
        for extension in &extensions {
            if let Some(bundle) = extension["status"]["install"]["bundle"]["name"].as_str() {
                csv_name = Some(bundle.to_string());
            }
            cluster
                .delete(Kind::ClusterExtension, name(extension))
                .await?;
            steps.push("deleted", describe(Kind::ClusterExtension, extension), "");
        }
        wait_gone(
            &cluster,
            steps,
            request.timeout,
            Kind::ClusterExtension,
            &extensions,
        )
        .await?;
        for kind in [
            Kind::RoleBinding,
            Kind::Role,
            Kind::ClusterRoleBinding,
            Kind::ClusterRole,
            Kind::ServiceAccount,
            Kind::ClusterCatalog,
        ] {
            for object in cluster.list(kind, &selector).await? {
                doomed.push((kind, object));
            }
        }
    }
    let subscriptions = if missing_v0.is_none() {
        cluster.list(Kind::Subscription, &selector).await?
    } else {
        Vec::new()
    };
    for subscription in &subscriptions {
        doomed.push((Kind::Subscription, subscription.clone()));
        let csv = ["installedCSV", "currentCSV"]
            .iter()
            .filter_map(|key| subscription["status"][key].as_str())
            .find(|n| !n.is_empty());
        if let Some(csv) = csv
            && let Some(object) = cluster.get(Kind::ClusterServiceVersion, csv).await?
        {
            csv_name = Some(csv.to_string());
            doomed.push((Kind::ClusterServiceVersion, object));
        }
        let uid = subscription["metadata"]["uid"].as_str().unwrap_or_default();
        for plan in cluster.list(Kind::InstallPlan, "").await? {
            if owned_by(&plan, uid) {
                doomed.push((Kind::InstallPlan, plan));
            }
        }
    }
    let crds: Vec<String> = doomed
        .iter()
        .filter(|(kind, _)| *kind == Kind::ClusterServiceVersion)
        .flat_map(|(_, csv)| owned_crds(csv))
        .collect();
    if missing_v0.is_some() {
        return finish(&cluster, steps, request, &names, doomed, &crds, csv_name).await;
    }
    for kind in [
        Kind::CatalogSource,
        Kind::Service,
        Kind::Pod,
        Kind::ConfigMap,
    ] {
        for object in cluster.list(kind, &selector).await? {
            doomed.push((kind, object));
        }
    }
    let others: Vec<Value> = cluster
        .list(Kind::Subscription, "")
        .await?
        .into_iter()
        .filter(|s| !subscriptions.iter().any(|ours| name(ours) == name(s)))
        .collect();
    for group in cluster.list(Kind::OperatorGroup, &selector).await? {
        if others.is_empty() {
            doomed.push((Kind::OperatorGroup, group));
        } else {
            steps.push(
                "kept",
                describe(Kind::OperatorGroup, &group),
                format!(
                    "made by run, but Subscription {} still uses the namespace",
                    others.iter().map(name).collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }
    finish(&cluster, steps, request, &names, doomed, &crds, csv_name).await
}

/// Deletes `doomed` (and the CRDs with `--delete-crds`) and waits until they are gone.
async fn finish(
    cluster: &Cluster,
    steps: &mut Steps,
    request: &CleanupRequest,
    names: &Names,
    doomed: Vec<(Kind, Value)>,
    crds: &[String],
    csv_name: Option<String>,
) -> Result<Option<String>, RunError> {
    if doomed.is_empty() && !steps.changed() {
        steps.push(
            "note",
            format!("package {}", names.package),
            format!("nothing made by run in namespace {}", names.namespace),
        );
        return Ok(None);
    }
    // Which kept CRDs convert through this namespace's webhook, read before the CSV goes: OLM
    // may have reset them by the time everything is gone.
    let mut converting = Vec::new();
    if !request.delete_crds {
        for crd in crds {
            let object = cluster.get(Kind::CustomResourceDefinition, crd).await?;
            if let Some(service) = object
                .as_ref()
                .and_then(|o| webhook_service_in(o, &cluster.namespace))
            {
                converting.push((crd.clone(), service));
            }
        }
    }
    for (kind, object) in &doomed {
        cluster.delete(*kind, name(object)).await?;
        steps.push("deleted", describe(*kind, object), "");
    }
    if request.delete_crds {
        for crd in crds {
            if cluster.delete(Kind::CustomResourceDefinition, crd).await? {
                steps.push("deleted", format!("CustomResourceDefinition {crd}"), "");
            }
        }
    }
    for (kind, object) in &doomed {
        wait_gone(
            cluster,
            steps,
            request.timeout,
            *kind,
            std::slice::from_ref(object),
        )
        .await?;
    }
    steps.push("gone", format!("{} objects", doomed.len()), "");
    for (crd, service) in &converting {
        wait_conversion_released(cluster, steps, request.timeout, crd, service).await?;
    }
    Ok(csv_name)
}

/// How long cleanup waits for OLM to take a deleted CSV's conversion webhook off a CRD. OLM
/// has done that on the CSV's deletion since operator-lifecycle-manager PR #2832 (2022), when
/// no CSV replaces it; the bound keeps an older OLM from holding every cleanup for the whole
/// command timeout.
const CONVERSION_RELEASE_WAIT: Duration = Duration::from_secs(30);

/// Waits until the kept CRD `crd`, which converted through the webhook Service `service` of
/// this namespace before cleanup, no longer does, and says so.
///
/// The deleted CSV's conversion webhook stays in the CRD until OLM resets the strategy to
/// `None`. Until then every read of a custom resource in a version other than the stored one
/// fails (the webhook's Service has no endpoints), and so does OLM v0's check of the existing
/// custom resources against the CRD of the next install of the package, which lists them in
/// every served version: a `run` right after `run cleanup` would see its InstallPlan fail. If
/// OLM does not reset it in time, the step says what is left and how to clear it; that is not
/// an error, since everything cleanup deletes is gone.
async fn wait_conversion_released(
    cluster: &Cluster,
    steps: &mut Steps,
    timeout: Duration,
    crd: &str,
    service: &str,
) -> Result<(), RunError> {
    let deadline = (Instant::now() + CONVERSION_RELEASE_WAIT).min(steps.started + timeout);
    loop {
        let object = cluster.get(Kind::CustomResourceDefinition, crd).await?;
        let still = object
            .as_ref()
            .and_then(|o| webhook_service_in(o, &cluster.namespace))
            .is_some_and(|named| named == service);
        if !still {
            steps.push(
                "released",
                format!("CustomResourceDefinition {crd}"),
                format!(
                    "no longer converts through the deleted operator's webhook Service {}/{service}",
                    cluster.namespace
                ),
            );
            return Ok(());
        }
        if Instant::now() >= deadline {
            steps.push(
                "note",
                format!("CustomResourceDefinition {crd}"),
                format!(
                    "still converts through the webhook Service {}/{service}, which is gone: \
                     reads of its custom resources in other versions fail until its \
                     spec.conversion is set to strategy None (or the operator is installed again)",
                    cluster.namespace
                ),
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The name of the Service in `namespace` that `crd` converts through, if its conversion
/// strategy is `Webhook`.
fn webhook_service_in(crd: &Value, namespace: &str) -> Option<String> {
    let conversion = &crd["spec"]["conversion"];
    let service = &conversion["webhook"]["clientConfig"]["service"];
    (conversion["strategy"] == "Webhook" && service["namespace"] == namespace)
        .then(|| service["name"].as_str().map(str::to_string))
        .flatten()
}

/// Waits until every object of `objects` is gone, within the command's timeout.
async fn wait_gone(
    cluster: &Cluster,
    steps: &Steps,
    timeout: Duration,
    kind: Kind,
    objects: &[Value],
) -> Result<(), RunError> {
    let deadline = steps.started + timeout;
    for object in objects {
        while cluster.get(kind, name(object)).await?.is_some() {
            if Instant::now() >= deadline {
                return Err(RunError::NotGone {
                    object: describe(kind, object),
                    seconds: steps.started.elapsed().as_secs(),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_csvs_owned_crds_are_named() {
        let csv = json!({"spec": {"customresourcedefinitions": {"owned": [{"name": "a.example.com"}, {"name": "b.example.com"}], "required": [{"name": "c.example.com"}]}}});
        assert_eq!(owned_crds(&csv), vec!["a.example.com", "b.example.com"]);
    }

    #[test]
    fn only_a_webhook_into_this_namespace_holds_cleanup() {
        let crd = |strategy: &str, namespace: &str| json!({"spec": {"conversion": {"strategy": strategy, "webhook": {"clientConfig": {"service": {"namespace": namespace, "name": "op-service"}}}}}});
        assert_eq!(
            webhook_service_in(&crd("Webhook", "ns"), "ns").as_deref(),
            Some("op-service")
        );
        assert_eq!(webhook_service_in(&crd("Webhook", "other"), "ns"), None);
        assert_eq!(webhook_service_in(&crd("None", "ns"), "ns"), None);
        assert_eq!(webhook_service_in(&json!({"spec": {}}), "ns"), None);
    }

    #[test]
    fn plans_are_matched_by_owner_uid() {
        let plan = json!({"metadata": {"ownerReferences": [{"uid": "u1"}]}});
        assert!(owned_by(&plan, "u1"));
        assert!(!owned_by(&plan, "u2"));
    }
}
