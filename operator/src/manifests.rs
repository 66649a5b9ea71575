//! Everything needed to run the operator, as Kubernetes objects: the CRD, RBAC, the
//! ServiceAccount, the Deployment and the metrics and webhook Services. `bundle-tool` packages
//! exactly this output.

use serde_json::{Value, json};

use crate::crd::{ConversionEndpoint, redis_cluster_crd, to_yaml};
use crate::rbac;

/// The operator's name, used for its ServiceAccount, roles, Deployment and Services.
pub const NAME: &str = "redis-operator";
/// The namespace `redis-operator manifests` targets by default.
pub const DEFAULT_NAMESPACE: &str = "redis-operator-system";
/// The operator image `redis-operator manifests` names by default.
pub const DEFAULT_IMAGE: &str = "quay.io/example/redis-operator:0.1.0";
/// The webhook Service's name.
pub const WEBHOOK_SERVICE: &str = "redis-operator-webhook";
/// The port the operator serves conversion webhooks on.
pub const WEBHOOK_PORT: i32 = 9443;
/// The port for `/metrics`, `/healthz` and `/readyz`.
pub const METRICS_PORT: i32 = 8080;

/// Where the manifests deploy to.
#[derive(Clone, Debug)]
pub struct Target {
    /// The operator's namespace.
    pub namespace: String,
    /// The operator image.
    pub image: String,
}

impl Default for Target {
    fn default() -> Self {
        Target {
            namespace: DEFAULT_NAMESPACE.into(),
            image: DEFAULT_IMAGE.into(),
        }
    }
}

/// The CRD as it is deployed: conversion through the webhook Service in `namespace`.
pub fn crd_for(namespace: &str) -> Value {
    let endpoint = ConversionEndpoint::Service {
        namespace: namespace.into(),
        name: WEBHOOK_SERVICE.into(),
        port: 443,
    };
    serde_json::to_value(redis_cluster_crd(&endpoint, None)).expect("the CRD serializes")
}

/// `redis-operator crd`: the CRD for the default namespace, as YAML.
pub fn crd_yaml() -> anyhow::Result<String> {
    to_yaml(&crd_for(DEFAULT_NAMESPACE))
}

/// Every object, in apply order.
pub fn objects(target: &Target) -> Vec<Value> {
    let ns = &target.namespace;
    let labels = json!({"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "operator"});
    let probe =
        |path: &str| json!({"httpGet": {"path": path, "port": "metrics"}, "periodSeconds": 10});
    vec![
        crd_for(ns),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "namespace": ns}}),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": NAME}, "rules": rbac::cluster_rules(),
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": NAME},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": ns}],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": format!("{NAME}-leader-election"), "namespace": ns}, "rules": rbac::namespace_rules(),
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": format!("{NAME}-leader-election"), "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("{NAME}-leader-election")},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": ns}],
        }),
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": ns, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": NAME,
                        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [{
                            "name": "operator",
                            "image": target.image,
                            "args": ["run"],
                            "env": [
                                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                            ],
                            "ports": [
                                {"name": "metrics", "containerPort": METRICS_PORT},
                                {"name": "webhook", "containerPort": WEBHOOK_PORT},
                            ],
                            "livenessProbe": probe("/healthz"),
                            "readinessProbe": probe("/readyz"),
                            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
                            "securityContext": {
                                "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                "runAsNonRoot": true, "runAsUser": 65532, "capabilities": {"drop": ["ALL"]},
                            },
                        }],
                    },
                },
            },
        }),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("{NAME}-metrics"), "namespace": ns, "labels": labels},
            "spec": {"selector": labels, "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics"}]},
        }),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": WEBHOOK_SERVICE, "namespace": ns, "labels": labels},
            "spec": {"selector": labels, "ports": [{"name": "webhook", "port": 443, "targetPort": "webhook"}]},
        }),
    ]
}

/// Every object as one YAML stream.
pub fn objects_yaml(target: &Target) -> anyhow::Result<String> {
    let documents: Vec<String> = objects(target)
        .iter()
        .map(to_yaml)
        .collect::<Result<_, _>>()?;
    Ok(documents.iter().map(|d| format!("---\n{d}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_are_deterministic_and_complete() {
        let target = Target::default();
        let yaml = objects_yaml(&target).unwrap();
        assert_eq!(yaml, objects_yaml(&target).unwrap());
        let kinds: Vec<String> = objects(&target)
            .iter()
            .map(|o| o["kind"].as_str().unwrap().to_string())
            .collect();
        for kind in [
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            "Service",
        ] {
            assert!(kinds.iter().any(|k| k == kind), "missing {kind}");
        }
    }

    #[test]
    fn the_deployment_runs_hardened() {
        let deployment = objects(&Target::default())
            .into_iter()
            .find(|o| o["kind"] == "Deployment")
            .unwrap();
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(container["securityContext"]["runAsNonRoot"], true);
        assert!(container["readinessProbe"].is_object() && container["livenessProbe"].is_object());
        assert!(container["resources"]["requests"].is_object());
    }
}
