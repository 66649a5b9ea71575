//! `run` and `run --upgrade` (OLM v0): the steps in the order the module's documentation
//! gives, each recorded in the [`Report`], and every wait bounded by one deadline and
//! explained by the [`diagnosis`](super::diagnosis) when it ends without progress.

use std::time::Instant;

use serde_json::{Value, json};

use super::RunError;
use super::catalog::{self, RunBundle};
use super::cluster::{Cluster, Kind, describe, name};
use super::configmap::{self, Served};
use super::diagnosis::Stage;
use super::install_mode;
use super::objects::{self, Names};
use super::report::Report;
use super::request::{OLM_V1_CRD, OlmChoice, RunRequest};
use super::steps::Steps;
use super::wait::{Waiter, ensure};

/// Runs `run`; the report says what was done, and the error, if any, why it stopped.
pub fn run(request: &RunRequest) -> (Report, Option<RunError>) {
    let started = Instant::now();
    let mut steps = Steps::new(started, request.progress.clone());
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RunError::Io)
        .and_then(|runtime| runtime.block_on(install(request, &mut steps)));
    let mut report = steps.report;
    report.seconds = started.elapsed().as_secs_f64();
    report.changed = report.steps.iter().any(|s| {
        matches!(
            s.action.as_str(),
            "created" | "updated" | "approved" | "deleted"
        )
    });
    match result {
        Ok(csv) => {
            report.csv = Some(csv);
            (report, None)
        }
        Err(error) => {
            report.error = Some(error.to_string());
            (report, Some(error))
        }
    }
}

/// The installed CSV of a Subscription (`installedCSV`, else `currentCSV`).
fn installed_csv(subscription: &Value) -> Option<String> {
    ["installedCSV", "currentCSV"]
        .iter()
        .filter_map(|key| subscription["status"][key].as_str())
        .find(|name| !name.is_empty())
        .map(str::to_string)
}

async fn install(request: &RunRequest, steps: &mut Steps) -> Result<String, RunError> {
    let bundle = RunBundle::read(&request.bundle)?;
    let cluster =
        Cluster::connect(request.kubeconfig.as_deref(), request.namespace.as_deref()).await?;
    let missing_v0 = cluster.missing_olm_crd().await?;
    let has_v1 = cluster.has_crd(OLM_V1_CRD).await?;
    match (request.olm, missing_v0) {
        (OlmChoice::V1, _) if has_v1 => {
            return super::olm_v1::install(request, steps, &cluster, bundle).await;
        }
        (OlmChoice::V1, _) => {
            return Err(RunError::NoOlm {
                missing: OLM_V1_CRD.to_string(),
            });
        }
        (OlmChoice::Auto, Some(_)) if has_v1 => {
            return super::olm_v1::install(request, steps, &cluster, bundle).await;
        }
        (_, Some(missing)) if has_v1 => return Err(RunError::OnlyOlmV1 { missing }),
        (_, Some(missing)) => return Err(RunError::NoOlm { missing }),
        (_, None) => {}
    }
    if !cluster.namespace_exists().await? {
        return Err(RunError::NoNamespace(cluster.namespace.clone()));
    }
    let names = Names {
        package: bundle.package().to_string(),
        namespace: cluster.namespace.clone(),
    };
    let csv_name = bundle.csv_name().to_string();
    let groups = cluster.list(Kind::OperatorGroup, "").await?;
    if groups.len() > 1 {
        return Err(RunError::OperatorGroups {
            namespace: names.namespace.clone(),
            count: groups.len(),
            names: groups
                .iter()
                .map(|g| name(g).to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let existing_targets: Option<(String, Vec<String>)> = groups.first().map(|group| {
        let targets = group["spec"]["targetNamespaces"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect();
        (name(group).to_string(), targets)
    });
    let mode = install_mode::choose(
        &csv_name,
        &bundle.csv,
        &names.namespace,
        request.install_mode.as_ref(),
        existing_targets
            .as_ref()
            .map(|(n, t)| (n.as_str(), t.as_slice())),
    )?;

    let subscription = cluster
        .get(Kind::Subscription, &names.subscription())
        .await?;
    let installed = subscription.as_ref().and_then(installed_csv);
    let config = if request.upgrade {
        let Some(subscription) = subscription.as_ref().filter(|s| objects::made_by_run(s)) else {
            return Err(RunError::NothingToUpgrade {
                package: names.package.clone(),
                namespace: names.namespace.clone(),
            });
        };
        let installed_package = subscription["spec"]["name"].as_str().unwrap_or_default();
        if installed_package != names.package {
            return Err(RunError::OtherPackage {
                bundle: csv_name,
                new: names.package.clone(),
                installed: installed_package.to_string(),
            });
        }
        let Some(installed) = installed.clone() else {
            return Err(RunError::NothingToUpgrade {
                package: names.package.clone(),
                namespace: names.namespace.clone(),
            });
        };
        if installed == csv_name {
            return already_installed(&cluster, steps, &csv_name).await;
        }
        let source = cluster
            .get(Kind::CatalogSource, &names.catalog_source())
            .await?
            .unwrap_or(Value::Null);
        let Some((previous, from)) =
            configmap::installed_catalog(&cluster, &source, &request.transport).await?
        else {
            return Err(RunError::NothingToUpgrade {
                package: names.package.clone(),
                namespace: names.namespace.clone(),
            });
        };
        let edge = catalog::with_upgrade(previous, &from, &bundle, &installed)?;
        if let Some(line) = edge.added_edge {
            steps.push(
                "note",
                format!("upgrade edge {installed} -> {csv_name}"),
                line,
            );
        }
        edge.config
    } else {
        if let Some(installed) = installed.as_ref().filter(|i| **i != csv_name) {
            return Err(RunError::OtherBundleInstalled {
                package: names.package.clone(),
                installed: installed.clone(),
                wanted: csv_name,
            });
        }
        catalog::first_catalog(&bundle)?
    };

    let served = match &request.server_image {
        Some(image) => configmap::served_from_config_maps(&config, &names, image, &bundle)?,
        None => {
            let (pushed, warning) = catalog::build_and_push(
                &config,
                &names.package,
                &names.catalog_repository(&request.registry),
                &bundle.version(),
                &request.access,
            )
            .await?;
            if let Some(warning) = warning {
                steps.push("note", "catalog image", warning);
            }
            steps.push(
                "pushed",
                pushed.image.clone(),
                "the catalog image, the bundle inline",
            );
            Served::pushed(&pushed)
        }
    };
    let revision = served.revision.clone();
    let mut waiter = Waiter::new(
        &cluster,
        &names,
        steps,
        request.timeout,
        &csv_name,
        &revision,
    );

    // The server first, Ready before OLM hears of it.
    for map in &served.config_maps {
        ensure(&cluster, steps, Kind::ConfigMap, map).await?;
    }
    ensure(&cluster, steps, Kind::Pod, &served.server_pod(&names)).await?;
    ensure(
        &cluster,
        steps,
        Kind::Service,
        &objects::server_service(&names, &revision),
    )
    .await?;
    waiter
        .wait(Stage::ServerReady, steps, request.approval)
        .await?;
    steps.push(
        "ready",
        format!("Pod {}/{}", names.namespace, names.server(&revision)),
        "",
    );

    let wanted_source = served.catalog_source(&names);
    match cluster
        .get(Kind::CatalogSource, &names.catalog_source())
        .await?
    {
        None => {
            cluster.create(Kind::CatalogSource, &wanted_source).await?;
            steps.push(
                "created",
                describe(Kind::CatalogSource, &wanted_source),
                format!(
                    "address {}",
                    wanted_source["spec"]["address"]
                        .as_str()
                        .unwrap_or_default()
                ),
            );
        }
        Some(source)
            if source["spec"]["address"] == wanted_source["spec"]["address"]
                && source["metadata"]["annotations"][objects::CATALOG_IMAGE_ANNOTATION]
                    == wanted_source["metadata"]["annotations"]
                        [objects::CATALOG_IMAGE_ANNOTATION] =>
        {
            steps.push("unchanged", describe(Kind::CatalogSource, &source), "");
        }
        Some(source) => {
            cluster
                .patch(
                    Kind::CatalogSource,
                    &names.catalog_source(),
                    &json!({
                        "metadata": {"annotations": objects::source_annotations_patch(&wanted_source)},
                        "spec": {"address": wanted_source["spec"]["address"], "image": null},
                    }),
                )
                .await?;
            steps.push(
                "updated",
                describe(Kind::CatalogSource, &source),
                format!(
                    "address {}",
                    wanted_source["spec"]["address"]
                        .as_str()
                        .unwrap_or_default()
                ),
            );
        }
    }
    waiter
        .wait(Stage::CatalogReady, steps, request.approval)
        .await?;
    steps.push(
        "ready",
        format!(
            "CatalogSource {}/{}",
            names.namespace,
            names.catalog_source()
        ),
        "READY",
    );
    // Older servers of this package (an earlier catalog) are no longer pointed at; nor are
    // the ConfigMaps of an earlier catalog (`<server>-<part>`).
    for kind in [Kind::Pod, Kind::Service, Kind::ConfigMap] {
        for old in cluster
            .list(kind, &objects::selector(&names.package))
            .await?
        {
            let old_name = name(&old);
            let current = names.server(&revision);
            if old_name.starts_with(&names.catalog_source())
                && old_name != current
                && !old_name.starts_with(&format!("{current}-"))
            {
                cluster.delete(kind, old_name).await?;
                steps.push(
                    "deleted",
                    describe(kind, &old),
                    if kind == Kind::ConfigMap {
                        "the previous catalog"
                    } else {
                        "the previous catalog's server"
                    },
                );
            }
        }
    }

    match &existing_targets {
        None => {
            let group = objects::operator_group(&names, &mode.target_namespaces(&names.namespace));
            cluster.create(Kind::OperatorGroup, &group).await?;
            steps.push(
                "created",
                describe(Kind::OperatorGroup, &group),
                mode.to_string(),
            );
        }
        Some((group, _)) => {
            steps.push(
                "unchanged",
                format!("OperatorGroup {}/{group}", names.namespace),
                format!("the namespace's own, {mode}"),
            );
        }
    }

    match &subscription {
        None => {
            let wanted = objects::subscription(&names, &csv_name, request.approval);
            cluster.create(Kind::Subscription, &wanted).await?;
            steps.push(
                "created",
                describe(Kind::Subscription, &wanted),
                format!("channel {}, starting at {csv_name}", objects::CHANNEL),
            );
        }
        Some(existing) => {
            steps.push("unchanged", describe(Kind::Subscription, existing), "");
        }
    }

    if cluster_csv_succeeded(&cluster, &csv_name).await? && !steps_changed(steps) {
        return already_installed(&cluster, steps, &csv_name).await;
    }
    let plan = waiter
        .wait(Stage::Resolved, steps, request.approval)
        .await?;
    steps.push("complete", describe(Kind::InstallPlan, &plan), "");
    waiter
        .wait(Stage::Succeeded, steps, request.approval)
        .await?;
    steps.push(
        "succeeded",
        format!("ClusterServiceVersion {}/{csv_name}", names.namespace),
        "phase Succeeded",
    );
    Ok(csv_name)
}

fn steps_changed(steps: &Steps) -> bool {
    steps.changed()
}

async fn cluster_csv_succeeded(cluster: &Cluster, csv: &str) -> Result<bool, RunError> {
    Ok(cluster
        .get(Kind::ClusterServiceVersion, csv)
        .await?
        .is_some_and(|csv| csv["status"]["phase"] == "Succeeded"))
}

/// A second run of the same bundle: said, not redone.
async fn already_installed(
    cluster: &Cluster,
    steps: &mut Steps,
    csv: &str,
) -> Result<String, RunError> {
    if !cluster_csv_succeeded(cluster, csv).await? {
        return Ok(csv.to_string());
    }
    steps.push(
        "unchanged",
        format!("ClusterServiceVersion {}/{csv}", cluster.namespace),
        "Succeeded; nothing changed",
    );
    Ok(csv.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_installed_csv_is_installed_then_current() {
        assert_eq!(
            installed_csv(&json!({"status": {"currentCSV": "b", "installedCSV": "a"}})),
            Some("a".into())
        );
        assert_eq!(
            installed_csv(&json!({"status": {"currentCSV": "b", "installedCSV": ""}})),
            Some("b".into())
        );
        assert_eq!(installed_csv(&json!({})), None);
    }
}
