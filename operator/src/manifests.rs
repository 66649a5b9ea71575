//! Everything needed to run the operator, as Kubernetes objects: the CRD, RBAC, the
//! ServiceAccount, the Deployment and the metrics and webhook Services. `bundle-tool` packages
//! exactly this output.

use serde_json::{Value, json};

use crate::api::RedisVersion;
use crate::crd::{ConversionEndpoint, redis_cluster_crd, to_yaml};
use crate::{rbac, resources};

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
    /// For an OLM bundle: OLM provides the webhook certificate and writes the CRD's CA, so the
    /// operator gets no right on CRDs.
    pub olm: bool,
}

impl Default for Target {
    fn default() -> Self {
        Target {
            namespace: DEFAULT_NAMESPACE.into(),
            image: DEFAULT_IMAGE.into(),
            olm: false,
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
            "metadata": {"name": NAME}, "rules": rbac::cluster_rules(!target.olm),
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
                            "env": env(),
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

/// The operator container's environment: its own identity, and the operand images (so a
/// mirror can replace them, and the CSV lists them in `relatedImages`).
fn env() -> Vec<Value> {
    let mut env = vec![
        json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
        json!({"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}),
    ];
    for version in [RedisVersion::V6_2, RedisVersion::V7_0, RedisVersion::V7_2] {
        env.push(json!({"name": resources::redis_image_variable(version), "value": resources::default_redis_image(version)}));
    }
    env.push(json!({"name": resources::EXPORTER_IMAGE_VARIABLE, "value": resources::DEFAULT_EXPORTER_IMAGE}));
    env
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

    /// `bundle-tool.yaml` packages `operator/config/manifests.yaml`: it must be what
    /// `redis-operator manifests --olm` prints now.
    #[test]
    fn the_committed_olm_manifests_are_current() {
        let committed = include_str!("../config/manifests.yaml");
        let current = objects_yaml(&Target {
            olm: true,
            ..Default::default()
        })
        .unwrap();
        assert!(
            committed == current,
            "operator/config/manifests.yaml is out of date: run `cargo run -q -p redis-operator -- manifests --olm > operator/config/manifests.yaml`"
        );
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
