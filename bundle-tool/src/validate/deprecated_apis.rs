//! The `alpha-deprecated-apis` validator (also part of `operatorhubv2` upstream): objects of
//! API versions that Kubernetes 1.22, 1.25 and 1.26 removed. A warning, or an error when the
//! bundle targets that version or later (`k8s-version` or `spec.minKubeVersion`).

use std::collections::BTreeMap;

use semver::Version;
use serde_json::Value;

use super::{Finding, LoadedBundle};

/// Kinds removed in 1.22, by group/version.
const REMOVED_1_22: [(&str, &[&str]); 11] = [
    ("scheduling.k8s.io/v1beta1", &["PriorityClass"]),
    (
        "rbac.authorization.k8s.io/v1beta1",
        &["Role", "ClusterRoleBinding", "RoleBinding", "ClusterRole"],
    ),
    ("apiregistration.k8s.io/v1beta1", &["APIService"]),
    ("authentication.k8s.io/v1beta1", &["TokenReview"]),
    (
        "authorization.k8s.io/v1beta1",
        &[
            "LocalSubjectAccessReview",
            "SelfSubjectAccessReview",
            "SubjectAccessReview",
        ],
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        &[
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ],
    ),
    ("coordination.k8s.io/v1beta1", &["Lease"]),
    ("extensions/v1beta1", &["Ingress"]),
    ("networking.k8s.io/v1beta1", &["Ingress", "IngressClass"]),
    (
        "storage.k8s.io/v1beta1",
        &["CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"],
    ),
    (
        "certificates.k8s.io/v1beta1",
        &["CertificateSigningRequest"],
    ),
];

/// (group, version, kind) removed in 1.25.
const REMOVED_1_25: [(&str, &str, &str); 7] = [
    ("batch", "v1beta1", "CronJob"),
    ("discovery.k8s.io", "v1beta1", "EndpointSlice"),
    ("events.k8s.io", "v1beta1", "Event"),
    ("autoscaling", "v2beta1", "HorizontalPodAutoscaler"),
    ("policy", "v1beta1", "PodDisruptionBudget"),
    ("policy", "v1beta1", "PodSecurityPolicy"),
    ("node.k8s.io", "v1beta1", "RuntimeClass"),
];

/// RBAC rules on these (group, resource) pairs get a warning: the resource is gone in 1.25
/// at every version. operator-framework/api v0.34.0 (operator-sdk v1.42.3) also warned on
/// rules on the resources of every other kind of `REMOVED_1_25`, but a rule has no version
/// and those resources live on in newer versions (`policy/v1` PodDisruptionBudgets): v0.45.0
/// dropped them (operator-framework/api#378), and so do we.
const REMOVED_RESOURCES_1_25: [(&str, &str); 1] = [("policy", "podsecuritypolicies")];

/// Names of offending objects by kind (or by resource, for RBAC rules).
type Found = BTreeMap<String, Vec<String>>;

/// The findings for `bundle`, with `k8s_version` from `--optional-values`.
pub fn findings(bundle: &LoadedBundle, k8s_version: Option<&str>) -> Vec<Finding> {
    let csv_name = bundle.csv["metadata"]["name"].as_str().unwrap_or_default();
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    let tolerant = |text: &str| crate::version_range::parse_version_tolerant(text).ok();
    let provided = match k8s_version.filter(|v| !v.is_empty()) {
        Some(text) => tolerant(text).or_else(|| {
            errors.push(format!(
                "invalid value informed via the k8s key option : {text}"
            ));
            None
        }),
        None => None,
    };
    let min_kube_text = bundle.csv["spec"]["minKubeVersion"]
        .as_str()
        .unwrap_or_default();
    let min_kube = if min_kube_text.is_empty() {
        None
    } else {
        tolerant(min_kube_text).or_else(|| {
            errors.push(format!("unable to use csv.Spec.MinKubeVersion to verify the CRD/Webhook apis because it has an invalid value: {min_kube_text}"));
            None
        })
    };

    let (found_1_25, rbac_1_25) = removed_in_1_25(bundle);
    for (minor, found, rbac) in [
        (22, removed_in_1_22(bundle), Found::new()),
        (25, found_1_25, rbac_1_25),
        (26, removed_in_1_26(bundle), Found::new()),
    ] {
        let removal = Version::new(1, minor, 0);
        let targets_it = |v: &Option<Version>| v.as_ref().is_some_and(|v| *v >= removal);
        if !found.is_empty() {
            let message = message(minor, &found);
            if targets_it(&provided) || targets_it(&min_kube) {
                errors.push(message);
            } else {
                warnings.push(message);
            }
        }
        // RBAC rules on removed resources are only worth a warning: the rule may be
        // there for older clusters.
        if !rbac.is_empty() {
            warnings.push(message(minor, &rbac));
        }
    }
    errors
        .into_iter()
        .map(|e| Finding::error(csv_name, e))
        .chain(warnings.into_iter().map(|w| Finding::warning(csv_name, w)))
        .collect()
}

/// Upstream's message, with the kinds sorted (upstream's order varies between runs). With
/// more than one kind, upstream ends every kind with a comma, the last one too (its counter
/// never advances); kept, since people match these texts.
fn message(minor: u64, found: &Found) -> String {
    let apis: Vec<String> = found
        .iter()
        .map(|(kind, names)| {
            let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            format!("{kind}: ([{}])", quoted.join(" "))
        })
        .collect();
    let apis = if apis.len() == 1 {
        apis.concat()
    } else {
        apis.iter().map(|a| format!("{a},")).collect()
    };
    format!(
        "this bundle is using APIs which were deprecated and removed in v1.{minor}. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-{minor}. Migrate the API(s) for {apis}"
    )
}

/// Every object of the bundle as upstream lists them: manifests in file order, the CSV and
/// CRDs included.
fn objects(bundle: &LoadedBundle) -> impl Iterator<Item = &Value> {
    std::iter::once(&bundle.csv)
        .chain(bundle.crds.iter().map(|(_, o)| o))
        .chain(bundle.others.iter().map(|(_, o)| o))
}

fn api_version(object: &Value) -> &str {
    object["apiVersion"].as_str().unwrap_or_default()
}

fn kind(object: &Value) -> &str {
    object["kind"].as_str().unwrap_or_default()
}

fn object_name(object: &Value) -> String {
    object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn removed_in_1_22(bundle: &LoadedBundle) -> Found {
    let mut found = Found::new();
    for (_, crd) in &bundle.crds {
        if api_version(crd) == "apiextensions.k8s.io/v1beta1" {
            found
                .entry("CRD".into())
                .or_default()
                .push(object_name(crd));
        }
    }
    for object in objects(bundle) {
        let removed = REMOVED_1_22
            .iter()
            .any(|(gv, kinds)| *gv == api_version(object) && kinds.contains(&kind(object)));
        if removed {
            found
                .entry(kind(object).into())
                .or_default()
                .push(object_name(object));
        }
    }
    found
}

/// (group, version) of an apiVersion: `v1` has the empty group.
fn group_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// Objects of removed kinds, and RBAC rules of the CSV on removed resources. The CSV's CRD
/// descriptions name the kinds their resources use; those count as objects.
fn removed_in_1_25(bundle: &LoadedBundle) -> (Found, Found) {
    let (mut found, mut rbac) = (Found::new(), Found::new());
    let mut add_if_removed = |api_version: &str, kind: &str, name: String| {
        let (group, version) = group_version(api_version);
        if REMOVED_1_25
            .iter()
            .any(|(g, v, k)| (*g, *v, *k) == (group, version, kind))
        {
            found.entry(kind.to_string()).or_default().push(name);
        }
    };
    for object in objects(bundle) {
        if api_version(object) != "operators.coreos.com/v1alpha1" {
            add_if_removed(api_version(object), kind(object), object_name(object));
            continue;
        }
        if kind(object) != "ClusterServiceVersion" {
            continue;
        }
        let spec = &object["spec"];
        let mut described = std::collections::BTreeSet::new();
        for (field, key) in [("Owned", "owned"), ("Required", "required")] {
            let descriptions = spec["customresourcedefinitions"][key].as_array();
            for (i, description) in descriptions.into_iter().flatten().enumerate() {
                let resources = description["resources"].as_array();
                for (j, resource) in resources.into_iter().flatten().enumerate() {
                    let kind = resource["kind"].as_str().unwrap_or_default();
                    described.insert(format!("{}s", kind.to_lowercase()));
                    add_if_removed(
                        resource["version"].as_str().unwrap_or_default(),
                        kind,
                        format!(
                            "ClusterServiceVersion.Spec.CustomResourceDefinitions.{field}[{i}].Resource[{j}]"
                        ),
                    );
                }
            }
        }
        for (field, key) in [
            ("ClusterPermissions", "clusterPermissions"),
            ("Permissions", "permissions"),
        ] {
            let permissions = spec["install"]["spec"][key].as_array();
            for (i, permission) in permissions.into_iter().flatten().enumerate() {
                let rules = permission["rules"].as_array();
                for (j, rule) in rules.into_iter().flatten().enumerate() {
                    let strings = |key: &str| -> Vec<&str> {
                        rule[key]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect()
                    };
                    for group in strings("apiGroups") {
                        for resource in strings("resources") {
                            if described.contains(resource) {
                                continue;
                            }
                            if REMOVED_RESOURCES_1_25.contains(&(group, resource)) {
                                rbac.entry(resource.to_string()).or_default().push(format!(
                                    "ClusterServiceVersion.Spec.InstallStrategy.StrategySpec.{field}[{i}].Rules[{j}]"
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    (found, rbac)
}

fn removed_in_1_26(bundle: &LoadedBundle) -> Found {
    let mut found = Found::new();
    for object in objects(bundle) {
        if api_version(object) == "autoscaling/v2beta2" && kind(object) == "HorizontalPodAutoscaler"
        {
            found
                .entry(kind(object).into())
                .or_default()
                .push(object_name(object));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bundle(min_kube: &str, others: Vec<Value>) -> LoadedBundle {
        LoadedBundle {
            dir: "b".into(),
            csv: json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                "metadata": {"name": "op.v1.0.0"}, "spec": {"minKubeVersion": min_kube,
                "install": {"spec": {"clusterPermissions": [{"rules": [{"apiGroups": ["policy"], "resources": ["podsecuritypolicies"], "verbs": ["use"]}]}]}}}}),
            csv_file: "b/manifests/csv.yaml".into(),
            crds: vec![(
                "crd.yaml".into(),
                json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition", "metadata": {"name": "as.x.io"}}),
            )],
            others: others.into_iter().map(|o| ("o.yaml".into(), o)).collect(),
            files: vec![],
            annotations: Default::default(),
        }
    }

    fn messages(bundle: &LoadedBundle, k8s: Option<&str>) -> Vec<String> {
        findings(bundle, k8s)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn removed_apis_are_warnings_until_the_bundle_targets_that_version() {
        let cron = json!({"apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": {"name": "nightly"}});
        let pdb = json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"}});
        let b = bundle("1.21.0", vec![cron, pdb]);
        let found = messages(&b, None);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].starts_with("Warning: Value op.v1.0.0: this bundle is using APIs which were deprecated and removed in v1.22. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22. Migrate the API(s) for CRD: ([\"as.x.io\"])"), "{found:#?}");
        assert!(found[1].ends_with(
            "Migrate the API(s) for CronJob: ([\"nightly\"]),PodDisruptionBudget: ([\"pdb\"]),"
        ));
        assert!(found[2].ends_with("Migrate the API(s) for podsecuritypolicies: ([\"ClusterServiceVersion.Spec.InstallStrategy.StrategySpec.ClusterPermissions[0].Rules[0]\"])"));
        // Targeting 1.25: both object findings become errors, the RBAC one stays a warning.
        let found = messages(&b, Some("1.25"));
        assert!(found[0].starts_with("Error:") && found[1].starts_with("Error:"));
        assert!(found[2].starts_with("Warning:"));
        let by_min_kube = messages(&bundle("v1.22", vec![]), None);
        assert!(by_min_kube[0].starts_with("Error:"), "{by_min_kube:#?}");
    }

    #[test]
    fn invalid_versions_are_errors() {
        let found = messages(&bundle("one", vec![]), Some("x.y"));
        assert!(found.contains(
            &"Error: Value op.v1.0.0: invalid value informed via the k8s key option : x.y".into()
        ));
        assert!(found.contains(&"Error: Value op.v1.0.0: unable to use csv.Spec.MinKubeVersion to verify the CRD/Webhook apis because it has an invalid value: one".into()));
    }
}
