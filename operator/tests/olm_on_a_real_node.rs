//! The whole user path with OLM v0 running as pods on the real node, as a release job and a
//! cluster admin walk it, once with our catalog image and once, as the oracle, with an image
//! built around opm (`walk`):
//!
//! 1. `bundle-tool release` publishes 0.1.0, 0.2.0 and 0.3.0 from a clean copy of the repo
//!    (its catalog emptied) to the cluster registry;
//! 2. `olm/catalogsource.yaml` (spec.image) gets a registry pod that OLM's own probes make
//!    Ready, and `kubectl get packagemanifests` (packageserver reading the server) lists the
//!    package with its channels and the head CSV's description;
//! 3. and 6. `olm/subscription-manual.yaml` (candidate-v0, from 0.1.0) waits for approval and
//!    creates nothing of its plan (CSV, Deployment, CRD, ServiceAccount, RBAC, Services) until
//!    it is approved; then 0.1.0 is installed, its operator pod runs
//!    and reconciles the sample RedisCluster to Ready with real Redis pods (replicating, asked
//!    over the pod network); a v1alpha1 read goes through the conversion webhook on the
//!    certificate OLM manages;
//! 4. and 5. with `olm/subscription.yaml` (Automatic, stable-v0), releasing 0.2.0 to
//!    candidate-v0 only reaches the cluster by registry polling but does not upgrade; switching
//!    the Subscription to candidate-v0 upgrades along that channel; releasing 0.3.0 is picked
//!    up by polling and upgrades again, and the new operator reconciles a change to the sample;
//! 7. the bundles came by `bundlePath` (the InstallPlan looked the bundle image up, a watch
//!    sees the unpack Job pull it); then `olm/catalogsource-served.yaml` serves them inline:
//!    the install's InstallPlan carries the bundle's objects in its steps and no Job runs;
//! 8. the opm-based image walks 1-6 and 9 the same and ends with the same package manifest;
//!    and `olm/catalogsource-extract-content.yaml` (OLM copies `/configs` out of our image and
//!    serves it with its opm) gives the same package manifest;
//! 9. deleting the Subscription and the CSV removes the operator's objects (found before,
//!    gone after) and the InstallPlans (owned by the Subscription).
//!
//! The files in `olm/` are applied as written. The images they and the bundles name
//! (`quay.io/example/...`, `docker.io/library/redis`) are pushed to the cluster registry,
//! which the node's containerd uses as the mirror of those registries.

mod install_plan;
mod olm_release;
mod real;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use e2e::ControlPlane;
use e2e::node::RealNode;
use e2e::olm_on_node::{OLM_NAMESPACE, OlmOnNode, olm_resource};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use serde_json::{Value, json};

const NAMESPACE: &str = "redis-operator";
const PACKAGE: &str = "redis-operator";

use olm_release::{
    CATALOG_IMAGE, Checkout, SAMPLE_NAMESPACE, push_workload_images, repo, wait_for,
};

/// The cluster's view of OLM's objects.
struct Cluster {
    plane: &'static ControlPlane,
    client: kube::Client,
    node: &'static RealNode,
    olm: OlmOnNode,
}

impl Cluster {
    fn api(&self, version: &str, kind: &str, plural: &str, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            ns,
            &olm_resource(version, kind, plural),
        )
    }

    fn csvs(&self) -> Api<DynamicObject> {
        self.api(
            "v1alpha1",
            "ClusterServiceVersion",
            "clusterserviceversions",
            NAMESPACE,
        )
    }

    fn plans(&self) -> Api<DynamicObject> {
        self.api("v1alpha1", "InstallPlan", "installplans", NAMESPACE)
    }

    fn subscriptions(&self) -> Api<DynamicObject> {
        self.api("v1alpha1", "Subscription", "subscriptions", NAMESPACE)
    }

    fn catalog_sources(&self) -> Api<DynamicObject> {
        self.api("v1alpha1", "CatalogSource", "catalogsources", OLM_NAMESPACE)
    }

    /// Every object of a core (ServiceAccount, Service, Secret) or RBAC `kind`, in
    /// `namespace` or cluster-wide.
    async fn list_kind(
        &self,
        kind: &str,
        namespace: Option<&str>,
    ) -> anyhow::Result<Vec<DynamicObject>> {
        let (group, version) = if matches!(kind, "ServiceAccount" | "Service" | "Secret") {
            ("", "v1")
        } else {
            ("rbac.authorization.k8s.io", "v1")
        };
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        let api: Api<DynamicObject> = match namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        Ok(api.list(&ListParams::default()).await?.items)
    }

    /// Applies a file of `olm/` as written.
    async fn apply(&self, name: &str) -> anyhow::Result<()> {
        olm_release::apply_olm_file(&self.client, name).await
    }

    /// What OLM's pods, plans and logs say, for failure messages.
    fn describe(&self) -> String {
        let mut out = self.olm.describe(self.node);
        for args in [
            &[
                "get",
                "catalogsources,subscriptions,installplans,csv,jobs",
                "-A",
            ][..],
            &["get", "catalogsource", "-n", OLM_NAMESPACE, "-o", "yaml"][..],
            &["get", "subscription", "-n", NAMESPACE, "-o", "yaml"][..],
            // What each plan step did, and the RBAC it made with its owners.
            &[
                "get",
                "installplans",
                "-n",
                NAMESPACE,
                "-o",
                "jsonpath={range .items[*]}{.metadata.name} {.metadata.creationTimestamp}{'\\n'}{range .status.plan[*]}  {.resource.kind}/{.resource.name} {.status}{'\\n'}{end}{end}",
            ][..],
            &[
                "get",
                "csv,roles,rolebindings,serviceaccounts",
                "-n",
                NAMESPACE,
                "-o",
                "custom-columns=KIND:.kind,NAME:.metadata.name,UID:.metadata.uid,CREATED:.metadata.creationTimestamp,OWNERS:.metadata.ownerReferences[*].uid,LABELS:.metadata.labels",
            ][..],
        ] {
            if let Ok(output) = self.node.kubectl(args) {
                out.push_str(&String::from_utf8_lossy(&output.stdout));
                out.push_str(&String::from_utf8_lossy(&output.stderr));
            }
        }
        out.push_str(&format!("--- deletions in {NAMESPACE} (audit log) ---\n"));
        match self.plane.deletions(NAMESPACE) {
            Ok(lines) => lines.iter().for_each(|line| {
                out.push_str(line);
                out.push('\n');
            }),
            Err(error) => out.push_str(&format!("{error:#}\n")),
        }
        out
    }

    /// Waits for `what`, failing with the cluster's state.
    async fn wait<T, F, Fut>(&self, seconds: u64, what: &str, check: F) -> anyhow::Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
    {
        wait_for(self.node, &|| self.describe(), seconds, what, check).await
    }

    /// The CSV phase of `name`, if it exists.
    async fn csv_phase(&self, name: &str) -> anyhow::Result<Option<String>> {
        Ok(self
            .csvs()
            .get_opt(name)
            .await?
            .and_then(|csv| csv.data["status"]["phase"].as_str().map(str::to_string)))
    }

    async fn wait_csv_succeeded(&self, name: &str, seconds: u64) -> anyhow::Result<()> {
        self.wait(seconds, &format!("{name} Succeeded"), || async {
            Ok((self.csv_phase(name).await?.as_deref() == Some("Succeeded")).then_some(()))
        })
        .await
    }

    /// The catalog as packageserver shows it: `kubectl get packagemanifest redis-operator`.
    async fn package_manifest(&self) -> anyhow::Result<Option<Value>> {
        let output = self.node.kubectl(&[
            "get",
            "packagemanifest",
            PACKAGE,
            "-n",
            NAMESPACE,
            "-o",
            "json",
        ])?;
        if !output.status.success() {
            return Ok(None);
        }
        Ok(Some(serde_json::from_slice(&output.stdout)?))
    }

    /// Waits until OLM reports the CatalogSource `name` connected (`READY`).
    async fn wait_catalog_source_ready(&self, name: &str, what: &str) -> anyhow::Result<()> {
        self.wait(180, what, || async {
            let source = self.catalog_sources().get(name).await?;
            Ok(
                (source.data["status"]["connectionState"]["lastObservedState"] == "READY")
                    .then_some(()),
            )
        })
        .await
    }

    /// Deletes the CatalogSource `name` and waits until it is gone.
    async fn delete_catalog_source(&self, name: &str, what: &str) -> anyhow::Result<()> {
        self.catalog_sources()
            .delete(name, &DeleteParams::default())
            .await?;
        self.wait(60, what, || async {
            Ok(self
                .catalog_sources()
                .get_opt(name)
                .await?
                .is_none()
                .then_some(()))
        })
        .await
    }

    /// Waits until the package manifest shows `heads` as each channel's head CSV (the
    /// registry pod's poll found a new image) and returns it. packageserver runs as two
    /// replicas, each with its own view of the catalogs, and `kubectl` reaches either, so one
    /// read can see an older view (or none) just after another saw the new one (seen in CI).
    /// The heads must show in three reads in a row.
    async fn wait_heads(&self, heads: &[(&str, &str)], seconds: u64) -> anyhow::Result<Value> {
        let want: BTreeMap<String, String> = heads
            .iter()
            .map(|(c, h)| (c.to_string(), h.to_string()))
            .collect();
        let in_a_row = std::sync::atomic::AtomicUsize::new(0);
        self.wait(
            seconds,
            &format!("the package manifest to show {want:?}"),
            || async {
                let manifest = self.package_manifest().await?;
                let shown = manifest.as_ref().map(channel_heads).unwrap_or_default();
                if shown != want {
                    in_a_row.store(0, std::sync::atomic::Ordering::Relaxed);
                    return Ok(None);
                }
                let seen = in_a_row.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                Ok(manifest.filter(|_| seen >= 3))
            },
        )
        .await
    }

    /// Every InstallPlan of the operator's namespace, as JSON.
    async fn plan_values(&self) -> anyhow::Result<Vec<Value>> {
        self.plans()
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|plan| Ok(serde_json::to_value(plan)?))
            .collect()
    }

    /// Each CustomResourceDefinition's resourceVersion, by name.
    async fn crd_versions(&self) -> anyhow::Result<BTreeMap<String, String>> {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        Ok(crds
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|crd| Some((crd.metadata.name?, crd.metadata.resource_version?)))
            .collect())
    }

    /// The object an InstallPlan step creates, if it exists (in the operator's namespace
    /// when its kind is namespaced).
    async fn get_step_object(
        &self,
        step: &install_plan::Step,
    ) -> anyhow::Result<Option<DynamicObject>> {
        let gvk = GroupVersionKind::gvk(&step.group, &step.version, &step.kind);
        let (resource, capabilities) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .with_context(|| format!("discovering the kind of {step}"))?;
        let api: Api<DynamicObject> = match capabilities.scope {
            kube::discovery::Scope::Namespaced => {
                Api::namespaced_with(self.client.clone(), NAMESPACE, &resource)
            }
            kube::discovery::Scope::Cluster => Api::all_with(self.client.clone(), &resource),
        };
        Ok(api.get_opt(&step.name).await?)
    }

    /// Approves every InstallPlan that waits for approval; returns how many.
    async fn approve_waiting_plans(&self) -> anyhow::Result<usize> {
        let mut approved = 0;
        for plan in self.plans().list(&ListParams::default()).await?.items {
            if plan.data["status"]["phase"] == "RequiresApproval" {
                self.plans()
                    .patch(
                        &plan.metadata.name.clone().unwrap_or_default(),
                        &PatchParams::default(),
                        &Patch::Merge(json!({"spec": {"approved": true}})),
                    )
                    .await?;
                approved += 1;
            }
        }
        Ok(approved)
    }
}

#[tokio::test]
async fn olm_installs_upgrades_switches_channels_and_uninstalls_the_operator() -> anyhow::Result<()>
{
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let started = Instant::now();
    let olm = OlmOnNode::deploy(plane, node).await?;
    println!(
        "OLM (olm-operator, catalog-operator, packageserver) up as pods: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let cluster = Cluster {
        plane,
        client,
        node,
        olm,
    };
    push_workload_images(node).await?;

    // 1-6 and 9 with our catalog image.
    let ours = walk(&cluster, CatalogServer::BundleTool).await?;

    // 7. The served catalog, bundles inline: installs with no unpack Job.
    cluster
        .delete_catalog_source("redis-operator-catalog", "the image CatalogSource gone")
        .await?;
    cluster.apply("catalogsource-served.yaml").await?;
    cluster
        .wait(180, "the served CatalogSource READY", || async {
            let source = cluster
                .catalog_sources()
                .get("redis-operator-catalog")
                .await?;
            Ok((source.data["spec"]["address"].is_string()
                && source.data["status"]["connectionState"]["lastObservedState"] == "READY")
                .then_some(()))
        })
        .await?;
    let jobs = JobWatch::start(&cluster.client).await?;
    cluster.apply("subscription.yaml").await?;
    cluster
        .wait_csv_succeeded("redis-operator.v0.3.0", 300)
        .await?;
    let seen = jobs.seen()?;
    ensure!(
        seen.is_empty(),
        "an unpack Job ran for inline bundles: {}",
        describe_jobs(&seen)
    );
    // Served inline: the plan's steps carry the bundle's objects, with no bundle lookup.
    let plans = cluster.plan_values().await?;
    let source = install_plan::bundle_source(
        install_plan::plan_for(&plans, "redis-operator.v0.3.0")?,
        "redis-operator.v0.3.0",
    )
    .with_context(|| format!("the served catalog's install\n{}", cluster.describe()))?;
    ensure!(
        source == install_plan::BundleSource::Inline,
        "the served catalog's bundle was not installed from inline objects: {source:?}"
    );
    uninstall(&cluster, "redis-operator.v0.3.0").await?;
    cluster
        .delete_catalog_source("redis-operator-catalog", "the served CatalogSource gone")
        .await?;

    // 8. The oracle: the same steps, the catalog image built around opm under the same name.
    let theirs = walk(&cluster, CatalogServer::Opm).await?;
    ensure!(
        comparable_channels(&ours) == comparable_channels(&theirs),
        "opm's catalog image gives another package manifest:\nours {:#}\nopm's {:#}",
        ours["status"],
        theirs["status"]
    );
    Ok(())
}

/// What serves the catalog in the registry pod OLM makes for `olm/catalogsource.yaml`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CatalogServer {
    /// The catalog image `bundle-tool release` pushes.
    BundleTool,
    /// An image built around opm, as `opm generate dockerfile` describes it, of the catalog
    /// each release wrote (the release's own catalog image goes to another name).
    Opm,
}

/// Where the release's own catalog image goes in the opm walk, so that OLM's registry polling
/// only ever sees opm's image under the name `olm/catalogsource.yaml` gives.
const SET_ASIDE_CATALOG_IMAGE: &str = "quay.io/example/redis-operator-catalog-set-aside:latest";

/// Releases `version` with `bundle-tool release` and puts the catalog image that `server`
/// makes under the name OLM polls; returns the release's summary.
async fn publish(
    cluster: &Cluster,
    checkout: &Checkout,
    server: CatalogServer,
    version: &str,
    channels: &str,
) -> anyhow::Result<Value> {
    match server {
        CatalogServer::BundleTool => checkout.release(cluster.node, version, channels),
        CatalogServer::Opm => {
            let summary =
                checkout.release_to(cluster.node, version, channels, SET_ASIDE_CATALOG_IMAGE)?;
            let image = e2e::olm_on_node::opm_catalog_image(
                &e2e::assets::Assets::locate()?,
                &checkout.root().join("catalog"),
            )?;
            cluster.node.push_as(CATALOG_IMAGE, &image).await?;
            Ok(summary)
        }
    }
}

/// The user's path with the catalog served by `server`, from an empty catalog to an
/// uninstall; returns the package manifest of the last release (0.3.0 heading both channels).
///
/// 1. 0.1.0 released into both channels;
/// 2. `olm/catalogsource.yaml`'s registry pod Ready by OLM's probes, the CatalogSource READY,
///    `kubectl get packagemanifests` listing the package, its heads and description;
/// 3. and 6. `olm/subscription-manual.yaml` (candidate-v0 from 0.1.0) waits for approval and
///    installs nothing until approved; then an unpack Job pulls the bundle image (bundlePath,
///    point 7) and 0.1.0 runs the sample with real Redis;
/// 4. and 5. `olm/subscription.yaml` (Automatic, stable-v0): 0.2.0 released to candidate-v0
///    only reaches the cluster by polling and does not upgrade; switching to candidate-v0,
///    whose head is newer, upgrades along its edges; 0.3.0 released to both is picked up by
///    polling and upgrades again; the new operator reconciles a change to the sample;
/// 9. deleting the Subscription and the CSV removes the operator's objects.
async fn walk(cluster: &Cluster, server: CatalogServer) -> anyhow::Result<Value> {
    let node = cluster.node;
    println!("--- the user's path with the catalog served by {server:?} ---");

    // 1. The first release, from a clean checkout.
    // Every release of this walk makes linux/amd64 + linux/arm64 indexes: the node pulls the
    // amd64 image of each (catalog, bundle) out of them, and OLM runs as with one platform.
    let checkout = Checkout::new()?.two_platforms()?;
    let first = publish(
        cluster,
        &checkout,
        server,
        "0.1.0",
        "candidate-v0,stable-v0",
    )
    .await?;
    ensure!(
        first["changed"] == true,
        "the first release changed nothing: {first}"
    );
    let released_catalog = match server {
        CatalogServer::BundleTool => CATALOG_IMAGE,
        CatalogServer::Opm => SET_ASIDE_CATALOG_IMAGE,
    };
    for image in [
        format!(
            "{}/{}",
            node.registry(),
            e2e::node::mirror_path(released_catalog)?
        ),
        format!("{}/example/redis-operator-bundle:v0.1.0", node.registry()),
    ] {
        let platforms = checkout.index_platforms(&image)?;
        ensure!(
            platforms == ["linux/amd64", "linux/arm64"],
            "{image}: the release made an index of {platforms:?}"
        );
    }

    // 2. The catalog image as a registry pod, Ready by OLM's probes; packageserver lists it.
    let source_started = Instant::now();
    cluster.apply("catalogsource.yaml").await?;
    cluster
        .wait_catalog_source_ready("redis-operator-catalog", "the CatalogSource READY")
        .await?;
    println!(
        "{server:?}: CatalogSource applied → READY: {:.1} s",
        source_started.elapsed().as_secs_f64()
    );
    // packageserver reads the registry pod on its own schedule, after the CatalogSource turns
    // READY (CI saw an empty listing right after READY), so the listing is waited for.
    let listing = cluster
        .wait(
            120,
            "kubectl get packagemanifests lists the package",
            || async {
                let listing = node.kubectl(&["get", "packagemanifests", "-n", NAMESPACE])?;
                let listing = String::from_utf8_lossy(&listing.stdout).to_string();
                Ok(listing
                    .lines()
                    .any(|l| l.starts_with(PACKAGE))
                    .then_some(listing))
            },
        )
        .await?;
    println!("$ kubectl get packagemanifests -n {NAMESPACE}\n{listing}");
    let manifest = cluster
        .wait_heads(
            &[
                ("candidate-v0", "redis-operator.v0.1.0"),
                ("stable-v0", "redis-operator.v0.1.0"),
            ],
            60,
        )
        .await?;
    let description = manifest["status"]["channels"][0]["currentCSVDesc"]["description"]
        .as_str()
        .unwrap_or_default();
    ensure!(
        description.contains("The Redis operator runs Redis as `RedisCluster` resources"),
        "the head CSV's description is not served: {description:?}"
    );
    assert_registry_pod_is_restricted(cluster).await?;
    if server == CatalogServer::BundleTool {
        check_extract_content(cluster, &manifest).await?;
    }

    // 3 and 6. Manual approval: nothing is installed until the plan is approved.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cluster.client.clone());
    if namespaces.get_opt(NAMESPACE).await?.is_none() {
        node.namespace(&cluster.client, NAMESPACE).await?;
    }
    cluster.apply("operatorgroup.yaml").await?;
    let jobs = JobWatch::start(&cluster.client).await?;
    // What of the bundle exists before the Subscription: the CRD stays after an uninstall
    // (as OLM leaves it), so a later walk starts with it; it must not change either.
    let crds_before = cluster.crd_versions().await?;
    cluster.apply("subscription-manual.yaml").await?;
    // The plan waits for approval with its steps resolved (OLM unpacks the bundle before
    // approval): they name every object the install would create.
    let waiting = cluster
        .wait(
            180,
            "an InstallPlan waiting for approval, its steps resolved",
            || async {
                let plans = cluster.plan_values().await?;
                Ok(plans.into_iter().find(|p| {
                    p["status"]["phase"] == "RequiresApproval" && !install_plan::steps(p).is_empty()
                }))
            },
        )
        .await?;
    let planned = install_plan::steps(&waiting);
    for kind in [
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterServiceVersion",
    ] {
        ensure!(
            planned.iter().any(|step| step.kind == kind),
            "the plan waiting for approval creates no {kind}: {planned:?}"
        );
    }
    ensure!(
        planned
            .iter()
            .any(|step| matches!(step.kind.as_str(), "Role" | "ClusterRole")),
        "the plan waiting for approval creates no RBAC: {planned:?}"
    );
    // Nothing of the operator appears while the plan waits (10 reads over 10 s): no CSV, no
    // Deployment, none of the plan's objects (its CRD, ServiceAccount, RBAC, Services), and a
    // CRD there before is unchanged.
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    for _ in 0..10 {
        let csvs = cluster.csvs().list(&ListParams::default()).await?.items;
        ensure!(
            csvs.is_empty(),
            "a CSV exists before the InstallPlan was approved: {:?}",
            csvs.iter().map(|c| &c.metadata.name).collect::<Vec<_>>()
        );
        ensure!(
            deployments
                .list(&ListParams::default())
                .await?
                .items
                .is_empty(),
            "a Deployment exists before the InstallPlan was approved"
        );
        for step in &planned {
            let Some(object) = cluster.get_step_object(step).await? else {
                continue;
            };
            let unchanged_crd = step.kind == "CustomResourceDefinition"
                && crds_before.get(&step.name) == object.metadata.resource_version.as_ref();
            ensure!(
                unchanged_crd,
                "{step} exists before the InstallPlan was approved (resourceVersion {:?}; before the Subscription: {:?})",
                object.metadata.resource_version,
                crds_before.get(&step.name)
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    ensure!(
        cluster.approve_waiting_plans().await? == 1,
        "no plan to approve"
    );
    cluster
        .wait_csv_succeeded("redis-operator.v0.1.0", 300)
        .await?;
    // 7. The bundle came by bundlePath: the plan looked it up by image, an unpack Job pulled
    // that image and finished, and the plan's steps refer to what the Job unpacked.
    let plans = cluster.plan_values().await?;
    let source = install_plan::bundle_source(
        install_plan::plan_for(&plans, "redis-operator.v0.1.0")?,
        "redis-operator.v0.1.0",
    )?;
    ensure!(
        matches!(&source, install_plan::BundleSource::Unpacked(paths)
            if paths.iter().any(|p| p.contains("redis-operator-bundle:v0.1.0"))),
        "the 0.1.0 plan did not look its bundle up by image: {source:?}"
    );
    let unpacked = jobs.seen()?;
    ensure!(
        unpacked.iter().any(|job| job.succeeded
            && job
                .images
                .iter()
                .any(|image| image.contains("redis-operator-bundle:v0.1.0"))),
        "no unpack Job pulled the 0.1.0 bundle image: the bundles were not served by bundlePath (Jobs seen: {})",
        describe_jobs(&unpacked)
    );
    olm_release::check_operator_reconciles_real_redis(cluster.node, &cluster.client, &|| {
        cluster.describe()
    })
    .await?;

    // 4 and 5. Automatic approval on stable-v0 (the file as written), then releases.
    cluster.apply("subscription.yaml").await?;
    publish(cluster, &checkout, server, "0.2.0", "candidate-v0").await?;
    cluster
        .wait_heads(
            &[
                ("candidate-v0", "redis-operator.v0.2.0"),
                ("stable-v0", "redis-operator.v0.1.0"),
            ],
            180,
        )
        .await?;
    // Polling brought 0.2.0, but only to candidate-v0: stable-v0 keeps 0.1.0.
    tokio::time::sleep(Duration::from_secs(10)).await;
    ensure!(
        cluster.csv_phase("redis-operator.v0.2.0").await?.is_none(),
        "0.2.0 was installed from a channel the Subscription is not on"
    );
    // The channel switch: candidate-v0's head replaces what is installed.
    cluster
        .subscriptions()
        .patch(
            "redis-operator",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"channel": "candidate-v0"}})),
        )
        .await?;
    cluster
        .wait_csv_succeeded("redis-operator.v0.2.0", 300)
        .await?;
    cluster
        .wait(120, "0.1.0 replaced", || async {
            Ok(cluster
                .csv_phase("redis-operator.v0.1.0")
                .await?
                .is_none()
                .then_some(()))
        })
        .await?;
    let third = publish(
        cluster,
        &checkout,
        server,
        "0.3.0",
        "candidate-v0,stable-v0",
    )
    .await?;
    cluster
        .wait_csv_succeeded("redis-operator.v0.3.0", 300)
        .await?;
    let last = cluster
        .wait_heads(
            &[
                ("candidate-v0", "redis-operator.v0.3.0"),
                ("stable-v0", "redis-operator.v0.3.0"),
            ],
            120,
        )
        .await?;
    olm_release::check_operator_reconciles_real_redis(cluster.node, &cluster.client, &|| {
        cluster.describe()
    })
    .await?;
    compare_channels_with_committed_catalog(&checkout, &third)?;

    // 9. Uninstall, and the CatalogSource goes (the next part applies its own).
    uninstall(cluster, "redis-operator.v0.3.0").await?;
    if server == CatalogServer::Opm {
        cluster
            .delete_catalog_source("redis-operator-catalog", "the opm CatalogSource gone")
            .await?;
    }
    Ok(last)
}

/// An unpack Job seen by a [`JobWatch`].
#[derive(Clone)]
struct SeenJob {
    name: String,
    /// Its containers' and init containers' images (the bundle image is its pull step's).
    images: Vec<String>,
    /// Whether it was seen finished successfully.
    succeeded: bool,
}

/// Each Job's name, images and outcome, for failure messages.
fn describe_jobs(jobs: &[SeenJob]) -> String {
    let described: Vec<String> = jobs
        .iter()
        .map(|job| {
            let outcome = if job.succeeded {
                "succeeded"
            } else {
                "not finished"
            };
            format!("{} {:?} {outcome}", job.name, job.images)
        })
        .collect();
    format!("[{}]", described.join(", "))
}

/// The Jobs created in OLM's namespace after [`start`](Self::start), seen by a watch: OLM
/// deletes finished unpack Jobs, so a list read afterwards can miss one. A watch that failed
/// may have missed one too: its errors are kept, and [`seen`](Self::seen) fails with them.
struct JobWatch {
    record: std::sync::Arc<std::sync::Mutex<JobRecord>>,
    task: tokio::task::JoinHandle<()>,
}

/// What a [`JobWatch`] saw: each new Job by uid, and every error of the watch.
#[derive(Default)]
struct JobRecord {
    jobs: BTreeMap<String, SeenJob>,
    errors: Vec<String>,
}

impl JobWatch {
    /// Starts watching; returns once the watch has listed the Jobs that exist now (those do
    /// not count).
    async fn start(client: &kube::Client) -> anyhow::Result<JobWatch> {
        use kube::runtime::watcher;
        let api: Api<Job> = Api::namespaced(client.clone(), OLM_NAMESPACE);
        JobWatch::over(watcher::watcher(api, watcher::Config::default())).await
    }

    /// Records the Jobs `events` (a watch of Jobs) tells of.
    async fn over<S>(events: S) -> anyhow::Result<JobWatch>
    where
        S: futures::Stream<
                Item = Result<kube::runtime::watcher::Event<Job>, kube::runtime::watcher::Error>,
            > + Send
            + 'static,
    {
        use futures::StreamExt as _;
        use kube::runtime::watcher::Event;
        let record = std::sync::Arc::new(std::sync::Mutex::new(JobRecord::default()));
        let (listed, listed_now) = tokio::sync::oneshot::channel();
        let shared = record.clone();
        let task = tokio::spawn(async move {
            let mut listed = Some(listed);
            let mut existing = std::collections::BTreeSet::new();
            let mut stream = std::pin::pin!(events);
            while let Some(event) = stream.next().await {
                let job = match event {
                    Ok(Event::InitApply(job)) if listed.is_some() => {
                        existing.extend(job.metadata.uid.clone());
                        continue;
                    }
                    Ok(Event::InitDone) => {
                        if let Some(listed) = listed.take() {
                            let _ = listed.send(());
                        }
                        continue;
                    }
                    Ok(Event::Apply(job) | Event::InitApply(job) | Event::Delete(job)) => job,
                    Ok(Event::Init) => continue,
                    // The watcher retries by itself, but what happened meanwhile may be lost:
                    // the error is kept (and said at once), a pause keeps it from spinning.
                    Err(error) => {
                        eprintln!("the Job watch failed: {error}");
                        shared
                            .lock()
                            .expect("no panics holding it")
                            .errors
                            .push(error.to_string());
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                let Some(uid) = job.metadata.uid.clone() else {
                    continue;
                };
                if existing.contains(&uid) {
                    continue;
                }
                let images = job
                    .spec
                    .as_ref()
                    .and_then(|spec| spec.template.spec.as_ref())
                    .map(|spec| {
                        spec.init_containers
                            .iter()
                            .flatten()
                            .chain(&spec.containers)
                            .filter_map(|c| c.image.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                let succeeded = job
                    .status
                    .as_ref()
                    .and_then(|s| s.succeeded)
                    .is_some_and(|n| n > 0);
                let mut record = shared.lock().expect("no panics holding it");
                let entry = record.jobs.entry(uid).or_insert(SeenJob {
                    name: job.metadata.name.clone().unwrap_or_default(),
                    images,
                    succeeded: false,
                });
                entry.succeeded |= succeeded;
            }
            shared
                .lock()
                .expect("no panics holding it")
                .errors
                .push("the watch ended".into());
        });
        tokio::time::timeout(Duration::from_secs(30), listed_now)
            .await
            .context("the Job watch did not list within 30 s")?
            .context("the Job watch stopped")?;
        Ok(JobWatch { record, task })
    }

    /// The Jobs seen so far, each once; an error when the watch failed since it started
    /// (a Job may then have come and gone unseen).
    fn seen(&self) -> anyhow::Result<Vec<SeenJob>> {
        let record = self.record.lock().expect("no panics holding it");
        ensure!(
            record.errors.is_empty(),
            "the Job watch failed, so it may have missed a Job: {:?} (seen: {})",
            record.errors,
            describe_jobs(&record.jobs.values().cloned().collect::<Vec<_>>())
        );
        Ok(record.jobs.values().cloned().collect())
    }
}

impl Drop for JobWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn a_job_watch_that_failed_fails_its_reader() -> anyhow::Result<()> {
    use futures::StreamExt as _;
    use kube::runtime::watcher::{Error, Event};
    let job = |uid: &str| -> Job {
        serde_json::from_value(json!({"metadata": {"name": format!("unpack-{uid}"), "uid": uid}}))
            .expect("a Job")
    };
    // A watch that works: the Job there at the start does not count, the new one does.
    let events = vec![
        Ok(Event::Init),
        Ok(Event::InitApply(job("old"))),
        Ok(Event::InitDone),
        Ok(Event::Apply(job("new"))),
    ];
    let watch =
        JobWatch::over(futures::stream::iter(events).chain(futures::stream::pending())).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let seen: Vec<String> = watch.seen()?.into_iter().map(|j| j.name).collect();
    ensure!(seen == ["unpack-new"], "{seen:?}");
    // One error, after which the watch goes on: what it saw is no longer to be trusted.
    let events = vec![
        Ok(Event::Init),
        Ok(Event::InitDone),
        Err(Error::NoResourceVersion),
        Ok(Event::Apply(job("later"))),
    ];
    let watch =
        JobWatch::over(futures::stream::iter(events).chain(futures::stream::pending())).await?;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let error = watch
        .seen()
        .err()
        .context("a failed watch was read as complete")?;
    ensure!(
        error.to_string().contains("no metadata.resourceVersion"),
        "{error:#}"
    );
    Ok(())
}

/// Each channel's head CSV in a package manifest.
fn channel_heads(manifest: &Value) -> BTreeMap<String, String> {
    manifest["status"]["channels"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().to_string(),
                c["currentCSV"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// A package manifest's channels with each head's `relatedImages` sorted: opm answers them
/// in Go map order (it differs between two channels of one answer), packageserver passes the
/// order on, and no client reads meaning into it.
fn comparable_channels(manifest: &Value) -> Value {
    let mut channels = manifest["status"]["channels"].clone();
    for channel in channels.as_array_mut().into_iter().flatten() {
        if let Some(images) = channel["currentCSVDesc"]["relatedImages"].as_array_mut() {
            images.sort_by_key(|image| image.to_string());
        }
    }
    channels
}

/// `olm/catalogsource-extract-content.yaml`: OLM copies `/configs` out of our catalog image
/// (its `copy-content` run inside the image) and serves the copy with its own opm image; the
/// package manifest from that catalog is the one from ours. The CatalogSource is removed
/// again, so that one catalog offers the package to the installs that follow.
async fn check_extract_content(cluster: &Cluster, ours: &Value) -> anyhow::Result<()> {
    const NAME: &str = "redis-operator-catalog-extracted";
    let started = Instant::now();
    cluster.apply("catalogsource-extract-content.yaml").await?;
    cluster
        .wait_catalog_source_ready(NAME, "the extractContent CatalogSource READY")
        .await?;
    println!(
        "extractContent: CatalogSource applied → READY: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // The pod is OLM's extracting one: our image only in the init container that copies.
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(cluster.client.clone(), OLM_NAMESPACE);
    let list = pods
        .list(&ListParams::default().labels(&format!("olm.catalogSource={NAME}")))
        .await?;
    let pod = list
        .items
        .first()
        .with_context(|| format!("no registry pod for {NAME}"))?;
    let spec = pod.spec.as_ref().context("a pod without a spec")?;
    let init: Vec<(String, String)> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
        .collect();
    ensure!(
        init.iter()
            .any(|(name, image)| name == "extract-content"
                && image.contains("redis-operator-catalog")),
        "the registry pod does not extract from our image: init containers {init:?}"
    );
    ensure!(
        spec.containers[0].image.as_deref() == Some(cluster.olm.opm_image.as_str()),
        "the registry pod does not serve with OLM's opm image: {:?}",
        spec.containers[0].image
    );
    let want = comparable_channels(ours);
    cluster
        .wait(120, "the extracted catalog's package manifest", || async {
            let output = cluster.node.kubectl(&[
                "get",
                "packagemanifests",
                "-n",
                NAMESPACE,
                "-l",
                &format!("catalog={NAME}"),
                "-o",
                "json",
            ])?;
            if !output.status.success() {
                return Ok(None);
            }
            let list: Value = serde_json::from_slice(&output.stdout)?;
            Ok(list["items"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|m| m["metadata"]["name"] == PACKAGE && comparable_channels(m) == want)
                .map(|_| ()))
        })
        .await?;
    cluster
        .delete_catalog_source(NAME, "the extractContent CatalogSource gone")
        .await
}

/// OLM's registry pod runs our image under `restricted` (no escalation, no capabilities,
/// RuntimeDefault seccomp) and is Ready by the probe command OLM gave it.
async fn assert_registry_pod_is_restricted(cluster: &Cluster) -> anyhow::Result<()> {
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(cluster.client.clone(), OLM_NAMESPACE);
    let list = pods
        .list(&ListParams::default().labels("olm.catalogSource=redis-operator-catalog"))
        .await?;
    let pod = list
        .items
        .iter()
        .find(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .context("no Ready registry pod")?;
    let value = serde_json::to_value(pod)?;
    let container = &value["spec"]["containers"][0];
    ensure!(
        container["readinessProbe"]["exec"]["command"][0] == "grpc_health_probe",
        "the registry pod is not probed by grpc_health_probe: {container}"
    );
    // What `restricted` sets (runAsNonRoot too when catalog-operator is given a workload
    // user id, which the quickstart does not give it; the served form checks non-root).
    ensure!(
        value["spec"]["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
            && container["securityContext"]["allowPrivilegeEscalation"] == false
            && container["securityContext"]["capabilities"]["drop"] == json!(["ALL"]),
        "the registry pod does not run restricted: {} {}",
        value["spec"]["securityContext"],
        container["securityContext"]
    );
    Ok(())
}

/// Deletes the sample RedisCluster (with its namespace), the Subscription and the CSV, as
/// `operator-sdk cleanup` removes an operator, and waits until the operator's Deployment,
/// ServiceAccount and RBAC are gone. The CRD stays, as OLM leaves it.
async fn uninstall(cluster: &Cluster, csv: &str) -> anyhow::Result<()> {
    // A CSV can be Succeeded while its InstallPlan still retries a step (the CRD step waits
    // for the conversion webhook the new Deployment serves); deleting the CSV then lets the
    // plan create it again, with nothing left to delete it (seen in a local run). Wait until
    // every plan is done, as `kubectl get installplan` shows it.
    cluster
        .wait(300, "every InstallPlan Complete", || async {
            let plans = cluster.plans().list(&ListParams::default()).await?.items;
            Ok(plans
                .iter()
                .all(|plan| plan.data["status"]["phase"] == "Complete")
                .then_some(()))
        })
        .await?;
    // The operator's RedisClusters go first, while the operator still runs to finish them
    // (they carry its finalizer), as `operator-sdk cleanup` removes an operator's custom
    // resources. Left in place, they break the next install on OLM v0.46.0 (seen in CI):
    // catalog-operator's first pass of the new plan created the CSV and wrote the bundle's
    // CRD, whose conversion webhook names the plain manifests' Service, but the pass's step
    // statuses were lost (the CSV step then read "Present"); the second pass lists the
    // existing RedisClusters to check them against the CRD, the list needs that webhook,
    // which no Service answers, and the plan never gets to the RBAC the CSV waits for
    // ("no owned roles found"). With no custom resources the list needs no conversion.
    // What must go: found now, so that an empty list afterwards means removed, not never made.
    let made = owned_by_csv(cluster, csv).await?;
    ensure!(
        made.iter().any(|o| o.starts_with("ServiceAccount/"))
            && made
                .iter()
                .any(|o| o.starts_with("Role/") || o.starts_with("ClusterRole/")),
        "OLM made no ServiceAccount or RBAC for {csv} that an uninstall could remove: {made:?}"
    );
    println!("made for {csv}: {made:?}");
    let samples: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cluster.client.clone());
    if samples.get_opt(SAMPLE_NAMESPACE).await?.is_some() {
        samples
            .delete(SAMPLE_NAMESPACE, &DeleteParams::default())
            .await?;
        cluster
            .wait(
                180,
                "the sample RedisCluster and its namespace gone",
                || async {
                    Ok(samples
                        .get_opt(SAMPLE_NAMESPACE)
                        .await?
                        .is_none()
                        .then_some(()))
                },
            )
            .await?;
    }
    // Every InstallPlan is owned by the Subscription (catalog-operator makes them so), which
    // is what removes them with it: the wait below sees them go without this test deleting
    // them. Left behind, catalog-operator may take one for a new Subscription's resolution.
    let subscription = cluster.subscriptions().get("redis-operator").await?;
    let subscription_uid = subscription.metadata.uid.clone().unwrap_or_default();
    let plans = cluster.plan_values().await?;
    ensure!(!plans.is_empty(), "no InstallPlan to see removed");
    let orphans = install_plan::not_owned_by(&plans, &subscription_uid);
    ensure!(
        orphans.is_empty(),
        "InstallPlans not owned by the Subscription {subscription_uid}, which nothing would remove: {orphans:?}"
    );
    cluster
        .subscriptions()
        .delete("redis-operator", &DeleteParams::default())
        .await?;
    // The CSV only once the Subscription is gone: a CSV deleted while catalog-operator still
    // syncs the Subscription came back Succeeded (seen locally: the wait below timed out).
    cluster
        .wait(60, "the Subscription gone", || async {
            Ok(cluster
                .subscriptions()
                .get_opt("redis-operator")
                .await?
                .is_none()
                .then_some(()))
        })
        .await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    cluster.csvs().delete(csv, &DeleteParams::default()).await?;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    cluster
        .wait(180, "the operator's Deployment and CSV gone", || async {
            let deployment = deployments.get_opt("redis-operator").await?;
            let csvs = cluster.csvs().list(&ListParams::default()).await?.items;
            Ok((deployment.is_none() && csvs.is_empty()).then_some(()))
        })
        .await?;
    // The garbage collector removes the InstallPlans (owned by the Subscription) and what they
    // made for the CSV a moment later. An install that starts before that finds the old Role
    // still there, takes it as its own, and then loses it to the collector: the new CSV stays
    // Pending with "no owned roles found" (seen once in CI). A user re-installing waits for
    // the same.
    cluster
        .wait(
            180,
            "the InstallPlans and the CSV's ServiceAccount, RBAC, Services and Secrets gone",
            || async {
                let mut left = owned_by_csv(cluster, csv).await?;
                left.extend(
                    cluster
                        .plans()
                        .list(&ListParams::default())
                        .await?
                        .items
                        .iter()
                        .map(|plan| {
                            format!(
                                "InstallPlan/{}",
                                plan.metadata.name.as_deref().unwrap_or("")
                            )
                        }),
                );
                Ok(left.is_empty().then_some(()))
            },
        )
        .await
}

/// The objects OLM made for the CSV `csv` (its owner reference or `olm.owner` label): its
/// ServiceAccount, RBAC, and the webhook Service and certificate Secret, as `Kind/name`.
async fn owned_by_csv(cluster: &Cluster, csv: &str) -> anyhow::Result<Vec<String>> {
    let owned = |object: &DynamicObject| {
        let owner_ref = object
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|owner| owner.kind == "ClusterServiceVersion" && owner.name == csv);
        let owner_label = object
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get("olm.owner"))
            .is_some_and(|owner| owner == csv);
        owner_ref || owner_label
    };
    let mut found = Vec::new();
    for (kind, namespaced) in [
        ("ServiceAccount", true),
        ("Service", true),
        ("Secret", true),
        ("Role", true),
        ("RoleBinding", true),
        ("ClusterRole", false),
        ("ClusterRoleBinding", false),
    ] {
        let objects = cluster
            .list_kind(kind, namespaced.then_some(NAMESPACE))
            .await?;
        found.extend(
            objects
                .iter()
                .filter(|object| owned(object))
                .map(|object| format!("{kind}/{}", object.metadata.name.as_deref().unwrap_or(""))),
        );
    }
    Ok(found)
}

/// The released catalog's channels are the committed catalog's: the same entries and edges.
fn compare_channels_with_committed_catalog(
    checkout: &Checkout,
    summary: &Value,
) -> anyhow::Result<()> {
    let channels = |path: &Path| -> anyhow::Result<BTreeMap<String, Value>> {
        let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
        let mut out = BTreeMap::new();
        for document in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
            let document = document?;
            if document["schema"] == "olm.channel" {
                let mut entries = document["entries"].as_array().cloned().unwrap_or_default();
                entries.sort_by_key(|e| e["name"].to_string());
                out.insert(
                    document["name"].as_str().unwrap_or_default().into(),
                    json!(entries),
                );
            }
        }
        Ok(out)
    };
    let released = channels(&checkout.root().join("catalog/redis-operator/catalog.json"))?;
    let committed = channels(&repo().join("catalog/redis-operator/catalog.json"))?;
    ensure!(
        released == committed,
        "released channels differ from catalog/:\nreleased {released:#?}\ncommitted {committed:#?}\nsummary {summary}"
    );
    Ok(())
}
