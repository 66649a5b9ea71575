//! `check-upgrade`'s CRD rules against operator-controller v1.5.1's CRD upgrade-safety
//! preflight in a cluster: OLM v1 as in `olm_v1_install_on_a_real_node` (cert-manager,
//! catalogd and operator-controller v1.5.1 from `experimental.yaml`, see
//! [`e2e::olm_v1_on_node`]), and ten CRD pairs of bundle-tool's
//! `tests/fixtures/upgrade/crd-pairs`: six that `check-upgrade` refuses (scope changed, stored
//! version removed, field removed, enum value removed, required field added, type changed),
//! two it passes (optional field added, enum value added), and two where v1.5.1 names another
//! rule (pattern changed, nullable added; see [`FIXTURES`]).
//!
//! Each pair becomes a package of its own, made with bundle-tool only (`init`, `generate`,
//! `push-all`, `catalog add`, `build --catalog`, `push`): bundle 1.0.0 owns OLD, 1.1.0 (which
//! replaces it) owns NEW, each pair's CRD in an API group of its own. One ClusterCatalog
//! serves the packages. For each pair, concurrently, a ClusterExtension installs 1.0.0 and is
//! then moved to 1.1.0 with the default `Strict` preflight:
//!
//! - where `check-upgrade` refuses, operator-controller refuses too, names the same rules
//!   (each line of its message is `check-upgrade`'s line for the same finding) and keeps
//!   1.0.0 installed;
//! - where `check-upgrade` passes, 1.1.0 reaches `Installed`;
//! - on the two other pairs v1.5.1 refuses too, naming `unhandled` where `check-upgrade`
//!   names `pattern` and `nullable`.
//!
//! Then `crdUpgradeSafety.enforcement: None` on the refused ones skips the preflight: the CRD
//! update goes to the API server, which takes all but two of them (1.1.0 installed) and
//! itself refuses those two, as its CRD validation always does: `spec.scope` is immutable,
//! and every entry of `status.storedVersions` must stay in `spec.versions`.
//!
//! In the same cluster, catalog and run, concurrently with the pairs: the `olm-v1`
//! validator's rules against v1.5.1, a package per rule whose bundle breaks exactly that rule
//! ([`olm_v1_rules`]).

mod olm_release;
mod olm_v1_rules;
mod real;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail, ensure};
use bundle_tool::upgrade::crd_rules::{Crd, check_crd};
use e2e::ControlPlane;
use e2e::node::RealNode;
use e2e::olm_v1_on_node::{OlmV1OnNode, OlmV1Release, condition, olm_v1_resource};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use olm_release::wait_for;
use serde_json::{Value, json};

const CATALOG: &str = "crd-pairs";
/// Where the fixtures are, relative to the workspace.
const PAIRS_DIR: &str = "bundle-tool/tests/fixtures/upgrade/crd-pairs";
/// The beginning of each CRD's part of the preflight's error (v1.5.1
/// `internal/operator-controller/rukpak/preflights/crdupgradesafety/crdupgradesafety.go`,
/// `runPreflight`).
const PREFLIGHT_PREFIX: &str = "validating upgrade for CRD";

/// A fixture, whether `check-upgrade` refuses it, the rules v1.5.1 names where they are not
/// `check-upgrade`'s, and for the refused ones what the API server answers once the
/// preflight is skipped (`None`: it takes the update).
struct Fixture {
    dir: &'static str,
    refused: bool,
    /// v1.5.1 runs crdify v0.5.0, which has no `pattern`, `nullable` or `oneOf` validation:
    /// such a change is left to its `unhandled` check, which refuses any difference that no
    /// validation handled (v1.5.1's `UnhandledEnforcement: Error`), and prints go-cmp's diff.
    v1_5_rules: Option<&'static [&'static str]>,
    api_server_refuses: Option<&'static str>,
}

impl Fixture {
    /// Whether v1.5.1's Strict preflight refuses the upgrade.
    fn v1_5_refuses(&self) -> bool {
        self.v1_5_rules
            .map_or(self.refused, |rules| !rules.is_empty())
    }
}

static FIXTURES: [Fixture; 10] = [
    Fixture {
        dir: "04-scope-changed",
        refused: true,
        v1_5_rules: None,
        // apiextensions-apiserver's ValidateCustomResourceDefinitionSpecUpdate: scope is
        // immutable once the CRD is Established.
        api_server_refuses: Some("spec.scope: Invalid value: \"Cluster\": field is immutable"),
    },
    Fixture {
        dir: "05-stored-version-removed",
        refused: true,
        v1_5_rules: None,
        // ValidateCustomResourceDefinitionStoredVersions: each stored version must stay in
        // spec.versions (the message goes on: "v1alpha1 was previously a storage version, and
        // must remain in spec.versions until a storage migration ...").
        api_server_refuses: Some(
            "status.storedVersions[0]: Invalid value: \"v1alpha1\": missing from spec.versions",
        ),
    },
    Fixture {
        dir: "08-field-removed",
        refused: true,
        v1_5_rules: None,
        api_server_refuses: None,
    },
    Fixture {
        dir: "10-enum-value-removed",
        refused: true,
        v1_5_rules: None,
        api_server_refuses: None,
    },
    Fixture {
        dir: "16-required-added",
        refused: true,
        v1_5_rules: None,
        api_server_refuses: None,
    },
    Fixture {
        dir: "18-type-changed",
        refused: true,
        v1_5_rules: None,
        api_server_refuses: None,
    },
    Fixture {
        dir: "03-optional-field-added",
        refused: false,
        v1_5_rules: None,
        api_server_refuses: None,
    },
    Fixture {
        dir: "09-enum-value-added",
        refused: false,
        v1_5_rules: None,
        api_server_refuses: None,
    },
    // Where v1.5.1 differs from check-upgrade (which follows v1.11.0, see
    // tests/tests/check_upgrade_oracle.rs): a changed pattern and an added `nullable` are
    // refused by both, under another rule.
    Fixture {
        dir: "33-pattern-changed",
        refused: true,
        v1_5_rules: Some(&["unhandled"]),
        api_server_refuses: None,
    },
    Fixture {
        dir: "35-nullable-added",
        refused: true,
        v1_5_rules: Some(&["unhandled"]),
        api_server_refuses: None,
    },
];

/// One pair as installed: its package (also the ClusterExtension's and the namespace's
/// name), the CRD's name, OLD and NEW with the pair's API group, and `check-upgrade`'s lines.
struct Pair {
    fixture: &'static Fixture,
    package: String,
    crd_name: String,
    old: Value,
    new: Value,
    /// `check-upgrade`'s findings on OLD → NEW, as the preflight's lines.
    lines: BTreeSet<String>,
    /// Their rule names.
    rules: BTreeSet<String>,
}

/// What one pair showed, for the table printed at the end.
struct Outcome {
    pair: String,
    rules: BTreeSet<String>,
    strict: String,
    none: String,
}

fn read_one(path: &Path) -> anyhow::Result<Value> {
    let mut documents = bundle_tool::manifest::read_path(path)?;
    ensure!(
        documents.len() == 1,
        "{}: {} documents",
        path.display(),
        documents.len()
    );
    Ok(documents.remove(0).value)
}

/// The CRD in the API group `group` (its `example.com` replaced in both group and name).
fn regroup(mut crd: Value, group: &str) -> anyhow::Result<Value> {
    ensure!(
        crd["spec"]["group"] == "example.com",
        "a fixture outside example.com"
    );
    let plural = crd["spec"]["names"]["plural"]
        .as_str()
        .context("no plural")?
        .to_string();
    crd["spec"]["group"] = json!(group);
    crd["metadata"]["name"] = json!(format!("{plural}.{group}"));
    Ok(crd)
}

impl Pair {
    fn new(fixture: &'static Fixture) -> anyhow::Result<Pair> {
        let dir = olm_release::repo().join(PAIRS_DIR).join(fixture.dir);
        let number = fixture.dir.split('-').next().context("no number")?;
        let group = format!("pair{number}.example.com");
        let old = regroup(read_one(&dir.join("old.yaml"))?, &group)?;
        let new = regroup(read_one(&dir.join("new.yaml"))?, &group)?;
        let findings = check_crd(&Crd::from_object(&old), &Crd::from_object(&new));
        let lines: BTreeSet<String> = findings.iter().filter_map(|f| f.preflight_text()).collect();
        let rules: BTreeSet<String> = findings.iter().map(|f| f.rule.clone()).collect();
        ensure!(
            lines.is_empty() != fixture.refused,
            "{}: check-upgrade finds {lines:?}; the test takes it as {}",
            fixture.dir,
            if fixture.refused { "refused" } else { "passed" }
        );
        let expect_path = dir.join("expect.yaml");
        let expect: Value = serde_saphyr::from_str(&std::fs::read_to_string(&expect_path)?)
            .with_context(|| expect_path.display().to_string())?;
        let expected_rules: BTreeSet<String> = expect["rules"]
            .as_array()
            .context("expect.yaml has no rules")?
            .iter()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect();
        ensure!(
            rules == expected_rules,
            "{}: check-upgrade names {rules:?} with the pair's own group, expect.yaml {expected_rules:?}",
            fixture.dir
        );
        Ok(Pair {
            fixture,
            package: format!("crd-pair-{number}"),
            crd_name: new["metadata"]["name"]
                .as_str()
                .context("no name")?
                .to_string(),
            old,
            new,
            lines,
            rules,
        })
    }

    /// The manifests of one version: the CRD, and an operator that owns it (a Deployment of
    /// the node's busybox sleeping, its ServiceAccount, and a ClusterRole bound to it, which
    /// makes the bundle `AllNamespaces`, the install mode OLM v1 installs).
    fn manifests(&self, crd: &Value, busybox: &str) -> Vec<Value> {
        let name = &self.package;
        let group = crd["spec"]["group"].clone();
        let plural = crd["spec"]["names"]["plural"].clone();
        let labels = json!({"app.kubernetes.io/name": name});
        vec![
            crd.clone(),
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": name}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": [{"apiGroups": [group], "resources": [plural],
                    "verbs": ["get", "list", "watch"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": name}]}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": name, "labels": labels},
                "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels},
                        "spec": {"serviceAccountName": name,
                            "containers": [{"name": "sleep", "image": busybox,
                                "command": ["sleep", "1000000"]}]}}}}),
        ]
    }
}

/// Runs bundle-tool in `dir`; fails with its output unless it exits 0.
fn bundle_tool(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new(e2e::bundle_tool_binary())
        .current_dir(dir)
        .env(
            bundle_tool::image::SERVER_BINARY_VARIABLE,
            olm_release::static_catalog_server()?,
        )
        .env("SOURCE_DATE_EPOCH", "1764460800")
        .args(args)
        .output()?;
    ensure!(
        output.status.success(),
        "bundle-tool {args:?} in {} failed:\n{}\n{}",
        dir.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn write_manifests(path: &Path, objects: &[Value]) -> anyhow::Result<()> {
    let text: Vec<String> = objects.iter().map(Value::to_string).collect();
    // JSON is YAML: one document each.
    std::fs::write(path, format!("---\n{}\n", text.join("\n---\n")))?;
    Ok(())
}

/// Makes the pairs' bundles with bundle-tool, pushes them and the rule cases' bundles (made
/// already in `work/bundles` and `work/unpushable`), adds them all to one catalog and pushes
/// its image; returns the catalog image by digest.
fn publish(
    pairs: &[Pair],
    rules: &[olm_v1_rules::RuleBundle],
    node: &RealNode,
    work: &Path,
) -> anyhow::Result<String> {
    let started = Instant::now();
    let registry = node.registry();
    let busybox = &node.images().busybox;
    let bundles = work.join("bundles");
    let catalog = work.join("catalog");
    std::fs::create_dir_all(&catalog)?;
    for pair in pairs {
        let project = work.join(&pair.package);
        std::fs::create_dir_all(&project)?;
        for (version, crd) in [("1.0.0", &pair.old), ("1.1.0", &pair.new)] {
            write_manifests(
                &project.join(format!("{version}.yaml")),
                &pair.manifests(crd, busybox),
            )?;
        }
        bundle_tool(
            &project,
            &[
                "init",
                "--manifests",
                "1.0.0.yaml",
                "--package",
                &pair.package,
                "--version",
                "1.0.0",
            ],
        )?;
        let previous = format!("{}.v1.0.0", pair.package);
        for (version, replaces) in [("1.0.0", None), ("1.1.0", Some(previous.as_str()))] {
            let output = bundles.join(&pair.package).join(version);
            let manifests = format!("{version}.yaml");
            let output_arg = output.display().to_string();
            let mut args = vec![
                "generate",
                "--manifests",
                &manifests,
                "--version",
                version,
                "--output",
                &output_arg,
            ];
            if let Some(replaces) = replaces {
                args.extend(["--replaces", replaces]);
            }
            bundle_tool(&project, &args)?;
        }
    }
    let prefix = format!("{registry}/crd-pairs");
    let pushed = bundle_tool(
        work,
        &[
            "push-all",
            "bundles",
            &prefix,
            "--plain-http",
            "--jobs",
            "4",
        ],
    )?;
    println!("bundle-tool push-all:\n{}", pushed.trim());
    for pair in pairs {
        for version in ["1.0.0", "1.1.0"] {
            let image = format!("{prefix}/{}:{version}", pair.package);
            ensure!(
                pushed.contains(&image),
                "push-all did not print {image}:\n{pushed}"
            );
            let folder = bundles.join(&pair.package).join(version);
            bundle_tool(
                work,
                &[
                    "catalog",
                    "add",
                    "catalog",
                    &folder.display().to_string(),
                    "--channels",
                    "stable",
                    "--image",
                    &image,
                ],
            )?;
        }
    }
    olm_v1_rules::push_and_add(rules, work, &prefix, &pushed)?;
    let digest = olm_release::build_and_push_catalog(
        |args| bundle_tool(work, args),
        &work.join("oci-catalog"),
        &format!("{prefix}/catalog:latest"),
    )?;
    println!(
        "{} bundles and the catalog made and pushed: {:.1} s",
        2 * pairs.len() + rules.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(format!("{prefix}/catalog@{digest}"))
}

struct Cluster {
    client: kube::Client,
    node: &'static RealNode,
    olm: OlmV1OnNode,
}

/// The helpers below take the package's name: it is also the ClusterExtension's and the
/// namespace's.
impl Cluster {
    fn extensions(&self) -> Api<DynamicObject> {
        Api::all_with(
            self.client.clone(),
            &olm_v1_resource("ClusterExtension", "clusterextensions"),
        )
    }

    /// OLM v1's pods and logs, and the package's extension and pods.
    fn describe(&self, package: &str) -> String {
        let mut out = self.olm.describe(self.node);
        for args in [
            vec!["get", "clusterextension", package, "-o", "yaml"],
            vec!["get", "all", "-n", package, "-o", "wide"],
        ] {
            if let Ok(output) = self.node.kubectl(&args) {
                out.push_str(&String::from_utf8_lossy(&output.stdout));
                out.push_str(&String::from_utf8_lossy(&output.stderr));
            }
        }
        out
    }

    async fn extension(&self, package: &str) -> anyhow::Result<Value> {
        Ok(self.extensions().get(package).await?.data)
    }

    /// The extension's conditions, one line each, for messages.
    async fn conditions(&self, package: &str) -> String {
        match self.extension(package).await {
            Ok(extension) => extension["status"]["conditions"]
                .as_array()
                .map(|all| {
                    all.iter()
                        .map(|c| {
                            format!(
                                "  {} {} {}: {}",
                                c["type"].as_str().unwrap_or_default(),
                                c["status"].as_str().unwrap_or_default(),
                                c["reason"].as_str().unwrap_or_default(),
                                c["message"].as_str().unwrap_or_default()
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_else(|| "  (no conditions)".into()),
            Err(error) => format!("  (the extension: {error:#})"),
        }
    }

    async fn wait<T, F, Fut>(
        &self,
        package: &str,
        seconds: u64,
        what: &str,
        check: F,
    ) -> anyhow::Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
    {
        wait_for(
            self.node,
            &|| self.describe(package),
            seconds,
            &format!("{package}: {what}"),
            check,
        )
        .await
    }

    /// The installed bundle's name when `Installed` is True.
    async fn installed(&self, package: &str) -> anyhow::Result<Option<String>> {
        let extension = self.extension(package).await?;
        let installed = condition(&extension, "Installed").is_some_and(|c| c["status"] == "True");
        Ok(installed
            .then(|| extension["status"]["install"]["bundle"]["name"].as_str())
            .flatten()
            .map(str::to_string))
    }

    async fn wait_installed(&self, package: &str, version: &str) -> anyhow::Result<()> {
        let bundle = format!("{package}.v{version}");
        self.wait(package, 240, &format!("{bundle} Installed"), || async {
            Ok((self.installed(package).await?.as_deref() == Some(bundle.as_str())).then_some(()))
        })
        .await
    }

    async fn patch(&self, package: &str, patch: Value) -> anyhow::Result<()> {
        self.extensions()
            .patch(package, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        Ok(())
    }

    /// The `Progressing` condition's message.
    async fn progressing(&self, package: &str) -> anyhow::Result<String> {
        let extension = self.extension(package).await?;
        Ok(condition(&extension, "Progressing")
            .and_then(|c| c["message"].as_str())
            .unwrap_or_default()
            .to_string())
    }

    /// Waits until `Progressing` says `needle`; returns its message.
    async fn wait_progressing(
        &self,
        package: &str,
        what: &str,
        needle: &str,
    ) -> anyhow::Result<String> {
        self.wait(package, 120, what, || async {
            let message = self.progressing(package).await?;
            Ok(message.contains(needle).then_some(message))
        })
        .await
    }

    /// The package's namespace, an installer ServiceAccount bound to `cluster-admin` in it,
    /// and a ClusterExtension of the package from the test's catalog at `version`, with
    /// `config` as its `spec.config` if given.
    async fn create_extension(
        &self,
        package: &str,
        version: &str,
        config: Option<Value>,
    ) -> anyhow::Result<()> {
        self.node.namespace(&self.client, package).await?;
        let mut spec = json!({"namespace": package, "serviceAccount": {"name": "installer"},
            "source": {"sourceType": "Catalog", "catalog": {
                "packageName": package, "version": version,
                "selector": {"matchLabels": {
                    "olm.operatorframework.io/metadata.name": CATALOG}}}}});
        if let Some(config) = config {
            spec["config"] = config;
        }
        // These tests are about what operator-controller refuses, not about RBAC: the
        // installer is cluster-admin (olm_v1_install_on_a_real_node installs with the derived
        // RBAC).
        e2e::apply_objects(
            &self.client,
            &[
                json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "installer", "namespace": package}}),
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": format!("{package}-installer")},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cluster-admin"},
                    "subjects": [{"kind": "ServiceAccount", "name": "installer",
                        "namespace": package}]}),
                json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
                    "metadata": {"name": package}, "spec": spec}),
            ],
        )
        .await
    }

    /// One pair, start to end; errors name the pair and show the extension's conditions.
    async fn run(&self, pair: &Pair) -> anyhow::Result<Outcome> {
        match self.run_pair(pair).await {
            Ok(outcome) => Ok(outcome),
            Err(error) => {
                bail!(
                    "{}: {error:#}\nconditions of {}:\n{}",
                    pair.fixture.dir,
                    pair.package,
                    self.conditions(&pair.package).await
                )
            }
        }
    }

    async fn run_pair(&self, pair: &Pair) -> anyhow::Result<Outcome> {
        let name = pair.package.as_str();
        self.create_extension(name, "1.0.0", None).await?;
        self.wait_installed(name, "1.0.0").await?;
        let extension = self.extension(name).await?;
        // No policy written: the default, Strict (or the API server's default, if it writes one).
        let preflight = &extension["spec"]["install"]["preflight"];
        ensure!(
            preflight.is_null() || preflight["crdUpgradeSafety"]["enforcement"] == "Strict",
            "the extension's preflight policy is not the default: {preflight}"
        );
        // The default policy (Strict), moving to 1.1.0.
        self.patch(
            name,
            json!({"spec": {"source": {"catalog": {"version": "1.1.0"}}}}),
        )
        .await?;
        if !pair.fixture.v1_5_refuses() {
            self.wait_installed(name, "1.1.0").await?;
            let message = self.progressing(name).await.unwrap_or_default();
            ensure!(
                !message.contains(PREFLIGHT_PREFIX),
                "installed, yet Progressing names the preflight: {message}"
            );
            return Ok(Outcome {
                pair: pair.fixture.dir.into(),
                rules: pair.rules.clone(),
                strict: "installed 1.1.0".into(),
                none: "(not needed)".into(),
            });
        }
        let prefix = format!("{PREFLIGHT_PREFIX} \"{}\": ", pair.crd_name);
        let message = self
            .wait_progressing(name, "Strict refusing 1.1.0", &prefix)
            .await?;
        let theirs: BTreeSet<String> = message
            .split_once(&prefix)
            .map(|(_, rest)| {
                rest.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let findings: BTreeSet<&String> = theirs.iter().filter(|l| is_finding(l)).collect();
        let their_rules: BTreeSet<String> = findings.iter().map(|l| rule_of(l)).collect();
        let expected_rules: BTreeSet<String> = match pair.fixture.v1_5_rules {
            Some(rules) => rules.iter().map(|r| r.to_string()).collect(),
            None => pair.rules.clone(),
        };
        ensure!(
            their_rules == expected_rules,
            "operator-controller names the rules {their_rules:?}, expected {expected_rules:?} \
             (check-upgrade: {:?}):\n{message}",
            pair.rules
        );
        if pair.fixture.v1_5_rules.is_none() {
            ensure!(
                theirs == pair.lines,
                "operator-controller's lines differ from check-upgrade's:\n{theirs:#?}\n--- check-upgrade:\n{:#?}",
                pair.lines
            );
        }
        let installed = self.installed(name).await?;
        ensure!(
            installed.as_deref() == Some(format!("{name}.v1.0.0").as_str()),
            "after the refusal the installed bundle is {installed:?}, not 1.0.0"
        );
        let strict = message.clone();

        // enforcement None: the preflight is skipped.
        self.patch(
            name,
            json!({"spec": {"install": {"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}}}}),
        )
        .await?;
        let none = match pair.fixture.api_server_refuses {
            None => {
                self.wait_installed(name, "1.1.0").await?;
                "installed 1.1.0".to_string()
            }
            Some(refusal) => {
                let message = self
                    .wait_progressing(name, "the API server refusing the CRD update", refusal)
                    .await?;
                ensure!(
                    !message.contains(PREFLIGHT_PREFIX),
                    "enforcement None, and the preflight still runs: {message}"
                );
                let installed = self.installed(name).await?;
                ensure!(
                    installed.as_deref() == Some(format!("{name}.v1.0.0").as_str()),
                    "the API server refused the CRD, yet the installed bundle is {installed:?}"
                );
                message
            }
        };
        Ok(Outcome {
            pair: pair.fixture.dir.into(),
            rules: pair.rules.clone(),
            strict,
            none,
        })
    }
}

/// Whether a line of the preflight's message is a finding (`rule: message` for a CRD-wide
/// rule, `version: path: rule: message` for the others), not a line of go-cmp's diff that an
/// `unhandled` finding of v1.5.1 carries.
fn is_finding(line: &str) -> bool {
    let parts: Vec<&str> = line.split(": ").collect();
    bundle_tool::upgrade::crd_rules::is_crd_wide(parts[0])
        || (parts.len() >= 3 && parts[1].starts_with('^'))
}

/// The rule a preflight line names: the first field of a CRD-wide line, the third of a
/// version's (`version: path: rule: message`).
fn rule_of(line: &str) -> String {
    let parts: Vec<&str> = line.split(": ").collect();
    if bundle_tool::upgrade::crd_rules::is_crd_wide(parts[0]) {
        parts[0].to_string()
    } else {
        parts.get(2).copied().unwrap_or(line).to_string()
    }
}

#[tokio::test]
async fn v1_5_holds_check_upgrade_and_the_olm_v1_rules() -> anyhow::Result<()> {
    let pairs: Vec<Pair> = FIXTURES
        .iter()
        .map(Pair::new)
        .collect::<anyhow::Result<_>>()?;
    let plane: &'static std::sync::Arc<ControlPlane> =
        Box::leak(Box::new(ControlPlane::shared().await?));
    let node = plane.real_node().await?;
    let client = plane.client().await?;
    // The rule cases' bundles and our validator's findings on them, and the doc's account of
    // them, before the cluster is up.
    let work = tempfile::tempdir()?;
    let started = Instant::now();
    let rules = olm_v1_rules::make(work.path(), &node.images().busybox)?;
    olm_v1_rules::check_doc(&rules)?;
    println!(
        "{} rule cases made and validated: {:.1} s",
        rules.len(),
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let olm = OlmV1OnNode::deploy_release(plane, node, OlmV1Release::InstallerV1_5).await?;
    println!(
        "cert-manager, catalogd and operator-controller v1.5.1 up as pods: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    olm_v1_rules::check_feature_gates(&client).await?;
    let cluster = Cluster {
        client: client.clone(),
        node,
        olm,
    };
    let catalog_image = publish(&pairs, &rules, node, work.path())?;
    e2e::apply_objects(
        &client,
        &[
            json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
            "metadata": {"name": CATALOG},
            "spec": {"source": {"type": "Image", "image": {"ref": catalog_image}}}}),
        ],
    )
    .await?;
    let catalogs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &olm_v1_resource("ClusterCatalog", "clustercatalogs"),
    );
    wait_for(
        node,
        &|| cluster.olm.describe(node),
        150,
        "the ClusterCatalog Serving",
        || async {
            let catalog = catalogs.get(CATALOG).await?.data;
            Ok(condition(&catalog, "Serving")
                .is_some_and(|c| c["status"] == "True")
                .then_some(()))
        },
    )
    .await?;

    // The pairs and the rule cases, all at once.
    let started = Instant::now();
    let (pair_results, rule_results) = futures::future::join(
        futures::future::join_all(pairs.iter().map(|pair| cluster.run(pair))),
        futures::future::join_all(rules.iter().map(|rule| olm_v1_rules::run(&cluster, rule))),
    )
    .await;
    println!(
        "{} pairs and {} rule cases, concurrently: {:.1} s",
        pairs.len(),
        rules.len(),
        started.elapsed().as_secs_f64()
    );
    let mut failures = Vec::new();
    for result in pair_results {
        match result {
            Ok(outcome) => println!(
                "{} | check-upgrade: {:?} | Strict: {} | None: {}",
                outcome.pair,
                outcome.rules,
                outcome.strict.replace('\n', " / "),
                outcome.none.replace('\n', " / ")
            ),
            Err(error) => failures.push(format!("{error:#}")),
        }
    }
    for result in rule_results {
        match result {
            Ok(outcome) => println!(
                "{} ({}) | ours: {} | v1.5.1: {}",
                outcome.rule,
                outcome.package,
                outcome.ours,
                outcome.theirs.replace('\n', " / ")
            ),
            Err(error) => failures.push(format!("{error:#}")),
        }
    }
    ensure!(
        failures.is_empty(),
        "{} of {} pairs and rule cases failed:\n{}",
        failures.len(),
        pairs.len() + rules.len(),
        failures.join("\n\n")
    );
    Ok(())
}
