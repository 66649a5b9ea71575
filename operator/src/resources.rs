//! What a `RedisCluster` is reconciled into: a ConfigMap (redis.conf), a headless Service, a
//! client Service, a StatefulSet and a PodDisruptionBudget. Pure functions of the custom
//! resource, so they are tested without a cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::api::v1::{RedisCluster, RedisVersion};

/// Redis's client port.
pub const REDIS_PORT: i32 = 6379;
/// redis_exporter's metrics port.
pub const EXPORTER_PORT: i32 = 9121;
/// The exporter image when the spec names none.
pub const DEFAULT_EXPORTER_IMAGE: &str = "quay.io/oliver006/redis_exporter:v1.62.0";
/// Label with the RedisCluster's name on every child and pod.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

/// The labels that select a cluster's pods (and its PVCs).
pub fn selector_labels(cluster_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "redis".to_string()),
        (INSTANCE_LABEL.to_string(), cluster_name.to_string()),
    ])
}

fn labels(cluster_name: &str) -> BTreeMap<String, String> {
    let mut labels = selector_labels(cluster_name);
    labels.insert(
        "app.kubernetes.io/managed-by".into(),
        "redis-operator".into(),
    );
    labels
}

/// The environment variable that overrides the image for a Redis version (for mirrored,
/// disconnected installs; OLM lists these images in the CSV's `relatedImages`).
pub fn redis_image_variable(version: RedisVersion) -> String {
    format!("RELATED_IMAGE_REDIS_{}", version.as_str().replace('.', "_"))
}

/// The environment variable that overrides the exporter image.
pub const EXPORTER_IMAGE_VARIABLE: &str = "RELATED_IMAGE_REDIS_EXPORTER";

/// The default image of a Redis version.
pub fn default_redis_image(version: RedisVersion) -> String {
    format!("docker.io/library/redis:{}", version.as_str())
}

/// The Redis image for a cluster: the operator's `RELATED_IMAGE_REDIS_<version>` if set,
/// else the default.
pub fn redis_image(cluster: &RedisCluster) -> String {
    let version = cluster.spec.effective_version();
    std::env::var(redis_image_variable(version)).unwrap_or_else(|_| default_redis_image(version))
}

/// The headless Service's name (stable pod DNS names).
pub fn headless_service_name(cluster_name: &str) -> String {
    format!("{cluster_name}-headless")
}

/// The ConfigMap's name.
pub fn config_map_name(cluster_name: &str) -> String {
    format!("{cluster_name}-config")
}

fn owner(cluster: &RedisCluster) -> OwnerReference {
    cluster
        .controller_owner_ref(&())
        .expect("a stored RedisCluster has a name and uid")
}

fn metadata(cluster: &RedisCluster, name: String) -> serde_json::Value {
    json!({
        "name": name,
        "namespace": cluster.metadata.namespace,
        "labels": labels(&cluster.name_unchecked()),
        "ownerReferences": [owner(cluster)],
    })
}

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("the builders produce valid objects")
}

/// redis.conf for the cluster.
pub fn redis_conf(cluster: &RedisCluster) -> String {
    let persistent = cluster.spec.persistence.is_some();
    let mut conf = format!(
        "port {REDIS_PORT}\nbind 0.0.0.0\nprotected-mode no\ndir /data\nappendonly {}\n",
        if persistent { "yes" } else { "no" }
    );
    if !persistent {
        conf.push_str("save \"\"\n");
    }
    conf
}

/// The ConfigMap holding redis.conf.
pub fn config_map(cluster: &RedisCluster) -> ConfigMap {
    from_json(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(cluster, config_map_name(&cluster.name_unchecked())),
        "data": {"redis.conf": redis_conf(cluster)},
    }))
}

/// The headless Service that gives each pod a stable DNS name.
pub fn headless_service(cluster: &RedisCluster) -> Service {
    let name = cluster.name_unchecked();
    from_json(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(cluster, headless_service_name(&name)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": true,
            "selector": selector_labels(&name),
            "ports": [{"name": "redis", "port": REDIS_PORT, "targetPort": "redis"}],
        },
    }))
}

/// The Service clients connect to.
pub fn client_service(cluster: &RedisCluster) -> Service {
    let name = cluster.name_unchecked();
    let mut ports = vec![json!({"name": "redis", "port": REDIS_PORT, "targetPort": "redis"})];
    if exporter_enabled(cluster) {
        ports.push(json!({"name": "metrics", "port": EXPORTER_PORT, "targetPort": "metrics"}));
    }
    from_json(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(cluster, name.clone()),
        "spec": {"selector": selector_labels(&name), "ports": ports},
    }))
}

fn exporter_enabled(cluster: &RedisCluster) -> bool {
    cluster.spec.metrics.as_ref().is_some_and(|m| m.enabled)
}

/// The StatefulSet running Redis: one pod at a time on updates (RollingUpdate), a
/// volumeClaimTemplate when persistence is asked for.
pub fn stateful_set(cluster: &RedisCluster) -> StatefulSet {
    let name = cluster.name_unchecked();
    let spec = &cluster.spec;
    let mut env = Vec::new();
    let mut command = vec![
        "redis-server".to_string(),
        "/etc/redis/redis.conf".to_string(),
    ];
    if let Some(secret) = &spec.password_secret {
        env.push(json!({
            "name": "REDIS_PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": secret.name, "key": secret.key}},
        }));
        command.extend(["--requirepass".to_string(), "$(REDIS_PASSWORD)".to_string()]);
    }
    let probe = |initial: i32| {
        json!({
            "exec": {"command": ["sh", "-c", "redis-cli -a \"$REDIS_PASSWORD\" --no-auth-warning ping | grep -q PONG"]},
            "initialDelaySeconds": initial,
            "periodSeconds": 10,
            "timeoutSeconds": 5,
        })
    };
    let resources = spec.resources.clone().map(|r| serde_json::to_value(r).expect("serializable")).unwrap_or_else(|| {
        json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}})
    });
    let mut containers = vec![json!({
        "name": "redis",
        "image": redis_image(cluster),
        "command": command,
        "env": env,
        "ports": [{"name": "redis", "containerPort": REDIS_PORT}],
        "readinessProbe": probe(5),
        "livenessProbe": probe(15),
        "resources": resources,
        "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "runAsUser": 999, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": "config", "mountPath": "/etc/redis"},
        ],
    })];
    if exporter_enabled(cluster) {
        let image = spec
            .metrics
            .as_ref()
            .and_then(|m| m.image.clone())
            .or_else(|| std::env::var(EXPORTER_IMAGE_VARIABLE).ok())
            .unwrap_or_else(|| DEFAULT_EXPORTER_IMAGE.into());
        containers.push(json!({
            "name": "metrics",
            "image": image,
            "env": if spec.password_secret.is_some() { json!(env) } else { json!([]) },
            "ports": [{"name": "metrics", "containerPort": EXPORTER_PORT}],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
            "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "runAsUser": 59000, "capabilities": {"drop": ["ALL"]}},
        }));
    }
    let mut volumes =
        vec![json!({"name": "config", "configMap": {"name": config_map_name(&name)}})];
    let mut claim_templates = Vec::new();
    match &spec.persistence {
        Some(persistence) => {
            let mut claim_spec = json!({
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": persistence.size}},
            });
            if let Some(class) = &persistence.storage_class_name {
                claim_spec["storageClassName"] = json!(class);
            }
            claim_templates.push(json!({
                "metadata": {"name": "data", "labels": selector_labels(&name)},
                "spec": claim_spec,
            }));
        }
        None => volumes.push(json!({"name": "data", "emptyDir": {}})),
    }
    let mut pod_labels = selector_labels(&name);
    pod_labels.insert(
        "app.kubernetes.io/version".into(),
        spec.effective_version().as_str().into(),
    );
    from_json(json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(cluster, name.clone()),
        "spec": {
            "replicas": spec.replicas,
            "serviceName": headless_service_name(&name),
            "selector": {"matchLabels": selector_labels(&name)},
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate"},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "containers": containers,
                    "volumes": volumes,
                    "securityContext": {"fsGroup": 999},
                    "terminationGracePeriodSeconds": 30,
                },
            },
            "volumeClaimTemplates": claim_templates,
        },
    }))
}

/// At most one Redis pod down at a time for voluntary disruptions.
pub fn pod_disruption_budget(cluster: &RedisCluster) -> PodDisruptionBudget {
    let name = cluster.name_unchecked();
    from_json(json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(cluster, name.clone()),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector_labels(&name)}},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(spec: serde_json::Value) -> RedisCluster {
        serde_json::from_value(json!({
            "apiVersion": "cache.example.com/v1",
            "kind": "RedisCluster",
            "metadata": {"name": "cache", "namespace": "apps", "uid": "1234"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn statefulset_follows_replicas_and_version() {
        let set = stateful_set(&cluster(json!({"replicas": 5, "redisVersion": "7.0"})));
        let spec = set.spec.unwrap();
        assert_eq!(spec.replicas, Some(5));
        let pod = spec.template.spec.unwrap();
        assert_eq!(
            pod.containers[0].image.as_deref(),
            Some("docker.io/library/redis:7.0")
        );
        assert_eq!(spec.service_name.as_deref(), Some("cache-headless"));
        assert!(pod.containers[0].readiness_probe.is_some());
        assert!(
            pod.containers[0]
                .resources
                .as_ref()
                .unwrap()
                .requests
                .is_some()
        );
    }

    #[test]
    fn deprecated_version_field_is_honoured() {
        let set = stateful_set(&cluster(json!({"replicas": 1, "version": "6.2"})));
        let image = set.spec.unwrap().template.spec.unwrap().containers[0]
            .image
            .clone();
        assert_eq!(image.as_deref(), Some("docker.io/library/redis:6.2"));
    }

    #[test]
    fn persistence_adds_a_claim_template_and_append_only_file() {
        let c = cluster(
            json!({"replicas": 1, "persistence": {"size": "2Gi", "storageClassName": "fast"}}),
        );
        let templates = stateful_set(&c)
            .spec
            .unwrap()
            .volume_claim_templates
            .unwrap();
        assert_eq!(templates.len(), 1);
        assert_eq!(
            templates[0]
                .spec
                .as_ref()
                .unwrap()
                .storage_class_name
                .as_deref(),
            Some("fast")
        );
        assert!(redis_conf(&c).contains("appendonly yes"));
    }

    #[test]
    fn password_and_exporter_are_wired() {
        let c = cluster(json!({
            "replicas": 1,
            "passwordSecret": {"name": "auth", "key": "pw"},
            "metrics": {"enabled": true}
        }));
        let pod = stateful_set(&c).spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.containers.len(), 2);
        assert!(
            pod.containers[0]
                .command
                .as_ref()
                .unwrap()
                .contains(&"--requirepass".to_string())
        );
        let ports = client_service(&c).spec.unwrap().ports.unwrap();
        assert!(ports.iter().any(|p| p.port == EXPORTER_PORT));
    }

    #[test]
    fn children_are_owned_by_the_cluster() {
        let c = cluster(json!({"replicas": 1}));
        let owners = config_map(&c).metadata.owner_references.unwrap();
        assert_eq!(owners[0].kind, "RedisCluster");
        assert_eq!(owners[0].controller, Some(true));
        assert_eq!(
            headless_service(&c).spec.unwrap().cluster_ip.as_deref(),
            Some("None")
        );
        assert_eq!(
            pod_disruption_budget(&c).metadata.name.as_deref(),
            Some("cache")
        );
    }
}
