//! The CustomResourceDefinition served for `RedisCluster`, built from the Rust types.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::api::v1alpha1;

/// The `redisclusters.cache.example.com` CRD.
pub fn redis_cluster_crd() -> CustomResourceDefinition {
    v1alpha1::RedisCluster::crd()
}

/// The CRD as a YAML document, byte-for-byte the same on every run.
pub fn redis_cluster_crd_yaml() -> anyhow::Result<String> {
    // Through serde_json::Value so that map keys come out sorted, whatever the struct order.
    let value = serde_json::to_value(redis_cluster_crd())?;
    Ok(serde_saphyr::to_string(&value)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v1alpha1_schema() -> serde_json::Value {
        let crd = serde_json::to_value(redis_cluster_crd()).unwrap();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
    }

    #[test]
    fn names_and_scope_are_the_users() {
        let crd = redis_cluster_crd();
        assert_eq!(crd.metadata.name.as_deref(), Some("redisclusters.cache.example.com"));
        assert_eq!(crd.spec.group, "cache.example.com");
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.kind, "RedisCluster");
        assert_eq!(crd.spec.names.short_names, Some(vec!["rc".to_string()]));
    }

    #[test]
    fn replicas_is_required_with_minimum_one() {
        let spec = &v1alpha1_schema()["properties"]["spec"];
        assert_eq!(spec["required"], json!(["replicas"]));
        assert_eq!(spec["properties"]["replicas"]["minimum"], json!(1.0));
        assert_eq!(spec["properties"]["replicas"]["type"], json!("integer"));
    }

    #[test]
    fn version_is_an_enum_of_supported_redis_releases() {
        let version = &v1alpha1_schema()["properties"]["spec"]["properties"]["version"];
        assert_eq!(version["enum"], json!(["6.2", "7.0", "7.2"]));
    }

    #[test]
    fn scale_subresource_maps_replicas() {
        let crd = redis_cluster_crd();
        let scale = crd.spec.versions[0]
            .subresources
            .as_ref()
            .and_then(|s| s.scale.as_ref())
            .expect("scale subresource");
        assert_eq!(scale.spec_replicas_path, ".spec.replicas");
        assert_eq!(scale.status_replicas_path, ".status.readyReplicas");
    }

    #[test]
    fn yaml_is_deterministic() {
        assert_eq!(redis_cluster_crd_yaml().unwrap(), redis_cluster_crd_yaml().unwrap());
    }
}
