//! `--kubeconfig`: what only the cluster knows. The versions it has stored objects at, read
//! from its CRDs' `status.storedVersions` as operator-controller's preflight reads them (a
//! bundle file cannot know a version stored at before the storage version last changed);
//! and its existing custom resources, each validated against NEW's schema for its version, as
//! OLM v0 (v0.46.0) does before it updates a CRD: for every version the cluster's CRD serves
//! and NEW still serves, every object listed at that version must pass NEW's schema, or OLM v0
//! refuses the update ("updated validation is too restrictive"; only a warning when NEW
//! converts through a webhook).

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams};
use serde_json::Value;

use super::bundle_contents::{BundleContents, ClusterError, UpgradeError};
use super::cr_validation;
use super::crd_rules::Crd;
use super::finding::{Area, Finding, Level};

/// bundle-tool's rule for an existing custom resource that NEW's schema refuses.
pub const EXISTING_OBJECT_INVALID: &str = "existingObjectInvalid";

/// What `--kubeconfig` read from the cluster.
#[derive(Debug, Default)]
pub struct Live {
    /// `status.storedVersions` of each of OLD's CRDs the cluster has (absent ones are left
    /// out: nothing is stored for them).
    pub stored_versions: BTreeMap<String, Vec<String>>,
    /// One finding per field error of an existing custom resource under NEW's schema.
    pub findings: Vec<Finding>,
    /// What was validated, for standard error.
    pub notes: Vec<String>,
}

/// Reads the cluster for the upgrade from `old` to `new`.
pub fn read_cluster(
    kubeconfig: &Path,
    old: &BundleContents,
    new: &BundleContents,
) -> Result<Live, UpgradeError> {
    let cluster = |error: ClusterError| UpgradeError::Cluster {
        kubeconfig: kubeconfig.to_path_buf(),
        error: Box::new(error),
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| cluster(ClusterError::Runtime(e)))?;
    runtime.block_on(async {
        let config =
            kube::config::Kubeconfig::read_from(kubeconfig)
                .map_err(|e| cluster(ClusterError::Read(e)))?;
        let config = kube::Config::from_custom_kubeconfig(
            config,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| cluster(ClusterError::Unusable(e)))?;
        let client = kube::Client::try_from(config).map_err(|e| cluster(ClusterError::Client(e)))?;
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        let mut live = Live::default();
        for name in old.crds.keys() {
            let crd = api
                .get_opt(name)
                .await
                .map_err(|error| {
                    cluster(ClusterError::ReadCrd {
                        name: name.clone(),
                        error,
                    })
                })?;
            let Some(crd) = crd else { continue };
            let stored = crd
                .status
                .as_ref()
                .and_then(|s| s.stored_versions.clone())
                .unwrap_or_default();
            live.stored_versions.insert(name.clone(), stored);
            let Some(new_crd) = new.crds.get(name) else {
                continue;
            };
            let live_crd = Crd::from_object(&serde_json::to_value(&crd).unwrap_or(Value::Null));
            for version in versions_to_validate(&live_crd, new_crd) {
                let resource = ApiResource {
                    group: crd.spec.group.clone(),
                    version: version.clone(),
                    api_version: format!("{}/{version}", crd.spec.group),
                    kind: crd.spec.names.kind.clone(),
                    plural: crd.spec.names.plural.clone(),
                };
                let objects = list_all(&client, &resource)
                    .await
                    .map_err(|error| {
                        cluster(ClusterError::List {
                            name: name.clone(),
                            version: version.clone(),
                            error,
                        })
                    })?;
                let (findings, refused) = validate_objects(name, new_crd, &resource, &objects);
                live.findings.extend(findings);
                live.notes.push(format!(
                    "{name}: {} existing {} at {version} validated against {}'s schema, {refused} refused",
                    objects.len(),
                    crd.spec.names.plural,
                    new.name
                ));
            }
        }
        Ok(live)
    })
}

/// The versions whose objects OLM v0 validates against NEW's schema: those the cluster's CRD
/// serves and NEW still serves (in NEW's order).
pub fn versions_to_validate(live: &Crd, new: &Crd) -> Vec<String> {
    new.versions
        .iter()
        .filter(|v| v.served && live.versions.iter().any(|l| l.name == v.name && l.served))
        .map(|v| v.name.clone())
        .collect()
}

/// Validates `objects` (listed at `resource`'s version) against NEW's schema for that
/// version: the findings, and how many objects were refused. With a webhook conversion in
/// NEW, OLM v0 only warns, and so do the findings.
pub fn validate_objects(
    crd_name: &str,
    new: &Crd,
    resource: &ApiResource,
    objects: &[Value],
) -> (Vec<Finding>, usize) {
    let schema = new
        .versions
        .iter()
        .find(|v| v.name == resource.version)
        .and_then(|v| v.schema.clone())
        .unwrap_or(Value::Null);
    let webhook = new.conversion == "Webhook";
    let mut findings = Vec::new();
    let mut refused = 0;
    for object in objects {
        let errors = cr_validation::validate(&schema, object);
        if errors.is_empty() {
            continue;
        }
        refused += 1;
        findings.extend(object_findings(
            crd_name,
            &resource.version,
            resource,
            object,
            &errors,
            webhook,
        ));
    }
    (findings, refused)
}

/// Every object of `resource`, page by page as OLM v0's pager lists them.
async fn list_all(
    client: &kube::Client,
    resource: &ApiResource,
) -> Result<Vec<Value>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let mut objects = Vec::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        for item in page.items {
            let mut value = serde_json::to_value(&item).unwrap_or(Value::Null);
            // The list's items may leave out apiVersion and kind; the API server's objects
            // have them.
            if let Some(map) = value.as_object_mut() {
                map.entry("apiVersion")
                    .or_insert_with(|| Value::from(resource.api_version.clone()));
                map.entry("kind")
                    .or_insert_with(|| Value::from(resource.kind.clone()));
            }
            objects.push(value);
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(objects),
        }
    }
}

/// `namespace/name`, or `name` for a cluster-scoped object (as OLM v0 names it).
fn object_name(object: &Value) -> String {
    let metadata = &object["metadata"];
    let name = metadata["name"].as_str().unwrap_or_default();
    match metadata["namespace"].as_str().filter(|n| !n.is_empty()) {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

/// OLM v0's text for an object NEW's schema refuses: `error validating GROUP/VERSION,
/// Kind=KIND "NS/NAME": updated validation is too restrictive: ERRORS`.
pub fn olm_message(
    resource: &ApiResource,
    object: &str,
    errors: &[cr_validation::FieldError],
) -> String {
    format!(
        "error validating {}/{}, Kind={} {}: updated validation is too restrictive: {}",
        resource.group,
        resource.version,
        resource.kind,
        crate::go_quote::go_quote(object),
        cr_validation::aggregate(errors)
    )
}

fn object_findings(
    crd: &str,
    version: &str,
    resource: &ApiResource,
    object: &Value,
    errors: &[cr_validation::FieldError],
    webhook: bool,
) -> Vec<Finding> {
    let name = object_name(object);
    errors
        .iter()
        .map(|error| Finding {
            level: if webhook { Level::Warning } else { Level::Error },
            area: Area::Crd,
            rule: EXISTING_OBJECT_INVALID.to_string(),
            subject: crd.to_string(),
            version: Some(version.to_string()),
            path: Some(format!("{name}: {}", error.path)),
            message: olm_message(resource, &name, std::slice::from_ref(error)),
            old: error.value.clone(),
            new: None,
            hint: if webhook {
                "OLM v0 lets this through only because NEW converts through a webhook: make sure the conversion fixes the object".to_string()
            } else {
                "relax NEW's schema for existing objects, or migrate them before the upgrade (OLM v0 refuses to update the CRD while any object fails)".to_string()
            },
        })
        .collect()
}
