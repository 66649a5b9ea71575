//! The `olm-v1` validator (`--select-optional name=olm-v1`): will OLM v1 — operator-controller
//! v1.11.0 — install this registry+v1 bundle, and what will it do differently from OLM v0?
//!
//! Errors are what operator-controller refuses: the checks its registry+v1 manifest provider
//! and renderer run before anything is applied, and the resolver's refusal of dependencies.
//! Warnings are what installs but behaves otherwise than under OLM v0. Every finding's detail
//! starts with `olm-v1 <rule>:` so that reports can be counted per rule; docs/olm-v1.md lists
//! each rule with the upstream file and function it mirrors, and quotes upstream's message.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Finding, LoadedBundle};
use crate::manifest::read_stream;
use crate::manifest::text;
use crate::olm_property;

/// The property types the resolver refuses (operator-controller's `NoDependencyValidation`).
const DEPENDENCY_TYPES: [&str; 3] = [
    olm_property::PACKAGE_REQUIRED,
    olm_property::GVK_REQUIRED,
    olm_property::CONSTRAINT,
];

/// API groups an admission webhook's rules may not name.
const FORBIDDEN_GROUPS: [&str; 2] = ["olm.operatorframework.io", "*"];

/// Resources of `admissionregistration.k8s.io` an admission webhook's rules may not name
/// (compared in lower case).
const FORBIDDEN_ADMISSION_RESOURCES: [&str; 5] = [
    "*",
    "mutatingwebhookconfiguration",
    "mutatingwebhookconfigurations",
    "validatingwebhookconfiguration",
    "validatingwebhookconfigurations",
];

fn list<'a>(value: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Collects findings, each with the CSV name as its value and a file.
struct Out {
    name: String,
    csv_file: String,
    findings: Vec<Finding>,
}

impl Out {
    fn error(&mut self, rule: &str, detail: String) {
        let file = self.csv_file.clone();
        self.error_in(rule, detail, file);
    }

    fn error_in(&mut self, rule: &str, detail: String, file: String) {
        self.findings.push(
            Finding::error(self.name.clone(), format!("olm-v1 {rule}: {detail}")).in_file(file),
        );
    }

    fn warning(&mut self, rule: &str, detail: String) {
        let file = self.csv_file.clone();
        self.warning_in(rule, detail, file);
    }

    fn warning_in(&mut self, rule: &str, detail: String, file: String) {
        self.findings.push(
            Finding::warning(self.name.clone(), format!("olm-v1 {rule}: {detail}")).in_file(file),
        );
    }
}

/// The bundle's root folder: `dir`, or its parent when `dir` is the `manifests/` folder itself.
fn bundle_root(dir: &Path) -> PathBuf {
    if dir.join("manifests").is_dir() {
        dir.to_path_buf()
    } else {
        dir.parent()
            .map_or_else(|| dir.to_path_buf(), Path::to_path_buf)
    }
}

/// The findings for `bundle`.
pub fn findings(bundle: &LoadedBundle) -> Vec<Finding> {
    let csv = &bundle.csv;
    let mut out = Out {
        name: text(csv, "/metadata/name").to_string(),
        csv_file: bundle.csv_file.display().to_string(),
        findings: Vec::new(),
    };
    let root = bundle_root(&bundle.dir);
    package_name(&root, &mut out);
    api_services(csv, &mut out);
    dependencies(csv, &root, &mut out);
    install_modes(csv, &mut out);
    deployments(csv, &mut out);
    crds(bundle, &mut out);
    webhooks(bundle, &mut out);
    behaviour(csv, &root, &mut out);
    out.findings.sort_by_key(|f| f.level);
    out.findings
}

/// operator-controller reads the package name from `metadata/annotations.yaml` (that path
/// exactly) and refuses a bundle without one.
fn package_name(root: &Path, out: &mut Out) {
    let path = root.join("metadata").join("annotations.yaml");
    let shown = path.display().to_string();
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => {
            out.error_in(
                "annotations-file",
                format!("cannot read {shown}: {e}; operator-controller reads the bundle's package name from this file and refuses the bundle without it"),
                shown,
            );
            return;
        }
    };
    let package = match read_stream(&path, &String::from_utf8_lossy(&bytes)) {
        Ok(documents) => documents
            .first()
            .map(|d| {
                text(
                    &d.value,
                    "/annotations/operators.operatorframework.io.bundle.package.v1",
                )
                .to_string()
            })
            .unwrap_or_default(),
        Err(e) => {
            out.error_in(
                "annotations-file",
                format!("{e}; operator-controller cannot read the bundle's package name from it and refuses the bundle"),
                shown,
            );
            return;
        }
    };
    if package.is_empty() {
        out.error_in(
            "package-name",
            "\"package name is empty\": operators.operatorframework.io.bundle.package.v1 is missing or empty; operator-controller names everything it installs after the package".into(),
            shown,
        );
    }
}

/// Owned API services: OLM v1 does not run aggregated API servers.
fn api_services(csv: &Value, out: &mut Out) {
    let owned: Vec<String> = list(csv, "/spec/apiservicedefinitions/owned")
        .map(|a| format!("{}/{}", text(a, "/group"), text(a, "/version")))
        .collect();
    if !owned.is_empty() {
        out.error(
            "api-service-definitions",
            format!(
                "\"unsupported bundle: apiServiceDefintions are not supported\": the CSV owns the API service(s) {}; OLM v1 does not register APIService objects or serve their certificates, so the bundle is refused",
                owned.join(", ")
            ),
        );
    }
}

/// Dependencies, found where `opm render` (and so `catalog add` and `release`) turns them
/// into catalog properties: required CRDs and API services of the CSV become
/// `olm.gvk.required`; `metadata/` dependencies become `olm.package.required`,
/// `olm.gvk.required` or stay `olm.constraint`; properties of those types pass as they are.
fn dependencies(csv: &Value, root: &Path, out: &mut Out) {
    let name = out.name.clone();
    let mut found: Vec<(String, String, String)> = Vec::new(); // (type, what, file)
    let csv_file = out.csv_file.clone();
    for crd in list(csv, "/spec/customresourcedefinitions/required") {
        found.push((
            olm_property::GVK_REQUIRED.into(),
            format!(
                "required CRD {} {}",
                text(crd, "/name"),
                text(crd, "/version")
            ),
            csv_file.clone(),
        ));
    }
    for api in list(csv, "/spec/apiservicedefinitions/required") {
        found.push((
            olm_property::GVK_REQUIRED.into(),
            format!(
                "required API service {}/{} {}",
                text(api, "/group"),
                text(api, "/version"),
                text(api, "/kind")
            ),
            csv_file.clone(),
        ));
    }
    if let Some(annotation) = csv
        .pointer("/metadata/annotations/olm.properties")
        .and_then(Value::as_str)
        && let Ok(properties) = serde_json::from_str::<Vec<Value>>(annotation)
    {
        for property in properties {
            let type_ = text(&property, "/type");
            if DEPENDENCY_TYPES.contains(&type_) {
                found.push((
                    type_.to_string(),
                    format!("olm.properties annotation entry {}", property["value"]),
                    csv_file.clone(),
                ));
            }
        }
    }
    // metadata/: like opm, the first document with a non-empty `dependencies` list and the
    // first with a non-empty `properties` list, whatever the file is called.
    let (mut saw_dependencies, mut saw_properties) = (false, false);
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("metadata"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    for file in files {
        let shown = file.display().to_string();
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        let document = match read_stream(&file, &String::from_utf8_lossy(&bytes)) {
            Ok(documents) => documents.into_iter().next().map(|d| d.value),
            Err(e) => {
                out.warning_in(
                    "metadata-file",
                    format!("{e}; opm render skips a metadata file it cannot decode, without a word, so whatever dependencies or properties it declares are not in the catalog: OLM v1 neither refuses the bundle for them nor installs them"),
                    shown,
                );
                continue;
            }
        };
        let Some(document) = document else { continue };
        if !saw_dependencies
            && let Some(entries) = document["dependencies"]
                .as_array()
                .filter(|d| !d.is_empty())
        {
            saw_dependencies = true;
            for entry in entries {
                let type_ = match text(entry, "/type") {
                    olm_property::PACKAGE => olm_property::PACKAGE_REQUIRED,
                    olm_property::GVK => olm_property::GVK_REQUIRED,
                    other => other,
                };
                if DEPENDENCY_TYPES.contains(&type_) {
                    found.push((
                        type_.to_string(),
                        format!("dependency {} {}", text(entry, "/type"), entry["value"]),
                        shown.clone(),
                    ));
                }
            }
        }
        if !saw_properties
            && let Some(entries) = document["properties"].as_array().filter(|p| !p.is_empty())
        {
            saw_properties = true;
            for entry in entries {
                let type_ = text(entry, "/type");
                if DEPENDENCY_TYPES.contains(&type_) {
                    found.push((
                        type_.to_string(),
                        format!("property {}", entry["value"]),
                        shown.clone(),
                    ));
                }
            }
        }
    }
    for (type_, what, file) in found {
        out.error_in(
            "dependencies",
            format!(
                "\"bundle {name:?} has a dependency declared via property {type_:?} which is currently not supported\": the {what} becomes an {type_} property in the catalog; OLM v1 resolves no dependencies and refuses the bundle, so the admin must install what it needs first and the bundle must not declare it"
            ),
            file,
        );
    }
}

/// The install modes marked supported.
fn supported_modes(csv: &Value) -> BTreeSet<String> {
    list(csv, "/spec/installModes")
        .filter(|m| m["supported"] == true)
        .map(|m| text(m, "/type").to_string())
        .collect()
}

fn show_modes(modes: &BTreeSet<String>) -> String {
    format!("[{}]", modes.iter().cloned().collect::<Vec<_>>().join(" "))
}

/// Without the SingleOwnNamespaceInstallSupport gate (alpha, off by default) AllNamespaces
/// is needed; with it, one of AllNamespaces, SingleNamespace and OwnNamespace.
fn install_modes(csv: &Value, out: &mut Out) {
    let modes = supported_modes(csv);
    let usable = ["AllNamespaces", "SingleNamespace", "OwnNamespace"];
    if !usable.iter().any(|m| modes.contains(*m)) {
        out.error(
            "install-modes",
            format!(
                "\"unsupported bundle: bundle must support at least one of [AllNamespaces SingleNamespace OwnNamespace] install modes\": the CSV supports {}; OLM v1 has no MultiNamespace install, gate or not",
                show_modes(&modes)
            ),
        );
    } else if !modes.contains("AllNamespaces") {
        out.error(
            "all-namespaces",
            format!(
                "\"unsupported bundle: bundle does not support AllNamespaces install mode\": the CSV supports {}; OLM v1 installs into all namespaces unless the cluster's operator-controller runs with the alpha feature gate SingleOwnNamespaceInstallSupport (off by default), and then the ClusterExtension must name the watched namespace in spec.config.inline.watchNamespace",
                show_modes(&modes)
            ),
        );
    }
}

/// The DNS-1123 subdomain problems of `name`, in apimachinery's words.
fn subdomain_errors(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    if !super::csv_metadata::is_dns_subdomain(name) {
        errors.push(super::csv_metadata::SUBDOMAIN_RULE.to_string());
    }
    errors.sort();
    errors
}

/// Deployment names: unique and valid object names.
fn deployments(csv: &Value, out: &mut Out) {
    let names: Vec<&str> = list(csv, "/spec/install/spec/deployments")
        .map(|d| text(d, "/name"))
        .collect();
    let mut seen = BTreeSet::new();
    let mut duplicates = BTreeSet::new();
    for name in &names {
        if !seen.insert(*name) {
            duplicates.insert(*name);
        }
    }
    for name in duplicates {
        out.error(
            "deployment-names-unique",
            format!("\"cluster service version contains duplicate strategy deployment spec '{name}'\": operator-controller creates one Deployment per entry, named after it"),
        );
    }
    for name in seen {
        let errors = subdomain_errors(name);
        if !errors.is_empty() {
            out.error(
                "deployment-name-dns1123",
                format!(
                    "\"invalid cluster service version strategy deployment name '{name}': {}\": the name becomes the Deployment's name",
                    errors.join(", ")
                ),
            );
        }
    }
}

/// CRDs: unique names, every owned one in the bundle, convertible ones not preserving unknown
/// fields, and served by an API the cluster still has.
fn crds(bundle: &LoadedBundle, out: &mut Out) {
    let csv = &bundle.csv;
    let mut names = BTreeSet::new();
    let mut duplicates = BTreeSet::new();
    for (_, crd) in &bundle.crds {
        let name = text(crd, "/metadata/name");
        if !names.insert(name) {
            duplicates.insert(name);
        }
    }
    for name in duplicates {
        out.error(
            "crd-names-unique",
            format!("\"bundle contains duplicate custom resource definition '{name}'\""),
        );
    }
    let missing: BTreeSet<&str> = list(csv, "/spec/customresourcedefinitions/owned")
        .map(|o| text(o, "/name"))
        .filter(|n| !names.contains(n))
        .collect();
    for name in missing {
        out.error(
            "owned-crds-present",
            format!("\"cluster service definition references owned custom resource definition '{name}' not found in bundle\": operator-controller matches owned CRDs to the bundle's CRDs by name"),
        );
    }
    let converted: BTreeSet<&str> = list(csv, "/spec/webhookdefinitions")
        .filter(|w| text(w, "/type") == "ConversionWebhook")
        .flat_map(|w| list(w, "/conversionCRDs"))
        .filter_map(Value::as_str)
        .collect();
    for (file, crd) in &bundle.crds {
        let name = text(crd, "/metadata/name");
        let shown = file.display().to_string();
        if converted.contains(name) && crd["spec"]["preserveUnknownFields"] == true {
            out.error_in(
                "conversion-preserve-unknown-fields",
                format!("\"custom resource definition '{name}' must have .spec.preserveUnknownFields set to false to let API Server call webhook to do the conversion\""),
                shown.clone(),
            );
        }
        if text(crd, "/apiVersion") == "apiextensions.k8s.io/v1beta1" {
            out.error_in(
                "crd-v1beta1",
                format!("\"no matches for kind \"CustomResourceDefinition\" in version \"apiextensions.k8s.io/v1beta1\"\": CRD {name} is apiextensions.k8s.io/v1beta1; operator-controller reads bundle CRDs into the apiextensions.k8s.io/v1 type but keeps their apiVersion, and no API server serves v1beta1 CRDs since Kubernetes 1.22, so the install fails (the v1beta1-only fields, spec.version and spec.validation, would be dropped anyway)"),
                shown,
            );
        }
    }
}

/// Webhook definitions: the renderer's checks, and the certificate provider they need.
fn webhooks(bundle: &LoadedBundle, out: &mut Out) {
    let csv = &bundle.csv;
    let webhooks: Vec<&Value> = list(csv, "/spec/webhookdefinitions").collect();
    if webhooks.is_empty() {
        return;
    }
    let kind = |w: &Value| text(w, "/type").to_string();
    let name = |w: &Value| text(w, "/generateName").to_string();

    let modes = supported_modes(csv);
    let only_all = modes.len() == 1 && modes.contains("AllNamespaces");
    for webhook in webhooks.iter().filter(|w| kind(w) == "ConversionWebhook") {
        if !only_all {
            out.error(
                "conversion-webhook-all-namespaces",
                format!(
                    "\"bundle contains conversion webhook {:?} and supports install modes {} - conversion webhooks are only supported for bundles that only support AllNamespaces install mode\": a CRD's conversion serves every namespace",
                    name(webhook),
                    show_modes(&modes)
                ),
            );
        }
    }

    let deployments: BTreeSet<&str> = list(csv, "/spec/install/spec/deployments")
        .map(|d| text(d, "/name"))
        .collect();
    let mut dangling: Vec<(String, String, String)> = webhooks
        .iter()
        .filter(|w| !deployments.contains(text(w, "/deploymentName")))
        .map(|w| (text(w, "/deploymentName").to_string(), kind(w), name(w)))
        .collect();
    dangling.sort();
    for (deployment, type_, webhook) in dangling {
        out.error(
            "webhook-deployment",
            format!("\"webhook of type '{type_}' with name '{webhook}' references non-existent deployment '{deployment}'\": the webhook's Service selects that deployment's pods"),
        );
    }

    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut duplicates: BTreeSet<(String, String)> = BTreeSet::new();
    for webhook in &webhooks {
        let key = (kind(webhook), name(webhook));
        if !seen.insert(key.clone()) {
            duplicates.insert(key);
        }
    }
    for (type_, webhook) in duplicates {
        out.error(
            "webhook-names-unique",
            format!("\"duplicate webhook '{webhook}' of type '{type_}'\""),
        );
    }
    for (type_, webhook) in &seen {
        let errors = subdomain_errors(webhook);
        if !errors.is_empty() {
            out.error(
                "webhook-name-dns1123",
                format!(
                    "\"webhook of type '{type_}' has invalid name '{webhook}': {}\": the name becomes the webhook configuration's name",
                    errors.join(",")
                ),
            );
        }
    }

    let mut by_crd: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut conversion: Vec<&Value> = webhooks
        .iter()
        .copied()
        .filter(|w| kind(w) == "ConversionWebhook")
        .collect();
    conversion.sort_by_key(|w| name(w));
    let owned: BTreeSet<&str> = list(csv, "/spec/customresourcedefinitions/owned")
        .map(|o| text(o, "/name"))
        .collect();
    for webhook in &conversion {
        let mut crds: Vec<&str> = list(webhook, "/conversionCRDs")
            .filter_map(Value::as_str)
            .collect();
        crds.sort();
        for crd in crds {
            by_crd.entry(crd).or_default().insert(name(webhook));
            if !owned.contains(crd) {
                out.error(
                    "conversion-crds-owned",
                    format!("\"conversion webhook '{}' references custom resource definition '{crd}' not owned bundle\": OLM v1 only rewrites the conversion of CRDs the bundle owns", name(webhook)),
                );
            }
        }
    }
    for (crd, names) in by_crd.iter().filter(|(_, n)| n.len() > 1) {
        out.error(
            "conversion-crds-unique",
            format!(
                "\"conversion webhooks [{}] reference same custom resource definition '{crd}'\": a CRD has one conversion webhook",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            ),
        );
    }

    for webhook in webhooks.iter().filter(|w| kind(w) != "ConversionWebhook") {
        for rule in list(webhook, "/rules") {
            for group in list(rule, "/apiGroups").filter_map(Value::as_str) {
                if FORBIDDEN_GROUPS.contains(&group) {
                    out.error(
                        "webhook-rules",
                        format!("\"webhook {:?} contains forbidden rule: admission webhook rules cannot reference API group {group:?}\": a faulty webhook on OLM's own objects or on every group could block removing it", name(webhook)),
                    );
                }
                if group == "admissionregistration.k8s.io" {
                    for resource in list(rule, "/resources").filter_map(Value::as_str) {
                        if FORBIDDEN_ADMISSION_RESOURCES.contains(&resource.to_lowercase().as_str())
                        {
                            out.error(
                                "webhook-rules",
                                format!("\"webhook {:?} contains forbidden rule: admission webhook rules cannot reference resource {resource:?} for API group {group:?}\": a faulty webhook on webhook configurations could block deleting itself", name(webhook)),
                            );
                        }
                    }
                }
            }
        }
    }

    let types: BTreeSet<String> = webhooks.iter().map(|w| kind(w)).collect();
    out.warning(
        "certificate-provider",
        format!(
            "the CSV defines {} webhook(s) ({}); OLM v1 does not make their serving certificates itself: operator-controller (WebhookProviderCertManager, on by default) renders a cert-manager Issuer and Certificate for them, so cert-manager must be installed on the cluster before this bundle, else the install fails (on OpenShift the service CA provider is used instead)",
            webhooks.len(),
            types.into_iter().collect::<Vec<_>>().join(", ")
        ),
    );
}

/// What installs under OLM v1 but is not acted on as OLM v0 acts on it.
fn behaviour(csv: &Value, root: &Path, out: &mut Out) {
    let min_kube = text(csv, "/spec/minKubeVersion").trim();
    if !min_kube.is_empty() {
        out.warning(
            "min-kube-version",
            format!("spec.minKubeVersion {min_kube} is not checked by OLM v1: operator-controller installs the bundle on any cluster version, where OLM v0 refuses older clusters"),
        );
    }

    // olm.maxOpenShiftVersion, from the CSV annotation or metadata/properties.yaml.
    let mut properties: Vec<Value> = csv
        .pointer("/metadata/annotations/olm.properties")
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok())
        .unwrap_or_default();
    let properties_file = root.join("metadata").join("properties.yaml");
    if let Ok(bytes) = std::fs::read(&properties_file)
        && let Ok(documents) = read_stream(&properties_file, &String::from_utf8_lossy(&bytes))
        && let Some(document) = documents.into_iter().next()
    {
        properties.extend(
            document.value["properties"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
    }
    for property in properties
        .iter()
        .filter(|p| text(p, "/type") == olm_property::MAX_OPENSHIFT_VERSION)
    {
        out.warning(
            "max-openshift-version",
            format!("property olm.maxOpenShiftVersion {} is not enforced by operator-controller: it only copies the bundle's properties into an annotation for other components to read; OpenShift's own checks may act on it, OLM v1 does not", property["value"]),
        );
    }

    // The OperatorCondition API: OLM v1 creates no OperatorCondition for the operator.
    let strategy = &csv["spec"]["install"]["spec"];
    let uses_conditions = ["permissions", "clusterPermissions"]
        .iter()
        .flat_map(|key| strategy[*key].as_array().into_iter().flatten())
        .flat_map(|p| p["rules"].as_array().into_iter().flatten())
        .any(|rule| {
            let has = |key: &str, wanted: &[&str]| {
                rule[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .any(|v| wanted.contains(&v))
            };
            has("apiGroups", &["operators.coreos.com"])
                && has(
                    "resources",
                    &["operatorconditions", "operatorconditions/status"],
                )
        });
    if uses_conditions {
        out.warning(
            "operator-conditions",
            "the CSV grants the operator rights on operators.coreos.com operatorconditions: OLM v1 does not support the OperatorCondition API (it creates no OperatorCondition and sets no OPERATOR_CONDITION_NAME), so an operator that reads or writes its condition fails at start or later".into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A bundle folder with `csv`, `crds` and `metadata/` files, written under `dir`.
    fn write_bundle(dir: &Path, csv: &Value, crds: &[Value], metadata: &[(&str, &str)]) {
        std::fs::create_dir_all(dir.join("manifests")).unwrap();
        std::fs::create_dir_all(dir.join("metadata")).unwrap();
        std::fs::write(
            dir.join("manifests/csv.yaml"),
            serde_json::to_string(csv).unwrap(),
        )
        .unwrap();
        for (i, crd) in crds.iter().enumerate() {
            std::fs::write(
                dir.join(format!("manifests/crd{i}.yaml")),
                serde_json::to_string(crd).unwrap(),
            )
            .unwrap();
        }
        for (name, content) in metadata {
            std::fs::write(dir.join("metadata").join(name), content).unwrap();
        }
    }

    const ANNOTATIONS: (&str, &str) = (
        "annotations.yaml",
        "annotations:\n  operators.operatorframework.io.bundle.package.v1: op\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n",
    );

    /// A CSV OLM v1 installs without a finding.
    fn good_csv() -> Value {
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "op.v1.0.0"},
            "spec": {
                "displayName": "Op",
                "version": "1.0.0",
                "installModes": [
                    {"type": "OwnNamespace", "supported": true},
                    {"type": "SingleNamespace", "supported": true},
                    {"type": "MultiNamespace", "supported": false},
                    {"type": "AllNamespaces", "supported": true}
                ],
                "customresourcedefinitions": {"owned": [
                    {"name": "widgets.example.com", "version": "v1", "kind": "Widget"}
                ]},
                "install": {"strategy": "deployment", "spec": {"deployments": [
                    {"name": "op-controller", "spec": {"template": {"spec": {"containers": [{"name": "m", "image": "x"}]}}}}
                ]}}
            }
        })
    }

    fn crd(name: &str) -> Value {
        let (plural, group) = name.split_once('.').unwrap();
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "names": {"kind": "Widget", "plural": plural}, "scope": "Namespaced",
                     "versions": [{"name": "v1", "served": true, "storage": true}]}
        })
    }

    /// The `olm-v1 <rule>` names of the findings for a bundle built from the parts given,
    /// each with its level's first letter (`E:` or `W:`).
    fn rules(csv: Value, crds: &[Value], metadata: &[(&str, &str)]) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        write_bundle(dir.path(), &csv, crds, metadata);
        let bundle = super::super::load_bundle(dir.path()).expect("loads");
        findings(&bundle)
            .iter()
            .map(|f| {
                let rule = f
                    .detail
                    .strip_prefix("olm-v1 ")
                    .and_then(|d| d.split(':').next())
                    .unwrap_or("?");
                let level = match f.level {
                    super::super::Level::Error => "E",
                    super::super::Level::Warning => "W",
                };
                format!("{level}:{rule}")
            })
            .collect()
    }

    fn with(mut csv: Value, pointer: &str, value: Value) -> Value {
        *csv.pointer_mut(pointer).unwrap() = value;
        csv
    }

    fn with_spec(mut csv: Value, key: &str, value: Value) -> Value {
        csv["spec"][key] = value;
        csv
    }

    #[test]
    fn a_plain_all_namespaces_bundle_has_no_finding() {
        assert_eq!(
            rules(good_csv(), &[crd("widgets.example.com")], &[ANNOTATIONS]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_bundle_without_annotations_or_package_is_refused() {
        assert_eq!(
            rules(good_csv(), &[crd("widgets.example.com")], &[]),
            ["E:annotations-file"]
        );
        assert_eq!(
            rules(
                good_csv(),
                &[crd("widgets.example.com")],
                &[("annotations.yaml", "annotations:\n  x: y\n")]
            ),
            ["E:package-name"]
        );
        assert_eq!(
            rules(
                good_csv(),
                &[crd("widgets.example.com")],
                &[("annotations.yaml", "annotations: [\n")]
            ),
            ["E:annotations-file", "W:metadata-file"]
        );
    }

    #[test]
    fn owned_api_services_are_refused() {
        let csv = with_spec(
            good_csv(),
            "apiservicedefinitions",
            json!({"owned": [{"group": "metrics.example.com", "version": "v1", "kind": "M", "name": "m"}]}),
        );
        assert_eq!(
            rules(csv, &[crd("widgets.example.com")], &[ANNOTATIONS]),
            ["E:api-service-definitions"]
        );
    }

    #[test]
    fn every_kind_of_dependency_is_refused() {
        let csv = with(
            good_csv(),
            "/spec/customresourcedefinitions",
            json!({
                "owned": [{"name": "widgets.example.com", "version": "v1", "kind": "Widget"}],
                "required": [{"name": "gadgets.other.io", "version": "v1", "kind": "Gadget"}]
            }),
        );
        let dependencies = (
            "dependencies.yaml",
            "dependencies:\n- type: olm.package\n  value: {packageName: base, version: '>=1.0.0'}\n- type: olm.gvk\n  value: {group: a.io, kind: A, version: v1}\n- type: olm.constraint\n  value: {failureMessage: x, cel: {rule: 'true'}}\n- type: olm.label\n  value: {label: x}\n",
        );
        let found = rules(
            csv,
            &[crd("widgets.example.com")],
            &[ANNOTATIONS, dependencies],
        );
        assert_eq!(found, ["E:dependencies"; 4], "{found:?}");
        // Only the required CRD, in the CSV.
        let csv = with_spec(
            good_csv(),
            "apiservicedefinitions",
            json!({"required": [{"group": "m.io", "version": "v1", "kind": "M", "name": "m"}]}),
        );
        assert_eq!(
            rules(csv, &[crd("widgets.example.com")], &[ANNOTATIONS]),
            ["E:dependencies"]
        );
    }

    #[test]
    fn our_dependencies_are_the_ones_render_puts_in_the_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let mut csv = good_csv();
        csv["spec"]["customresourcedefinitions"]["required"] =
            json!([{"name": "gadgets.other.io", "version": "v1", "kind": "Gadget"}]);
        write_bundle(
            dir.path(),
            &csv,
            &[crd("widgets.example.com")],
            &[
                ANNOTATIONS,
                (
                    "deps.yaml",
                    "dependencies:\n- type: olm.package\n  value: {packageName: base, version: '>=1.0.0'}\n",
                ),
            ],
        );
        let rendered = crate::catalog::render::render_bundle_dir(dir.path(), "").unwrap();
        let mut in_catalog: Vec<String> = rendered
            .properties
            .iter()
            .map(|p| p.type_.to_string())
            .filter(|t| DEPENDENCY_TYPES.contains(&t.as_str()))
            .collect();
        in_catalog.sort();
        let bundle = super::super::load_bundle(dir.path()).unwrap();
        let mut ours: Vec<String> = findings(&bundle)
            .iter()
            .filter(|f| f.detail.starts_with("olm-v1 dependencies"))
            .map(|f| {
                DEPENDENCY_TYPES
                    .iter()
                    .find(|t| f.detail.contains(&format!("property \"{t}\"")))
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| f.detail.clone())
            })
            .collect();
        ours.sort();
        assert_eq!(in_catalog, ["olm.gvk.required", "olm.package.required"]);
        assert_eq!(ours, in_catalog);
    }

    #[test]
    fn install_modes_without_all_namespaces_are_refused() {
        let modes = |all: bool, own: bool, multi: bool| {
            with_spec(
                good_csv(),
                "installModes",
                json!([
                    {"type": "OwnNamespace", "supported": own},
                    {"type": "SingleNamespace", "supported": false},
                    {"type": "MultiNamespace", "supported": multi},
                    {"type": "AllNamespaces", "supported": all}
                ]),
            )
        };
        let crds = [crd("widgets.example.com")];
        assert_eq!(
            rules(modes(false, true, false), &crds, &[ANNOTATIONS]),
            ["E:all-namespaces"]
        );
        assert_eq!(
            rules(modes(false, false, true), &crds, &[ANNOTATIONS]),
            ["E:install-modes"]
        );
        assert!(rules(modes(true, false, true), &crds, &[ANNOTATIONS]).is_empty());
    }

    #[test]
    fn deployment_names_must_be_unique_object_names() {
        let deployment = |name: &str| json!({"name": name, "spec": {"template": {"spec": {"containers": [{"name": "m", "image": "x"}]}}}});
        let csv = with(
            good_csv(),
            "/spec/install/spec/deployments",
            json!([deployment("a"), deployment("a"), deployment("Bad_Name")]),
        );
        assert_eq!(
            rules(csv, &[crd("widgets.example.com")], &[ANNOTATIONS]),
            ["E:deployment-names-unique", "E:deployment-name-dns1123"]
        );
    }

    #[test]
    fn crds_are_unique_owned_ones_present_and_v1() {
        let mut beta = crd("widgets.example.com");
        beta["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
        let csv = with(
            good_csv(),
            "/spec/customresourcedefinitions/owned",
            json!([
                {"name": "widgets.example.com", "version": "v1", "kind": "Widget"},
                {"name": "gizmos.example.com", "version": "v1", "kind": "Gizmo"}
            ]),
        );
        let found = rules(csv, &[crd("widgets.example.com"), beta], &[ANNOTATIONS]);
        assert_eq!(
            found,
            [
                "E:crd-names-unique",
                "E:owned-crds-present",
                "E:crd-v1beta1"
            ],
            "{found:?}"
        );
    }

    fn webhook(type_: &str, name: &str, deployment: &str, extra: Value) -> Value {
        let mut w = json!({"type": type_, "generateName": name, "deploymentName": deployment,
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "containerPort": 443});
        for (k, v) in extra.as_object().unwrap() {
            w[k] = v.clone();
        }
        w
    }

    #[test]
    fn a_conversion_webhook_needs_all_namespaces_only_and_a_certificate_provider() {
        let csv = with_spec(
            good_csv(),
            "webhookdefinitions",
            json!([webhook(
                "ConversionWebhook",
                "cwidgets.example.com",
                "op-controller",
                json!({"conversionCRDs": ["widgets.example.com"]})
            )]),
        );
        // The good CSV also supports OwnNamespace and SingleNamespace.
        assert_eq!(
            rules(csv.clone(), &[crd("widgets.example.com")], &[ANNOTATIONS]),
            [
                "E:conversion-webhook-all-namespaces",
                "W:certificate-provider"
            ]
        );
        let only_all = with_spec(
            csv,
            "installModes",
            json!([{"type": "AllNamespaces", "supported": true}, {"type": "OwnNamespace", "supported": false}]),
        );
        let mut preserving = crd("widgets.example.com");
        preserving["spec"]["preserveUnknownFields"] = json!(true);
        assert_eq!(
            rules(
                only_all.clone(),
                &[crd("widgets.example.com")],
                &[ANNOTATIONS]
            ),
            ["W:certificate-provider"]
        );
        assert_eq!(
            rules(only_all, &[preserving], &[ANNOTATIONS]),
            [
                "E:conversion-preserve-unknown-fields",
                "W:certificate-provider"
            ]
        );
    }

    #[test]
    fn webhook_definitions_get_the_renderers_checks() {
        let csv = with_spec(
            good_csv(),
            "webhookdefinitions",
            json!([
                webhook(
                    "ValidatingAdmissionWebhook",
                    "v.example.com",
                    "missing",
                    json!({})
                ),
                webhook(
                    "ValidatingAdmissionWebhook",
                    "v.example.com",
                    "op-controller",
                    json!({})
                ),
                webhook(
                    "MutatingAdmissionWebhook",
                    "Bad_Name",
                    "op-controller",
                    json!({
                        "rules": [
                            {"apiGroups": ["*"], "resources": ["pods"], "operations": ["CREATE"], "apiVersions": ["v1"]},
                            {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["ValidatingWebhookConfigurations"], "operations": ["CREATE"], "apiVersions": ["v1"]}
                        ]
                    })
                ),
                webhook(
                    "ConversionWebhook",
                    "c1.example.com",
                    "op-controller",
                    json!({"conversionCRDs": ["widgets.example.com", "other.example.com"]})
                ),
                webhook(
                    "ConversionWebhook",
                    "c2.example.com",
                    "op-controller",
                    json!({"conversionCRDs": ["widgets.example.com"]})
                )
            ]),
        );
        let csv = with_spec(
            csv,
            "installModes",
            json!([{"type": "AllNamespaces", "supported": true}]),
        );
        let found = rules(csv, &[crd("widgets.example.com")], &[ANNOTATIONS]);
        let mut sorted = found.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            [
                "E:conversion-crds-owned",
                "E:conversion-crds-unique",
                "E:webhook-deployment",
                "E:webhook-name-dns1123",
                "E:webhook-names-unique",
                "E:webhook-rules",
                "E:webhook-rules",
                "W:certificate-provider"
            ],
            "{found:?}"
        );
    }

    #[test]
    fn what_installs_but_behaves_differently_is_a_warning() {
        let mut csv = with_spec(good_csv(), "minKubeVersion", json!("1.25.0"));
        csv["metadata"]["annotations"] = json!({
            "olm.properties": "[{\"type\":\"olm.maxOpenShiftVersion\",\"value\":\"4.14\"}]"
        });
        csv["spec"]["install"]["spec"]["clusterPermissions"] = json!([{
            "serviceAccountName": "op",
            "rules": [{"apiGroups": ["operators.coreos.com"], "resources": ["operatorconditions"], "verbs": ["get"]}]
        }]);
        let found = rules(csv, &[crd("widgets.example.com")], &[ANNOTATIONS]);
        assert_eq!(
            found,
            [
                "W:min-kube-version",
                "W:max-openshift-version",
                "W:operator-conditions"
            ]
        );
        // The property may also come from metadata/properties.yaml.
        let found = rules(
            good_csv(),
            &[crd("widgets.example.com")],
            &[
                ANNOTATIONS,
                (
                    "properties.yaml",
                    "properties:\n- type: olm.maxOpenShiftVersion\n  value: '4.16'\n",
                ),
            ],
        );
        assert_eq!(found, ["W:max-openshift-version"]);
    }

    #[test]
    fn the_redis_bundle_gets_only_the_warnings_it_deserves() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle");
        let bundle = super::super::load_bundle(&dir).expect("the Redis bundle loads");
        let found: Vec<String> = findings(&bundle).iter().map(ToString::to_string).collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].starts_with(
            "Warning: Value redis-operator.v0.1.0: olm-v1 certificate-provider: the CSV defines 1 webhook(s) (ConversionWebhook)"
        ));
        assert!(found[1].starts_with(
            "Warning: Value redis-operator.v0.1.0: olm-v1 min-kube-version: spec.minKubeVersion 1.33.0"
        ));
    }
}
