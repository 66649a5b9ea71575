//! A config from a published bundle: the way onto `bundle-tool generate` for an operator
//! already in a catalog. The CSV's metadata becomes the config, and its install strategy
//! becomes the manifest set a project would have (a Deployment per deployment, a
//! ServiceAccount, a Role or ClusterRole and its binding per `permissions` or
//! `clusterPermissions` entry, the webhook configurations and Services of its admission
//! webhooks), written beside the config with the bundle's other manifests, its
//! `alm-examples` as samples and its icon. `generate` on these gives the CSV back up to the
//! differences docs/conformance.md lists ("init --from-bundle").

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::{Map, Value, json};

use super::draft::{self, Entry};
use super::{InitError, InitOptions, Plan};
use crate::manifest::{KubeObject, text};

/// The namespace the rebuilt manifests deploy to (generate drops it from the bundle).
pub const NAMESPACE: &str = "operator-system";
/// The rebuilt manifests, beside the config.
pub const MANIFESTS_FILE: &str = "manifests.yaml";
/// The `alm-examples`, beside the config.
pub const SAMPLES_FILE: &str = "samples.yaml";

/// CSV annotations a config key of its own writes, or that generate writes itself.
const ANNOTATIONS_WITH_KEYS: &[(&str, &str)] = &[
    ("capabilities", "capabilities"),
    ("description", "shortDescription"),
    ("repository", "repository"),
    ("support", "support"),
];

/// The config and the files beside it that give back the CSV of the bundle in `dir`.
pub fn plan(dir: &Path, options: &InitOptions) -> Result<Plan, InitError> {
    let not_a_bundle = |why: &str| InitError::NotABundle {
        path: dir.to_path_buf(),
        why: why.to_string(),
    };
    let manifests_dir = dir.join("manifests");
    if !manifests_dir.is_dir() {
        return Err(not_a_bundle(
            "no manifests/ folder: not a registry+v1 bundle",
        ));
    }
    let documents = super::objects_of(crate::manifest::read_path(&manifests_dir)?)?;
    let annotations_path = dir.join("metadata/annotations.yaml");
    let annotations = crate::manifest::read_path(&annotations_path)?
        .into_iter()
        .next()
        .map(|d| d.value["annotations"].clone())
        .unwrap_or(Value::Null);
    let package = options
        .package
        .clone()
        .or_else(|| {
            annotations["operators.operatorframework.io.bundle.package.v1"]
                .as_str()
                .map(str::to_string)
        })
        .ok_or_else(|| {
            not_a_bundle(
                "metadata/annotations.yaml names no package (operators.operatorframework.io.bundle.package.v1)",
            )
        })?;
    let Some(csv) = documents
        .iter()
        .find(|o| o.id.kind == "ClusterServiceVersion")
        .map(|o| o.document.value.clone())
    else {
        return Err(not_a_bundle("no ClusterServiceVersion in manifests/"));
    };
    if csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        return Err(not_a_bundle(
            "the ClusterServiceVersion installs no deployment (spec.install.spec.deployments)",
        ));
    }

    let (objects, samples, extra_accounts) = manifest_set(&csv, &documents);
    let mut files = vec![
        (
            PathBuf::from(MANIFESTS_FILE),
            super::yaml_stream(&objects.iter().collect::<Vec<_>>()).into_bytes(),
        ),
        (
            PathBuf::from(SAMPLES_FILE),
            super::yaml_stream(&samples.iter().collect::<Vec<_>>()).into_bytes(),
        ),
    ];
    let icon = icon_file(&csv);
    if let Some((name, data)) = &icon {
        files.push((PathBuf::from(name), data.clone()));
    }
    let channels: Vec<String> = annotations["operators.operatorframework.io.bundle.channels.v1"]
        .as_str()
        .unwrap_or("alpha")
        .split(',')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    let mut entries = vec![
        Entry::value("package", package.clone()),
        Entry::value(
            "version",
            options
                .version
                .clone()
                .unwrap_or_else(|| text(&csv, "/spec/version").to_string()),
        ),
        Entry::value("manifests", MANIFESTS_FILE).noted(
            "The operator's objects, rebuilt from the bundle's CSV (install strategy, RBAC,\nwebhooks) and its other manifests: from now on, the source to edit.",
        ),
        Entry::value("samples", SAMPLES_FILE).noted("The CSV's alm-examples."),
        Entry::value("output", "bundle"),
        Entry::value("channels", json!(channels)),
    ];
    if let Some(default) =
        annotations["operators.operatorframework.io.bundle.channel.default.v1"].as_str()
    {
        let entry = Entry::value("defaultChannel", default);
        entries.push(if channels.iter().any(|c| c == default) {
            entry
        } else {
            // generate refuses a default channel the bundle does not join; the catalog's
            // default channel is what OLM reads, so the author decides.
            entry.for_the_author(format!(
                "the bundle names {default} as the default channel but joins only {}",
                channels.join(", ")
            ))
        });
    }
    let spec = &csv["spec"];
    if let Some(replaces) = spec["replaces"].as_str() {
        entries.push(Entry::value("replaces", replaces));
    }
    if let Some(skips) = spec["skips"].as_array().filter(|s| !s.is_empty()) {
        entries.push(Entry::value("skips", json!(skips)));
    }
    let csv_annotations = csv["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if let Some(range) = csv_annotations.get("olm.skipRange").and_then(Value::as_str) {
        entries.push(Entry::value("skipRange", range));
    }
    if !extra_accounts.is_empty() {
        entries.push(
            Entry::value("extraServiceAccounts", json!(extra_accounts))
                .noted("Accounts the CSV grants permissions to that no Deployment runs as."),
        );
    }
    entries.push(Entry::section(
        "csv",
        csv_entries(
            &csv,
            &csv_annotations,
            icon.as_ref().map(|(n, _)| n.as_str()),
        ),
    ));
    if let Some(registry) = &options.registry {
        entries.push(super::release_section(&package, &channels, registry));
    }
    let found = vec![
        format!("package   {package}"),
        format!("version   {}", text(&csv, "/spec/version")),
        format!("objects   {} in {MANIFESTS_FILE}", objects.len()),
        format!("samples   {} in {SAMPLES_FILE}", samples.len()),
    ];
    let header = vec![
        format!(
            "`bundle-tool generate` reads this file: the {} bundle's CSV metadata, written by",
            text(&csv, "/metadata/name")
        ),
        format!("`bundle-tool init --from-bundle` with the objects it deploys ({MANIFESTS_FILE})."),
        "Paths are relative to this file. Every key: docs/config.md.".into(),
    ];
    let kube = |values: &[Value], name: &str| -> Result<Vec<KubeObject>, InitError> {
        super::objects_of(
            values
                .iter()
                .map(|v| crate::manifest::Document {
                    location: crate::manifest::SourceLocation {
                        path: PathBuf::from(name),
                        line: 1,
                        column: None,
                    },
                    value: v.clone(),
                })
                .collect(),
        )
    };
    let plan = Plan {
        config: draft::render(&header, &entries),
        files,
        found,
        for_the_author: draft::author_entries(&entries),
        objects: kube(&objects, MANIFESTS_FILE)?,
        samples: kube(&samples, SAMPLES_FILE)?,
    };
    Ok(plan)
}

/// The `csv:` section: every CSV field a config key says, and the CSV's other annotations
/// as they are (those a key says, too, when the key would not write them back the same).
fn csv_entries(csv: &Value, annotations: &Map<String, Value>, icon: Option<&str>) -> Vec<Entry> {
    let spec = &csv["spec"];
    let mut entries = vec![Entry::value("displayName", text(spec, "/displayName"))];
    let mut kept_annotations: Map<String, Value> = annotations
        .iter()
        .filter(|(key, _)| {
            !matches!(key.as_str(), "alm-examples" | "createdAt" | "olm.skipRange")
                && !ANNOTATIONS_WITH_KEYS.iter().any(|(a, _)| a == key)
                && key.as_str() != "categories"
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(description) = spec["description"].as_str() {
        entries.push(Entry::value("description", description));
    }
    for (annotation, key) in ANNOTATIONS_WITH_KEYS {
        if let Some(value) = annotations.get(*annotation) {
            match value.as_str() {
                Some(text) => entries.push(Entry::value(key, text)),
                None => {
                    kept_annotations.insert(annotation.to_string(), value.clone());
                }
            }
        }
    }
    if let Some(categories) = annotations.get("categories").and_then(Value::as_str) {
        let list: Vec<&str> = categories
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if list.join(", ") == categories {
            entries.push(Entry::value("categories", json!(list)));
        } else {
            // `generate` joins with ", "; written as the bundle has it instead.
            kept_annotations.insert("categories".into(), json!(categories));
        }
    }
    if let Some(icon) = icon {
        entries.push(Entry::value("icon", icon));
    }
    for key in [
        "keywords",
        "maintainers",
        "provider",
        "links",
        "maturity",
        "minKubeVersion",
    ] {
        if let Some(value) = spec.get(key).filter(|v| !v.is_null()) {
            let empty = value.as_array().is_some_and(Vec::is_empty);
            if !empty {
                entries.push(Entry::value(key, value.clone()));
            }
        }
    }
    let modes: Map<String, Value> = spec["installModes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| Some((m["type"].as_str()?.to_string(), m["supported"].clone())))
        .collect();
    entries.push(Entry::value("installModes", modes));
    if !kept_annotations.is_empty() {
        entries.push(
            Entry::value("annotations", kept_annotations)
                .noted("The CSV's other annotations, kept so that the CSV stays the same."),
        );
    }
    entries
}

/// The icon as a file: its name (by media type) and bytes; none when the CSV has none or
/// one `generate` could not write back.
fn icon_file(csv: &Value) -> Option<(String, Vec<u8>)> {
    let icons = csv["spec"]["icon"].as_array()?;
    let icon = icons.first()?;
    if icons.len() != 1 {
        return None;
    }
    let extension = match text(icon, "/mediatype") {
        "image/svg+xml" => "svg",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        _ => return None,
    };
    let data = base64::engine::general_purpose::STANDARD
        .decode(text(icon, "/base64data").trim())
        .ok()?;
    Some((format!("icon.{extension}"), data))
}

/// The objects a project would deploy, rebuilt from the CSV and the bundle's other
/// manifests; the `alm-examples`; and the accounts granted permissions that no Deployment
/// runs as.
fn manifest_set(csv: &Value, documents: &[KubeObject]) -> (Vec<Value>, Vec<Value>, Vec<String>) {
    let owned_groups: BTreeSet<&str> = documents
        .iter()
        .filter(|o| o.id.kind == "CustomResourceDefinition")
        .filter_map(|o| o.document.value["spec"]["group"].as_str())
        .collect();
    let mut objects: Vec<Value> = documents
        .iter()
        .filter(|o| o.id.kind != "ClusterServiceVersion" && !owned_groups.contains(o.group()))
        .map(|o| o.document.value.clone())
        .collect();
    let install = &csv["spec"]["install"]["spec"];
    let mut deployment_accounts: BTreeSet<String> = BTreeSet::new();
    for deployment in install["deployments"].as_array().into_iter().flatten() {
        let mut metadata = json!({"name": deployment["name"], "namespace": NAMESPACE});
        if let Some(labels) = deployment.get("label") {
            metadata["labels"] = labels.clone();
        }
        objects.push(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": metadata, "spec": deployment["spec"],
        }));
        let account = text(deployment, "/spec/template/spec/serviceAccountName");
        deployment_accounts.insert(
            if account.is_empty() {
                "default"
            } else {
                account
            }
            .into(),
        );
    }
    let mut accounts = deployment_accounts.clone();
    for (field, role_kind, binding_kind) in [
        ("permissions", "Role", "RoleBinding"),
        ("clusterPermissions", "ClusterRole", "ClusterRoleBinding"),
    ] {
        for (i, entry) in install[field].as_array().into_iter().flatten().enumerate() {
            let account = text(entry, "/serviceAccountName").to_string();
            let role = format!("{account}-{}-{i}", field.to_lowercase());
            let mut metadata = json!({"name": role});
            if role_kind == "Role" {
                metadata["namespace"] = json!(NAMESPACE);
            }
            objects.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": role_kind,
                "metadata": metadata.clone(), "rules": entry["rules"],
            }));
            objects.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding_kind,
                "metadata": metadata,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}],
            }));
            accounts.insert(account);
        }
    }
    for account in &accounts {
        objects.push(json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": NAMESPACE},
        }));
    }
    objects.extend(admission_webhook_objects(csv));
    let samples: Vec<Value> = csv["metadata"]["annotations"]["alm-examples"]
        .as_str()
        .and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(Value::is_object)
        .collect();
    let extra = accounts.difference(&deployment_accounts).cloned().collect();
    (objects, samples, extra)
}

/// The admission webhooks of `webhookdefinitions` as a project has them: a Validating- or
/// MutatingWebhookConfiguration calling a Service in front of the webhook's Deployment.
fn admission_webhook_objects(csv: &Value) -> Vec<Value> {
    let mut objects = Vec::new();
    let mut services = BTreeSet::new();
    let definitions = csv["spec"]["webhookdefinitions"].as_array();
    for (kind, definition_type) in [
        (
            "ValidatingWebhookConfiguration",
            "ValidatingAdmissionWebhook",
        ),
        ("MutatingWebhookConfiguration", "MutatingAdmissionWebhook"),
    ] {
        let mut webhooks = Vec::new();
        for definition in definitions.into_iter().flatten() {
            if definition["type"] != definition_type {
                continue;
            }
            let deployment = text(definition, "/deploymentName");
            let port = definition["containerPort"].as_i64().unwrap_or(443);
            let service = format!("{deployment}-admission-{port}");
            let mut webhook = json!({
                "name": definition["generateName"],
                "clientConfig": {"service": {"name": service, "namespace": NAMESPACE, "port": port}},
            });
            for field in [
                "admissionReviewVersions",
                "sideEffects",
                "failurePolicy",
                "matchPolicy",
                "objectSelector",
                "namespaceSelector",
                "rules",
                "timeoutSeconds",
                "reinvocationPolicy",
            ] {
                if let Some(value) = definition.get(field) {
                    webhook[field] = value.clone();
                }
            }
            if let Some(path) = definition.get("webhookPath") {
                webhook["clientConfig"]["service"]["path"] = path.clone();
            }
            webhooks.push(webhook);
            if services.insert(service.clone()) {
                let labels = csv["spec"]["install"]["spec"]["deployments"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|d| d["name"] == deployment)
                    .map(|d| d["spec"]["template"]["metadata"]["labels"].clone())
                    .unwrap_or_default();
                let target = definition.get("targetPort").cloned().unwrap_or(json!(port));
                objects.push(json!({
                    "apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": service, "namespace": NAMESPACE},
                    "spec": {"selector": labels, "ports": [{"port": port, "targetPort": target}]},
                }));
            }
        }
        if !webhooks.is_empty() {
            objects.push(json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                "metadata": {"name": format!("{}-{}", text(csv, "/metadata/name"), kind.to_lowercase())},
                "webhooks": webhooks,
            }));
        }
    }
    objects
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{BundleInputs, GenerateConfig};

    fn csv_in(files: &std::collections::BTreeMap<String, String>) -> Value {
        let (_, text) = files
            .iter()
            .find(|(name, _)| name.ends_with(".clusterserviceversion.yaml"))
            .expect("a CSV");
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn the_repository_bundle_comes_back_the_same_through_its_migrated_config() {
        let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle");
        let work = tempfile::tempdir().unwrap();
        let config_path = work.path().join("bundle-tool.yaml");
        let plan = plan(&bundle, &InitOptions::default()).unwrap();
        assert!(plan.for_the_author.is_empty(), "{:?}", plan.for_the_author);
        plan.write(&config_path, false).unwrap();
        let config = GenerateConfig::load(&config_path).unwrap();
        assert_eq!(config.package, "redis-operator");
        assert!(config.csv.provider.is_some() && config.csv.icon.is_some());
        let original_text = std::fs::read_to_string(
            bundle.join("manifests/redis-operator.clusterserviceversion.yaml"),
        )
        .unwrap();
        let original: Value = serde_saphyr::from_str(&original_text).unwrap();
        let created_at = text(&original, "/metadata/annotations/createdAt");
        let generated = BundleInputs::read(&config, None)
            .unwrap()
            .generate(created_at)
            .unwrap();
        assert_eq!(csv_in(&generated.files), original);
        // A second init over it is refused, naming the file.
        let error = plan.write(&config_path, false).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: already exists; give --force to replace it",
                config_path.display()
            )
        );
    }

    #[test]
    fn a_folder_that_is_not_a_bundle_is_named() {
        let work = tempfile::tempdir().unwrap();
        let error = plan(work.path(), &InitOptions::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: no manifests/ folder: not a registry+v1 bundle",
                work.path().display()
            )
        );
        std::fs::create_dir_all(work.path().join("manifests")).unwrap();
        std::fs::create_dir_all(work.path().join("metadata")).unwrap();
        std::fs::write(
            work.path().join("metadata/annotations.yaml"),
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n",
        )
        .unwrap();
        let error = plan(work.path(), &InitOptions::default()).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("no ClusterServiceVersion in manifests/"),
            "{error}"
        );
    }
}
