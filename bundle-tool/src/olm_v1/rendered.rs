//! The objects operator-controller v1.5.1 makes from a registry+v1 bundle, by kind and name,
//! as its renderer names them (`internal/operator-controller/rukpak/render/registryv1/generators/generators.go`):
//!
//! - the CRDs, and every other bundled object of a kind OLM supports, namespaced ones moved to
//!   the install namespace (`BundleAdditionalResourcesGenerator`);
//! - one ServiceAccount per `serviceAccountName` of the CSV's permissions, except `default`;
//! - a ClusterRole and ClusterRoleBinding per `clusterPermissions` entry, and per
//!   `permissions` entry too when the bundle is installed for all namespaces (then with a
//!   `namespaces` get/list/watch rule added); a Role and RoleBinding per `permissions` entry in
//!   the install namespace otherwise. Their names are `<csv>-<serviceAccount>` and a hash of the
//!   entry, cut to 63 characters ([`permission_object_name`]);
//! - the CSV's Deployments;
//! - per Deployment serving webhooks, a Service `<deployment>-service` and, with cert-manager
//!   as the certificate provider, an Issuer `<service>-cert-selfsigned-issuer` and a
//!   Certificate `<service>-cert` (`render/certprovider.go`, `render/certproviders/certmanager.go`);
//! - a ValidatingWebhookConfiguration or MutatingWebhookConfiguration per such webhook, named
//!   after its `generateName` without the trailing `-`.

use std::collections::BTreeSet;

use serde_json::Value;
use sha2::{Digest, Sha224};

use super::{OlmV1Error, RegistryV1};

/// An object operator-controller creates, as RBAC names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RenderedObject {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource (plural, lower case).
    pub resource: String,
    /// The namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

/// A role the bundle binds that it does not hold itself: granting it needs `bind` on it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExternalRole {
    /// `Role` or `ClusterRole`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// The binding's namespace for a Role.
    pub namespace: Option<String>,
}

/// What installing a bundle creates, and the permissions it hands out.
#[derive(Clone, Debug, Default)]
pub struct Rendered {
    /// Every object, sorted, without repeats.
    pub objects: BTreeSet<RenderedObject>,
    /// Rules of the ClusterRoles created: whoever creates them must hold them (or `escalate`).
    pub cluster_rules: Vec<Value>,
    /// Rules of the Roles created in the install namespace.
    pub namespace_rules: Vec<Value>,
    /// Roles bound by the bundle's own bindings but not part of the bundle.
    pub external_roles: BTreeSet<ExternalRole>,
}

/// How the bundle is installed (operator-controller v1.5.1 `render.go`,
/// `defaultTargetNamespacesForBundle`): for all namespaces when the CSV supports it, else for
/// its own namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallMode {
    /// `AllNamespaces`: every permission becomes cluster-wide.
    AllNamespaces,
    /// `OwnNamespace`: `permissions` stay Roles in the install namespace.
    OwnNamespace,
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Renders `bundle` for `namespace` as operator-controller v1.5.1 with the cert-manager
/// certificate provider does.
pub fn render(bundle: &RegistryV1, namespace: &str) -> Result<Rendered, OlmV1Error> {
    let mode = install_mode(bundle)?;
    let mut out = Rendered::default();
    let mut add = |group: &str, resource: &str, namespaced: bool, name: &str| {
        out.objects.insert(RenderedObject {
            group: group.into(),
            resource: resource.into(),
            namespace: namespaced.then(|| namespace.to_string()),
            name: name.into(),
        });
    };
    for crd in &bundle.crds {
        add(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            false,
            &crd.id.name,
        );
    }
    let permissions = bundle.csv_array("/install/spec/permissions")?;
    let cluster_permissions = bundle.csv_array("/install/spec/clusterPermissions")?;
    for permission in permissions.iter().chain(cluster_permissions) {
        let account = service_account(bundle, permission)?;
        if account != "default" {
            add("", "serviceaccounts", true, &account);
        }
    }
    let mut cluster_rules = Vec::new();
    let mut namespace_rules = Vec::new();
    for permission in cluster_permissions {
        let name = permission_object_name(bundle, permission, &[])?;
        add(RBAC_GROUP, "clusterroles", false, &name);
        add(RBAC_GROUP, "clusterrolebindings", false, &name);
        cluster_rules.extend(rules(bundle, permission)?.iter().cloned());
    }
    for permission in permissions {
        match mode {
            InstallMode::AllNamespaces => {
                let namespaces = namespaces_rule();
                let name =
                    permission_object_name(bundle, permission, std::slice::from_ref(&namespaces))?;
                add(RBAC_GROUP, "clusterroles", false, &name);
                add(RBAC_GROUP, "clusterrolebindings", false, &name);
                cluster_rules.extend(rules(bundle, permission)?.iter().cloned());
                cluster_rules.push(namespaces);
            }
            InstallMode::OwnNamespace => {
                let name = permission_object_name(bundle, permission, &[])?;
                add(RBAC_GROUP, "roles", true, &name);
                add(RBAC_GROUP, "rolebindings", true, &name);
                namespace_rules.extend(rules(bundle, permission)?.iter().cloned());
            }
        }
    }
    for deployment in bundle.csv_array("/install/spec/deployments")? {
        let name = deployment["name"]
            .as_str()
            .ok_or_else(|| bundle.field_error("/install/spec/deployments", "a name is missing"))?;
        add("apps", "deployments", true, name);
    }
    let mut webhook_deployments = BTreeSet::new();
    for webhook in bundle.csv_array("/webhookdefinitions")? {
        let text = |field: &str| {
            webhook[field].as_str().ok_or_else(|| {
                bundle.field_error("/webhookdefinitions", &format!("{field} is missing"))
            })
        };
        webhook_deployments.insert(text("deploymentName")?.to_string());
        let resource = match text("type")? {
            "ValidatingAdmissionWebhook" => "validatingwebhookconfigurations",
            "MutatingAdmissionWebhook" => "mutatingwebhookconfigurations",
            _ => continue,
        };
        let name = text("generateName")?.trim_end_matches('-');
        add("admissionregistration.k8s.io", resource, false, name);
    }
    for deployment in &webhook_deployments {
        let service = webhook_service_name(deployment);
        let certificate = object_name_for_base_and_suffix(&service, "cert");
        add("", "services", true, &service);
        add(
            "cert-manager.io",
            "issuers",
            true,
            &object_name_for_base_and_suffix(&certificate, "selfsigned-issuer"),
        );
        add("cert-manager.io", "certificates", true, &certificate);
    }
    let bundled_roles: BTreeSet<(String, String)> = bundle
        .others
        .iter()
        .filter(|o| o.group() == RBAC_GROUP && matches!(o.id.kind.as_str(), "Role" | "ClusterRole"))
        .map(|o| (o.id.kind.clone(), o.id.name.clone()))
        .collect();
    for object in &bundle.others {
        let Some(namespaced) = supported_kind(&object.id.kind) else {
            return Err(OlmV1Error::UnsupportedKind {
                location: object.document.location.clone(),
                kind: object.id.kind.clone(),
            });
        };
        add(
            object.group(),
            &guess_resource(&object.id.kind),
            namespaced,
            &object.id.name,
        );
        if object.group() != RBAC_GROUP {
            continue;
        }
        let value = &object.document.value;
        match object.id.kind.as_str() {
            "ClusterRole" | "Role" => {
                let target = if object.id.kind == "Role" {
                    &mut namespace_rules
                } else {
                    &mut cluster_rules
                };
                if let Some(list) = value["rules"].as_array() {
                    target.extend(list.iter().cloned());
                }
            }
            "ClusterRoleBinding" | "RoleBinding" => {
                let kind = value["roleRef"]["kind"].as_str().unwrap_or_default();
                let name = value["roleRef"]["name"].as_str().unwrap_or_default();
                if !bundled_roles.contains(&(kind.to_string(), name.to_string())) {
                    out.external_roles.insert(ExternalRole {
                        kind: kind.into(),
                        name: name.into(),
                        namespace: (kind == "Role").then(|| namespace.to_string()),
                    });
                }
            }
            _ => {}
        }
    }
    out.cluster_rules = without_repeats(cluster_rules);
    out.namespace_rules = without_repeats(namespace_rules);
    Ok(out)
}

fn without_repeats(rules: Vec<Value>) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    rules
        .into_iter()
        .filter(|r| seen.insert(r.to_string()))
        .collect()
}

/// The install mode operator-controller v1.5.1 picks with no watch namespace configured.
pub fn install_mode(bundle: &RegistryV1) -> Result<InstallMode, OlmV1Error> {
    let supported: BTreeSet<&str> = bundle
        .csv_array("/installModes")?
        .iter()
        .filter(|m| m["supported"] == Value::Bool(true))
        .filter_map(|m| m["type"].as_str())
        .collect();
    if supported.contains("AllNamespaces") {
        Ok(InstallMode::AllNamespaces)
    } else if supported.contains("OwnNamespace") {
        Ok(InstallMode::OwnNamespace)
    } else {
        Err(OlmV1Error::InstallModes {
            location: bundle.csv.document.location.clone(),
        })
    }
}

/// The rule OLM adds to permissions made cluster-wide, as OLM v0's operator groups do.
fn namespaces_rule() -> Value {
    serde_json::json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]})
}

fn service_account(bundle: &RegistryV1, permission: &Value) -> Result<String, OlmV1Error> {
    match &permission["serviceAccountName"] {
        Value::Null => Ok("default".into()),
        Value::String(name) if name.is_empty() => Ok("default".into()),
        Value::String(name) => Ok(name.clone()),
        _ => Err(bundle.field_error(
            "/install/spec/permissions",
            "serviceAccountName is not a string",
        )),
    }
}

fn rules<'a>(bundle: &RegistryV1, permission: &'a Value) -> Result<&'a [Value], OlmV1Error> {
    match &permission["rules"] {
        Value::Null => Ok(&[]),
        Value::Array(rules) => Ok(rules),
        _ => Err(bundle.field_error("/install/spec/permissions", "rules is not a list")),
    }
}

/// `<deployment>-service` with the deployment's dots made dashes, as OLM v0 names it.
pub fn webhook_service_name(deployment: &str) -> String {
    object_name_for_base_and_suffix(&deployment.replace('.', "-"), "service")
}

/// `<base>-<suffix>`, the base cut so that the whole fits in 63 characters
/// (v1.5.1 `rukpak/util/util.go`, `ObjectNameForBaseAndSuffix`).
pub fn object_name_for_base_and_suffix(base: &str, suffix: &str) -> String {
    const MAX: usize = 63;
    let base = if base.len() + suffix.len() > MAX {
        // Names are ASCII (DNS labels), so the byte cut is a character cut.
        &base[..base.len().min(MAX - suffix.len() - 1)]
    } else {
        base
    };
    format!("{base}-{suffix}")
}

/// The name of the ClusterRole/Role (and binding) made from one permission entry:
/// `<csv>-<serviceAccount>` and the entry's hash (`render.go`, `DefaultUniqueNameGenerator`).
/// `added` are rules OLM appends before hashing (the `namespaces` rule when made cluster-wide).
pub fn permission_object_name(
    bundle: &RegistryV1,
    permission: &Value,
    added: &[Value],
) -> Result<String, OlmV1Error> {
    let account = service_account(bundle, permission)?;
    let text = go_permission_json(bundle, permission, added)?;
    let hash = base36(&Sha224::digest(text.as_bytes()));
    Ok(object_name_for_base_and_suffix(
        &format!("{}-{account}", bundle.csv_name()),
        &hash,
    ))
}

/// The entry as Go's `json.Encoder` writes operator-framework/api's
/// `StrategyDeploymentPermissions` (fields in struct order, `omitempty` lists left out,
/// HTML-safe escapes, a final newline): the bytes v1.5.1's `DeepHashObject` hashes with SHA-224.
fn go_permission_json(
    bundle: &RegistryV1,
    permission: &Value,
    added: &[Value],
) -> Result<String, OlmV1Error> {
    let account = match &permission["serviceAccountName"] {
        Value::String(name) => name.as_str(),
        _ => "",
    };
    let mut out = format!("{{\"serviceAccountName\":{}", go_string(account));
    let listed = rules(bundle, permission)?;
    if listed.is_empty() && added.is_empty() && permission["rules"].is_null() {
        out.push_str(",\"rules\":null}\n");
        return Ok(out);
    }
    out.push_str(",\"rules\":[");
    for (index, rule) in listed.iter().chain(added).enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push('{');
        let mut first = true;
        for (field, omit_empty) in [
            ("verbs", false),
            ("apiGroups", true),
            ("resources", true),
            ("resourceNames", true),
            ("nonResourceURLs", true),
        ] {
            let items = match &rule[field] {
                Value::Null => None,
                Value::Array(items) => Some(items),
                _ => {
                    return Err(bundle.field_error(
                        "/install/spec/permissions",
                        &format!("a rule's {field} is not a list"),
                    ));
                }
            };
            if omit_empty && items.is_none_or(|i| i.is_empty()) {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&format!("\"{field}\":"));
            match items {
                None => out.push_str("null"),
                Some(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        let Some(text) = item.as_str() else {
                            return Err(bundle.field_error(
                                "/install/spec/permissions",
                                &format!("a rule's {field} holds a non-string"),
                            ));
                        };
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(&go_string(text));
                    }
                    out.push(']');
                }
            }
        }
        out.push('}');
    }
    out.push_str("]}\n");
    Ok(out)
}

fn go_string(text: &str) -> String {
    crate::go_json::go_json(&Value::String(text.to_string()))
}

/// Big-endian bytes as a base-36 number, lower case, no leading zeros (Go's `big.Int.Text(36)`).
fn base36(bytes: &[u8]) -> String {
    let mut number: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    let mut digits = Vec::new();
    while !number.is_empty() {
        let mut remainder = 0u32;
        for byte in &mut number {
            let value = (remainder << 8) | u32::from(*byte);
            *byte = (value / 36) as u8;
            remainder = value % 36;
        }
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[remainder as usize]);
        let leading = number.iter().take_while(|b| **b == 0).count();
        number.drain(..leading);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

/// Whether OLM supports the kind in a bundle, and if so whether OLM treats it as namespaced
/// (operator-registry `pkg/lib/bundle/supported_resources.go`, which v1.5.1 uses).
fn supported_kind(kind: &str) -> Option<bool> {
    Some(match kind {
        "Service"
        | "ServiceAccount"
        | "Role"
        | "RoleBinding"
        | "PrometheusRule"
        | "ServiceMonitor"
        | "Secret"
        | "ConfigMap"
        | "PodDisruptionBudget"
        | "NetworkPolicy" => true,
        "ClusterRole"
        | "ClusterRoleBinding"
        | "PriorityClass"
        | "VerticalPodAutoscaler"
        | "ConsoleYAMLSample"
        | "ConsoleQuickStart"
        | "ConsoleCLIDownload"
        | "ConsoleLink"
        | "ConsolePlugin" => false,
        _ => return None,
    })
}

/// The resource of a kind as client-go's `UnsafeGuessKindToResource` guesses it; right for
/// every kind OLM supports in a bundle.
fn guess_resource(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base36_matches_go_big_int_text() {
        // Go: new(big.Int).SetBytes([]byte{1, 0}).Text(36) == "74"; 0xff == "73".
        assert_eq!(base36(&[1, 0]), "74");
        assert_eq!(base36(&[0xff]), "73");
        assert_eq!(base36(&[0, 0, 35]), "z");
        assert_eq!(base36(&[]), "0");
    }

    #[test]
    fn names_are_cut_to_63_characters() {
        let name = object_name_for_base_and_suffix(&"a".repeat(60), "service");
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("a-service"));
        assert_eq!(
            object_name_for_base_and_suffix("redis-operator", "service"),
            "redis-operator-service"
        );
    }

    fn bundle_with_csv(csv: &str) -> (tempfile::TempDir, Result<RegistryV1, OlmV1Error>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let manifests = dir.path().join("manifests");
        std::fs::create_dir(&manifests).expect("manifests/");
        if !csv.is_empty() {
            std::fs::write(manifests.join("csv.yaml"), csv).expect("write");
        }
        let bundle = RegistryV1::read(dir.path());
        (dir, bundle)
    }

    #[test]
    fn a_bundle_without_a_csv_is_an_error_naming_the_folder() {
        let (dir, bundle) = bundle_with_csv("");
        let error = bundle.expect_err("no CSV").to_string();
        assert!(error.contains(&dir.path().display().to_string()), "{error}");
        assert!(error.contains("no ClusterServiceVersion"), "{error}");
    }

    #[test]
    fn single_namespace_only_is_refused_with_the_csv_location() {
        let csv = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n\
                   metadata:\n  name: x.v1.0.0\nspec:\n  installModes:\n  \
                   - type: SingleNamespace\n    supported: true\n";
        let (_dir, bundle) = bundle_with_csv(csv);
        let error = render(&bundle.expect("reads"), "ns").expect_err("refused");
        let text = error.to_string();
        assert!(text.contains("csv.yaml:1"), "{text}");
        assert!(
            text.contains("neither AllNamespaces nor OwnNamespace"),
            "{text}"
        );
    }

    #[test]
    fn a_rule_field_of_the_wrong_type_is_an_error_not_a_panic() {
        let csv = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n\
                   metadata:\n  name: x.v1.0.0\nspec:\n  installModes:\n  \
                   - type: AllNamespaces\n    supported: true\n  install:\n    spec:\n      \
                   clusterPermissions:\n      - serviceAccountName: x\n        rules:\n        \
                   - verbs: get\n";
        let (_dir, bundle) = bundle_with_csv(csv);
        let error = render(&bundle.expect("reads"), "ns").expect_err("refused");
        assert!(error.to_string().contains("verbs is not a list"), "{error}");
    }

    #[test]
    fn kinds_become_resources() {
        assert_eq!(guess_resource("PriorityClass"), "priorityclasses");
        assert_eq!(guess_resource("NetworkPolicy"), "networkpolicies");
        assert_eq!(guess_resource("Service"), "services");
    }
}
