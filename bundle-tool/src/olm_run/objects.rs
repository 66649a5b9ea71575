//! The objects `run` makes, as JSON, and their names. Every one carries the
//! [`MANAGED_BY`] label and the package's [`PACKAGE_LABEL`], so that `run cleanup` finds
//! exactly what `run` made (and only that) with one label selector.

use serde_json::{Value, json};

/// `app.kubernetes.io/managed-by` on everything `run` makes.
pub const MANAGED_BY_KEY: &str = "app.kubernetes.io/managed-by";
/// Its value.
pub const MANAGED_BY: &str = "bundle-tool-run";
/// The package an object was made for.
pub const PACKAGE_LABEL: &str = "bundle-tool.run/package";
/// On the server pod: the catalog it serves (the Service selects it).
pub const CATALOG_REVISION_LABEL: &str = "bundle-tool.run/catalog-revision";
/// On the CatalogSource: the catalog image its server runs (what `--upgrade` adds to).
pub const CATALOG_IMAGE_ANNOTATION: &str = "bundle-tool.run/catalog-image";
/// On the CatalogSource, with `--server-image`: the ConfigMaps its server's catalog is in, in
/// order, comma-separated (what `--upgrade` adds to).
pub const CATALOG_CONFIGMAPS_ANNOTATION: &str = "bundle-tool.run/catalog-configmaps";
/// On the CatalogSource, with `--server-image`: the image its server runs.
pub const SERVER_IMAGE_ANNOTATION: &str = "bundle-tool.run/server-image";
/// The channel of the catalog `run` makes (one package, one channel).
pub const CHANNEL: &str = "bundle-tool-run";
/// The name of the OperatorGroup `run` makes when the namespace has none.
pub const OPERATOR_GROUP: &str = "bundle-tool-run";
/// The catalog server's gRPC port.
pub const GRPC_PORT: u16 = 50051;

/// The label selector of everything `run` made for `package`.
pub fn selector(package: &str) -> String {
    format!("{MANAGED_BY_KEY}={MANAGED_BY},{PACKAGE_LABEL}={package}")
}

fn labels(package: &str) -> Value {
    json!({MANAGED_BY_KEY: MANAGED_BY, PACKAGE_LABEL: package})
}

/// A DNS-1123 label from `text`: lower case, runs of other characters as `-`, at most
/// `max` characters, no `-` at either end.
pub fn dns_label(text: &str, max: usize) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_matches('-').chars().take(max).collect();
    out.trim_end_matches('-').to_string()
}

/// The names of a package's objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// The package.
    pub package: String,
    /// The namespace everything lives in.
    pub namespace: String,
}

impl Names {
    /// The CatalogSource.
    pub fn catalog_source(&self) -> String {
        format!("{}-run-catalog", dns_label(&self.package, 40))
    }

    /// The server pod and its Service for one catalog revision (the first 10 hex digits of
    /// its image digest): a new catalog gets a new server beside the old one, and the
    /// CatalogSource moves only once the new one is Ready.
    pub fn server(&self, revision: &str) -> String {
        format!("{}-{revision}", self.catalog_source())
    }

    /// The Subscription.
    pub fn subscription(&self) -> String {
        format!("{}-run", dns_label(&self.package, 52))
    }

    /// The repository the catalog image is pushed to under `prefix`.
    pub fn catalog_repository(&self, prefix: &str) -> String {
        format!(
            "{}/{}-run-catalog",
            prefix.trim_end_matches('/'),
            dns_label(&self.package, 100)
        )
    }
}

/// The revision of a catalog image: the first 10 hex digits of its digest.
pub fn revision(digest: &str) -> String {
    digest
        .trim_start_matches("sha256:")
        .chars()
        .take(10)
        .collect()
}

/// The catalog server: the catalog image serving its bundle inline (no bundle image to
/// pull, no unpack Job), probed as OLM probes its own registry pods; restricted pod security.
pub fn server_pod(names: &Names, revision: &str, image: &str) -> Value {
    let probe = json!({
        "exec": {"command": ["grpc_health_probe", format!("-addr=:{GRPC_PORT}"), "-rpc-timeout=5s"]},
        "periodSeconds": 2,
    });
    let mut labels = labels(&names.package);
    labels[CATALOG_REVISION_LABEL] = json!(revision);
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": names.server(revision),
            "namespace": names.namespace,
            "labels": labels,
        },
        "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "registry",
                "image": image,
                "args": ["serve", "/configs", "--address", "0.0.0.0", "--port", GRPC_PORT.to_string(), "--inline-bundles"],
                "ports": [{"name": "grpc", "containerPort": GRPC_PORT}],
                "readinessProbe": probe,
                "resources": {"requests": {"cpu": "10m", "memory": "50Mi"}},
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]},
                },
            }],
        },
    })
}

/// The Service in front of one server pod.
pub fn server_service(names: &Names, revision: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.server(revision),
            "namespace": names.namespace,
            "labels": labels(&names.package),
        },
        "spec": {
            "selector": {PACKAGE_LABEL: names.package, CATALOG_REVISION_LABEL: revision},
            "ports": [{"name": "grpc", "port": GRPC_PORT, "targetPort": GRPC_PORT}],
        },
    })
}

/// `host:port` of a server's Service, as the CatalogSource's `spec.address`.
pub fn server_address(names: &Names, revision: &str) -> String {
    format!(
        "{}.{}.svc:{GRPC_PORT}",
        names.server(revision),
        names.namespace
    )
}

/// The CatalogSource pointing OLM at a Ready server by address (no `spec.image`: OLM makes
/// no registry pod of its own and its first dial finds a server that answers).
pub fn catalog_source(names: &Names, revision: &str, catalog_image: &str) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {
            "name": names.catalog_source(),
            "namespace": names.namespace,
            "labels": labels(&names.package),
            "annotations": {CATALOG_IMAGE_ANNOTATION: catalog_image},
        },
        "spec": {
            "sourceType": "grpc",
            "address": server_address(names, revision),
            "displayName": names.package,
            "publisher": "bundle-tool run",
        },
    })
}

/// The annotations `run` sets on the CatalogSource, as a merge patch to `wanted`'s: the ones
/// `wanted` lacks are removed (a catalog that moves from an image to ConfigMaps, or back,
/// keeps no annotation of the other way).
pub fn source_annotations_patch(wanted: &Value) -> Value {
    let mut patch = json!({});
    for key in [
        CATALOG_IMAGE_ANNOTATION,
        CATALOG_CONFIGMAPS_ANNOTATION,
        SERVER_IMAGE_ANNOTATION,
    ] {
        patch[key] = wanted["metadata"]["annotations"][key].clone();
    }
    patch
}

/// The OperatorGroup made when the namespace has none.
pub fn operator_group(names: &Names, targets: &[String]) -> Value {
    let mut spec = json!({});
    if !targets.is_empty() {
        spec["targetNamespaces"] = json!(targets);
    }
    json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {
            "name": OPERATOR_GROUP,
            "namespace": names.namespace,
            "labels": labels(&names.package),
        },
        "spec": spec,
    })
}

/// How InstallPlans are approved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Approval {
    /// OLM waits for approval; `run` approves the plan for the bundle it installs, and only
    /// that one (later catalog changes wait for the user).
    #[default]
    Manual,
    /// OLM installs whatever the catalog's channel offers.
    Automatic,
}

/// The Subscription to the catalog's one channel, starting at the bundle's CSV.
pub fn subscription(names: &Names, csv: &str, approval: Approval) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {
            "name": names.subscription(),
            "namespace": names.namespace,
            "labels": labels(&names.package),
        },
        "spec": subscription_spec(names, csv, approval),
    })
}

/// The part of a Subscription `run` decides (compared on a second run).
pub fn subscription_spec(names: &Names, csv: &str, approval: Approval) -> Value {
    json!({
        "name": names.package,
        "channel": CHANNEL,
        "source": names.catalog_source(),
        "sourceNamespace": names.namespace,
        "startingCSV": csv,
        "installPlanApproval": match approval {
            Approval::Manual => "Manual",
            Approval::Automatic => "Automatic",
        },
    })
}

/// The installer ServiceAccount of OLM v1 (`<package>-run-installer`).
pub fn installer_account(names: &Names) -> String {
    format!("{}-run-installer", dns_label(&names.package, 40))
}

/// The repository the bundle image is pushed to under `prefix` (OLM v1 pulls bundles).
pub fn bundle_repository(names: &Names, prefix: &str) -> String {
    format!(
        "{}/{}-run-bundle",
        prefix.trim_end_matches('/'),
        dns_label(&names.package, 100)
    )
}

/// OLM v1's ClusterCatalog on the pushed catalog image (by digest, so catalogd does not poll).
pub fn cluster_catalog(names: &Names, catalog_image: &str) -> Value {
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": {"name": names.catalog_source(), "labels": labels(&names.package)},
        "spec": {"source": {"type": "Image", "image": {"ref": catalog_image}}},
    })
}

/// OLM v1's ClusterExtension of the package, from the ClusterCatalog `run` made only, as the
/// installer ServiceAccount.
pub fn cluster_extension(names: &Names) -> Value {
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": names.subscription(), "labels": labels(&names.package)},
        "spec": {
            "namespace": names.namespace,
            "serviceAccount": {"name": installer_account(names)},
            "source": {
                "sourceType": "Catalog",
                "catalog": {
                    "packageName": names.package,
                    "channels": [CHANNEL],
                    "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": names.catalog_source()}},
                },
            },
        },
    })
}

/// `object` with `run`'s labels added.
pub fn labelled(mut object: Value, package: &str) -> Value {
    for (key, value) in labels(package).as_object().into_iter().flatten() {
        object["metadata"]["labels"][key] = value.clone();
    }
    object
}

/// Whether `object` was made by `run`.
pub fn made_by_run(object: &Value) -> bool {
    object["metadata"]["labels"][MANAGED_BY_KEY] == MANAGED_BY
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            package: "Redis_Operator".into(),
            namespace: "ops".into(),
        }
    }

    #[test]
    fn names_are_dns_labels() {
        let names = names();
        assert_eq!(names.catalog_source(), "redis-operator-run-catalog");
        assert_eq!(
            names.server("0123456789"),
            "redis-operator-run-catalog-0123456789"
        );
        assert_eq!(names.subscription(), "redis-operator-run");
        assert_eq!(dns_label("--a..b--", 63), "a-b");
        let long = Names {
            package: "x".repeat(100),
            namespace: "n".into(),
        };
        assert!(long.server("0123456789").len() <= 63);
        assert_eq!(revision("sha256:abcdef0123456789"), "abcdef0123");
    }

    #[test]
    fn every_object_carries_the_labels_cleanup_selects() {
        let names = names();
        for object in [
            server_pod(&names, "r", "img"),
            server_service(&names, "r"),
            catalog_source(&names, "r", "img"),
            operator_group(&names, &[]),
            subscription(&names, "op.v1", Approval::Manual),
        ] {
            assert!(made_by_run(&object), "{object}");
            assert_eq!(
                object["metadata"]["labels"][PACKAGE_LABEL],
                "Redis_Operator"
            );
            assert_eq!(object["metadata"]["namespace"], "ops");
        }
        let service = server_service(&names, "r");
        let pod = server_pod(&names, "r", "img");
        for (key, value) in service["spec"]["selector"].as_object().unwrap() {
            assert_eq!(&pod["metadata"]["labels"][key], value);
        }
        assert_eq!(
            catalog_source(&names, "r", "img")["spec"]["address"],
            "redis-operator-run-catalog-r.ops.svc:50051"
        );
        assert!(operator_group(&names, &[])["spec"]["targetNamespaces"].is_null());
    }

    #[test]
    fn a_moved_catalog_keeps_no_annotation_of_the_other_way() {
        let mut wanted = catalog_source(&names(), "r", "");
        wanted["metadata"]["annotations"] = json!({CATALOG_CONFIGMAPS_ANNOTATION: "a,b"});
        assert_eq!(
            source_annotations_patch(&wanted),
            json!({
                CATALOG_IMAGE_ANNOTATION: null,
                CATALOG_CONFIGMAPS_ANNOTATION: "a,b",
                SERVER_IMAGE_ANNOTATION: null,
            })
        );
        let image = catalog_source(&names(), "r", "img");
        assert_eq!(
            source_annotations_patch(&image)[CATALOG_IMAGE_ANNOTATION],
            "img"
        );
        assert!(source_annotations_patch(&image)[CATALOG_CONFIGMAPS_ANNOTATION].is_null());
    }
}
