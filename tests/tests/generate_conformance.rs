//! `bundle-tool generate` against `operator-sdk generate bundle` (v1.42.3) on the same inputs:
//! the Redis operator's manifests (`redis-operator manifests --olm`, with the repository's
//! `bundle-tool.yaml`) and the manifest sets of real operators rebuilt from their published
//! bundles in the shared corpus. operator-sdk gets the manifests and samples on standard input
//! and the config's metadata as a base CSV; bundle-tool gets the config. The two bundles are
//! compared file by file and, inside each file, leaf by leaf; every difference must be one of
//! `ALLOWED` below (each mirrored, with its reason, in docs/conformance.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use bundle_tool::bundle::GenerateConfig;
use e2e::assets::Assets;
use serde_json::{Value, json};

/// `createdAt` is "now" in operator-sdk; bundle-tool is pinned with `SOURCE_DATE_EPOCH`. The
/// one field normalised before comparing (both must set it).
const CREATED_AT: &str = "/metadata/annotations/createdAt";

/// A difference the comparison accepts: a file (glob over the bundle path), a leaf (glob over
/// the JSON pointer; arrays of named things are keyed by name, `[name]`), which side may have
/// what, and why the tools differ there.
struct Allowed {
    file: &'static str,
    path: &'static str,
    when: When,
    reason: &'static str,
}

/// Which shape of difference an allow-list entry accepts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum When {
    /// Only bundle-tool writes the leaf.
    OnlyOurs,
    /// Only operator-sdk writes the leaf.
    OnlyTheirs,
    /// Only operator-sdk writes it, and as a Go zero value (`null`, `{}`, `""`).
    TheirZeroValue,
    /// Only bundle-tool writes it, as an empty value (`null`, `{}`, `""`, `[]`, `0`).
    OurZeroValue,
    /// Both write it, with other values.
    Both,
    /// Both write it, operator-sdk as `""`.
    TheirEmptyString,
    /// Both write a resource quantity, the same amount in other forms (`2000m`, `2`).
    SameQuantity,
}

/// A Kubernetes quantity's amount: a number with an optional decimal or binary suffix.
fn quantity(value: &Value) -> Option<f64> {
    if let Some(number) = value.as_f64() {
        return Some(number);
    }
    let text = value.as_str()?;
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let scale = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        _ => return None,
    };
    Some(number.parse::<f64>().ok()? * scale)
}

impl When {
    fn accepts(self, ours: Option<&Value>, theirs: Option<&Value>) -> bool {
        let zero = |v: &Value| v.is_null() || v == &json!({}) || v == &json!("") || v == &json!([]);
        match self {
            When::OnlyOurs => ours.is_some() && theirs.is_none(),
            When::OnlyTheirs => ours.is_none() && theirs.is_some(),
            When::TheirZeroValue => ours.is_none() && theirs.is_some_and(zero),
            When::OurZeroValue => {
                theirs.is_none() && ours.is_some_and(|v| zero(v) || v == &json!(0))
            }
            When::Both => ours.is_some() && theirs.is_some(),
            When::TheirEmptyString => ours.is_some() && theirs == Some(&json!("")),
            When::SameQuantity => match (ours.and_then(quantity), theirs.and_then(quantity)) {
                (Some(a), Some(b)) => (a - b).abs() <= a.abs() * 1e-9,
                _ => false,
            },
        }
    }
}

const CSV: &str = "manifests/*.clusterserviceversion.yaml";

/// Every difference the comparison accepts. docs/conformance.md lists the same, with the same
/// reasons ("`bundle-tool generate` vs `operator-sdk generate bundle`").
const ALLOWED: &[Allowed] = &[
    Allowed {
        file: CSV,
        path: "/metadata/annotations/operators.operatorframework.io~1builder",
        when: When::Both,
        reason: "names the tool that built the bundle",
    },
    Allowed {
        file: CSV,
        path: "/metadata/annotations/operators.operatorframework.io~1project_layout",
        when: When::OnlyTheirs,
        reason: "operator-sdk's project layout (from a PROJECT file, `unknown` without one); \
                 bundle-tool has no project layouts",
    },
    Allowed {
        file: "metadata/annotations.yaml",
        path: "/annotations/operators.operatorframework.io.metrics.*",
        when: When::OnlyTheirs,
        reason: "operator-sdk's usage-metrics labels (builder, layout), not part of the \
                 registry+v1 format",
    },
    Allowed {
        file: "bundle.Dockerfile",
        path: "/operators.operatorframework.io.metrics.*",
        when: When::OnlyTheirs,
        reason: "operator-sdk's usage-metrics labels (builder, layout), not part of the \
                 registry+v1 format",
    },
    Allowed {
        file: CSV,
        path: "/metadata/annotations/containerImage",
        when: When::OnlyOurs,
        reason: "bundle-tool names the first Deployment's first image (OperatorHub shows it); \
                 operator-sdk leaves it to the base CSV",
    },
    Allowed {
        file: CSV,
        path: "/spec/relatedImages/*/*",
        when: When::OnlyOurs,
        reason: "bundle-tool lists every image the Deployments run, operator-sdk only \
                 `RELATED_IMAGE_*` values; a disconnected install needs the operator's own image",
    },
    Allowed {
        file: CSV,
        path: "/spec/relatedImages/*/name",
        when: When::TheirEmptyString,
        reason: "an image under two `RELATED_IMAGE_*` names: operator-sdk lists it once with an \
                 empty name, bundle-tool once with the first variable's name",
    },
    Allowed {
        file: CSV,
        path: "/spec/customresourcedefinitions/owned/*/displayName",
        when: When::OnlyOurs,
        reason: "bundle-tool derives owned-API display names, descriptions and descriptors from \
                 the CRD schema; operator-sdk reads them from Go markers or the base CSV",
    },
    Allowed {
        file: CSV,
        path: "/spec/customresourcedefinitions/owned/*/description",
        when: When::OnlyOurs,
        reason: "bundle-tool derives owned-API display names, descriptions and descriptors from \
                 the CRD schema; operator-sdk reads them from Go markers or the base CSV",
    },
    Allowed {
        file: CSV,
        path: "/spec/customresourcedefinitions/owned/*/*Descriptors/**",
        when: When::OnlyOurs,
        reason: "bundle-tool derives owned-API display names, descriptions and descriptors from \
                 the CRD schema; operator-sdk reads them from Go markers or the base CSV",
    },
    Allowed {
        file: "**",
        path: "**/resources/*/*",
        when: When::SameQuantity,
        reason: "operator-sdk writes resource quantities in Kubernetes' canonical form \
                 (`2000m` as `2`); bundle-tool copies them as written",
    },
    Allowed {
        file: "manifests/*",
        path: "/spec/version",
        when: When::OnlyOurs,
        reason: "a CRD's deprecated top-level `version` (v1beta1 CRDs) is dropped by \
                 operator-sdk's v1 decoding; bundle-tool copies the CRD as written",
    },
    Allowed {
        file: CSV,
        path: "/metadata/annotations/alm-examples/*/metadata/namespace",
        when: When::OnlyTheirs,
        reason: "bundle-tool drops a sample's namespace: it is where the author tried it, and \
                 the console creates the example in the namespace the user is in",
    },
    // operator-sdk decodes every object into its Go type and encodes it again, so fields the
    // type has without `omitempty` come out as zero values, and empty values of fields with
    // `omitempty` are dropped; bundle-tool copies what the input says. The same object to
    // Kubernetes and OLM either way.
    Allowed {
        file: "**",
        path: "**",
        when: When::TheirZeroValue,
        reason: "Go zero values operator-sdk writes for fields the input does not have",
    },
    Allowed {
        file: "**",
        path: "**",
        when: When::OurZeroValue,
        reason: "empty values in the input that operator-sdk's Go types drop (`omitempty`)",
    },
];

/// Why operator-sdk's bundle may have a file of a custom resource: it keeps every object whose
/// kind is named like one a bundle may carry (`Service`, `Secret`, `NetworkPolicy`, …) whatever
/// its group, so a sample of an owned API called `Secret` lands in `manifests/` (a published
/// corpus bundle, ecr-secret-operator 0.6.0, ships one). bundle-tool warns and leaves it out.
const CUSTOM_RESOURCE_KEPT: &str = "operator-sdk keeps a custom resource of an owned API whose \
     kind is named like a kind a bundle may carry; bundle-tool leaves it out with a warning";

/// One input, ready for both tools, in its own folder.
struct Input {
    name: String,
    dir: PathBuf,
    /// bundle-tool's config file.
    config: PathBuf,
    /// The manifests, one YAML stream.
    manifests: PathBuf,
    /// The samples (custom resources for `alm-examples`), one YAML stream.
    samples: String,
}

fn yaml_stream(values: &[Value]) -> String {
    values
        .iter()
        .map(|v| serde_saphyr::to_string(v).expect("YAML out"))
        .collect::<Vec<_>>()
        .join("---\n")
}

fn read_yaml_stream(path: &Path, text: &str) -> Vec<Value> {
    bundle_tool::manifest::read_stream(path, text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .map(|d| d.value)
        .filter(|v| !v.is_null())
        .collect()
}

fn read_yaml_path(path: &Path) -> Vec<Value> {
    let mut files: Vec<PathBuf> = if path.is_dir() {
        std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect()
    } else {
        vec![path.to_path_buf()]
    };
    files.sort();
    files
        .iter()
        .flat_map(|f| read_yaml_stream(f, &std::fs::read_to_string(f).unwrap()))
        .collect()
}

/// The Redis operator: what `redis-operator manifests --olm` prints (the variant
/// `bundle-tool.yaml` packages) and the repository's config and samples.
fn redis_input(work: &Path) -> Input {
    let dir = work.join("redis-operator");
    std::fs::create_dir_all(&dir).unwrap();
    let manifests = dir.join("manifests.yaml");
    let yaml = redis_operator::manifests::objects_yaml(&redis_operator::manifests::Target {
        olm: true,
        ..Default::default()
    })
    .unwrap();
    std::fs::write(&manifests, yaml).unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle-tool.yaml");
    let loaded = GenerateConfig::load(&config).unwrap();
    let samples = yaml_stream(&read_yaml_path(loaded.samples.as_ref().unwrap()));
    Input {
        name: "redis-operator".into(),
        dir,
        config,
        manifests,
        samples,
    }
}

/// The namespace the rebuilt manifests deploy to, as `kustomize build` would set it.
const NAMESPACE: &str = "operator-system";

/// A real operator's manifest set, rebuilt from its published bundle: the CRDs and the other
/// manifests as they are, a Deployment per install-strategy deployment, a ServiceAccount and a
/// (Cluster)Role with its binding per `permissions`/`clusterPermissions` entry, a webhook
/// configuration and Service for its admission webhooks, the `alm-examples` as samples, and
/// the CSV's metadata (what a bundle-tool config can say) as the config.
fn corpus_input(work: &Path, bundle: &Path) -> Input {
    let package_dir = bundle.parent().unwrap();
    let name = format!(
        "{}-{}",
        package_dir.file_name().unwrap().to_string_lossy(),
        bundle.file_name().unwrap().to_string_lossy()
    );
    let dir = work.join(&name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = Value::Null;
    let mut objects = Vec::new();
    let manifests = read_yaml_path(&bundle.join("manifests"));
    let owned_groups: BTreeSet<&str> = manifests
        .iter()
        .filter(|v| v["kind"] == "CustomResourceDefinition")
        .filter_map(|v| v["spec"]["group"].as_str())
        .collect();
    for value in &manifests {
        let group = value["apiVersion"].as_str().unwrap_or_default();
        let group = group.rsplit_once('/').map_or("", |(g, _)| g);
        if value["kind"] == "ClusterServiceVersion" {
            csv = value.clone();
        } else if !owned_groups.contains(group) {
            // A custom resource in a published bundle is a sample operator-sdk copied there
            // (see the allow-list); the project has it as a sample, which it stays here.
            objects.push(value.clone());
        }
    }
    let annotations = &read_yaml_path(&bundle.join("metadata/annotations.yaml"))[0]["annotations"];
    let install = &csv["spec"]["install"]["spec"];
    let mut accounts: BTreeSet<String> = BTreeSet::new();
    let mut deployment_accounts: BTreeSet<String> = BTreeSet::new();
    for deployment in install["deployments"].as_array().unwrap() {
        let mut metadata = json!({"name": deployment["name"], "namespace": NAMESPACE});
        if let Some(labels) = deployment.get("label") {
            metadata["labels"] = labels.clone();
        }
        objects.push(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": metadata, "spec": deployment["spec"],
        }));
        let account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or("default");
        deployment_accounts.insert(account.to_string());
    }
    for (field, role_kind, binding_kind) in [
        ("permissions", "Role", "RoleBinding"),
        ("clusterPermissions", "ClusterRole", "ClusterRoleBinding"),
    ] {
        for (i, entry) in install[field].as_array().into_iter().flatten().enumerate() {
            let account = entry["serviceAccountName"].as_str().unwrap().to_string();
            let role = format!("{account}-{}-{i}", field.to_lowercase());
            let mut role_metadata = json!({"name": role});
            if role_kind == "Role" {
                role_metadata["namespace"] = json!(NAMESPACE);
            }
            objects.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": role_kind,
                "metadata": role_metadata.clone(), "rules": entry["rules"],
            }));
            objects.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding_kind,
                "metadata": role_metadata,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}],
            }));
            accounts.insert(account);
        }
    }
    accounts.extend(deployment_accounts.iter().cloned());
    for account in &accounts {
        objects.push(json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": NAMESPACE},
        }));
    }
    objects.extend(admission_webhook_objects(&csv));
    let manifests = dir.join("manifests.yaml");
    std::fs::write(&manifests, yaml_stream(&objects)).unwrap();

    let examples: Vec<Value> = csv["metadata"]["annotations"]["alm-examples"]
        .as_str()
        .map(|text| serde_json::from_str(text).unwrap())
        .unwrap_or_default();
    std::fs::write(dir.join("samples.yaml"), yaml_stream(&examples)).unwrap();
    let extra: Vec<&String> = accounts.difference(&deployment_accounts).collect();
    let config = config_from_csv(&csv, annotations, &dir, &extra);
    let config_path = dir.join("bundle-tool.yaml");
    std::fs::write(&config_path, serde_saphyr::to_string(&config).unwrap()).unwrap();
    Input {
        name,
        dir,
        config: config_path,
        manifests,
        samples: yaml_stream(&examples),
    }
}

/// The admission webhooks of a CSV's `webhookdefinitions` as a project has them: a
/// Validating- or MutatingWebhookConfiguration calling a Service in front of the Deployment.
fn admission_webhook_objects(csv: &Value) -> Vec<Value> {
    let mut objects = Vec::new();
    let mut services = BTreeSet::new();
    for (kind, definition_type) in [
        (
            "ValidatingWebhookConfiguration",
            "ValidatingAdmissionWebhook",
        ),
        ("MutatingWebhookConfiguration", "MutatingAdmissionWebhook"),
    ] {
        let definitions: Vec<&Value> = csv["spec"]["webhookdefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["type"] == definition_type)
            .collect();
        if definitions.is_empty() {
            continue;
        }
        let mut webhooks = Vec::new();
        for definition in definitions {
            let deployment = definition["deploymentName"].as_str().unwrap_or_default();
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
        objects.push(json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": format!("{}-{}", csv["metadata"]["name"].as_str().unwrap_or_default(), kind.to_lowercase())},
            "webhooks": webhooks,
        }));
    }
    objects
}

/// CSV annotations that are not metadata a project writes: generated by the tools, or a
/// field of bundle-tool's config of their own.
const GENERATED_ANNOTATIONS: &[&str] = &[
    "alm-examples",
    "createdAt",
    "operators.operatorframework.io/builder",
    "operators.operatorframework.io/project_layout",
    "containerImage",
    "capabilities",
    "categories",
    "description",
    "repository",
    "support",
    "olm.skipRange",
];

/// A bundle-tool config with what the CSV says that a config can say.
fn config_from_csv(csv: &Value, annotations: &Value, dir: &Path, extra: &[&String]) -> Value {
    let spec = &csv["spec"];
    let csv_annotations = csv["metadata"]["annotations"].as_object().unwrap();
    let mut meta = json!({"displayName": spec["displayName"]});
    for key in [
        "description",
        "keywords",
        "maintainers",
        "provider",
        "links",
        "maturity",
        "minKubeVersion",
    ] {
        if let Some(value) = spec.get(key).filter(|v| !v.is_null()) {
            meta[key] = value.clone();
        }
    }
    for (config_key, annotation) in [
        ("shortDescription", "description"),
        ("capabilities", "capabilities"),
        ("repository", "repository"),
        ("support", "support"),
    ] {
        if let Some(value) = csv_annotations.get(annotation) {
            meta[config_key] = value.clone();
        }
    }
    if let Some(categories) = csv_annotations.get("categories").and_then(Value::as_str) {
        meta["categories"] = json!(
            categories
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
        );
    }
    meta["installModes"] = spec["installModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["type"].as_str().unwrap().to_string(),
                m["supported"].clone(),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into();
    let extra_annotations: serde_json::Map<String, Value> = csv_annotations
        .iter()
        .filter(|(k, _)| !GENERATED_ANNOTATIONS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !extra_annotations.is_empty() {
        meta["annotations"] = extra_annotations.into();
    }
    if let Some(icon) = spec["icon"].as_array().and_then(|i| i.first()) {
        let extension = match icon["mediatype"].as_str().unwrap_or_default() {
            "image/svg+xml" => Some("svg"),
            "image/png" => Some("png"),
            "image/jpeg" => Some("jpg"),
            "image/gif" => Some("gif"),
            _ => None,
        };
        let data = base64::engine::general_purpose::STANDARD
            .decode(icon["base64data"].as_str().unwrap_or_default().trim());
        if let (Some(extension), Ok(data)) = (extension, data) {
            let file = format!("icon.{extension}");
            std::fs::write(dir.join(&file), data).unwrap();
            meta["icon"] = json!(file);
        }
    }
    let channels: Vec<&str> = annotations["operators.operatorframework.io.bundle.channels.v1"]
        .as_str()
        .unwrap()
        .split(',')
        .collect();
    let mut config = json!({
        "package": annotations["operators.operatorframework.io.bundle.package.v1"],
        "version": spec["version"],
        "manifests": "manifests.yaml",
        "samples": "samples.yaml",
        "channels": channels,
        "csv": meta,
    });
    if let Some(default) =
        annotations.get("operators.operatorframework.io.bundle.channel.default.v1")
    {
        config["defaultChannel"] = default.clone();
    }
    if let Some(replaces) = spec.get("replaces").filter(|v| v.is_string()) {
        config["replaces"] = replaces.clone();
    }
    if let Some(skips) = spec.get("skips").filter(|v| v.is_array()) {
        config["skips"] = skips.clone();
    }
    if let Some(range) = csv_annotations.get("olm.skipRange") {
        config["skipRange"] = range.clone();
    }
    if !extra.is_empty() {
        config["extraServiceAccounts"] = json!(extra);
    }
    config
}

fn run_bundle_tool(input: &Input) -> Result<PathBuf, String> {
    let out = input.dir.join("bundle-tool");
    let output = Command::new(e2e::bundle_tool_binary())
        .arg("generate")
        .arg("--config")
        .arg(&input.config)
        .arg("--manifests")
        .arg(&input.manifests)
        .arg("--output")
        .arg(out.join("bundle"))
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .unwrap();
    if !output.status.success() {
        return Err(format!(
            "bundle-tool generate failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(out)
}

fn run_operator_sdk(input: &Input, sdk: &Path) -> Result<PathBuf, String> {
    let config = GenerateConfig::load(&input.config).unwrap();
    let out = input.dir.join("operator-sdk");
    let mut stdin = std::fs::read_to_string(&input.manifests).unwrap();
    if !input.samples.is_empty() {
        stdin.push_str("\n---\n");
        stdin.push_str(&input.samples);
    }
    e2e::operator_sdk::generate_bundle(sdk, &config, &stdin, &out).map_err(|e| format!("{e:#}"))?;
    Ok(out)
}

/// A generated bundle, each file as a value: the manifests, `metadata/annotations.yaml`, and
/// the Dockerfile's labels.
fn read_bundle(out: &Path) -> BTreeMap<String, Value> {
    let mut files = BTreeMap::new();
    let bundle = out.join("bundle");
    for sub in ["manifests", "metadata"] {
        for entry in std::fs::read_dir(bundle.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let mut documents = read_yaml_stream(&path, &text);
            assert_eq!(documents.len(), 1, "{}", path.display());
            let name = format!("{sub}/{}", path.file_name().unwrap().to_string_lossy());
            files.insert(name, documents.remove(0));
        }
    }
    let dockerfile = std::fs::read_to_string(out.join("bundle.Dockerfile")).unwrap();
    let labels: serde_json::Map<String, Value> = dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("LABEL "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    files.insert("bundle.Dockerfile".into(), labels.into());
    files
}

/// The key that names an element of an array of named things, so that two lists with the
/// same entries in another order compare entry by entry.
fn element_key(array_path: &str, element: &Value) -> Option<String> {
    let field = |name: &str| element.get(name).and_then(Value::as_str);
    let last = array_path.rsplit('/').next().unwrap_or_default();
    let key = match last {
        "owned" | "required" => format!(
            "{}@{}",
            field("name")?,
            field("version").unwrap_or_default()
        ),
        "deployments" | "links" | "maintainers" => field("name")?.to_string(),
        "permissions" | "clusterPermissions" => field("serviceAccountName")?.to_string(),
        "relatedImages" => field("image")?.to_string(),
        "webhookdefinitions" => field("generateName")?.to_string(),
        "installModes" => field("type")?.to_string(),
        "alm-examples" => format!(
            "{}/{}/{}",
            field("apiVersion")?,
            field("kind")?,
            element["metadata"]["name"].as_str().unwrap_or_default()
        ),
        _ => return None,
    };
    // Escaped like a pointer segment, so that `*` in the allow-list spans one element.
    Some(format!("[{}]", escape(&key)))
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Every leaf of `value` under its path. `alm-examples` is read as the JSON it is.
fn flatten(value: &Value, path: String, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let child_path = format!("{path}/{}", escape(key));
                if key == "alm-examples"
                    && let Some(parsed) = child
                        .as_str()
                        .and_then(|t| serde_json::from_str::<Value>(t).ok())
                {
                    flatten(&parsed, child_path, out);
                    continue;
                }
                flatten(child, child_path, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let keys: Vec<Option<String>> = items.iter().map(|i| element_key(&path, i)).collect();
            let unique = keys.iter().flatten().collect::<BTreeSet<_>>().len() == items.len();
            for (i, item) in items.iter().enumerate() {
                let segment = match &keys[i] {
                    Some(key) if unique => key.clone(),
                    _ => i.to_string(),
                };
                flatten(item, format!("{path}/{segment}"), out);
            }
        }
        leaf => {
            out.insert(path, leaf.clone());
        }
    }
}

/// `*` matches within one path segment (no `/`), `**` across segments.
fn glob(pattern: &str, text: &str) -> bool {
    fn go(p: &[u8], t: &[u8]) -> bool {
        match p {
            [] => t.is_empty(),
            [b'*', b'*', rest @ ..] => (0..=t.len()).any(|i| go(rest, &t[i..])),
            [b'*', rest @ ..] => {
                let stop = t.iter().position(|&c| c == b'/').unwrap_or(t.len());
                (0..=stop).any(|i| go(rest, &t[i..]))
            }
            [c, rest @ ..] => t.first() == Some(c) && go(rest, &t[1..]),
        }
    }
    go(pattern.as_bytes(), text.as_bytes())
}

/// `1.0` and `1` are the same number: bundle-tool copies a number as the input writes it,
/// operator-sdk writes Go's shortest form of the float64 it decoded.
fn same_number(x: Option<&Value>, y: Option<&Value>) -> bool {
    match (x.and_then(Value::as_f64), y.and_then(Value::as_f64)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// One leaf that is not the same in both bundles.
#[derive(Debug)]
struct Difference {
    file: String,
    path: String,
    ours: Option<Value>,
    theirs: Option<Value>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| match v {
            None => "(absent)".to_string(),
            Some(v) => {
                let text = v.to_string();
                if text.chars().count() > 100 {
                    format!("{}…", text.chars().take(100).collect::<String>())
                } else {
                    text
                }
            }
        };
        write!(
            f,
            "{} {}: bundle-tool {} | operator-sdk {}",
            self.file,
            self.path,
            show(&self.ours),
            show(&self.theirs)
        )
    }
}

/// How one input compared.
#[derive(Default)]
struct Comparison {
    leaves: usize,
    same: usize,
    /// Differences and the allow-list entry that explains each.
    explained: Vec<(Difference, &'static str)>,
    unexplained: Vec<Difference>,
}

fn compare(ours: &BTreeMap<String, Value>, theirs: &BTreeMap<String, Value>) -> Comparison {
    let mut comparison = Comparison::default();
    let names: BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
    let owned_groups: BTreeSet<&str> = ours
        .values()
        .filter(|v| v["kind"] == "CustomResourceDefinition")
        .filter_map(|v| v["spec"]["group"].as_str())
        .collect();
    for name in names {
        // A whole file only operator-sdk writes, holding a custom resource of an owned API.
        let custom_resource = !ours.contains_key(name.as_str())
            && theirs[name.as_str()]["apiVersion"]
                .as_str()
                .and_then(|v| v.rsplit_once('/'))
                .is_some_and(|(group, _)| owned_groups.contains(group));
        let leaves = |files: &BTreeMap<String, Value>| {
            let mut out = BTreeMap::new();
            if let Some(value) = files.get(name) {
                let mut value = value.clone();
                if let Some(created) = value.pointer_mut(CREATED_AT) {
                    assert!(
                        created
                            .as_str()
                            .is_some_and(|c| c.len() == 20 && c.ends_with('Z')),
                        "{name}: createdAt {created}"
                    );
                    *created = json!("(normalised)");
                }
                flatten(&value, String::new(), &mut out);
            }
            out
        };
        let (a, b) = (leaves(ours), leaves(theirs));
        let paths: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for path in paths {
            comparison.leaves += 1;
            let (x, y) = (a.get(path), b.get(path));
            if x == y || same_number(x, y) {
                comparison.same += 1;
                continue;
            }
            let difference = Difference {
                file: name.clone(),
                path: path.clone(),
                ours: x.cloned(),
                theirs: y.cloned(),
            };
            if custom_resource {
                comparison
                    .explained
                    .push((difference, CUSTOM_RESOURCE_KEPT));
                continue;
            }
            match ALLOWED.iter().find(|rule| {
                glob(rule.file, name) && glob(rule.path, path) && rule.when.accepts(x, y)
            }) {
                Some(rule) => comparison.explained.push((difference, rule.reason)),
                None => comparison.unexplained.push(difference),
            }
        }
    }
    comparison
}

/// Real operators from the shared corpus, all built with operator-sdk, with what each brings
/// to the comparison.
const CORPUS_BUNDLES: &[&str] = &[
    // Go: `RELATED_IMAGE_*` variables, unbound ClusterRoles, a sample with a namespace.
    "dotvirt-operator/0.0.32",
    // Go: namespaced and cluster permissions, a metrics Service, extra ClusterRoles.
    "alibaba-cloud-csi-operator/0.1.14",
    // An image both a container's and a `RELATED_IMAGE_*` value.
    "gitlab-runner-operator/1.52.0",
    // Five CRDs converted by one webhook Service.
    "dbaas-operator/0.5.0",
    // `WATCH_NAMESPACE` in the operator's container.
    "aws-efs-operator/0.0.8",
    // Resource quantities in a non-canonical form (`2000m`).
    "flux-operator/0.58.1",
    // A sample of an owned API whose kind is `Secret`.
    "ecr-secret-operator/0.6.0",
    // A validating admission webhook.
    "kube-green/0.7.1",
    // Mutating and validating admission webhooks, with an object selector.
    "marin3r/0.13.1",
];

/// Corpus bundles whose rebuilt manifest set does not give the same bundle, and why
/// (docs/conformance.md). The full-corpus test fails if one of them starts to agree, so the
/// list stays true.
const CORPUS_EXCEPTIONS: &[(&str, &str)] = &[
    (
        "cluster-aas-operator-0.1.5",
        "two of its published ClusterRoles have no apiVersion; bundle-tool refuses the \
         manifests, naming the file and line",
    ),
    (
        "etcd-0.9.4-clusterwide",
        "its default channel is a channel the bundle is not in; bundle-tool refuses that config",
    ),
    (
        "hive-operator-2.5.3516-a2ed9b3",
        "its default channel is a channel the bundle is not in; bundle-tool refuses that config",
    ),
    (
        "move2kube-operator-0.3.15-rc.0",
        "its default channel is a channel the bundle is not in; bundle-tool refuses that config",
    ),
    (
        "multicluster-operators-subscription-0.4.1",
        "its default channel is a channel the bundle is not in; bundle-tool refuses that config",
    ),
    (
        "sosivio-2.1.0-158",
        "two identical samples: operator-sdk keeps one per apiVersion, kind and name, \
         bundle-tool both",
    ),
];

/// Runs both tools on one input and compares; prints the comparison. `Err` says why the
/// bundles differ beyond the allow-list, or which tool failed.
fn compare_input(input: &Input, sdk: &Path) -> Result<(), String> {
    let ours = read_bundle(&run_bundle_tool(input)?);
    let theirs = read_bundle(&run_operator_sdk(input, sdk)?);
    let comparison = compare(&ours, &theirs);
    eprintln!(
        "{}: {} files, {} leaves compared, {} the same, {} explained differences, {} unexplained",
        input.name,
        ours.len().max(theirs.len()),
        comparison.leaves,
        comparison.same,
        comparison.explained.len(),
        comparison.unexplained.len()
    );
    let mut by_reason: BTreeMap<&str, Vec<&Difference>> = BTreeMap::new();
    for (difference, reason) in &comparison.explained {
        by_reason.entry(reason).or_default().push(difference);
    }
    for (reason, differences) in &by_reason {
        eprintln!(
            "  {} leaves: {reason}; e.g. {}",
            differences.len(),
            differences[0]
        );
    }
    for difference in &comparison.unexplained {
        eprintln!("  UNEXPLAINED: {difference}");
    }
    if comparison.unexplained.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} leaves differ beyond the allow-list",
            comparison.unexplained.len()
        ))
    }
}

#[test]
fn generate_matches_operator_sdk_generate_bundle_field_by_field() {
    let sdk = Assets::locate().unwrap().operator_sdk().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut inputs = vec![redis_input(work.path())];
    for bundle in CORPUS_BUNDLES {
        let dir = e2e::corpus::bundles_root().join(bundle);
        inputs.push(corpus_input(work.path(), &dir));
    }
    let failures: Vec<String> = inputs
        .iter()
        .filter_map(|input| {
            compare_input(input, &sdk)
                .err()
                .map(|why| format!("{}: {why}", input.name))
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every corpus bundle, rebuilt into a manifest set, through both tools.
#[test]
fn every_corpus_bundle_rebuilt_gives_operator_sdks_bundle() {
    let sdk = Assets::locate().unwrap().operator_sdk().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut agreed = 0;
    let mut excepted = BTreeSet::new();
    let mut failures = Vec::new();
    let bundles = e2e::corpus::bundles();
    for (_, _, dir) in &bundles {
        let input = corpus_input(work.path(), dir);
        let outcome = compare_input(&input, &sdk);
        let exception = CORPUS_EXCEPTIONS
            .iter()
            .find(|(name, _)| *name == input.name);
        match (outcome, exception) {
            (Ok(()), None) => agreed += 1,
            (Err(why), Some((name, reason))) => {
                eprintln!("  known: {why} ({reason})");
                excepted.insert(*name);
            }
            (Ok(()), Some(_)) => failures.push(format!(
                "{}: now agrees; take it out of CORPUS_EXCEPTIONS",
                input.name
            )),
            (Err(why), None) => failures.push(format!("{}: {why}", input.name)),
        }
        // Each input's two bundles are some hundred KiB; the corpus is 266 of them.
        std::fs::remove_dir_all(&input.dir).unwrap();
    }
    eprintln!(
        "{} corpus bundles: {agreed} give operator-sdk's bundle up to the allow-list, {} are \
         known exceptions, {} fail",
        bundles.len(),
        excepted.len(),
        failures.len()
    );
    for (name, _) in CORPUS_EXCEPTIONS {
        if !excepted.contains(name) && !failures.iter().any(|f| f.starts_with(name)) {
            failures.push(format!(
                "{name}: listed in CORPUS_EXCEPTIONS but not in the corpus"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The comparison itself: a changed leaf outside the allow-list, and an allowed leaf changed
/// in a shape its entry does not accept, are both reported (no operator-sdk needed).
#[test]
fn the_comparison_reports_what_the_allow_list_does_not_explain() {
    let ours = read_bundle(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    assert!(compare(&ours, &ours).unexplained.is_empty());
    let csv = "manifests/redis-operator.clusterserviceversion.yaml";
    let mut theirs = ours.clone();
    let value = theirs.get_mut(csv).unwrap();
    value["spec"]["install"]["spec"]["deployments"][0]["spec"]["replicas"] = json!(2);
    // containerImage may only be missing on operator-sdk's side, not different.
    value["metadata"]["annotations"]["containerImage"] = json!("example.com/other:1");
    // createdAt is normalised, but must be there.
    value["metadata"]["annotations"]["createdAt"] = json!("2000-01-01T00:00:00Z");
    let comparison = compare(&ours, &theirs);
    let paths: Vec<&str> = comparison
        .unexplained
        .iter()
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "/metadata/annotations/containerImage",
            "/spec/install/spec/deployments/[redis-operator]/spec/replicas",
        ]
    );
}
