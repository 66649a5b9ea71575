//! What a `RedisCluster` is reconciled into: a ConfigMap (redis.conf and the scripts every pod
//! starts and is probed with), a headless Service, the client Service (the primary only), the
//! replicas Service, a StatefulSet, a PodDisruptionBudget and the replication Secret. Pure
//! functions of the custom resource and of what the operator decided (the primary), so they
//! are tested without a cluster.
//!
//! Where the pods run is [`scheduling`]'s: the spec's scheduling fields and the default
//! spreading over nodes.
//!
//! Passwords never reach a command line: the start script writes them into a config file in
//! the pod's memory-backed `/run/redis` (the client password only as its SHA-256, an ACL
//! `#hash`), and probes authenticate through `REDISCLI_AUTH`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::api::v1::{RedisCluster, RedisVersion};

pub mod scheduling;

/// Redis's client port.
pub const REDIS_PORT: i32 = 6379;
/// redis_exporter's metrics port.
pub const EXPORTER_PORT: i32 = 9121;
/// The exporter image when the spec names none.
pub const DEFAULT_EXPORTER_IMAGE: &str = "quay.io/oliver006/redis_exporter:v1.62.0";
/// Label with the RedisCluster's name on every child and pod.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Label the operator keeps on each pod: `primary` on exactly one, `replica` on the rest.
pub const ROLE_LABEL: &str = "cache.example.com/role";
/// Pod template annotation: the resourceVersion of the password Secret, so a changed
/// password rolls the pods.
pub const PASSWORD_VERSION_ANNOTATION: &str = "cache.example.com/password-version";
/// The ACL user replicas, probes, the exporter and the operator authenticate as; its password
/// is the operator's own (the replication Secret), so a change of the client password never
/// breaks replication.
pub const REPLICATION_USER: &str = "replicator";
/// The key of the replication Secret.
pub const REPLICATION_PASSWORD_KEY: &str = "password";

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

/// The replicas Service's name.
pub fn replicas_service_name(cluster_name: &str) -> String {
    format!("{cluster_name}-replicas")
}

/// The replication Secret's name.
pub fn replication_secret_name(cluster_name: &str) -> String {
    format!("{cluster_name}-replication")
}

/// The host name replicas follow `pod` by: its record under the headless Service.
pub fn pod_host(cluster: &RedisCluster, pod: &str) -> String {
    format!(
        "{pod}.{}.{}.svc",
        headless_service_name(&cluster.name_unchecked()),
        cluster.namespace().unwrap_or_default()
    )
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

/// redis.conf for the cluster (what every pod shares; the start script adds the pod's own
/// part: users, passwords, `replicaof`).
pub fn redis_conf(cluster: &RedisCluster) -> String {
    let persistent = cluster.spec.persistence.is_some();
    let mut conf = format!(
        "port {REDIS_PORT}\nbind 0.0.0.0\nprotected-mode no\ndir /data\nappendonly {}\n",
        if persistent { "yes" } else { "no" }
    );
    if !persistent {
        conf.push_str("save \"\"\n");
    }
    // A replica whose link is down answers reads with an error rather than stale data.
    conf.push_str("replica-serve-stale-data no\nreplica-read-only yes\n");
    conf
}

/// The start script: builds `/run/redis/redis.conf` and becomes redis-server. Only shell
/// built-ins touch a password (`echo`, `printf`, `read`), and `sha256sum` reads the client
/// password on standard input, so no password is ever an argument of a process.
///
/// The primary recorded in the ConfigMap starts as primary only on its pod's first start
/// (no marker in /data, and the recorded uid is its own or none yet). A primary whose
/// Redis restarts comes back following [`crate::topology::RESTARTED_PRIMARY_HOST`]: without
/// that, the replicas would resync from a restarted, empty primary and drop every key; with
/// it, the operator promotes the replica with the most data instead.
pub const START_SCRIPT: &str = r##"#!/bin/sh
set -eu
primary=""; primary_uid=""
read -r primary < /etc/redis/primary || true
read -r primary_uid < /etc/redis/primary-uid || true
marker=/data/.redis-operator-started
umask 077
conf=/run/redis/redis.conf
{
  echo "include /etc/redis/redis.conf"
  echo "user replicator on >$REPLICATION_PASSWORD ~* &* +@all"
  if [ -n "${REDIS_PASSWORD:-}" ]; then
    hash=$(printf '%s' "$REDIS_PASSWORD" | sha256sum)
    echo "user default on #${hash%% *} ~* &* +@all"
  else
    echo "user default on nopass ~* &* +@all"
  fi
  echo "masteruser replicator"
  echo "masterauth $REPLICATION_PASSWORD"
  if [ "$primary" = "$HOSTNAME" ]; then
    if [ ! -e "$marker" ] && { [ -z "$primary_uid" ] || [ "$primary_uid" = "$POD_UID" ]; }; then
      echo "# the primary's first start"
    else
      echo "replicaof __RESTARTED__ 6379"
    fi
  elif [ -n "$primary" ]; then
    echo "replicaof $primary.$HEADLESS_DOMAIN 6379"
  fi
} > "$conf"
: > "$marker"
exec redis-server "$conf"
"##;

/// The probe script: `alive` when Redis answers at all, `ready` when it is the primary or a
/// replica whose link to its primary is up (so `<name>-replicas` routes only to replicas in
/// sync, and a restarted primary takes no traffic).
pub const PROBE_SCRIPT: &str = r#"#!/bin/sh
out=$(redis-cli --no-auth-warning --user replicator -p 6379 info replication 2>&1) || true
case "$1:$out" in
  alive:*role:*|alive:*LOADING*) exit 0 ;;
  ready:*role:master*|ready:*master_link_status:up*) exit 0 ;;
esac
echo "$out" >&2
exit 1
"#;

/// The ConfigMap: redis.conf, the scripts, and the primary (name and pod uid) for pods that
/// start.
pub fn config_map(cluster: &RedisCluster, primary: &str, primary_uid: &str) -> ConfigMap {
    from_json(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(cluster, config_map_name(&cluster.name_unchecked())),
        "data": {
            "redis.conf": redis_conf(cluster),
            "start.sh": START_SCRIPT.replace("__RESTARTED__", crate::topology::RESTARTED_PRIMARY_HOST),
            "probe.sh": PROBE_SCRIPT,
            "primary": format!("{primary}\n"),
            "primary-uid": format!("{primary_uid}\n"),
        },
    }))
}

/// The Secret with the replication user's password (generated once by the operator).
pub fn replication_secret(cluster: &RedisCluster, password: &str) -> Secret {
    from_json(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(cluster, replication_secret_name(&cluster.name_unchecked())),
        "type": "Opaque",
        "stringData": {REPLICATION_PASSWORD_KEY: password},
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

fn role_selector(cluster_name: &str, role: &str) -> BTreeMap<String, String> {
    let mut selector = selector_labels(cluster_name);
    selector.insert(ROLE_LABEL.into(), role.into());
    selector
}

/// The Service clients write through: it selects the primary alone.
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
        "spec": {"selector": role_selector(&name, crate::topology::PRIMARY), "ports": ports},
    }))
}

/// The Service for reads from replicas (ready ones: in sync with the primary).
pub fn replicas_service(cluster: &RedisCluster) -> Service {
    let name = cluster.name_unchecked();
    from_json(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(cluster, replicas_service_name(&name)),
        "spec": {
            "selector": role_selector(&name, crate::topology::REPLICA),
            "ports": [{"name": "redis", "port": REDIS_PORT, "targetPort": "redis"}],
        },
    }))
}

fn exporter_enabled(cluster: &RedisCluster) -> bool {
    cluster.spec.metrics.as_ref().is_some_and(|m| m.enabled)
}

/// What the StatefulSet is built from besides the custom resource.
#[derive(Clone, Debug, Default)]
pub struct SetInputs {
    /// Pods to run: `spec.replicas`, or more while the primary is above it and not yet
    /// switched away from (a scale-down never removes the primary).
    pub replicas: i32,
    /// The password Secret's resourceVersion, when there is one.
    pub password_version: Option<String>,
}

/// The StatefulSet running Redis. `OnDelete`: the operator rolls the pods itself, replicas
/// first and the primary last after a controlled switch (a StatefulSet's own rolling update
/// goes by ordinal, and would restart the primary whenever its ordinal comes).
pub fn stateful_set(cluster: &RedisCluster, inputs: &SetInputs) -> StatefulSet {
    let name = cluster.name_unchecked();
    let spec = &cluster.spec;
    let replication_password = json!({"secretKeyRef": {
        "name": replication_secret_name(&name), "key": REPLICATION_PASSWORD_KEY,
    }});
    let mut env = vec![
        json!({"name": "REPLICATION_PASSWORD", "valueFrom": replication_password}),
        json!({"name": "REDISCLI_AUTH", "valueFrom": replication_password}),
        json!({"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}),
        json!({"name": "HEADLESS_DOMAIN", "value": format!(
            "{}.{}.svc", headless_service_name(&name), cluster.namespace().unwrap_or_default()
        )}),
    ];
    if let Some(secret) = &spec.password_secret {
        env.push(json!({
            "name": "REDIS_PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": secret.name, "key": secret.key}},
        }));
    }
    let probe = |mode: &str, period: i32, failures: i32| {
        json!({
            "exec": {"command": ["sh", "/etc/redis/probe.sh", mode]},
            "periodSeconds": period,
            "timeoutSeconds": 5,
            "failureThreshold": failures,
        })
    };
    let resources = spec.resources.clone().map(|r| serde_json::to_value(r).expect("serializable")).unwrap_or_else(|| {
        json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}})
    });
    let mut containers = vec![json!({
        "name": "redis",
        "image": redis_image(cluster),
        "command": ["sh", "/etc/redis/start.sh"],
        "env": env,
        "ports": [{"name": "redis", "containerPort": REDIS_PORT}],
        // Every 2 s: a promoted replica is in the client Service within 2 s of its promotion.
        "readinessProbe": probe("ready", 2, 1),
        "livenessProbe": probe("alive", 10, 3),
        "startupProbe": probe("alive", 1, 300),
        "resources": resources,
        "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "runAsUser": 999, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": "config", "mountPath": "/etc/redis"},
            {"name": "run", "mountPath": "/run/redis"},
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
            "env": [
                {"name": "REDIS_USER", "value": REPLICATION_USER},
                {"name": "REDIS_PASSWORD", "valueFrom": replication_password},
            ],
            "ports": [{"name": "metrics", "containerPort": EXPORTER_PORT}],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
            "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "runAsUser": 59000, "capabilities": {"drop": ["ALL"]}},
        }));
    }
    let mut volumes = vec![
        json!({"name": "config", "configMap": {"name": config_map_name(&name)}}),
        json!({"name": "run", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}),
    ];
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
    let mut pod_annotations = BTreeMap::new();
    if let Some(version) = &inputs.password_version {
        pod_annotations.insert(PASSWORD_VERSION_ANNOTATION.to_string(), version.clone());
    }
    let mut pod_spec = json!({
        "containers": containers,
        "volumes": volumes,
        "securityContext": {"fsGroup": 999},
        "terminationGracePeriodSeconds": 30,
    });
    pod_spec
        .as_object_mut()
        .expect("an object")
        .extend(scheduling::pod_spec_fields(spec, &name));
    from_json(json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(cluster, name.clone()),
        "spec": {
            "replicas": inputs.replicas,
            "serviceName": headless_service_name(&name),
            "selector": {"matchLabels": selector_labels(&name)},
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "OnDelete"},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": {
                "metadata": {"labels": pod_labels, "annotations": pod_annotations},
                "spec": pod_spec,
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

    fn inputs(replicas: i32) -> SetInputs {
        SetInputs {
            replicas,
            password_version: None,
        }
    }

    #[test]
    fn statefulset_follows_replicas_and_version() {
        let set = stateful_set(
            &cluster(json!({"replicas": 5, "redisVersion": "7.0"})),
            &inputs(5),
        );
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
    fn the_pod_template_spreads_by_default_and_carries_the_scheduling_fields() {
        let bare = stateful_set(&cluster(json!({"replicas": 3})), &inputs(3));
        let pod = bare.spec.unwrap().template.spec.unwrap();
        assert_eq!(
            pod.affinity,
            Some(k8s_openapi::api::core::v1::Affinity {
                pod_anti_affinity: Some(scheduling::default_pod_anti_affinity("cache")),
                ..Default::default()
            })
        );
        assert_eq!(pod.node_selector, None);
        assert_eq!(pod.priority_class_name, None);

        let placed = stateful_set(
            &cluster(json!({
                "replicas": 3,
                "nodeSelector": {"disk": "ssd"},
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
                "topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway"
                }],
                "priorityClassName": "redis-critical"
            })),
            &inputs(3),
        );
        let pod = placed.spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.node_selector.unwrap()["disk"], "ssd");
        assert_eq!(
            pod.tolerations.unwrap()[0].key.as_deref(),
            Some("dedicated")
        );
        assert_eq!(
            pod.topology_spread_constraints.unwrap()[0].topology_key,
            "topology.kubernetes.io/zone"
        );
        assert_eq!(pod.priority_class_name.as_deref(), Some("redis-critical"));
        assert_eq!(
            pod.affinity, None,
            "the user's constraints replace the default"
        );
        assert_eq!(pod.containers.len(), 1);
    }

    #[test]
    fn deprecated_version_field_is_honoured() {
        let set = stateful_set(
            &cluster(json!({"replicas": 1, "version": "6.2"})),
            &inputs(1),
        );
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
        let templates = stateful_set(&c, &inputs(1))
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
    fn no_password_is_an_argument_and_the_exporter_is_wired() {
        let c = cluster(json!({
            "replicas": 1,
            "passwordSecret": {"name": "auth", "key": "pw"},
            "metrics": {"enabled": true}
        }));
        let set = stateful_set(
            &c,
            &SetInputs {
                replicas: 1,
                password_version: Some("42".into()),
            },
        );
        let template = set.spec.unwrap().template;
        assert_eq!(
            template.metadata.unwrap().annotations.unwrap()[PASSWORD_VERSION_ANNOTATION],
            "42",
            "a new password Secret version rolls the pods"
        );
        let pod = template.spec.unwrap();
        assert_eq!(pod.containers.len(), 2);
        let redis = &pod.containers[0];
        let text = serde_json::to_string(&(
            &redis.command,
            &redis.args,
            &redis.readiness_probe,
            &redis.liveness_probe,
        ))
        .unwrap();
        assert!(
            !text.contains("PASSWORD") && !text.contains("-a "),
            "{text}"
        );
        let env: Vec<&str> = redis
            .env
            .iter()
            .flatten()
            .map(|e| e.name.as_str())
            .collect();
        assert!(
            env.contains(&"REDIS_PASSWORD") && env.contains(&"REDISCLI_AUTH"),
            "{env:?}"
        );
        let ports = client_service(&c).spec.unwrap().ports.unwrap();
        assert!(ports.iter().any(|p| p.port == EXPORTER_PORT));
    }

    #[test]
    fn the_client_service_selects_the_primary_and_the_replicas_service_the_rest() {
        let c = cluster(json!({"replicas": 3}));
        let client = client_service(&c).spec.unwrap().selector.unwrap();
        assert_eq!(client[ROLE_LABEL], "primary");
        let replicas = replicas_service(&c).spec.unwrap().selector.unwrap();
        assert_eq!(replicas[ROLE_LABEL], "replica");
        assert_eq!(replicas[INSTANCE_LABEL], "cache");
        let set = stateful_set(&c, &inputs(3)).spec.unwrap();
        assert!(
            !set.selector.match_labels.unwrap().contains_key(ROLE_LABEL),
            "the role moves between pods; the StatefulSet's selector must not follow it"
        );
        assert_eq!(
            set.update_strategy.unwrap().type_.as_deref(),
            Some("OnDelete")
        );
    }

    #[test]
    fn the_config_map_carries_the_primary_and_the_scripts() {
        let c = cluster(json!({"replicas": 3}));
        let data = config_map(&c, "cache-1", "uid-1").data.unwrap();
        assert_eq!(data["primary"], "cache-1\n");
        assert_eq!(data["primary-uid"], "uid-1\n");
        assert!(data["start.sh"].contains(crate::topology::RESTARTED_PRIMARY_HOST));
        assert!(!data["start.sh"].contains("__RESTARTED__"));
        assert_eq!(pod_host(&c, "cache-1"), "cache-1.cache-headless.apps.svc");
    }

    #[test]
    fn children_are_owned_by_the_cluster() {
        let c = cluster(json!({"replicas": 1}));
        let owners = config_map(&c, "cache-0", "")
            .metadata
            .owner_references
            .unwrap();
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
