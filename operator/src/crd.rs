//! The CustomResourceDefinition served for `RedisCluster`, built from the Rust types: both
//! versions, `v1` stored, conversion through the operator's webhook.

use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};
use kube::CustomResourceExt;
use kube::core::crd::merge_crds;

use crate::api::{v1, v1alpha1};

/// The CRD's name.
pub const CRD_NAME: &str = "redisclusters.cache.example.com";
/// The CRD's short name (`kubectl get rcl`): no built-in API of Kubernetes uses it, unlike
/// `rc` (ReplicationControllers), which kubectl resolves to the core API first.
pub const SHORT_NAME: &str = "rcl";
/// The path the operator serves ConversionReviews on.
pub const CONVERSION_PATH: &str = "/convert";

/// Where the apiserver sends ConversionReviews.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConversionEndpoint {
    /// The operator's webhook Service (how it runs in a cluster).
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The Service's port.
        port: i32,
    },
    /// A URL (for an operator running outside the cluster, as in the end-to-end tests).
    Url(String),
}

/// The `redisclusters.cache.example.com` CRD: `v1alpha1` (served, deprecated) and `v1`
/// (served, stored), converted by the webhook at `endpoint`. `ca_bundle` (PEM) is the CA the
/// apiserver trusts for it; the operator fills it in at start-up when it is not known here.
pub fn redis_cluster_crd(
    endpoint: &ConversionEndpoint,
    ca_bundle: Option<&[u8]>,
) -> CustomResourceDefinition {
    let mut crd = merge_crds(
        vec![v1alpha1::RedisCluster::crd(), v1::RedisCluster::crd()],
        "v1",
    )
    .expect("both versions come from the same group and kind");
    for version in &mut crd.spec.versions {
        if version.name == "v1alpha1" {
            version.deprecated = Some(true);
            version.deprecation_warning = Some(
                "cache.example.com/v1alpha1 RedisCluster is deprecated; use cache.example.com/v1"
                    .into(),
            );
        }
    }
    let (service, url) = match endpoint {
        ConversionEndpoint::Service {
            namespace,
            name,
            port,
        } => (
            Some(ServiceReference {
                namespace: namespace.clone(),
                name: name.clone(),
                path: Some(CONVERSION_PATH.into()),
                port: Some(*port),
            }),
            None,
        ),
        ConversionEndpoint::Url(base) => (
            None,
            Some(format!("{}{CONVERSION_PATH}", base.trim_end_matches('/'))),
        ),
    };
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            conversion_review_versions: vec!["v1".into()],
            client_config: Some(WebhookClientConfig {
                ca_bundle: ca_bundle.map(|pem| ByteString(pem.to_vec())),
                service,
                url,
            }),
        }),
    });
    crd
}

/// A Kubernetes object as YAML, byte-for-byte the same on every run.
pub fn to_yaml(object: &impl serde::Serialize) -> anyhow::Result<String> {
    // Through serde_json::Value so that map keys come out sorted, whatever the struct order.
    let value = serde_json::to_value(object)?;
    Ok(serde_saphyr::to_string(&value)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn in_cluster() -> CustomResourceDefinition {
        redis_cluster_crd(
            &ConversionEndpoint::Service {
                namespace: "ns".into(),
                name: "webhook".into(),
                port: 443,
            },
            None,
        )
    }

    fn schema(version: &str) -> serde_json::Value {
        let crd = serde_json::to_value(in_cluster()).unwrap();
        let versions = crd["spec"]["versions"].as_array().unwrap().clone();
        let v = versions
            .into_iter()
            .find(|v| v["name"] == version)
            .expect("version served");
        v["schema"]["openAPIV3Schema"].clone()
    }

    #[test]
    fn names_and_scope_are_the_users() {
        let crd = in_cluster();
        assert_eq!(crd.metadata.name.as_deref(), Some(CRD_NAME));
        assert_eq!(crd.spec.group, "cache.example.com");
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.kind, "RedisCluster");
        // Not `rc`: kubectl resolves that to the core API's ReplicationControllers first.
        assert_eq!(
            crd.spec.names.short_names,
            Some(vec![SHORT_NAME.to_string()])
        );
    }

    #[test]
    fn both_versions_carry_the_pods_scheduling_fields_with_the_core_schemas() {
        for version in ["v1alpha1", "v1"] {
            let spec = &schema(version)["properties"]["spec"]["properties"];
            assert_eq!(
                spec["nodeSelector"]["additionalProperties"]["type"], "string",
                "{version}"
            );
            assert!(
                spec["tolerations"]["items"]["properties"]["tolerationSeconds"].is_object(),
                "{version}"
            );
            for part in ["nodeAffinity", "podAffinity", "podAntiAffinity"] {
                assert!(
                    spec["affinity"]["properties"][part].is_object(),
                    "{version} affinity.{part}"
                );
            }
            let constraint = &spec["topologySpreadConstraints"]["items"];
            assert_eq!(
                constraint["required"],
                json!(["maxSkew", "topologyKey", "whenUnsatisfiable"]),
                "{version}"
            );
            assert_eq!(spec["priorityClassName"]["type"], "string", "{version}");
        }
    }

    #[test]
    fn v1_is_stored_and_v1alpha1_served_deprecated() {
        let crd = in_cluster();
        let by_name = |n: &str| crd.spec.versions.iter().find(|v| v.name == n).unwrap();
        assert!(by_name("v1").storage && by_name("v1").served);
        assert!(!by_name("v1alpha1").storage && by_name("v1alpha1").served);
        assert_eq!(by_name("v1alpha1").deprecated, Some(true));
    }

    #[test]
    fn replicas_is_required_with_minimum_one_in_both_versions() {
        for version in ["v1alpha1", "v1"] {
            let spec = &schema(version)["properties"]["spec"];
            assert_eq!(spec["required"], json!(["replicas"]), "{version}");
            assert_eq!(
                spec["properties"]["replicas"]["minimum"],
                json!(1.0),
                "{version}"
            );
        }
    }

    #[test]
    fn versions_are_an_enum_of_supported_redis_releases() {
        let releases = json!(["6.2", "7.0", "7.2"]);
        assert_eq!(
            schema("v1alpha1")["properties"]["spec"]["properties"]["version"]["enum"],
            releases
        );
        assert_eq!(
            schema("v1")["properties"]["spec"]["properties"]["redisVersion"]["enum"],
            releases
        );
    }

    #[test]
    fn scale_subresource_maps_replicas() {
        for version in &in_cluster().spec.versions {
            let scale = version
                .subresources
                .as_ref()
                .and_then(|s| s.scale.as_ref())
                .expect("scale");
            assert_eq!(scale.spec_replicas_path, ".spec.replicas");
            assert_eq!(scale.status_replicas_path, ".status.readyReplicas");
        }
    }

    #[test]
    fn conversion_goes_through_the_webhook() {
        let crd = serde_json::to_value(redis_cluster_crd(
            &ConversionEndpoint::Url("https://127.0.0.1:9443".into()),
            Some(b"PEM"),
        ))
        .unwrap();
        let conversion = &crd["spec"]["conversion"];
        assert_eq!(conversion["strategy"], "Webhook");
        assert_eq!(
            conversion["webhook"]["clientConfig"]["url"],
            "https://127.0.0.1:9443/convert"
        );
        assert_eq!(conversion["webhook"]["clientConfig"]["caBundle"], "UEVN");
    }

    #[test]
    fn yaml_is_deterministic() {
        assert_eq!(
            to_yaml(&in_cluster()).unwrap(),
            to_yaml(&in_cluster()).unwrap()
        );
    }
}
