//! `run` and `run --upgrade` (OLM v0): the steps in the order the module's documentation
//! gives, each recorded in the [`Report`], and every wait bounded by one deadline and
//! explained by the [`diagnosis`](super::diagnosis) when it ends without progress.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::RunError;
use super::catalog::{self, RunBundle};
use super::cluster::{Cluster, Kind, describe, name};
use super::configmap::{self, Served};
use super::diagnosis::{self, Observed, Stage};
use super::install_mode::{self, InstallMode};
use super::objects::{self, Approval, Names};
use super::report::{Progress, Report, Step};
use crate::image::RegistryAccess;

/// What `run` is asked to do.
pub struct RunRequest {
    /// The bundle folder.
    pub bundle: PathBuf,
    /// Where the catalog image goes: `<registry>/<package>-run-catalog:<version>`.
    pub registry: String,
    /// Instead of pushing: the catalog in ConfigMaps, served by a pod running this image
    /// (see [`configmap`](super::configmap)).
    pub server_image: Option<String>,
    /// How to push there (and pull back from there on `--upgrade`).
    pub access: RegistryAccess,
    /// How the registry is reached (for the pull back).
    pub transport: crate::image::Transport,
    /// The namespace (else the kubeconfig's).
    pub namespace: Option<String>,
    /// The install mode asked for.
    pub install_mode: Option<InstallMode>,
    /// InstallPlan approval.
    pub approval: Approval,
    /// The bound on the whole command.
    pub timeout: Duration,
    /// The kubeconfig (else the usual inference).
    pub kubeconfig: Option<PathBuf>,
    /// Move the installed package to this bundle.
    pub upgrade: bool,
    /// Which OLM to install through.
    pub olm: OlmChoice,
    /// Where each step and each change of what a wait shows go as they happen.
    pub progress: Option<Progress>,
}

/// `--olm`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OlmChoice {
    /// OLM v0 when its CRDs are served, else OLM v1 when operator-controller's are.
    #[default]
    Auto,
    /// OLM v0.
    V0,
    /// OLM v1.
    V1,
}

/// The CRD that shows OLM v1 (operator-controller) is installed.
pub(super) const OLM_V1_CRD: &str = "clusterextensions.olm.operatorframework.io";

/// How long a stage runs before a terminal reason stops the wait.
const TERMINAL_GRACE: Duration = Duration::from_secs(5);

/// How often the cluster is read while waiting.
const POLL: Duration = Duration::from_millis(500);

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

/// The steps so far.
pub(super) struct Steps {
    pub(super) started: Instant,
    pub(super) report: Report,
    progress: Option<Progress>,
    /// The last waiting line shown, so that a wait shows only what changes.
    waiting: String,
}

impl Steps {
    pub(super) fn new(started: Instant, progress: Option<Progress>) -> Steps {
        Steps {
            started,
            report: Report::default(),
            progress,
            waiting: String::new(),
        }
    }

    /// Shows what a wait is at, when it changed.
    pub(super) fn waiting(&mut self, stage: Stage, stuck: Option<&diagnosis::Stuck>) {
        let Some(progress) = &self.progress else {
            return;
        };
        let line = waiting_line(stage, stuck);
        if line != self.waiting {
            progress(&format!(
                "{:>6.1}s {line}",
                self.started.elapsed().as_secs_f64()
            ));
            self.waiting = line;
        }
    }

    /// Whether a step so far changed the cluster.
    pub(super) fn changed(&self) -> bool {
        self.report
            .steps
            .iter()
            .any(|s| matches!(s.action.as_str(), "created" | "updated" | "deleted"))
    }

    pub(super) fn push(
        &mut self,
        action: &str,
        object: impl Into<String>,
        detail: impl Into<String>,
    ) {
        let step = Step {
            action: action.into(),
            object: object.into(),
            detail: detail.into(),
            at_seconds: (self.started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        };
        if let Some(progress) = &self.progress {
            progress(&step.line());
        }
        self.report.steps.push(step);
    }
}

/// What a wait shows: the stage, and the object and reason read, if any.
pub fn waiting_line(stage: Stage, stuck: Option<&diagnosis::Stuck>) -> String {
    match stuck {
        Some(stuck) => format!("waiting for {stage}: {}: {}", stuck.object, stuck.reason),
        None => format!("waiting for {stage}"),
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

/// Creates `object` unless an object of that name exists (then it is left as it is: its
/// name carries the catalog revision, so an existing one is the same).
pub(super) async fn ensure(
    cluster: &Cluster,
    steps: &mut Steps,
    kind: Kind,
    object: &Value,
) -> Result<(), RunError> {
    match cluster.get(kind, name(object)).await? {
        Some(existing) => steps.push("unchanged", describe(kind, &existing), ""),
        None => {
            cluster.create(kind, object).await?;
            steps.push("created", describe(kind, object), "");
        }
    }
    Ok(())
}

/// The waits of one install.
pub(super) struct Waiter<'a> {
    cluster: &'a Cluster,
    names: &'a Names,
    deadline: Instant,
    started: Instant,
    csv: String,
    revision: String,
    /// OLM v1: the catalog image the ClusterCatalog must serve.
    pub(super) catalog_image: String,
}

impl<'a> Waiter<'a> {
    /// The waits for `csv` served from catalog `revision`, bounded by the command's timeout.
    pub(super) fn new(
        cluster: &'a Cluster,
        names: &'a Names,
        steps: &Steps,
        timeout: Duration,
        csv: &str,
        revision: &str,
    ) -> Waiter<'a> {
        Waiter {
            cluster,
            names,
            deadline: steps.started + timeout,
            started: steps.started,
            csv: csv.to_string(),
            revision: revision.to_string(),
            catalog_image: String::new(),
        }
    }

    /// Waits for `stage`; returns the object that shows it reached. Stops early on a
    /// terminal reason, and at the deadline with the last reason read.
    pub(super) async fn wait(
        &mut self,
        stage: Stage,
        steps: &mut Steps,
        approval: Approval,
    ) -> Result<Value, RunError> {
        let mut stage = stage;
        let stage_started = Instant::now();
        loop {
            if let Some(done) = self.check(&mut stage, steps, approval).await? {
                return Ok(done);
            }
            let observed = self.observe(stage).await?;
            let stuck = diagnosis::diagnose(stage, &observed);
            steps.waiting(stage, stuck.as_ref());
            let now = Instant::now();
            // A terminal reason is taken as final only once the stage has run a little:
            // controllers' caches may still show the moment before the last change.
            let terminal =
                stuck.as_ref().is_some_and(|s| s.terminal) && now - stage_started >= TERMINAL_GRACE;
            if terminal || now >= self.deadline {
                return Err(RunError::Stuck {
                    stage,
                    elapsed: now - self.started,
                    stuck,
                    timed_out: !terminal,
                });
            }
            tokio::time::sleep(POLL.min(self.deadline - now)).await;
        }
    }

    /// Whether `stage` is reached; for the plan, approves it (manual approval) and moves
    /// `stage` from Resolved to Installed once it exists.
    async fn check(
        &mut self,
        stage: &mut Stage,
        steps: &mut Steps,
        approval: Approval,
    ) -> Result<Option<Value>, RunError> {
        let cluster = self.cluster;
        match stage {
            Stage::ServerReady => {
                let pod = cluster
                    .get(Kind::Pod, &self.names.server(&self.revision))
                    .await?;
                Ok(pod.filter(|pod| {
                    pod["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                }))
            }
            Stage::CatalogReady => {
                let source = cluster
                    .get(Kind::CatalogSource, &self.names.catalog_source())
                    .await?;
                let address = objects::server_address(self.names, &self.revision);
                Ok(source.filter(|s| {
                    let state = &s["status"]["connectionState"];
                    state["lastObservedState"] == "READY" && state["address"] == address.as_str()
                }))
            }
            Stage::Resolved | Stage::Installed => {
                let Some(plan) = self.plan().await? else {
                    return Ok(None);
                };
                *stage = Stage::Installed;
                let phase = plan["status"]["phase"].as_str().unwrap_or_default();
                if phase == "RequiresApproval"
                    && plan["spec"]["approved"] != true
                    && approval == Approval::Manual
                {
                    cluster
                        .patch(
                            Kind::InstallPlan,
                            name(&plan),
                            &json!({"spec": {"approved": true}}),
                        )
                        .await?;
                    steps.push(
                        "approved",
                        describe(Kind::InstallPlan, &plan),
                        format!("installs {}", self.csv),
                    );
                }
                Ok((phase == "Complete").then_some(plan))
            }
            Stage::Succeeded => Ok(cluster
                .get(Kind::ClusterServiceVersion, &self.csv)
                .await?
                .filter(|csv| csv["status"]["phase"] == "Succeeded")),
            Stage::CatalogServing => Ok(cluster
                .get(Kind::ClusterCatalog, &self.names.catalog_source())
                .await?
                .filter(|c| super::olm_v1::serving(c, &self.catalog_image))),
            Stage::ExtensionInstalled => Ok(cluster
                .get(Kind::ClusterExtension, &self.names.subscription())
                .await?
                .filter(|e| super::olm_v1::installed_at(e, &self.csv))),
        }
    }

    /// The newest InstallPlan of the namespace that installs the CSV.
    async fn plan(&self) -> Result<Option<Value>, RunError> {
        let mut plans: Vec<Value> = self
            .cluster
            .list(Kind::InstallPlan, "")
            .await?
            .into_iter()
            .filter(|plan| {
                plan["spec"]["clusterServiceVersionNames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|n| n == self.csv.as_str())
            })
            .collect();
        plans.sort_by(|a, b| {
            a["metadata"]["creationTimestamp"]
                .as_str()
                .cmp(&b["metadata"]["creationTimestamp"].as_str())
        });
        Ok(plans.pop())
    }

    /// What the diagnosis of `stage` needs.
    async fn observe(&self, stage: Stage) -> Result<Observed, RunError> {
        let cluster = self.cluster;
        let mut observed = Observed::default();
        match stage {
            Stage::ServerReady => {
                observed.server_pod = cluster
                    .get(Kind::Pod, &self.names.server(&self.revision))
                    .await?;
            }
            Stage::CatalogReady => {
                observed.catalog_source = cluster
                    .get(Kind::CatalogSource, &self.names.catalog_source())
                    .await?;
            }
            Stage::Resolved => {
                observed.subscription = cluster
                    .get(Kind::Subscription, &self.names.subscription())
                    .await?;
            }
            Stage::Installed => {
                observed.install_plan = self.plan().await?;
            }
            Stage::Succeeded => {
                let csv = cluster.get(Kind::ClusterServiceVersion, &self.csv).await?;
                if let Some(csv) = &csv {
                    for selector in deployment_selectors(csv) {
                        observed
                            .operator_pods
                            .extend(cluster.list(Kind::Pod, &selector).await?);
                    }
                }
                observed.csv = csv;
            }
            Stage::CatalogServing => {
                observed.cluster_catalog = cluster
                    .get(Kind::ClusterCatalog, &self.names.catalog_source())
                    .await?;
            }
            Stage::ExtensionInstalled => {
                observed.cluster_extension = cluster
                    .get(Kind::ClusterExtension, &self.names.subscription())
                    .await?;
            }
        }
        let pods: Vec<Value> = observed
            .server_pod
            .iter()
            .chain(&observed.operator_pods)
            .cloned()
            .collect();
        for pod in pods {
            for status in pod["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let waiting = status["state"]["waiting"]["reason"]
                    .as_str()
                    .unwrap_or_default();
                if matches!(waiting, "CrashLoopBackOff" | "RunContainerError") {
                    let container = status["name"].as_str().unwrap_or_default();
                    let log = cluster.log_tail(name(&pod), container, true).await;
                    observed
                        .logs
                        .push((format!("{}/{container}", name(&pod)), log));
                }
            }
        }
        Ok(observed)
    }
}

/// The label selectors of a CSV's Deployments' pods (`matchLabels` as `k=v,…`).
pub fn deployment_selectors(csv: &Value) -> Vec<String> {
    csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["spec"]["selector"]["matchLabels"].as_object())
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .filter(|selector| !selector.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_pods_are_found_by_their_deployments_selectors() {
        let csv = json!({"spec": {"install": {"spec": {"deployments": [
            {"name": "op", "spec": {"selector": {"matchLabels": {"app": "op", "tier": "control"}}}},
            {"name": "none", "spec": {}},
        ]}}}});
        assert_eq!(deployment_selectors(&csv), vec!["app=op,tier=control"]);
    }

    #[test]
    fn a_wait_shows_its_stage_and_what_the_cluster_says() {
        assert_eq!(
            waiting_line(Stage::Succeeded, None),
            "waiting for the ClusterServiceVersion to succeed"
        );
        let stuck = diagnosis::Stuck {
            object: "ClusterServiceVersion ns/op.v1".into(),
            reason: "phase Installing".into(),
            next: String::new(),
            terminal: false,
        };
        assert_eq!(
            waiting_line(Stage::Succeeded, Some(&stuck)),
            "waiting for the ClusterServiceVersion to succeed: ClusterServiceVersion ns/op.v1: phase Installing"
        );
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut steps = Steps::new(
            Instant::now(),
            Some(std::sync::Arc::new(move |line: &str| {
                sink.lock().unwrap().push(line.to_string())
            })),
        );
        steps.push("created", "Pod ns/p", "");
        steps.waiting(Stage::Succeeded, Some(&stuck));
        steps.waiting(Stage::Succeeded, Some(&stuck));
        let lines = seen.lock().unwrap().clone();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].ends_with("created Pod ns/p"));
        assert!(lines[1].ends_with("phase Installing"));
    }

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
