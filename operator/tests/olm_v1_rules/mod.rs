//! The `olm-v1` validator's rules (`bundle-tool/src/validate/olm_v1.rs`, read from
//! operator-controller v1.11.0's source) held against operator-controller v1.5.1 in the
//! cluster of `olm_v1_upgrade_safety_on_a_real_node`.
//!
//! For each rule of docs/olm-v1.md's tables there is a bundle that breaks exactly that rule:
//! a small operator (a CRD, a Deployment of the node's busybox sleeping, its ServiceAccount
//! and a ClusterRole bound to it) made with `bundle-tool init` and `generate`, then changed
//! in one place ([`Case::breaks`]). Our validator must name that rule and no other (the
//! unchanged bundle: no finding). Each bundle is a package of its own in the test's catalog,
//! and a ClusterExtension installs each, all at once. Then, per [`OnV1_5`]:
//!
//! - where v1.5.1 refuses as v1.11.0 does, the `Progressing` message carries the upstream
//!   text our finding quotes, and nothing is installed;
//! - where our finding quotes nothing, or v1.5.1 refuses with another message, the message
//!   carries the text the case names;
//! - where the bundle installs (the warnings, and the errors v1.5.1 does not check), it
//!   reaches `Installed` and what the rule is about is looked at on the cluster.
//!
//! Where v1.5.1 does otherwise than v1.11.0 ([`Case::differs`]), docs/olm-v1.md lists the rule
//! under "Where v1.5.1 and v1.11.0 differ" with v1.5.1's answer ([`check_doc`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::{Value, json};

use crate::Cluster;

/// The document whose tables list the rules.
const DOC: &str = "docs/olm-v1.md";
/// The heading of its list of differences.
const DIFFER_HEADING: &str = "### Where v1.5.1 and v1.11.0 differ";
/// The heading of the section with the rules' tables.
const RULES_HEADING: &str = "## The `olm-v1` validator's rules";

/// How operator-controller v1.5.1 answers a bundle that breaks the rule.
#[derive(Clone, Copy, Debug)]
pub enum OnV1_5 {
    /// Refused: `Progressing` carries the upstream message our finding quotes.
    RefusedAsQuoted,
    /// Refused: `Progressing` carries this text (our finding quotes no upstream message, or
    /// v1.5.1's is another).
    Refused(&'static str),
    /// `Installed` at 1.0.0, and then the check holds on the cluster.
    Installed(Check),
}

/// What is looked at once a bundle is installed.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// Nothing beyond `Installed`.
    Installed,
    /// The operator's Deployment watches its own namespace (`olm.targetNamespaces`).
    WatchesOwnNamespace,
    /// The CRD converts through the bundle's webhook.
    ConversionWebhook,
    /// The ValidatingWebhookConfiguration keeps the rule on the API group `*`.
    RuleOnEveryGroup,
    /// cert-manager's Issuer and Certificate were made for the webhook.
    CertManagerObjects,
    /// The operator's containers get no `OPERATOR_CONDITION_NAME`.
    NoOperatorCondition,
}

/// One rule and the bundle that breaks it.
pub struct Case {
    /// The package (also its ClusterExtension's and namespace's name); its API group is
    /// `<package>.example.com`.
    pub package: &'static str,
    /// The rule, as docs/olm-v1.md's tables and our findings name it.
    pub rule: &'static str,
    /// Our validator's findings on the broken bundle, `E:`/`W:` and the rule.
    pub findings: &'static [&'static str],
    /// The one change that breaks the rule.
    pub breaks: fn(&mut Parts) -> anyhow::Result<()>,
    /// The catalog entry is rendered from the unchanged bundle (with the broken bundle's
    /// image): `catalog add` refuses the broken folder, or cannot tell its package.
    pub entry_from_intact: bool,
    /// The ClusterExtension asks for the package's own namespace as its watch namespace
    /// (`spec.config.inline.watchNamespace`, the gate `SingleOwnNamespaceInstallSupport`).
    pub watch_own_namespace: bool,
    pub v1_5: OnV1_5,
    /// v1.11.0, read from source, answers otherwise: docs/olm-v1.md says what each does.
    pub differs: bool,
}

/// The parts of a bundle folder a case changes; written back after [`Case::breaks`].
pub struct Parts {
    pub dir: PathBuf,
    pub package: String,
    pub group: String,
    pub csv: Value,
    pub crd: Value,
}

impl Parts {
    fn crd_name(&self) -> String {
        format!("widgets.{}", self.group)
    }

    /// Exactly these install modes supported.
    fn install_modes(&mut self, supported: &[&str]) {
        self.csv["spec"]["installModes"] = json!(
            [
                "OwnNamespace",
                "SingleNamespace",
                "MultiNamespace",
                "AllNamespaces"
            ]
            .iter()
            .map(|mode| json!({"type": mode, "supported": supported.contains(mode)}))
            .collect::<Vec<_>>()
        );
    }

    fn webhooks(&mut self, webhooks: Vec<Value>) {
        self.csv["spec"]["webhookdefinitions"] = json!(webhooks);
    }

    /// A validating webhook on `groups`' widgets served by the operator's Deployment: it
    /// matches no object (an object selector nothing carries) and fails open, so that
    /// installing it cannot disturb the cluster.
    fn validating(&self, name: &str, groups: &[&str]) -> Value {
        json!({"type": "ValidatingAdmissionWebhook", "generateName": name,
            "deploymentName": self.package, "containerPort": 443, "targetPort": 9443,
            "webhookPath": "/validate", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "failurePolicy": "Ignore",
            "objectSelector": {"matchLabels": {"example.com/never": "true"}},
            "rules": [{"apiGroups": groups, "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["widgets"]}]})
    }

    /// A conversion webhook for `crds` served by the operator's Deployment.
    fn conversion(&self, name: &str, crds: &[String]) -> Value {
        json!({"type": "ConversionWebhook", "generateName": name,
            "deploymentName": self.package, "containerPort": 443, "targetPort": 9443,
            "webhookPath": "/convert", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "conversionCRDs": crds})
    }
}

/// A case with the defaults: the catalog entry from the broken bundle, no watch namespace,
/// v1.5.1 as v1.11.0.
fn case(
    package: &'static str,
    rule: &'static str,
    findings: &'static [&'static str],
    breaks: fn(&mut Parts) -> anyhow::Result<()>,
    v1_5: OnV1_5,
) -> Case {
    Case {
        package,
        rule,
        findings,
        breaks,
        entry_from_intact: false,
        watch_own_namespace: false,
        v1_5,
        differs: false,
    }
}

/// The cases, one per rule of docs/olm-v1.md's tables (`all-namespaces` twice: without and
/// with a watch namespace).
pub fn cases() -> Vec<Case> {
    use OnV1_5::{Installed, Refused, RefusedAsQuoted};
    vec![
        // opm (and `catalog add`) find the annotations by content, in any file of metadata/;
        // operator-controller reads metadata/annotations.yaml only.
        Case {
            ..case(
                "rule-annotations-file",
                "annotations-file",
                &["E:annotations-file"],
                |p| {
                    let metadata = p.dir.join("metadata");
                    std::fs::rename(
                        metadata.join("annotations.yaml"),
                        metadata.join("bundle-annotations.yaml"),
                    )?;
                    Ok(())
                },
                Refused("open metadata/annotations.yaml: no such file or directory"),
            )
        },
        Case {
            entry_from_intact: true,
            ..case(
                "rule-package-name",
                "package-name",
                &["E:package-name"],
                |p| {
                    let path = p.dir.join("metadata/annotations.yaml");
                    let mut annotations = read_one(&path)?;
                    annotations["annotations"]
                        .as_object_mut()
                        .context("no annotations")?
                        .remove("operators.operatorframework.io.bundle.package.v1")
                        .context("no package annotation")?;
                    write_json(&path, &annotations)
                },
                RefusedAsQuoted,
            )
        },
        case(
            "rule-api-service-definitions",
            "api-service-definitions",
            &["E:api-service-definitions"],
            |p| {
                let group = format!("metrics.{}", p.group);
                p.csv["spec"]["apiservicedefinitions"] = json!({"owned": [{
                    "group": group, "version": "v1", "kind": "Metric",
                    "name": format!("v1.{group}"), "displayName": "Metric",
                    "deploymentName": p.package, "containerPort": 443}]});
                Ok(())
            },
            RefusedAsQuoted,
        ),
        case(
            "rule-dependencies",
            "dependencies",
            &["E:dependencies"],
            |p| {
                p.csv["spec"]["customresourcedefinitions"]["required"] = json!([{
                    "name": "gadgets.dependency.example.com", "version": "v1",
                    "kind": "Gadget", "displayName": "Gadget"}]);
                Ok(())
            },
            RefusedAsQuoted,
        ),
        Case {
            differs: true,
            ..case(
                "rule-all-namespaces",
                "all-namespaces",
                &["E:all-namespaces"],
                |p| {
                    p.install_modes(&["OwnNamespace", "SingleNamespace"]);
                    Ok(())
                },
                Refused(
                    "invalid target namespaces []: supported install modes [OwnNamespace SingleNamespace] do not support targeting all namespaces",
                ),
            )
        },
        Case {
            differs: true,
            watch_own_namespace: true,
            ..case(
                "rule-all-namespaces-watch",
                "all-namespaces",
                &["E:all-namespaces"],
                |p| {
                    p.install_modes(&["OwnNamespace", "SingleNamespace"]);
                    Ok(())
                },
                Installed(Check::WatchesOwnNamespace),
            )
        },
        Case {
            differs: true,
            ..case(
                "rule-install-modes",
                "install-modes",
                &["E:install-modes"],
                |p| {
                    p.install_modes(&["MultiNamespace"]);
                    Ok(())
                },
                Refused(
                    "invalid target namespaces []: supported install modes [MultiNamespace] do not support targeting all namespaces",
                ),
            )
        },
        case(
            "rule-deployment-names-unique",
            "deployment-names-unique",
            &["E:deployment-names-unique"],
            |p| {
                let deployments = p
                    .csv
                    .pointer_mut("/spec/install/spec/deployments")
                    .and_then(Value::as_array_mut)
                    .context("no deployments")?;
                let first = deployments.first().cloned().context("no deployment")?;
                deployments.push(first);
                Ok(())
            },
            RefusedAsQuoted,
        ),
        case(
            "rule-deployment-name-dns1123",
            "deployment-name-dns1123",
            &["E:deployment-name-dns1123"],
            |p| {
                *p.csv
                    .pointer_mut("/spec/install/spec/deployments/0/name")
                    .context("no deployment")? = json!("Rule_Deployment");
                Ok(())
            },
            RefusedAsQuoted,
        ),
        case(
            "rule-crd-names-unique",
            "crd-names-unique",
            &["E:crd-names-unique"],
            |p| write_json(&p.dir.join("manifests/widgets-again.yaml"), &p.crd),
            RefusedAsQuoted,
        ),
        Case {
            entry_from_intact: true,
            ..case(
                "rule-owned-crds-present",
                "owned-crds-present",
                &["E:owned-crds-present"],
                |p| {
                    let owned = p.csv["spec"]["customresourcedefinitions"]["owned"]
                        .as_array_mut()
                        .context("no owned CRDs")?;
                    owned.push(json!({"name": format!("gadgets.{}", p.group),
                        "version": "v1", "kind": "Gadget", "displayName": "Gadget"}));
                    Ok(())
                },
                RefusedAsQuoted,
            )
        },
        case(
            "rule-crd-v1beta1",
            "crd-v1beta1",
            &["E:crd-v1beta1"],
            |p| {
                let spec = p.crd["spec"].clone();
                p.crd = json!({"apiVersion": "apiextensions.k8s.io/v1beta1",
                    "kind": "CustomResourceDefinition", "metadata": p.crd["metadata"],
                    "spec": {"group": spec["group"], "names": spec["names"],
                        "scope": spec["scope"], "version": "v1",
                        "versions": [{"name": "v1", "served": true, "storage": true}],
                        "validation": {"openAPIV3Schema": {"type": "object"}}}});
                Ok(())
            },
            RefusedAsQuoted,
        ),
        // The package is the namespace too: cert-manager refuses a Certificate whose common
        // name, `<deployment>-service.<namespace>`, is longer than 64 bytes.
        Case {
            differs: true,
            ..case(
                "rule-conversion-modes",
                "conversion-webhook-all-namespaces",
                &[
                    "E:conversion-webhook-all-namespaces",
                    "W:certificate-provider",
                ],
                |p| {
                    p.install_modes(&["AllNamespaces", "OwnNamespace"]);
                    let webhook = p.conversion(&format!("cwidgets.{}", p.group), &[p.crd_name()]);
                    p.webhooks(vec![webhook]);
                    Ok(())
                },
                Installed(Check::ConversionWebhook),
            )
        },
        case(
            "rule-conversion-preserve-unknown-fields",
            "conversion-preserve-unknown-fields",
            &[
                "E:conversion-preserve-unknown-fields",
                "W:certificate-provider",
            ],
            |p| {
                let webhook = p.conversion(&format!("cwidgets.{}", p.group), &[p.crd_name()]);
                p.webhooks(vec![webhook]);
                p.crd["spec"]["preserveUnknownFields"] = json!(true);
                Ok(())
            },
            RefusedAsQuoted,
        ),
        case(
            "rule-webhook-deployment",
            "webhook-deployment",
            &["E:webhook-deployment", "W:certificate-provider"],
            |p| {
                let mut webhook =
                    p.validating(&format!("vwidgets.{}", p.group), &[p.group.as_str()]);
                webhook["deploymentName"] = json!("rule-no-such-deployment");
                p.webhooks(vec![webhook]);
                Ok(())
            },
            RefusedAsQuoted,
        ),
        case(
            "rule-webhook-names-unique",
            "webhook-names-unique",
            &["E:webhook-names-unique", "W:certificate-provider"],
            |p| {
                let webhook = p.validating(&format!("vwidgets.{}", p.group), &[p.group.as_str()]);
                p.webhooks(vec![webhook.clone(), webhook]);
                Ok(())
            },
            RefusedAsQuoted,
        ),
        case(
            "rule-webhook-name-dns1123",
            "webhook-name-dns1123",
            &["E:webhook-name-dns1123", "W:certificate-provider"],
            |p| {
                let webhook = p.validating("Rule_Webhook", &[p.group.as_str()]);
                p.webhooks(vec![webhook]);
                Ok(())
            },
            RefusedAsQuoted,
        ),
        case(
            "rule-conversion-crds-unique",
            "conversion-crds-unique",
            &["E:conversion-crds-unique", "W:certificate-provider"],
            |p| {
                let crds = [p.crd_name()];
                let first = p.conversion(&format!("c1.{}", p.group), &crds);
                let second = p.conversion(&format!("c2.{}", p.group), &crds);
                p.webhooks(vec![first, second]);
                Ok(())
            },
            RefusedAsQuoted,
        ),
        case(
            "rule-conversion-crds-owned",
            "conversion-crds-owned",
            &["E:conversion-crds-owned", "W:certificate-provider"],
            |p| {
                let other = [format!("gadgets.{}", p.group)];
                let webhook = p.conversion(&format!("cgadgets.{}", p.group), &other);
                p.webhooks(vec![webhook]);
                Ok(())
            },
            RefusedAsQuoted,
        ),
        Case {
            differs: true,
            ..case(
                "rule-webhook-rules",
                "webhook-rules",
                &["E:webhook-rules", "W:certificate-provider"],
                |p| {
                    let webhook = p.validating(&format!("rules.{}", p.group), &["*"]);
                    p.webhooks(vec![webhook]);
                    Ok(())
                },
                Installed(Check::RuleOnEveryGroup),
            )
        },
        // A dependency in a metadata file opm cannot decode: skipped when the catalog is
        // rendered, so nothing refuses the bundle for it.
        case(
            "rule-metadata-file",
            "metadata-file",
            &["W:metadata-file"],
            |p| {
                std::fs::write(
                    p.dir.join("metadata/dependencies.yaml"),
                    "dependencies:\n- type: olm.package\n  value: {packageName: base-operator, version: '>=1.0.0'\n",
                )?;
                Ok(())
            },
            Installed(Check::Installed),
        ),
        Case {
            differs: true,
            ..case(
                "rule-certificate-provider",
                "certificate-provider",
                &["W:certificate-provider"],
                |p| {
                    let webhook =
                        p.validating(&format!("vwidgets.{}", p.group), &[p.group.as_str()]);
                    p.webhooks(vec![webhook]);
                    Ok(())
                },
                Installed(Check::CertManagerObjects),
            )
        },
        case(
            "rule-min-kube-version",
            "min-kube-version",
            &["W:min-kube-version"],
            |p| {
                p.csv["spec"]["minKubeVersion"] = json!("99.0.0");
                Ok(())
            },
            Installed(Check::Installed),
        ),
        case(
            "rule-max-openshift-version",
            "max-openshift-version",
            &["W:max-openshift-version"],
            |p| {
                p.csv["metadata"]["annotations"]["olm.properties"] =
                    json!(r#"[{"type":"olm.maxOpenShiftVersion","value":"4.1"}]"#);
                Ok(())
            },
            Installed(Check::Installed),
        ),
        case(
            "rule-operator-conditions",
            "operator-conditions",
            &["W:operator-conditions"],
            |p| {
                let rules = p
                    .csv
                    .pointer_mut("/spec/install/spec/clusterPermissions/0/rules")
                    .and_then(Value::as_array_mut)
                    .context("no cluster permissions")?;
                rules.push(json!({"apiGroups": ["operators.coreos.com"],
                    "resources": ["operatorconditions"], "verbs": ["get", "list", "watch"]}));
                Ok(())
            },
            Installed(Check::NoOperatorCondition),
        ),
    ]
}

/// A case's bundle, made: the broken folder, the unchanged one, and our validator's findings.
pub struct RuleBundle {
    pub case: Case,
    pub broken: PathBuf,
    pub intact: PathBuf,
    /// The `olm-v1` findings on the broken bundle: (level letter, rule, detail).
    pub findings: Vec<(String, String, String)>,
}

impl RuleBundle {
    /// The upstream text our finding for the case's rule quotes, if it quotes one: the
    /// detail goes on from `olm-v1 <rule>: ` with `"<upstream text>"`, then `: ` and our
    /// explanation, or ends there.
    pub fn quoted(&self) -> Option<String> {
        let (_, _, detail) = self.findings.iter().find(|(_, r, _)| r == self.case.rule)?;
        let rest = detail
            .strip_prefix(&format!("olm-v1 {}: \"", self.case.rule))?
            .to_string();
        match rest.find("\": ") {
            Some(end) => Some(rest[..end].to_string()),
            None => rest.strip_suffix('"').map(str::to_string),
        }
    }

    /// The text `Progressing` must carry when v1.5.1 refuses the bundle.
    fn refusal(&self) -> anyhow::Result<Option<String>> {
        Ok(match self.case.v1_5 {
            OnV1_5::RefusedAsQuoted => Some(self.quoted().with_context(|| {
                format!(
                    "{}: our finding quotes no upstream text: {:?}",
                    self.case.package, self.findings
                )
            })?),
            OnV1_5::Refused(text) => Some(text.to_string()),
            OnV1_5::Installed(_) => None,
        })
    }
}

fn read_one(path: &Path) -> anyhow::Result<Value> {
    let documents = bundle_tool::manifest::read_path(path)?;
    Ok(documents
        .into_iter()
        .next()
        .with_context(|| format!("{}: empty", path.display()))?
        .value)
}

/// Writes `value` as JSON (which is YAML) to `path`.
fn write_json(path: &Path, value: &Value) -> anyhow::Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(value)?)?;
    Ok(())
}

/// The file of `manifests/` holding the object of `kind`.
fn manifest_of(dir: &Path, kind: &str) -> anyhow::Result<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir.join("manifests"))? {
        let path = entry?.path();
        if read_one(&path)?["kind"] == kind {
            found.push(path);
        }
    }
    ensure!(
        found.len() == 1,
        "{}: {} files of kind {kind}",
        dir.display(),
        found.len()
    );
    Ok(found.remove(0))
}

/// The operator of a case's package: its CRD, ServiceAccount, a ClusterRole on the CRD bound
/// to it (which makes `init` choose AllNamespaces) and a Deployment of busybox sleeping.
fn manifests(package: &str, group: &str, busybox: &str) -> Vec<Value> {
    let labels = json!({"app.kubernetes.io/name": package});
    vec![
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("widgets.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets",
                    "singular": "widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object",
                            "x-kubernetes-preserve-unknown-fields": true}}}}}]}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": package, "namespace": package}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": package},
            "rules": [{"apiGroups": [group], "resources": ["widgets"],
                "verbs": ["get", "list", "watch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": package},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": package},
            "subjects": [{"kind": "ServiceAccount", "name": package, "namespace": package}]}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": package, "namespace": package, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels},
                    "spec": {"serviceAccountName": package,
                        "containers": [{"name": "sleep", "image": busybox,
                            "command": ["sleep", "1000000"]}]}}}}),
    ]
}

/// `bundle-tool validate --select-optional name=olm-v1 -o json` on `dir`: its `olm-v1`
/// findings as (level letter, rule, detail), in its order.
fn our_findings(dir: &Path) -> anyhow::Result<Vec<(String, String, String)>> {
    let output = Command::new(e2e::bundle_tool_binary())
        .arg("validate")
        .arg(dir)
        .args(["--select-optional", "name=olm-v1", "-o", "json"])
        .output()?;
    // 0: passed, 1: an error found; anything else is not a report.
    ensure!(
        matches!(output.status.code(), Some(0 | 1)),
        "bundle-tool validate {}: {}\n{}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("validate's JSON on {}", dir.display()))?;
    let mut findings = Vec::new();
    for finding in report["outputs"].as_array().context("no outputs")? {
        let detail = finding["detail"].as_str().unwrap_or_default();
        let Some(rest) = detail.strip_prefix("olm-v1 ") else {
            continue;
        };
        let level = match finding["type"].as_str() {
            Some("error") => "E",
            Some("warning") => "W",
            other => bail!("a finding of type {other:?}"),
        };
        let rule = rest.split(':').next().unwrap_or_default();
        findings.push((level.to_string(), rule.to_string(), detail.to_string()));
    }
    Ok(findings)
}

/// Makes every case's bundle below `work`: the unchanged bundle in `intact/<package>/1.0.0`,
/// the broken one in `bundles/<package>/1.0.0` (where `push-all` finds it) or, for a bundle
/// `push-all` cannot read, in `unpushable/<package>/1.0.0`; checks our findings on both.
pub fn make(work: &Path, busybox: &str) -> anyhow::Result<Vec<RuleBundle>> {
    let mut made = Vec::new();
    for case in cases() {
        let package = case.package;
        let group = format!("{package}.example.com");
        let project = work.join("rule-projects").join(package);
        std::fs::create_dir_all(&project)?;
        let objects: Vec<String> = manifests(package, &group, busybox)
            .iter()
            .map(Value::to_string)
            .collect();
        std::fs::write(
            project.join("manifests.yaml"),
            format!("---\n{}\n", objects.join("\n---\n")),
        )?;
        crate::bundle_tool(
            &project,
            &[
                "init",
                "--manifests",
                "manifests.yaml",
                "--package",
                package,
                "--version",
                "1.0.0",
            ],
        )?;
        let intact = work.join("intact").join(package).join("1.0.0");
        crate::bundle_tool(
            &project,
            &[
                "generate",
                "--manifests",
                "manifests.yaml",
                "--version",
                "1.0.0",
                "--output",
                &intact.display().to_string(),
            ],
        )?;
        let intact_findings = our_findings(&intact)?;
        ensure!(
            intact_findings.is_empty(),
            "{package}: the unchanged bundle has olm-v1 findings: {intact_findings:#?}"
        );
        let unpushable = case.rule == "annotations-file";
        let broken = work
            .join(if unpushable { "unpushable" } else { "bundles" })
            .join(package)
            .join("1.0.0");
        e2e::copy_dir(&intact, &broken)?;
        let (csv_file, crd_file) = (
            manifest_of(&broken, "ClusterServiceVersion")?,
            manifest_of(&broken, "CustomResourceDefinition")?,
        );
        let mut parts = Parts {
            dir: broken.clone(),
            package: package.to_string(),
            group,
            csv: read_one(&csv_file)?,
            crd: read_one(&crd_file)?,
        };
        (case.breaks)(&mut parts).with_context(|| format!("breaking {package}"))?;
        write_json(&csv_file, &parts.csv)?;
        write_json(&crd_file, &parts.crd)?;

        let findings = our_findings(&broken)?;
        let mut named: Vec<String> = findings
            .iter()
            .map(|(l, r, _)| format!("{l}:{r}"))
            .collect();
        named.sort();
        let mut expected: Vec<String> = case.findings.iter().map(|f| f.to_string()).collect();
        expected.sort();
        ensure!(
            named == expected,
            "{package}: our validator finds {named:?}, the case breaks {expected:?}:\n{findings:#?}"
        );
        let bundle = RuleBundle {
            case,
            broken,
            intact,
            findings,
        };
        bundle.refusal()?;
        made.push(bundle);
    }
    Ok(made)
}

/// After `push-all` pushed `bundles/` under `prefix`: pushes the bundles it cannot read (built
/// with bundle-tool's library from the folder as it is, labels from the file that holds the
/// annotations) and adds every case's bundle to the catalog folder `work/catalog`.
pub fn push_and_add(
    bundles: &[RuleBundle],
    work: &Path,
    prefix: &str,
    pushed: &str,
) -> anyhow::Result<()> {
    for bundle in bundles {
        let package = bundle.case.package;
        let image = format!("{prefix}/{package}:1.0.0");
        if bundle.broken.starts_with(work.join("unpushable")) {
            let annotations = read_one(&bundle.broken.join("metadata/bundle-annotations.yaml"))?;
            let labels: BTreeMap<String, String> = annotations["annotations"]
                .as_object()
                .context("no annotations")?
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
            let built = bundle_tool::image::build_bundle_image(&bundle.broken, &labels)?;
            let layout = work.join("rule-layouts").join(package);
            bundle_tool::image::write_layout(&layout, "1.0.0", &built)?;
            crate::bundle_tool(
                work,
                &[
                    "push",
                    &format!("{}:1.0.0", layout.display()),
                    &image,
                    "--plain-http",
                ],
            )?;
        } else {
            ensure!(
                pushed.contains(&image),
                "push-all did not print {image}:\n{pushed}"
            );
        }
        let entry = if bundle.case.entry_from_intact {
            &bundle.intact
        } else {
            &bundle.broken
        };
        crate::bundle_tool(
            work,
            &[
                "catalog",
                "add",
                "catalog",
                &entry.display().to_string(),
                "--channels",
                "stable",
                "--image",
                &image,
            ],
        )?;
    }
    Ok(())
}

/// What one case showed, for the table printed at the end.
pub struct RuleOutcome {
    pub package: &'static str,
    pub rule: &'static str,
    pub ours: String,
    pub theirs: String,
}

/// One case on the cluster; errors name the package and show the extension's conditions.
pub async fn run(cluster: &Cluster, bundle: &RuleBundle) -> anyhow::Result<RuleOutcome> {
    match run_case(cluster, bundle).await {
        Ok(outcome) => Ok(outcome),
        Err(error) => bail!(
            "{} ({}): {error:#}\nconditions:\n{}",
            bundle.case.package,
            bundle.case.rule,
            cluster.conditions(bundle.case.package).await
        ),
    }
}

async fn run_case(cluster: &Cluster, bundle: &RuleBundle) -> anyhow::Result<RuleOutcome> {
    let package = bundle.case.package;
    let config = bundle
        .case
        .watch_own_namespace
        .then(|| json!({"configType": "Inline", "inline": {"watchNamespace": package}}));
    cluster.create_extension(package, "1.0.0", config).await?;
    let theirs = match (bundle.refusal()?, bundle.case.v1_5) {
        (Some(needle), _) => {
            let message = cluster
                .wait_progressing(package, "refused", &needle)
                .await?;
            let installed = cluster.installed(package).await?;
            ensure!(
                installed.is_none(),
                "refused, yet {installed:?} is installed"
            );
            let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), package);
            let names: Vec<String> = deployments
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .filter_map(|d| d.metadata.name)
                .collect();
            ensure!(
                names.is_empty(),
                "refused, yet the Deployments {names:?} were applied"
            );
            message
        }
        (None, OnV1_5::Installed(check)) => {
            cluster.wait_installed(package, "1.0.0").await?;
            let seen = holds(cluster, bundle, check).await?;
            format!("installed; {seen}")
        }
        (None, other) => bail!("{other:?} without the text of a refusal"),
    };
    let ours = bundle
        .quoted()
        .map(|q| format!("\"{q}\""))
        .unwrap_or_else(|| {
            bundle
                .findings
                .iter()
                .find(|(_, r, _)| r == bundle.case.rule)
                .map(|(_, _, d)| d.chars().take(100).collect())
                .unwrap_or_default()
        });
    Ok(RuleOutcome {
        package,
        rule: bundle.case.rule,
        ours,
        theirs,
    })
}

/// Looks at what the rule is about on the cluster, once the bundle is installed; says what
/// it saw.
async fn holds(cluster: &Cluster, bundle: &RuleBundle, check: Check) -> anyhow::Result<String> {
    let package = bundle.case.package;
    let group = format!("{package}.example.com");
    let client = cluster.client.clone();
    Ok(match check {
        Check::Installed => "nothing else to look at".into(),
        Check::WatchesOwnNamespace => {
            let annotations = operator_deployment(&client, package)
                .await?
                .spec
                .and_then(|s| s.template.metadata)
                .and_then(|m| m.annotations)
                .unwrap_or_default();
            let targets = annotations.get("olm.targetNamespaces");
            ensure!(
                targets.map(String::as_str) == Some(package),
                "the operator's pod template has olm.targetNamespaces {targets:?}, not {package}"
            );
            format!("olm.targetNamespaces {package}")
        }
        Check::ConversionWebhook => {
            let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
            let crd = crds.get(&format!("widgets.{group}")).await?;
            let conversion = crd.spec.conversion.context("the CRD has no conversion")?;
            let service = conversion
                .webhook
                .and_then(|w| w.client_config)
                .and_then(|c| c.service);
            ensure!(
                conversion.strategy == "Webhook" && service.is_some(),
                "the CRD's conversion is {} through {service:?}",
                conversion.strategy
            );
            format!(
                "the CRD converts through the Service {}",
                service.map(|s| s.name).unwrap_or_default()
            )
        }
        Check::RuleOnEveryGroup => {
            let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
            let name = format!("rules.{group}");
            let config = configs.get(&name).await?;
            let groups: Vec<String> = config
                .webhooks
                .unwrap_or_default()
                .into_iter()
                .flat_map(|w| w.rules.unwrap_or_default())
                .flat_map(|r| r.api_groups.unwrap_or_default())
                .collect();
            ensure!(
                groups == ["*"],
                "the ValidatingWebhookConfiguration {name} has the API groups {groups:?}"
            );
            format!("ValidatingWebhookConfiguration {name} with the API group \"*\"")
        }
        Check::CertManagerObjects => {
            let owned = ListParams::default()
                .labels(&format!("olm.operatorframework.io/owner-name={package}"));
            let mut seen = Vec::new();
            for (kind, plural) in [("Issuer", "issuers"), ("Certificate", "certificates")] {
                let resource = ApiResource {
                    group: "cert-manager.io".into(),
                    version: "v1".into(),
                    api_version: "cert-manager.io/v1".into(),
                    kind: kind.into(),
                    plural: plural.into(),
                };
                let api: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), package, &resource);
                let names: Vec<String> = api
                    .list(&owned)
                    .await?
                    .items
                    .into_iter()
                    .filter_map(|o| o.metadata.name)
                    .collect();
                ensure!(
                    names.len() == 1,
                    "{kind}s labelled as the extension's: {names:?}"
                );
                seen.push(format!("{kind} {}", names[0]));
            }
            seen.join(", ")
        }
        Check::NoOperatorCondition => {
            let containers = operator_deployment(&client, package)
                .await?
                .spec
                .and_then(|s| s.template.spec)
                .map(|s| s.containers)
                .unwrap_or_default();
            ensure!(!containers.is_empty(), "the operator has no containers");
            let names: BTreeSet<String> = containers
                .iter()
                .flat_map(|c| c.env.iter().flatten().map(|e| e.name.clone()))
                .collect();
            ensure!(
                !names.contains("OPERATOR_CONDITION_NAME"),
                "the operator's containers get OPERATOR_CONDITION_NAME"
            );
            format!("no OPERATOR_CONDITION_NAME among the env {names:?}")
        }
    })
}

/// The operator's Deployment, named after the package, in the package's namespace.
async fn operator_deployment(client: &kube::Client, package: &str) -> anyhow::Result<Deployment> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), package);
    Ok(deployments.get(package).await?)
}

/// The operator-controller the cluster runs has the gates the cases assume (those of
/// `experimental.yaml`): webhooks through cert-manager, and a watch namespace from the
/// extension's config.
pub async fn check_feature_gates(client: &kube::Client) -> anyhow::Result<()> {
    let deployments: Api<Deployment> =
        Api::namespaced(client.clone(), e2e::olm_v1_on_node::OLM_V1_NAMESPACE);
    let deployment = deployments
        .get("operator-controller-controller-manager")
        .await?;
    let args: Vec<String> = deployment
        .spec
        .and_then(|s| s.template.spec)
        .map(|s| s.containers)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|c| c.args.unwrap_or_default())
        .collect();
    for gate in [
        "--feature-gates=WebhookProviderCertManager=true",
        "--feature-gates=SingleOwnNamespaceInstallSupport=true",
    ] {
        ensure!(
            args.iter().any(|a| a == gate),
            "operator-controller runs without {gate}: {args:?}"
        );
    }
    Ok(())
}

/// Whitespace runs as one space.
fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lines of `doc` from the line `heading` to the next heading of its level or above.
fn section<'a>(doc: &'a str, heading: &str) -> anyhow::Result<Vec<&'a str>> {
    let level = heading.split(' ').next().unwrap_or_default().len();
    let mut lines = doc.lines().skip_while(|l| *l != heading);
    ensure!(lines.next().is_some(), "{DOC} has no line {heading:?}");
    Ok(lines
        .take_while(|l| {
            let hashes = l.chars().take_while(|c| *c == '#').count();
            hashes == 0 || hashes > level || !l[hashes..].starts_with(' ')
        })
        .collect())
}

/// docs/olm-v1.md holds what the cases hold: every rule of its tables has a case, and its
/// list of differences names exactly the rules where v1.5.1 does otherwise, each with what
/// v1.5.1 does (the refusal's text, or that it installs).
pub fn check_doc(bundles: &[RuleBundle]) -> anyhow::Result<()> {
    let path = crate::olm_release::repo().join(DOC);
    let doc = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;

    let tabled: BTreeSet<String> = section(&doc, RULES_HEADING)?
        .iter()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    let cased: BTreeSet<String> = bundles.iter().map(|b| b.case.rule.to_string()).collect();
    ensure!(
        tabled == cased,
        "{DOC}'s rules {tabled:?} are not the cases' {cased:?}"
    );

    // Each item: "- `rule`: ...", continued on indented lines.
    let mut items: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in section(&doc, DIFFER_HEADING)? {
        if let Some(rest) = line.strip_prefix("- `") {
            let rule = rest.split('`').next().unwrap_or_default().to_string();
            items.insert(rule.clone(), line.to_string());
            current = Some(rule);
        } else if line.starts_with("  ") {
            if let Some(item) = current.as_ref().and_then(|r| items.get_mut(r)) {
                item.push(' ');
                item.push_str(line);
            }
        } else {
            current = None;
        }
    }
    let differing: BTreeSet<String> = bundles
        .iter()
        .filter(|b| b.case.differs)
        .map(|b| b.case.rule.to_string())
        .collect();
    let listed: BTreeSet<String> = items.keys().cloned().collect();
    ensure!(
        listed == differing,
        "{DOC}, {DIFFER_HEADING:?}, lists {listed:?}; the cases differ on {differing:?}"
    );
    for bundle in bundles.iter().filter(|b| b.case.differs) {
        let item = normalized(&items[bundle.case.rule]);
        let says = match bundle.case.v1_5 {
            OnV1_5::Refused(text) => normalized(text),
            OnV1_5::RefusedAsQuoted => normalized(&bundle.quoted().unwrap_or_default()),
            OnV1_5::Installed(_) => "installs".to_string(),
        };
        ensure!(
            item.contains(&says),
            "{DOC}: the item for {} does not say {says:?}:\n{item}",
            bundle.case.rule
        );
    }
    Ok(())
}
