//! Waiting for one stage of an install, through either OLM: whether it is reached, read
//! from the cluster every [`POLL`], and when it is not, the [`diagnosis`] of what was read;
//! every wait bounded by the command's one deadline.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::RunError;
use super::cluster::{Cluster, Kind, describe, name};
use super::diagnosis::{self, Observed, Stage};
use super::objects::{self, Approval, Names};
use super::steps::Steps;

/// How long a stage runs before a terminal reason stops the wait.
const TERMINAL_GRACE: Duration = Duration::from_secs(5);

/// How often the cluster is read while waiting.
const POLL: Duration = Duration::from_millis(500);

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
                .filter(|c| serving(c, &self.catalog_image))),
            Stage::ExtensionInstalled => Ok(cluster
                .get(Kind::ClusterExtension, &self.names.subscription())
                .await?
                .filter(|e| installed_at(e, &self.csv))),
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

/// Whether a ClusterExtension reports `Installed=True` at the bundle `csv`.
pub fn installed_at(extension: &Value, csv: &str) -> bool {
    extension["status"]["install"]["bundle"]["name"] == csv
        && extension["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Installed" && c["status"] == "True")
}

/// Whether a ClusterCatalog serves `image`.
pub fn serving(catalog: &Value, image: &str) -> bool {
    catalog["status"]["resolvedSource"]["image"]["ref"] == image
        && catalog["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Serving" && c["status"] == "True")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
    fn installed_and_serving_need_the_right_bundle_and_image() {
        let extension = json!({"status": {"install": {"bundle": {"name": "op.v1"}}, "conditions": [{"type": "Installed", "status": "True"}]}});
        assert!(installed_at(&extension, "op.v1"));
        assert!(!installed_at(&extension, "op.v2"));
        let catalog = json!({"status": {"resolvedSource": {"image": {"ref": "r@sha256:1"}}, "conditions": [{"type": "Serving", "status": "True"}]}});
        assert!(serving(&catalog, "r@sha256:1"));
        assert!(!serving(&catalog, "r@sha256:2"));
    }
}
