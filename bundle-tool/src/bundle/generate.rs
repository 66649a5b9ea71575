//! Folding an operator's manifests into a registry+v1 bundle, the way `operator-sdk generate
//! bundle` does, with two differences that a user would want: objects of kinds a bundle
//! cannot carry are reported as warnings instead of being dropped silently, and the output is
//! the same bytes for the same input (`createdAt` comes from `SOURCE_DATE_EPOCH` when set).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::annotations::BundleAnnotations;
use super::config::{CsvMetadata, GenerateConfig};
use crate::manifest::KubeObject;
use crate::manifest::text;

/// Kinds a registry+v1 bundle may hold in `manifests/` (operator-registry's list).
pub const SUPPORTED_KINDS: [&str; 22] = [
    "ClusterServiceVersion",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Service",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "PrometheusRule",
    "ServiceMonitor",
    "Secret",
    "PodDisruptionBudget",
    "PriorityClass",
    "VerticalPodAutoscaler",
    "ConsoleYAMLSample",
    "ConsoleQuickStart",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsolePlugin",
    "NetworkPolicy",
    "PodMonitor",
    "ConfigMap",
];

/// Something the generator did that the user should know about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning(pub String);

/// A generated bundle, in memory: file paths relative to the bundle folder, and the
/// `bundle.Dockerfile` that goes beside it.
#[derive(Clone, Debug)]
pub struct GeneratedBundle {
    /// `manifests/...` and `metadata/...` files.
    pub files: BTreeMap<String, String>,
    /// The annotations (also the Dockerfile labels).
    pub annotations: BundleAnnotations,
    /// What was not folded or written, and why.
    pub warnings: Vec<Warning>,
}

/// Why a bundle could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The config says something impossible.
    #[error("config: {0}")]
    Config(#[from] ConfigProblem),
    /// No Deployment in the manifests.
    #[error("no Deployment in the manifests: a bundle installs at least one")]
    NoDeployment,
    /// A manifest could not be written as YAML.
    #[error("cannot write YAML: {0}")]
    Yaml(#[source] serde_saphyr::ser_error::Error),
}

/// What makes a config impossible to generate from.
#[derive(Debug, thiserror::Error)]
pub enum ConfigProblem {
    /// `csv.installModes` supports none.
    #[error("csv.installModes supports no install mode")]
    NoInstallMode,
    /// The version is not semver.
    #[error("version {version:?} is not a valid semantic version: {source}")]
    Version {
        /// The version as written.
        version: String,
        /// Why it does not parse.
        source: semver::Error,
    },
    /// No channel.
    #[error("at least one channel is needed")]
    NoChannel,
    /// The default channel is not one of the channels.
    #[error("default channel {default:?} is not one of the channels {channels:?}")]
    DefaultChannel {
        /// The default channel.
        default: String,
        /// The channels.
        channels: Vec<String>,
    },
}

fn version_of(api_version: &str) -> &str {
    api_version
        .rsplit_once('/')
        .map(|(_, v)| v)
        .unwrap_or(api_version)
}

/// The labels OLM and OperatorHub read for the platforms a release ships
/// (`operatorframework.io/arch.<arch>: supported`, `operatorframework.io/os.<os>: supported`),
/// from `release.platforms` when it names more than one and `release.platformLabels` is not
/// `false`. One platform (or none) adds none: a CSV without them is read as linux/amd64
/// (operator-framework/api's multiarch validator, `loadAllPossibleArchSupported`).
fn platform_labels(config: &GenerateConfig) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let Some(release) = &config.release else {
        return labels;
    };
    if release.platforms.len() < 2 || release.platform_labels == Some(false) {
        return labels;
    }
    for text in &release.platforms {
        let mut parts = text.split('/');
        if let (Some(os), Some(arch)) = (parts.next(), parts.next()) {
            labels.insert(
                format!("operatorframework.io/arch.{arch}"),
                "supported".into(),
            );
            labels.insert(format!("operatorframework.io/os.{os}"), "supported".into());
        }
    }
    labels
}

/// Generates the bundle. `samples` are example custom resources for `alm-examples`;
/// `created_at` is the `createdAt` annotation (RFC 3339).
pub fn generate(
    config: &GenerateConfig,
    objects: &[KubeObject],
    samples: &[KubeObject],
    icon: Option<(String, String)>,
    created_at: &str,
) -> Result<GeneratedBundle, GenerateError> {
    let version = checked_version(config)?;
    let mut warnings = Vec::new();
    let crds: Vec<&KubeObject> = objects
        .iter()
        .filter(|o| o.id.kind == "CustomResourceDefinition")
        .collect();
    let deployments: Vec<&KubeObject> = objects
        .iter()
        .filter(|o| o.id.kind == "Deployment" && o.group() == "apps")
        .collect();
    if deployments.is_empty() {
        return Err(GenerateError::NoDeployment);
    }

    // Service accounts the CSV creates: each Deployment's, plus the extra ones.
    let mut service_accounts: BTreeSet<String> = deployments
        .iter()
        .map(|d| {
            let name = text(&d.document.value, "/spec/template/spec/serviceAccountName");
            if name.is_empty() {
                "default".to_string()
            } else {
                name.to_string()
            }
        })
        .collect();
    service_accounts.extend(config.extra_service_accounts.iter().cloned());

    let mut consumed: BTreeSet<usize> = BTreeSet::new();
    let permissions = fold_rbac(objects, "RoleBinding", &service_accounts, &mut consumed);
    let cluster_permissions = fold_rbac(
        objects,
        "ClusterRoleBinding",
        &service_accounts,
        &mut consumed,
    );

    let deployment_specs: Vec<Value> = deployments
        .iter()
        .map(|d| {
            let mut entry = json!({"name": d.id.name, "spec": d.document.value["spec"].clone()});
            watch_olm_target_namespaces(&mut entry["spec"]);
            if let Some(labels) = d.document.value.pointer("/metadata/labels") {
                entry["label"] = labels.clone();
            }
            entry
        })
        .collect();

    let owned: Vec<Value> = crds
        .iter()
        .flat_map(|crd| owned_descriptions(&crd.document.value))
        .collect();
    let owned_gvks: BTreeSet<(String, String)> = crds
        .iter()
        .flat_map(|crd| {
            let group = text(&crd.document.value, "/spec/group").to_string();
            let kind = text(&crd.document.value, "/spec/names/kind").to_string();
            crd.document.value["spec"]["versions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |v| (format!("{group}/{}", text(&v, "/name")), kind.clone()))
        })
        .collect();

    let examples = alm_examples(samples, &owned_gvks, &mut warnings);

    let related_images = related_images(&deployments);
    let webhooks = conversion_webhooks(&crds, objects, &deployments);
    let admission = admission_webhooks(objects, &deployments, &mut consumed);

    let mut files = extra_manifests(
        objects,
        &crds,
        &consumed,
        &service_accounts,
        &owned_gvks,
        &mut warnings,
    )?;

    let csv_name = format!("{}.v{version}", config.package);
    let meta = &config.csv;
    let annotations = csv_annotations(config, &examples, created_at, &deployments);

    let install_modes = install_modes(meta, !webhooks.is_empty(), &mut warnings)?;

    let mut install_spec = json!({"deployments": deployment_specs});
    if !permissions.is_empty() {
        install_spec["permissions"] = json!(permissions);
    }
    if !cluster_permissions.is_empty() {
        install_spec["clusterPermissions"] = json!(cluster_permissions);
    }
    let mut spec = json!({
        "displayName": meta.display_name,
        "version": version.to_string(),
        "installModes": install_modes,
        "install": {"strategy": "deployment", "spec": install_spec},
        "customresourcedefinitions": {"owned": owned},
    });
    let put = |spec: &mut Value, key: &str, value: Value| {
        spec[key] = value;
    };
    if let Some(description) = &meta.description {
        put(&mut spec, "description", json!(description));
    }
    if let Some(replaces) = &config.replaces {
        put(&mut spec, "replaces", json!(replaces));
    }
    if !config.skips.is_empty() {
        put(&mut spec, "skips", json!(config.skips));
    }
    if let Some(min) = &meta.min_kube_version {
        put(&mut spec, "minKubeVersion", json!(min));
    }
    if let Some(maturity) = &meta.maturity {
        put(&mut spec, "maturity", json!(maturity));
    }
    if !meta.keywords.is_empty() {
        put(&mut spec, "keywords", json!(meta.keywords));
    }
    if !meta.maintainers.is_empty() {
        put(&mut spec, "maintainers", json!(meta.maintainers));
    }
    if let Some(provider) = &meta.provider {
        put(&mut spec, "provider", provider.clone());
    }
    if !meta.links.is_empty() {
        put(&mut spec, "links", json!(meta.links));
    }
    if let Some((data, media_type)) = icon {
        put(
            &mut spec,
            "icon",
            json!([{"base64data": data, "mediatype": media_type}]),
        );
    }
    if !related_images.is_empty() {
        put(&mut spec, "relatedImages", json!(related_images));
    }
    if !webhooks.is_empty() || !admission.is_empty() {
        let definitions: Vec<&Value> = webhooks.iter().chain(&admission).collect();
        put(&mut spec, "webhookdefinitions", json!(definitions));
    }
    let mut csv = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": csv_name, "namespace": "placeholder", "annotations": annotations},
        "spec": spec,
    });
    let labels = platform_labels(config);
    if !labels.is_empty() {
        csv["metadata"]["labels"] = json!(labels);
    }
    files.insert(
        format!(
            "manifests/{}.clusterserviceversion.yaml",
            config.package.to_lowercase()
        ),
        to_yaml(&csv)?,
    );

    let bundle_annotations = BundleAnnotations {
        package: config.package.clone(),
        channels: config.channels.clone(),
        default_channel: config.default_channel.clone(),
    };
    files.insert(
        "metadata/annotations.yaml".into(),
        bundle_annotations.to_yaml(),
    );
    Ok(GeneratedBundle {
        files,
        annotations: bundle_annotations,
        warnings,
    })
}

/// The CSV's annotations: `alm-examples`, `createdAt`, the builder, and what the config says
/// (its own `annotations` last, so they win).
fn csv_annotations(
    config: &GenerateConfig,
    examples: &[Value],
    created_at: &str,
    deployments: &[&KubeObject],
) -> BTreeMap<String, String> {
    let meta = &config.csv;
    let mut annotations = BTreeMap::new();
    annotations.insert(
        "alm-examples".to_string(),
        serde_json::to_string_pretty(&examples).unwrap_or_default(),
    );
    annotations.insert("createdAt".to_string(), created_at.to_string());
    annotations.insert(
        "operators.operatorframework.io/builder".to_string(),
        format!("bundle-tool-v{}", env!("CARGO_PKG_VERSION")),
    );
    if let Some(capabilities) = &meta.capabilities {
        annotations.insert("capabilities".into(), capabilities.clone());
    }
    if !meta.categories.is_empty() {
        annotations.insert("categories".into(), meta.categories.join(", "));
    }
    if let Some(image) = deployments
        .first()
        .and_then(|d| {
            d.document
                .value
                .pointer("/spec/template/spec/containers/0/image")
        })
        .and_then(Value::as_str)
    {
        annotations.insert("containerImage".into(), image.to_string());
    }
    if let Some(short) = &meta.short_description {
        annotations.insert("description".into(), short.clone());
    }
    if let Some(repository) = &meta.repository {
        annotations.insert("repository".into(), repository.clone());
    }
    if let Some(support) = &meta.support {
        annotations.insert("support".into(), support.clone());
    }
    if let Some(range) = &config.skip_range {
        annotations.insert("olm.skipRange".into(), range.clone());
    }
    for (key, value) in &meta.annotations {
        annotations.insert(key.clone(), value.clone());
    }
    annotations
}

/// The four install modes with the config's choices; none supported is an error, and a
/// conversion webhook with anything but AllNamespaces is warned of (OLM refuses it).
fn install_modes(
    meta: &CsvMetadata,
    has_webhooks: bool,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Value>, GenerateError> {
    let install_modes: Vec<Value> = ["OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"]
        .iter()
        .map(|mode| json!({"type": mode, "supported": meta.install_modes.get(*mode).copied().unwrap_or(false)}))
        .collect();
    if !install_modes.iter().any(|m| m["supported"] == true) {
        return Err(ConfigProblem::NoInstallMode.into());
    }
    if has_webhooks
        && install_modes
            .iter()
            .any(|m| m["type"] != "AllNamespaces" && m["supported"] == true)
    {
        warnings.push(Warning(
            "a conversion webhook is defined, and OLM only installs those with AllNamespaces as the sole install mode".into(),
        ));
    }
    Ok(install_modes)
}

/// The config's version, once the config is known to make sense.
fn checked_version(config: &GenerateConfig) -> Result<semver::Version, GenerateError> {
    let version =
        semver::Version::parse(&config.version).map_err(|source| ConfigProblem::Version {
            version: config.version.clone(),
            source,
        })?;
    if config.channels.is_empty() {
        return Err(ConfigProblem::NoChannel.into());
    }
    if let Some(default) = &config.default_channel
        && !config.channels.contains(default)
    {
        return Err(ConfigProblem::DefaultChannel {
            default: default.clone(),
            channels: config.channels.clone(),
        }
        .into());
    }
    Ok(version)
}

/// The samples of owned APIs as `alm-examples` entries (namespace dropped); others warned of.
fn alm_examples(
    samples: &[KubeObject],
    owned_gvks: &BTreeSet<(String, String)>,
    warnings: &mut Vec<Warning>,
) -> Vec<Value> {
    let mut examples: Vec<Value> = Vec::new();
    for sample in samples {
        if owned_gvks.contains(&(sample.id.api_version.clone(), sample.id.kind.clone())) {
            let mut example = sample.document.value.clone();
            if let Some(metadata) = example.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("namespace");
            }
            examples.push(example);
        } else {
            warnings.push(Warning(format!(
                "{}: sample {} is not of an owned API; left out of alm-examples",
                sample.document.location, sample.id
            )));
        }
    }
    examples
}

/// The manifests the bundle carries beside its CSV: every supported object not folded into
/// the CSV (namespace dropped, named as operator-sdk names them), and the CRDs. Objects a
/// bundle cannot carry are warned of, with their file and line.
fn extra_manifests(
    objects: &[KubeObject],
    crds: &[&KubeObject],
    consumed: &BTreeSet<usize>,
    service_accounts: &BTreeSet<String>,
    owned_gvks: &BTreeSet<(String, String)>,
    warnings: &mut Vec<Warning>,
) -> Result<BTreeMap<String, String>, GenerateError> {
    let mut files = BTreeMap::new();
    for (index, object) in objects.iter().enumerate() {
        let kind = object.id.kind.as_str();
        if consumed.contains(&index) || kind == "Deployment" || kind == "CustomResourceDefinition" {
            continue;
        }
        if kind == "ServiceAccount" && service_accounts.contains(&object.id.name) {
            continue; // OLM creates the CSV's service accounts.
        }
        if kind == "ClusterServiceVersion" {
            warnings.push(Warning(format!(
                "{}: a ClusterServiceVersion in the manifests is ignored; the CSV is generated from the config",
                object.document.location
            )));
            continue;
        }
        if owned_gvks.contains(&(object.id.api_version.clone(), kind.to_string())) {
            warnings.push(Warning(format!(
                "{}: {} is a custom resource of an owned API; use it as a sample (alm-examples), a bundle cannot carry it",
                object.document.location, object.id
            )));
            continue;
        }
        if !SUPPORTED_KINDS.contains(&kind) {
            warnings.push(Warning(format!(
                "{}: {} is not a kind a registry+v1 bundle can carry; it is not in the bundle (operator-sdk would drop it silently)",
                object.document.location, object.id
            )));
            continue;
        }
        let mut value = object.document.value.clone();
        if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("namespace");
        }
        let group = object.group();
        let version = version_of(&object.id.api_version);
        let stem = if group.is_empty() {
            format!("{}_{version}_{}", object.id.name, kind.to_lowercase())
        } else {
            format!(
                "{}_{group}_{version}_{}",
                object.id.name,
                kind.to_lowercase()
            )
        };
        insert_unique(
            &mut files,
            format!("manifests/{stem}.yaml"),
            to_yaml(&value)?,
        );
    }
    for crd in crds {
        let value = &crd.document.value;
        let name = format!(
            "manifests/{}_{}.yaml",
            text(value, "/spec/group"),
            text(value, "/spec/names/plural")
        );
        insert_unique(&mut files, name, to_yaml(value)?);
    }
    Ok(files)
}

fn insert_unique(files: &mut BTreeMap<String, String>, mut name: String, content: String) {
    let mut n = 0;
    while files.contains_key(&name) {
        n += 1;
        let (dir, file) = name
            .rsplit_once('/')
            .map(|(d, f)| (d.to_string(), f.to_string()))
            .unwrap_or_default();
        name = format!("{dir}/dup{n}_{file}");
    }
    files.insert(name, content);
}

fn to_yaml(value: &Value) -> Result<String, GenerateError> {
    serde_saphyr::to_string(value).map_err(GenerateError::Yaml)
}

/// Folds `binding_kind` bindings whose subjects are CSV service accounts into
/// `{serviceAccountName, rules}` entries, marking the bindings and their roles consumed.
fn fold_rbac(
    objects: &[KubeObject],
    binding_kind: &str,
    service_accounts: &BTreeSet<String>,
    consumed: &mut BTreeSet<usize>,
) -> Vec<Value> {
    let mut rules: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (index, binding) in objects.iter().enumerate() {
        if binding.id.kind != binding_kind || binding.group() != "rbac.authorization.k8s.io" {
            continue;
        }
        let value = &binding.document.value;
        let role_group = text(value, "/roleRef/apiGroup");
        if !role_group.is_empty() && role_group != "rbac.authorization.k8s.io" {
            continue;
        }
        let subjects: Vec<String> = value["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| text(s, "/kind") == "ServiceAccount")
            .map(|s| text(s, "/name").to_string())
            .collect();
        let ours: Vec<&String> = subjects
            .iter()
            .filter(|s| service_accounts.contains(*s))
            .collect();
        if ours.is_empty() {
            continue;
        }
        let role_kind = text(value, "/roleRef/kind");
        let role_name = text(value, "/roleRef/name");
        let Some((role_index, role)) = objects.iter().enumerate().find(|(_, o)| {
            o.id.kind == role_kind
                && o.id.name == role_name
                && o.group() == "rbac.authorization.k8s.io"
        }) else {
            continue;
        };
        for account in ours {
            rules.entry(account.clone()).or_default().extend(
                role.document.value["rules"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        consumed.insert(role_index);
        // A binding that also names accounts the CSV does not create stays as it is.
        if subjects.iter().all(|s| service_accounts.contains(s)) {
            consumed.insert(index);
        }
    }
    rules
        .into_iter()
        .filter(|(_, r)| !r.is_empty())
        .map(|(account, rules)| json!({"serviceAccountName": account, "rules": rules}))
        .collect()
}

/// One `owned` entry per CRD version, with descriptors from the schema's descriptions.
fn owned_descriptions(crd: &Value) -> Vec<Value> {
    let name = text(crd, "/metadata/name");
    let kind = text(crd, "/spec/names/kind");
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"] != false)
        .map(|version| {
            let schema = &version["schema"]["openAPIV3Schema"];
            let description = schema
                .pointer("/properties/spec/description")
                .and_then(Value::as_str)
                .or_else(|| schema.get("description").and_then(Value::as_str))
                .unwrap_or_default();
            let mut entry = json!({
                "name": name,
                "version": text(version, "/name"),
                "kind": kind,
                "displayName": split_camel(kind),
                "description": description,
            });
            let spec_descriptors = descriptors(&schema["properties"]["spec"], false);
            let status_descriptors = descriptors(&schema["properties"]["status"], true);
            if !spec_descriptors.is_empty() {
                entry["specDescriptors"] = json!(spec_descriptors);
            }
            if !status_descriptors.is_empty() {
                entry["statusDescriptors"] = json!(status_descriptors);
            }
            entry
        })
        .collect()
}

/// Descriptors for the top-level properties of `spec` or `status`, with the OLM UI
/// x-descriptor that fits each field's shape.
fn descriptors(schema: &Value, status: bool) -> Vec<Value> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(path, property)| {
            let mut x: Vec<&str> = Vec::new();
            let lower = path.to_lowercase();
            let description = property
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match (status, lower.as_str()) {
                (_, p) if p.contains("replicas") => {
                    x.push("urn:alm:descriptor:com.tectonic.ui:podCount")
                }
                (true, "conditions") => x.push("urn:alm:descriptor:io.kubernetes.conditions"),
                (true, "phase") => x.push("urn:alm:descriptor:io.kubernetes.phase"),
                (false, "resources") => {
                    x.push("urn:alm:descriptor:com.tectonic.ui:resourceRequirements")
                }
                (false, p) if p.contains("secret") => {
                    x.push("urn:alm:descriptor:io.kubernetes:Secret")
                }
                _ => {}
            }
            if x.is_empty() {
                match property.get("type").and_then(Value::as_str) {
                    Some("boolean") if !status => {
                        x.push("urn:alm:descriptor:com.tectonic.ui:booleanSwitch")
                    }
                    Some("integer") | Some("number") if !status => {
                        x.push("urn:alm:descriptor:com.tectonic.ui:number")
                    }
                    Some("string") if status => x.push("urn:alm:descriptor:text"),
                    Some("string") => x.push("urn:alm:descriptor:com.tectonic.ui:text"),
                    _ => {}
                }
            }
            json!({
                "path": path,
                "displayName": split_camel(path),
                "description": description,
                "x-descriptors": x,
            })
        })
        .collect()
}

/// `readyReplicas` → `Ready Replicas`, `RedisCluster` → `Redis Cluster`.
fn split_camel(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if i > 0 && c.is_uppercase() {
            out.push(' ');
        }
        if i == 0 {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Every image the Deployments run (containers and init containers) and every
/// `RELATED_IMAGE_*` value, named after its container or variable, each image once.
fn related_images(deployments: &[&KubeObject]) -> Vec<Value> {
    let pods = deployments
        .iter()
        .map(|d| &d.document.value["spec"]["template"]["spec"]);
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for (name, image) in image_candidates(pods) {
        if image.is_empty() || seen.contains_key(&image) {
            continue;
        }
        let unique = claim_name(&mut names, &name);
        seen.insert(image, unique);
    }
    let mut images: Vec<Value> = seen
        .into_iter()
        .map(|(image, name)| json!({"name": name, "image": image}))
        .collect();
    images.sort_by(|a, b| text(a, "/name").cmp(text(b, "/name")));
    images
}

/// The images of `pods` (pod specs) with the `relatedImages` name each would get, in the
/// order names are claimed: every `RELATED_IMAGE_*` value first (the variable's suffix), so
/// that an image that is also a container's keeps the name its variable gives it, as in
/// operator-sdk's list; then each init container's and container's image (its name).
pub(super) fn image_candidates<'a>(
    pods: impl Iterator<Item = &'a Value> + Clone,
) -> Vec<(String, String)> {
    let mut candidates = Vec::new();
    for variables in [true, false] {
        for pod in pods.clone() {
            for list in ["initContainers", "containers"] {
                for container in pod[list].as_array().into_iter().flatten() {
                    if !variables {
                        candidates.push((
                            text(container, "/name").to_string(),
                            text(container, "/image").to_string(),
                        ));
                        continue;
                    }
                    for env in container["env"].as_array().into_iter().flatten() {
                        if let Some(suffix) = text(env, "/name").strip_prefix("RELATED_IMAGE_") {
                            candidates.push((
                                suffix.to_lowercase().replace('_', "-"),
                                text(env, "/value").to_string(),
                            ));
                        }
                    }
                }
            }
        }
    }
    candidates
}

/// `name`, or `name-2`, `name-3`, … when `names` has it already: a `relatedImages` name no
/// other entry uses, added to `names`.
pub(super) fn claim_name(names: &mut BTreeSet<String>, name: &str) -> String {
    let mut unique = name.to_string();
    let mut n = 1;
    while names.contains(&unique) {
        n += 1;
        unique = format!("{name}-{n}");
    }
    names.insert(unique.clone());
    unique
}

/// A container's `WATCH_NAMESPACE` becomes the namespaces of the OperatorGroup OLM installs
/// into (the CSV annotation OLM sets), as operator-sdk writes it: whatever value it had
/// outside OLM, under OLM the operator must watch what its install mode says.
fn watch_olm_target_namespaces(deployment_spec: &mut Value) {
    let containers = deployment_spec
        .pointer_mut("/template/spec/containers")
        .and_then(Value::as_array_mut);
    for container in containers.into_iter().flatten() {
        let env = container.get_mut("env").and_then(Value::as_array_mut);
        for variable in env.into_iter().flatten() {
            if variable["name"] == "WATCH_NAMESPACE" {
                *variable = json!({
                    "name": "WATCH_NAMESPACE",
                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}},
                });
            }
        }
    }
}

/// The kinds of admission webhook configuration, and the `webhookdefinitions` type of each.
const ADMISSION_CONFIGURATIONS: [(&str, &str); 2] = [
    (
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionWebhook",
    ),
    ("MutatingWebhookConfiguration", "MutatingAdmissionWebhook"),
];

/// `webhookdefinitions` entries for the admission webhooks of Validating- and
/// MutatingWebhookConfigurations that call a Service in front of one of the Deployments, as
/// operator-sdk folds them; OLM makes the configurations, with their certificates, from the
/// CSV. A configuration is consumed when all its webhooks fold; one calling a URL or a Service
/// not in the manifests stays, and is warned of as a kind a bundle cannot carry.
/// The Service named `service_name` and the Deployment whose pod labels its selector matches
/// (the webhook's server), if there is one.
fn service_and_deployment<'a>(
    objects: &'a [KubeObject],
    deployments: &[&'a KubeObject],
    service_name: &str,
) -> Option<(&'a KubeObject, Option<&'a KubeObject>)> {
    let service = objects
        .iter()
        .find(|o| o.id.kind == "Service" && o.id.name == service_name)?;
    let selector = service.document.value["spec"]["selector"].as_object();
    let deployment = deployments.iter().copied().find(|d| {
        let labels = &d.document.value["spec"]["template"]["metadata"]["labels"];
        selector.is_some_and(|selector| {
            !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
        })
    });
    Some((service, deployment))
}

fn admission_webhooks(
    objects: &[KubeObject],
    deployments: &[&KubeObject],
    consumed: &mut BTreeSet<usize>,
) -> Vec<Value> {
    let mut definitions = Vec::new();
    for (index, configuration) in objects.iter().enumerate() {
        let Some((_, webhook_type)) = ADMISSION_CONFIGURATIONS
            .iter()
            .find(|(kind, _)| configuration.id.kind == *kind)
        else {
            continue;
        };
        if configuration.group() != "admissionregistration.k8s.io" {
            continue;
        }
        let mut folded = Vec::new();
        let webhooks = configuration.document.value["webhooks"].as_array();
        for webhook in webhooks.into_iter().flatten() {
            let service_name = text(webhook, "/clientConfig/service/name");
            let Some((service, Some(deployment))) =
                service_and_deployment(objects, deployments, service_name)
            else {
                continue;
            };
            let port = webhook
                .pointer("/clientConfig/service/port")
                .and_then(Value::as_i64)
                .unwrap_or(443);
            let mut definition = json!({
                "type": webhook_type,
                "generateName": text(webhook, "/name"),
                "deploymentName": deployment.id.name,
                "containerPort": port,
            });
            for field in [
                "admissionReviewVersions",
                "sideEffects",
                "failurePolicy",
                "matchPolicy",
                "objectSelector",
                "rules",
                "timeoutSeconds",
                "reinvocationPolicy",
            ] {
                if let Some(value) = webhook.get(field) {
                    definition[field] = value.clone();
                }
            }
            let target = service.document.value["spec"]["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["port"].as_i64() == Some(port))
                .and_then(|p| p.get("targetPort"));
            if let Some(target) = target {
                definition["targetPort"] = target.clone();
            }
            if let Some(path) = webhook.pointer("/clientConfig/service/path") {
                definition["webhookPath"] = path.clone();
            }
            folded.push(definition);
        }
        if folded.len() == webhooks.map_or(0, Vec::len) {
            consumed.insert(index);
        }
        definitions.extend(folded);
    }
    definitions.sort_by(|a, b| text(a, "/generateName").cmp(text(b, "/generateName")));
    definitions
}

/// A conversion webhook of one CRD: the CRD's name, then its endpoint (Service name, port,
/// path). One definition per CRD, as operator-sdk writes them: a definition's generateName
/// is made of its CRDs' plurals and would outgrow a name's length with many CRDs.
type WebhookEndpoint = (String, String, i64, String);

/// The CRDs one webhook definition converts: names, plurals, and the ConversionReview versions.
#[derive(Default)]
struct ConvertedCrds(Vec<String>, Vec<String>, Vec<Value>);

/// `webhookdefinitions` entries for CRDs converted by a webhook Service in the manifests.
fn conversion_webhooks(
    crds: &[&KubeObject],
    objects: &[KubeObject],
    deployments: &[&KubeObject],
) -> Vec<Value> {
    // (CRD, service, port, path) → CRD names, plural names, review versions
    let mut groups: BTreeMap<WebhookEndpoint, ConvertedCrds> = BTreeMap::new();
    for crd in crds {
        let value = &crd.document.value;
        let webhook = &value["spec"]["conversion"]["webhook"];
        if text(value, "/spec/conversion/strategy") != "Webhook" {
            continue;
        }
        let service = text(webhook, "/clientConfig/service/name");
        if service.is_empty() {
            continue;
        }
        let port = webhook
            .pointer("/clientConfig/service/port")
            .and_then(Value::as_i64)
            .unwrap_or(443);
        let path = text(webhook, "/clientConfig/service/path").to_string();
        let crd_name = text(value, "/metadata/name").to_string();
        let entry = groups
            .entry((crd_name, service.to_string(), port, path))
            .or_default();
        entry.0.push(text(value, "/metadata/name").to_string());
        entry.1.push(text(value, "/spec/names/plural").to_string());
        entry.2 = webhook["conversionReviewVersions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
    }
    let mut definitions = Vec::new();
    for ((_, service_name, port, path), ConvertedCrds(crd_names, plurals, versions)) in groups {
        let Some((service, deployment)) =
            service_and_deployment(objects, deployments, &service_name)
        else {
            continue;
        };
        let deployment = deployment
            .map(|d| d.id.name.clone())
            .unwrap_or_else(|| service_name.trim_end_matches("-service").to_string());
        let service_port = service.document.value["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["port"].as_i64() == Some(port));
        let mut definition = json!({
            "type": "ConversionWebhook",
            "generateName": format!("c{}.kb.io", plurals.join("")),
            "admissionReviewVersions": versions,
            "sideEffects": "None",
            "deploymentName": deployment,
            "containerPort": port,
            "conversionCRDs": crd_names,
        });
        if let Some(target) = service_port.and_then(|p| p.get("targetPort")) {
            // Kept as the Service says, a port name included, as operator-sdk does: OLM puts
            // it in the Service it makes for the webhook, which resolves a name itself.
            definition["targetPort"] = target.clone();
        }
        if !path.is_empty() {
            definition["webhookPath"] = json!(path);
        }
        definitions.push(definition);
    }
    definitions.sort_by(|a, b| text(a, "/generateName").cmp(text(b, "/generateName")));
    definitions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::read_stream;
    use std::path::Path;

    fn objects(yaml: &str) -> Vec<KubeObject> {
        read_stream(Path::new("in.yaml"), yaml)
            .unwrap()
            .into_iter()
            .map(|d| KubeObject::from_document(d).unwrap())
            .collect()
    }

    fn config() -> GenerateConfig {
        serde_saphyr::from_str(
            "package: demo\nversion: 1.2.3\nchannels: [alpha]\ndefaultChannel: alpha\ncsv:\n  displayName: Demo\n  installModes: {AllNamespaces: true}\n",
        )
        .unwrap()
    }

    const MANIFESTS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: demo, namespace: sys, labels: {app: demo}}
spec:
  selector: {matchLabels: {app: demo}}
  template:
    metadata: {labels: {app: demo}}
    spec:
      serviceAccountName: demo
      containers:
      - name: manager
        image: example.com/demo:1.2.3
        env: [{name: RELATED_IMAGE_OPERAND, value: example.com/operand:9}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: demo, namespace: sys}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: demo}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: demo}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: demo}
subjects: [{kind: ServiceAccount, name: demo, namespace: sys}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leases, namespace: sys}
rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: leases, namespace: sys}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leases}
subjects: [{kind: ServiceAccount, name: demo}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: unbound-viewer}
rules: []
---
apiVersion: v1
kind: Service
metadata: {name: demo-metrics, namespace: sys}
spec: {selector: {app: demo}, ports: [{port: 8080}]}
---
apiVersion: v1
kind: Namespace
metadata: {name: sys}
"#;

    fn csv(bundle: &GeneratedBundle) -> Value {
        serde_saphyr::from_str(&bundle.files["manifests/demo.clusterserviceversion.yaml"]).unwrap()
    }

    #[test]
    fn several_platforms_label_the_csv_unless_the_config_says_otherwise() {
        let generated = |release: Option<&str>| {
            let mut config = config();
            config.release = release.map(|text| serde_saphyr::from_str(text).unwrap());
            let bundle = generate(
                &config,
                &objects(MANIFESTS),
                &[],
                None,
                "2026-01-01T00:00:00Z",
            )
            .unwrap();
            csv(&bundle)["metadata"]["labels"].clone()
        };
        assert_eq!(generated(None), Value::Null);
        assert_eq!(generated(Some("platforms: [linux/amd64]")), Value::Null);
        assert_eq!(
            generated(Some("platforms: [linux/amd64, linux/arm64]")),
            json!({
                "operatorframework.io/arch.amd64": "supported",
                "operatorframework.io/arch.arm64": "supported",
                "operatorframework.io/os.linux": "supported",
            })
        );
        assert_eq!(
            generated(Some(
                "platforms: [linux/amd64, linux/arm64]\nplatformLabels: false"
            )),
            Value::Null
        );
    }

    #[test]
    fn folds_deployments_and_rbac_like_operator_sdk() {
        let bundle = generate(
            &config(),
            &objects(MANIFESTS),
            &[],
            None,
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
        let csv = csv(&bundle);
        assert_eq!(csv["metadata"]["name"], "demo.v1.2.3");
        let install = &csv["spec"]["install"]["spec"];
        assert_eq!(install["deployments"][0]["name"], "demo");
        assert_eq!(
            install["clusterPermissions"][0]["serviceAccountName"],
            "demo"
        );
        assert_eq!(
            install["clusterPermissions"][0]["rules"][0]["resources"][0],
            "pods"
        );
        assert_eq!(
            install["permissions"][0]["rules"][0]["resources"][0],
            "leases"
        );
        // Folded objects and the CSV's own service account are not written again.
        let names: Vec<&String> = bundle.files.keys().collect();
        assert!(
            names
                .iter()
                .all(|n| !n.contains("_serviceaccount") && !n.contains("demo_rbac")),
            "{names:?}"
        );
        // Unbound RBAC and Services are extra manifests, without namespace.
        let service = &bundle.files["manifests/demo-metrics_v1_service.yaml"];
        assert!(!service.contains("namespace"));
        assert!(bundle.files.contains_key(
            "manifests/unbound-viewer_rbac.authorization.k8s.io_v1_clusterrole.yaml"
        ));
    }

    #[test]
    fn unsupported_kinds_are_warned_about_not_dropped_silently() {
        let bundle = generate(
            &config(),
            &objects(MANIFESTS),
            &[],
            None,
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
        assert!(
            bundle
                .warnings
                .iter()
                .any(|w| w.0.contains("Namespace sys") && w.0.contains("in.yaml:"))
        );
    }

    #[test]
    fn related_images_and_container_image() {
        let bundle = generate(
            &config(),
            &objects(MANIFESTS),
            &[],
            None,
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
        let csv = csv(&bundle);
        let images: Vec<&str> = csv["spec"]["relatedImages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["image"].as_str().unwrap())
            .collect();
        assert_eq!(
            images,
            vec!["example.com/demo:1.2.3", "example.com/operand:9"]
        );
        assert_eq!(
            csv["metadata"]["annotations"]["containerImage"],
            "example.com/demo:1.2.3"
        );
        assert_eq!(
            csv["metadata"]["annotations"]["createdAt"],
            "2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn bad_versions_and_channels_are_config_errors() {
        let mut bad = config();
        bad.version = "1.2".into();
        assert!(matches!(
            generate(&bad, &objects(MANIFESTS), &[], None, "x"),
            Err(GenerateError::Config(_))
        ));
        let mut bad = config();
        bad.default_channel = Some("stable".into());
        assert!(matches!(
            generate(&bad, &objects(MANIFESTS), &[], None, "x"),
            Err(GenerateError::Config(_))
        ));
    }

    /// What operator-sdk generate bundle writes too (tests/tests/generate_conformance.rs).
    #[test]
    fn watch_namespace_image_names_and_webhooks_follow_operator_sdk() {
        let crd = |plural: &str| {
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {plural}.example.com}}\nspec:\n  group: example.com\n  names: {{kind: K{plural}, plural: {plural}}}\n  versions: [{{name: v1, served: true, storage: true}}]\n  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v1]\n      clientConfig: {{service: {{name: demo-webhook, namespace: sys, path: /convert, port: 443}}}}\n"
            )
        };
        let manifests = format!(
            r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: demo, namespace: sys}}
spec:
  selector: {{matchLabels: {{app: demo}}}}
  template:
    metadata: {{labels: {{app: demo}}}}
    spec:
      serviceAccountName: demo
      containers:
      - name: manager
        image: example.com/demo:1
        ports: [{{name: webhook, containerPort: 9443}}]
        env:
        - {{name: WATCH_NAMESPACE, value: ""}}
        - {{name: RELATED_IMAGE_DEMO_OPERATOR, value: "example.com/demo:1"}}
---
apiVersion: v1
kind: Service
metadata: {{name: demo-webhook, namespace: sys}}
spec: {{selector: {{app: demo}}, ports: [{{port: 443, targetPort: webhook}}]}}
---
{}---
{}"#,
            crd("as"),
            crd("bs")
        );
        let bundle = generate(
            &config(),
            &objects(&manifests),
            &[],
            None,
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
        let csv = csv(&bundle);
        let container = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
            ["containers"][0];
        assert_eq!(
            container["env"][0],
            json!({"name": "WATCH_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}}})
        );
        assert_eq!(
            csv["spec"]["relatedImages"],
            json!([{"name": "demo-operator", "image": "example.com/demo:1"}])
        );
        let webhooks = csv["spec"]["webhookdefinitions"].as_array().unwrap();
        let names: Vec<&str> = webhooks
            .iter()
            .map(|w| w["generateName"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["cas.kb.io", "cbs.kb.io"]);
        assert_eq!(webhooks[0]["conversionCRDs"], json!(["as.example.com"]));
        assert_eq!(webhooks[0]["targetPort"], "webhook");
    }

    #[test]
    fn admission_webhooks_fold_into_webhook_definitions() {
        let manifests = format!(
            "{MANIFESTS}---\n{}",
            r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: demo-validating}
webhooks:
- name: vdemo.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig: {service: {name: demo-metrics, namespace: sys, path: /validate, port: 8080}}
  rules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [demos]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: demo-by-url}
webhooks:
- name: mdemo.example.com
  clientConfig: {url: "https://example.com/mutate"}
"#
        );
        let bundle = generate(
            &config(),
            &objects(&manifests),
            &[],
            None,
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
        let csv = csv(&bundle);
        assert_eq!(
            csv["spec"]["webhookdefinitions"],
            json!([{
                "type": "ValidatingAdmissionWebhook",
                "generateName": "vdemo.example.com",
                "deploymentName": "demo",
                "containerPort": 8080,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["demos"]}],
                "webhookPath": "/validate",
            }])
        );
        // The one calling a URL cannot be folded: it stays out of the bundle, with a warning.
        assert!(
            bundle
                .warnings
                .iter()
                .any(|w| w.0.contains("MutatingWebhookConfiguration demo-by-url"))
        );
        assert!(
            !bundle
                .warnings
                .iter()
                .any(|w| w.0.contains("demo-validating"))
        );
    }

    #[test]
    fn camel_case_becomes_words() {
        assert_eq!(split_camel("readyReplicas"), "Ready Replicas");
        assert_eq!(split_camel("RedisCluster"), "Redis Cluster");
    }
}
