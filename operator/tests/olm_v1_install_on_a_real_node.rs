//! OLM v1 installs the Redis operator on the real node: operator-controller and catalogd
//! v1.5.1 from the release's `experimental.yaml` (see [`e2e::olm_v1_on_node`]), cert-manager
//! v1.11.5, and an installer ServiceAccount that holds only what `bundle-tool olm-v1 rbac`
//! derives from the released bundle image. In sequence, on one cluster:
//!
//! 1. `bundle-tool release` 0.1.0; `olm/clustercatalog.yaml` on the catalog image turns
//!    `Serving`;
//! 2. the derived RBAC is minimal: with one rule taken out (a CRD, a Deployment, a cert-manager
//!    Certificate, the operator's own Lease rule, the ClusterExtension finalizers; each a
//!    different kind of object), a ClusterExtension of the package stops at operator-controller's
//!    permission preflight with the missing rule named in `Progressing`, and installs nothing;
//! 3. with the whole derived RBAC, `olm/clusterextension.yaml` turns `Installed`; the
//!    operator runs from its image and reconciles the sample RedisCluster with real Redis (one
//!    primary, connected replicas), and a v1alpha1 read converts through the conversion webhook
//!    on the certificate cert-manager issued for OLM v1's Certificate;
//! 4. upgrade: 0.2.0 released under the same catalog tag reaches the extension by catalogd's
//!    poll; the preflight refuses it while the RBAC covers 0.1.0 only (0.2.0's ClusterRoles
//!    carry its CSV name), and it upgrades with the RBAC derived from both bundle images; the
//!    new operator reconciles the sample again;
//! 5. `CatalogProvided` refuses `version: 0.1.0` (not reachable in the graph) with
//!    operator-controller's message; `SelfCertified` installs it;
//! 6. package, channel and bundle deprecations written with `bundle-tool catalog deprecate`
//!    become the `PackageDeprecated`, `ChannelDeprecated`, `BundleDeprecated` and `Deprecated`
//!    conditions with their messages;
//! 7. uninstall: the ClusterExtension deleted, every object it made (listed first) is gone.

mod olm_release;
mod real;

use std::time::Instant;

use anyhow::{Context as _, ensure};
use e2e::ControlPlane;
use e2e::node::RealNode;
use e2e::olm_v1_on_node::{OlmV1OnNode, OlmV1Release, condition, olm_v1_resource};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use olm_release::{Checkout, SAMPLE_NAMESPACE, wait_for};
use serde_json::{Value, json};

const CATALOG: &str = "redis-operator-catalog";
/// `olm/clusterextension.yaml`'s names.
const EXTENSION: &str = "redis-operator";
const INSTALL_NAMESPACE: &str = "redis-operator";
const INSTALLER: &str = "redis-operator-installer";
/// The beginning of operator-controller's message when the preflight finds rules missing
/// (v1.5.1 `internal/operator-controller/applier/helm.go`, `runPreAuthorizationChecks`).
const PREFLIGHT_FAILED: &str = "pre-authorization failed: service account requires the following permissions to manage cluster extension:";

struct Cluster {
    client: kube::Client,
    node: &'static RealNode,
    olm: OlmV1OnNode,
}

impl Cluster {
    fn catalogs(&self) -> Api<DynamicObject> {
        Api::all_with(
            self.client.clone(),
            &olm_v1_resource("ClusterCatalog", "clustercatalogs"),
        )
    }

    fn extensions(&self) -> Api<DynamicObject> {
        Api::all_with(
            self.client.clone(),
            &olm_v1_resource("ClusterExtension", "clusterextensions"),
        )
    }

    fn describe(&self) -> String {
        let mut out = self.olm.describe(self.node);
        for what in ["clustercatalogs", "clusterextensions"] {
            if let Ok(output) = self.node.kubectl(&["get", what, "-o", "yaml"]) {
                out.push_str(&String::from_utf8_lossy(&output.stdout));
                out.push_str(&String::from_utf8_lossy(&output.stderr));
            }
        }
        if let Ok(output) =
            self.node
                .kubectl(&["get", "all", "-n", INSTALL_NAMESPACE, "-o", "wide"])
        {
            out.push_str(&String::from_utf8_lossy(&output.stdout));
        }
        out
    }

    async fn wait<T, F, Fut>(&self, seconds: u64, what: &str, check: F) -> anyhow::Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
    {
        wait_for(self.node, &|| self.describe(), seconds, what, check).await
    }

    async fn extension_condition(&self, name: &str, kind: &str) -> anyhow::Result<Option<Value>> {
        let Some(extension) = self.extensions().get_opt(name).await? else {
            return Ok(None);
        };
        Ok(condition(&extension.data, kind).cloned())
    }

    /// Waits until catalogd serves the catalog image `digest` (its poll found a re-push).
    async fn wait_catalog(&self, digest: &str) -> anyhow::Result<()> {
        self.wait(
            150,
            &format!("the ClusterCatalog Serving {digest}"),
            || async {
                let catalog = self.catalogs().get(CATALOG).await?.data;
                let serving = condition(&catalog, "Serving").is_some_and(|c| c["status"] == "True");
                let resolved = catalog["status"]["resolvedSource"]["image"]["ref"]
                    .as_str()
                    .is_some_and(|r| r.ends_with(digest));
                Ok((serving && resolved).then_some(()))
            },
        )
        .await
    }

    /// Waits until the extension reports `bundle` installed.
    async fn wait_installed(&self, bundle: &str) -> anyhow::Result<()> {
        self.wait(300, &format!("{bundle} Installed"), || async {
            let extension = self.extensions().get(EXTENSION).await?.data;
            let installed =
                condition(&extension, "Installed").is_some_and(|c| c["status"] == "True");
            Ok(
                (installed && extension["status"]["install"]["bundle"]["name"] == bundle)
                    .then_some(()),
            )
        })
        .await
    }

    /// A merge patch of `olm/clusterextension.yaml`'s extension.
    async fn patch_extension(&self, patch: Value) -> anyhow::Result<()> {
        self.extensions()
            .patch(EXTENSION, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        Ok(())
    }

    /// Has operator-controller reconcile the extension now (any update does), instead of after
    /// its back-off: RBAC changes are nothing it watches.
    async fn nudge(&self, name: &str) -> anyhow::Result<()> {
        let stamp = format!("{:?}", Instant::now());
        self.extensions()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {"example.com/nudged": stamp}}})),
            )
            .await?;
        Ok(())
    }

    /// Deletes a ClusterExtension and waits until it is gone (its finalizers run).
    async fn delete_extension(&self, name: &str) -> anyhow::Result<()> {
        self.extensions()
            .delete(name, &DeleteParams::default())
            .await?;
        self.wait(
            120,
            &format!("the ClusterExtension {name} gone"),
            || async {
                Ok(self
                    .extensions()
                    .get_opt(name)
                    .await?
                    .is_none()
                    .then_some(()))
            },
        )
        .await
    }
}

/// `bundle-tool olm-v1 rbac` on the pushed bundle image, as JSON objects.
fn derived_rbac(
    bundle_image: &str,
    service_account: &str,
    extension: &str,
) -> anyhow::Result<Vec<Value>> {
    derived_rbac_of(&[bundle_image], service_account, extension)
}

/// `bundle-tool olm-v1 rbac` on several bundle images (an upgrade's).
fn derived_rbac_of(
    bundle_images: &[&str],
    service_account: &str,
    extension: &str,
) -> anyhow::Result<Vec<Value>> {
    let output = std::process::Command::new(e2e::bundle_tool_binary())
        .args(["olm-v1", "rbac"])
        .args(bundle_images)
        .args(["--plain-http", "-o", "json"])
        .args([
            "--namespace",
            INSTALL_NAMESPACE,
            "--service-account",
            service_account,
        ])
        .args(["--extension", extension])
        .output()?;
    ensure!(
        output.status.success(),
        "bundle-tool olm-v1 rbac failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let list: Value = serde_json::from_slice(&output.stdout)?;
    list["items"]
        .as_array()
        .cloned()
        .context("olm-v1 rbac printed no items")
}

/// The installer RBAC `bundle-tool release` wrote into the checkout (`release.olmV1Installer`
/// of the repository's bundle-tool.yaml), as objects, after checking that it is what
/// `olm-v1 rbac` derives from the pushed bundle images it says it covers.
fn released_rbac(
    checkout: &Checkout,
    summary: &Value,
    bundle_images: &[&str],
) -> anyhow::Result<Vec<Value>> {
    let line = summary["olmV1Rbac"]
        .as_str()
        .context("the release summary has no olmV1Rbac")?;
    let file = checkout.root().join("olm/clusterextension-rbac.yaml");
    ensure!(
        line.starts_with(&file.display().to_string())
            || line.starts_with("olm/clusterextension-rbac.yaml"),
        "the release wrote its RBAC elsewhere: {line}"
    );
    let objects: Vec<Value> = bundle_tool::manifest::read_path(&file)?
        .into_iter()
        .map(|document| document.value)
        .collect();
    let derived = derived_rbac_of(bundle_images, INSTALLER, EXTENSION)?;
    ensure!(
        objects == derived,
        "{} differs from olm-v1 rbac on {bundle_images:?}:\n{}\n--- olm-v1 rbac:\n{}",
        file.display(),
        serde_json::to_string_pretty(&objects)?,
        serde_json::to_string_pretty(&derived)?
    );
    Ok(objects)
}

/// A rule to take out: in which object, how to find it, and the line operator-controller
/// must print for it.
struct Removal {
    what: &'static str,
    kind: &'static str,
    matches: fn(&Value) -> bool,
    expected: String,
}

fn has(rule: &Value, field: &str, item: &str) -> bool {
    rule[field]
        .as_array()
        .is_some_and(|l| l.iter().any(|x| x == item))
}

fn removals(extension: &str) -> Vec<Removal> {
    vec![
        Removal {
            what: "the CRD by name (cluster-scoped)",
            kind: "ClusterRole",
            matches: |r| has(r, "resources", "customresourcedefinitions") && r["resourceNames"].is_array(),
            expected: "Namespace:\"\" APIGroups:[apiextensions.k8s.io] Resources:[customresourcedefinitions] ResourceNames:[redisclusters.cache.example.com] Verbs:[delete,get,patch,update]".into(),
        },
        Removal {
            what: "the operator's Deployment by name (namespaced)",
            kind: "Role",
            matches: |r| has(r, "resources", "deployments") && r["resourceNames"].is_array(),
            expected: format!("Namespace:\"{INSTALL_NAMESPACE}\" APIGroups:[apps] Resources:[deployments] ResourceNames:[redis-operator] Verbs:[delete,get,patch,update]"),
        },
        Removal {
            what: "creating cert-manager Certificates (OLM v1's webhook certificate)",
            kind: "Role",
            matches: |r| has(r, "resources", "certificates") && !r["resourceNames"].is_array(),
            expected: format!("Namespace:\"{INSTALL_NAMESPACE}\" APIGroups:[cert-manager.io] Resources:[certificates] Verbs:[create]"),
        },
        Removal {
            what: "the operator's own Lease rule (granting it: RBAC escalation)",
            kind: "ClusterRole",
            matches: |r| has(r, "resources", "leases"),
            expected: "Namespace:\"\" APIGroups:[coordination.k8s.io] Resources:[leases] Verbs:[create,get,patch]".into(),
        },
        Removal {
            what: "the ClusterExtension's finalizers",
            kind: "ClusterRole",
            matches: |r| has(r, "resources", "clusterextensions/finalizers"),
            expected: format!("Namespace:\"\" APIGroups:[olm.operatorframework.io] Resources:[clusterextensions/finalizers] ResourceNames:[{extension}] Verbs:[update]"),
        },
    ]
}

/// `olm/clusterextension.yaml` as written, or renamed with another installer.
fn extension_object(name: &str, service_account: &str) -> anyhow::Result<Value> {
    let path = olm_release::repo().join("olm/clusterextension.yaml");
    let mut object: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path)?)
        .with_context(|| path.display().to_string())?;
    object["metadata"]["name"] = json!(name);
    object["spec"]["serviceAccount"]["name"] = json!(service_account);
    Ok(object)
}

#[tokio::test]
async fn olm_v1_installs_with_the_derived_rbac_only() -> anyhow::Result<()> {
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    let started = Instant::now();
    let olm = OlmV1OnNode::deploy_release(plane, node, OlmV1Release::InstallerV1_5).await?;
    println!(
        "cert-manager, catalogd and operator-controller v1.5.1 up as pods: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let cluster = Cluster {
        client: client.clone(),
        node,
        olm,
    };
    olm_release::push_workload_images(node).await?;

    // 1. The release, and the catalog serving it.
    let checkout = Checkout::new()?;
    let first = checkout.release(node, "0.1.0", "candidate-v0,stable-v0")?;
    let digest = first["catalog"]["digest"]
        .as_str()
        .context("no catalog digest")?
        .to_string();
    let bundle_image = format!(
        "{}@{}",
        first["bundle"]["image"]
            .as_str()
            .context("no bundle image")?,
        first["bundle"]["digest"]
            .as_str()
            .context("no bundle digest")?
    );
    olm_release::apply_olm_file(&client, "clustercatalog.yaml").await?;
    cluster.wait_catalog(&digest).await?;
    node.namespace(&client, INSTALL_NAMESPACE).await?;

    // 2. Minimality: each rule taken out alone stops the install at the preflight.
    let probe_account = "probe-installer";
    for index in 0..removals("").len() {
        // Each probe is a ClusterExtension of its own (the finalizer rule names it).
        let name = format!("redis-operator-probe-{index}");
        let removal = removals(&name).swap_remove(index);
        let expected = &removal.expected;
        let mut objects = derived_rbac(&bundle_image, probe_account, &name)?;
        let holder = objects
            .iter_mut()
            .find(|o| o["kind"] == removal.kind)
            .context("no such object in the derived RBAC")?;
        let rules = holder["rules"].as_array_mut().context("no rules")?;
        let before = rules.len();
        rules.retain(|r| !(removal.matches)(r));
        ensure!(
            rules.len() == before - 1,
            "{}: {} rules matched in the derived {}",
            removal.what,
            before - rules.len(),
            removal.kind
        );
        e2e::apply_objects(&client, &objects).await?;
        e2e::apply_objects(&client, &[extension_object(&name, probe_account)?]).await?;
        let message = cluster
            .wait(
                120,
                &format!("without {}: the preflight refusing", removal.what),
                || async {
                    let Some(progressing) =
                        cluster.extension_condition(&name, "Progressing").await?
                    else {
                        return Ok(None);
                    };
                    let message = progressing["message"].as_str().unwrap_or_default();
                    Ok(message
                        .contains(PREFLIGHT_FAILED)
                        .then(|| (progressing["reason"].clone(), message.to_string())))
                },
            )
            .await?;
        let (reason, message) = message;
        println!("without {}: {reason} {message}", removal.what);
        ensure!(reason == "Retrying", "reason {reason}, not Retrying");
        let missing: Vec<&str> = message
            .split_once(PREFLIGHT_FAILED)
            .map(|(_, rest)| {
                rest.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        ensure!(
            !missing.is_empty() && missing.iter().all(|line| line == expected),
            "without {}: operator-controller names {missing:?}, expected only {expected:?}",
            removal.what
        );
        let installed = cluster.extension_condition(&name, "Installed").await?;
        ensure!(
            installed.as_ref().is_none_or(|c| c["status"] != "True"),
            "{name} installed without {}: {installed:?}",
            removal.what
        );
        cluster.delete_extension(&name).await?;
    }

    // 3. The whole derived RBAC, as the release wrote it for the admin: installed, running,
    // reconciling real Redis, converting.
    let objects = released_rbac(&checkout, &first, &[&bundle_image])?;
    e2e::apply_objects(&client, &objects).await?;
    let install_started = Instant::now();
    olm_release::apply_olm_file(&client, "clusterextension.yaml").await?;
    cluster
        .wait(300, "the ClusterExtension Installed", || async {
            let installed = cluster.extension_condition(EXTENSION, "Installed").await?;
            Ok(installed
                .is_some_and(|c| c["status"] == "True")
                .then_some(()))
        })
        .await?;
    println!(
        "ClusterExtension applied → Installed=True: {:.1} s",
        install_started.elapsed().as_secs_f64()
    );
    let extension = cluster.extensions().get(EXTENSION).await?.data;
    ensure!(
        extension["status"]["install"]["bundle"]["name"] == "redis-operator.v0.1.0",
        "installed bundle: {}",
        extension["status"]["install"]
    );
    olm_release::check_operator_reconciles_real_redis(node, &client, &|| cluster.describe())
        .await?;

    // 4. Upgrade: 0.2.0 released under the same catalog tag reaches the extension by
    // catalogd's poll. The 0.1.0 RBAC does not cover 0.2.0's ClusterRole names (they hold the
    // CSV's name): the preflight refuses the upgrade, naming them; the RBAC derived from both
    // bundle images lets it through.
    let second = checkout.release(node, "0.2.0", "candidate-v0,stable-v0")?;
    let second_bundle = format!(
        "{}@{}",
        second["bundle"]["image"]
            .as_str()
            .context("no bundle image")?,
        second["bundle"]["digest"]
            .as_str()
            .context("no bundle digest")?
    );
    cluster
        .wait_catalog(second["catalog"]["digest"].as_str().context("no digest")?)
        .await?;
    let (_, message) = cluster
        .wait(
            120,
            "the upgrade to 0.2.0 refused by the preflight",
            || async {
                let Some(progressing) = cluster
                    .extension_condition(EXTENSION, "Progressing")
                    .await?
                else {
                    return Ok(None);
                };
                let message = progressing["message"].as_str().unwrap_or_default();
                Ok(
                    (message.contains(PREFLIGHT_FAILED) && message.contains("0.2.0"))
                        .then(|| (progressing["reason"].clone(), message.to_string())),
                )
            },
        )
        .await?;
    ensure!(
        message.contains("ResourceNames:[redis-operator.v0.2-"),
        "the refusal does not name 0.2.0's ClusterRoles: {message}"
    );
    println!("upgrade with the 0.1.0 RBAC: {message}");
    // 0.2.0's release wrote the RBAC for installing it and upgrading into it from 0.1.0.
    let objects = released_rbac(&checkout, &second, &[&second_bundle, &bundle_image])?;
    e2e::apply_objects(&client, &objects).await?;
    cluster.nudge(EXTENSION).await?;
    cluster.wait_installed("redis-operator.v0.2.0").await?;
    olm_release::check_operator_reconciles_real_redis(node, &client, &|| cluster.describe())
        .await?;

    // 5. CatalogProvided refuses a version the graph does not reach (back to 0.1.0);
    // SelfCertified allows it.
    cluster
        .patch_extension(json!({"spec": {"source": {"catalog": {"version": "0.1.0"}}}}))
        .await?;
    let refusal = "error upgrading from currently installed version \"0.2.0\": no bundles found for package \"redis-operator\" matching version \"0.1.0\"";
    let message = cluster
        .wait(120, "CatalogProvided refusing 0.1.0", || async {
            let progressing = cluster
                .extension_condition(EXTENSION, "Progressing")
                .await?;
            let message = progressing
                .as_ref()
                .and_then(|c| c["message"].as_str())
                .unwrap_or_default();
            Ok(message.contains(refusal).then(|| message.to_string()))
        })
        .await?;
    println!("CatalogProvided, version 0.1.0: {message}");
    cluster
        .patch_extension(
            json!({"spec": {"source": {"catalog": {"upgradeConstraintPolicy": "SelfCertified"}}}}),
        )
        .await?;
    cluster.wait_installed("redis-operator.v0.1.0").await?;

    // 6. Deprecations written with `bundle-tool catalog deprecate`, in a re-pushed catalog
    // image, become the extension's conditions. v1.5.1 starts each of the three conditions'
    // messages with a newline (`SetDeprecationStatus` joins entries as "%s\n%s" from ""); the
    // roll-up joins them with ";".
    let deprecations = [
        (
            "PackageDeprecated",
            vec!["--package-level"],
            "redis-operator is retired",
        ),
        (
            "ChannelDeprecated",
            vec!["--channel", "stable-v0"],
            "stable-v0 is closed: use stable-v1",
        ),
        (
            "BundleDeprecated",
            vec!["--bundle", "redis-operator.v0.1.0"],
            "0.1.0 is withdrawn: upgrade to 0.2.0",
        ),
    ];
    for (_, selector, message) in &deprecations {
        let mut args = vec![
            "catalog",
            "deprecate",
            "catalog",
            "--package",
            "redis-operator",
        ];
        args.extend(selector.iter().copied());
        args.extend(["--message", message]);
        checkout.bundle_tool(&args)?;
    }
    let digest = checkout.push_catalog(node)?;
    cluster.wait_catalog(&digest).await?;
    cluster
        .wait(120, "the Deprecated conditions", || async {
            for (kind, _, message) in &deprecations {
                let Some(c) = cluster.extension_condition(EXTENSION, kind).await? else {
                    return Ok(None);
                };
                if c["status"] != "True" || c["message"].as_str().map(str::trim) != Some(message) {
                    return Ok(None);
                }
            }
            let rollup = cluster.extension_condition(EXTENSION, "Deprecated").await?;
            Ok(rollup
                .filter(|c| c["status"] == "True")
                .filter(|c| {
                    let text = c["message"].as_str().unwrap_or_default();
                    deprecations.iter().all(|(_, _, m)| text.contains(m))
                })
                .map(|_| ()))
        })
        .await?;

    // 7. Uninstall: what the extension made, listed first, is gone after it is deleted.
    let kinds = "deployments,services,serviceaccounts,certificates.cert-manager.io,issuers.cert-manager.io,clusterroles,clusterrolebindings,customresourcedefinitions";
    let selector = format!("olm.operatorframework.io/owner-name={EXTENSION}");
    let listed = |node: &RealNode| -> anyhow::Result<Vec<String>> {
        let output = node.kubectl(&["get", kinds, "-A", "-l", &selector, "-o", "name"])?;
        ensure!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut names: Vec<String> = String::from_utf8(output.stdout)?
            .lines()
            .map(str::to_string)
            .collect();
        names.sort();
        Ok(names)
    };
    let made = listed(node)?;
    for expected in [
        "deployment.apps/redis-operator",
        "service/redis-operator-service",
        "certificate.cert-manager.io/redis-operator-service-cert",
        "issuer.cert-manager.io/redis-operator-service-cert-selfsigned-issuer",
        "customresourcedefinition.apiextensions.k8s.io/redisclusters.cache.example.com",
        "serviceaccount/redis-operator",
    ] {
        ensure!(
            made.iter().any(|m| m == expected),
            "{expected} not among {made:?}"
        );
    }
    println!("objects of the extension: {made:?}");
    // The sample goes first: its finalizer needs the operator running to be removed.
    let deleted = node.kubectl(&[
        "delete",
        "redisclusters.cache.example.com",
        "--all",
        "-n",
        SAMPLE_NAMESPACE,
        "--wait=true",
        "--timeout=120s",
    ])?;
    ensure!(
        deleted.status.success(),
        "{}",
        String::from_utf8_lossy(&deleted.stderr)
    );
    cluster.delete_extension(EXTENSION).await?;
    cluster
        .wait(180, "every object of the extension gone", || async {
            let left = listed(node)?;
            Ok(left.is_empty().then_some(()))
        })
        .await?;
    Ok(())
}
