//! The cluster as `run` talks to it: a kube-rs client from `--kubeconfig` (or the usual
//! `KUBECONFIG`/in-cluster inference), OLM's kinds as dynamic objects, and the reads the
//! [`diagnosis`](super::diagnosis) works on.

use std::path::Path;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, LogParams, Patch, PatchParams, PostParams,
};
use serde_json::Value;

use super::RunError;

/// The field manager of `run`'s writes.
pub const FIELD_MANAGER: &str = "bundle-tool-run";

/// The CRDs OLM v0 serves that `run` uses.
pub const OLM_V0_CRDS: [&str; 5] = [
    "catalogsources.operators.coreos.com",
    "subscriptions.operators.coreos.com",
    "operatorgroups.operators.coreos.com",
    "installplans.operators.coreos.com",
    "clusterserviceversions.operators.coreos.com",
];

/// A kind `run` reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// core/v1 Pod.
    Pod,
    /// core/v1 Service.
    Service,
    /// core/v1 ConfigMap (the catalog of `--server-image`).
    ConfigMap,
    /// OLM's CatalogSource.
    CatalogSource,
    /// OLM's OperatorGroup.
    OperatorGroup,
    /// OLM's Subscription.
    Subscription,
    /// OLM's InstallPlan.
    InstallPlan,
    /// OLM's ClusterServiceVersion.
    ClusterServiceVersion,
    /// apiextensions' CustomResourceDefinition (cluster-scoped).
    CustomResourceDefinition,
    /// OLM v1's ClusterCatalog (cluster-scoped).
    ClusterCatalog,
    /// OLM v1's ClusterExtension (cluster-scoped).
    ClusterExtension,
    /// core/v1 ServiceAccount.
    ServiceAccount,
    /// rbac/v1 ClusterRole (cluster-scoped).
    ClusterRole,
    /// rbac/v1 ClusterRoleBinding (cluster-scoped).
    ClusterRoleBinding,
    /// rbac/v1 Role.
    Role,
    /// rbac/v1 RoleBinding.
    RoleBinding,
}

impl Kind {
    /// The kind's name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Service => "Service",
            Kind::ConfigMap => "ConfigMap",
            Kind::CatalogSource => "CatalogSource",
            Kind::OperatorGroup => "OperatorGroup",
            Kind::Subscription => "Subscription",
            Kind::InstallPlan => "InstallPlan",
            Kind::ClusterServiceVersion => "ClusterServiceVersion",
            Kind::CustomResourceDefinition => "CustomResourceDefinition",
            Kind::ClusterCatalog => "ClusterCatalog",
            Kind::ClusterExtension => "ClusterExtension",
            Kind::ServiceAccount => "ServiceAccount",
            Kind::ClusterRole => "ClusterRole",
            Kind::ClusterRoleBinding => "ClusterRoleBinding",
            Kind::Role => "Role",
            Kind::RoleBinding => "RoleBinding",
        }
    }

    /// The kind named `name`, among those `run` makes for OLM v1's installer.
    pub fn of_installer_object(name: &str) -> Option<Kind> {
        [
            Kind::ServiceAccount,
            Kind::ClusterRole,
            Kind::ClusterRoleBinding,
            Kind::Role,
            Kind::RoleBinding,
        ]
        .into_iter()
        .find(|kind| kind.name() == name)
    }

    /// Whether objects of the kind live outside namespaces.
    pub fn cluster_scoped(self) -> bool {
        matches!(
            self,
            Kind::CustomResourceDefinition
                | Kind::ClusterCatalog
                | Kind::ClusterExtension
                | Kind::ClusterRole
                | Kind::ClusterRoleBinding
        )
    }

    fn resource(self) -> ApiResource {
        let (group, version, plural) = match self {
            Kind::Pod => ("", "v1", "pods"),
            Kind::Service => ("", "v1", "services"),
            Kind::ConfigMap => ("", "v1", "configmaps"),
            Kind::CatalogSource => ("operators.coreos.com", "v1alpha1", "catalogsources"),
            Kind::OperatorGroup => ("operators.coreos.com", "v1", "operatorgroups"),
            Kind::Subscription => ("operators.coreos.com", "v1alpha1", "subscriptions"),
            Kind::InstallPlan => ("operators.coreos.com", "v1alpha1", "installplans"),
            Kind::ClusterServiceVersion => {
                ("operators.coreos.com", "v1alpha1", "clusterserviceversions")
            }
            Kind::CustomResourceDefinition => {
                ("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            }
            Kind::ClusterCatalog => ("olm.operatorframework.io", "v1", "clustercatalogs"),
            Kind::ClusterExtension => ("olm.operatorframework.io", "v1", "clusterextensions"),
            Kind::ServiceAccount => ("", "v1", "serviceaccounts"),
            Kind::ClusterRole => ("rbac.authorization.k8s.io", "v1", "clusterroles"),
            Kind::ClusterRoleBinding => ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
            Kind::Role => ("rbac.authorization.k8s.io", "v1", "roles"),
            Kind::RoleBinding => ("rbac.authorization.k8s.io", "v1", "rolebindings"),
        };
        ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: if group.is_empty() {
                version.into()
            } else {
                format!("{group}/{version}")
            },
            kind: self.name().into(),
            plural: plural.into(),
        }
    }
}

/// A client and the namespace `run` works in.
#[derive(Clone)]
pub struct Cluster {
    /// The client.
    pub client: kube::Client,
    /// The namespace.
    pub namespace: String,
}

/// `Kind namespace/name` of an object read as JSON.
pub fn describe(kind: Kind, object: &Value) -> String {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if namespace.is_empty() {
        format!("{} {name}", kind.name())
    } else {
        format!("{} {namespace}/{name}", kind.name())
    }
}

fn api_error(what: String) -> impl FnOnce(kube::Error) -> RunError {
    move |error| RunError::Api { what, error }
}

fn to_value(object: DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

impl Cluster {
    /// A client for `kubeconfig` (else `KUBECONFIG`, `~/.kube/config` or in-cluster), working
    /// in `namespace` (else the kubeconfig context's namespace, else `default`).
    pub async fn connect(
        kubeconfig: Option<&Path>,
        namespace: Option<&str>,
    ) -> Result<Cluster, RunError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = match kubeconfig {
            Some(path) => {
                let file = kube::config::Kubeconfig::read_from(path)
                    .map_err(|e| RunError::Kubeconfig(format!("{}: {e}", path.display())))?;
                kube::Config::from_custom_kubeconfig(
                    file,
                    &kube::config::KubeConfigOptions::default(),
                )
                .await
                .map_err(|e| RunError::Kubeconfig(format!("{}: {e}", path.display())))?
            }
            None => kube::Config::infer()
                .await
                .map_err(|e| RunError::Kubeconfig(e.to_string()))?,
        };
        let namespace = namespace
            .map(str::to_string)
            .unwrap_or_else(|| config.default_namespace.clone());
        let client =
            kube::Client::try_from(config).map_err(|e| RunError::Kubeconfig(e.to_string()))?;
        Ok(Cluster { client, namespace })
    }

    fn api(&self, kind: Kind) -> Api<DynamicObject> {
        if kind.cluster_scoped() {
            Api::all_with(self.client.clone(), &kind.resource())
        } else {
            Api::namespaced_with(self.client.clone(), &self.namespace, &kind.resource())
        }
    }

    /// The object, if it exists.
    pub async fn get(&self, kind: Kind, name: &str) -> Result<Option<Value>, RunError> {
        Ok(self
            .api(kind)
            .get_opt(name)
            .await
            .map_err(api_error(format!(
                "reading {} {}/{name}",
                kind.name(),
                self.namespace
            )))?
            .map(to_value))
    }

    /// Every object of `kind` in the namespace matching `selector` (empty: all).
    pub async fn list(&self, kind: Kind, selector: &str) -> Result<Vec<Value>, RunError> {
        let mut params = ListParams::default();
        if !selector.is_empty() {
            params = params.labels(selector);
        }
        Ok(self
            .api(kind)
            .list(&params)
            .await
            .map_err(api_error(format!(
                "listing {}s in {}",
                kind.name(),
                self.namespace
            )))?
            .items
            .into_iter()
            .map(to_value)
            .collect())
    }

    /// Creates `object`.
    pub async fn create(&self, kind: Kind, object: &Value) -> Result<Value, RunError> {
        let what = format!("creating {}", describe(kind, object));
        let dynamic: DynamicObject = serde_json::from_value(object.clone())
            .map_err(|e| RunError::Object(format!("{what}: {e}")))?;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PostParams::default()
        };
        Ok(to_value(
            self.api(kind)
                .create(&params, &dynamic)
                .await
                .map_err(api_error(what))?,
        ))
    }

    /// Merges `patch` into the object `name`.
    pub async fn patch(&self, kind: Kind, name: &str, patch: &Value) -> Result<(), RunError> {
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        self.api(kind)
            .patch(name, &params, &Patch::Merge(patch))
            .await
            .map_err(api_error(format!(
                "updating {} {}/{name}",
                kind.name(),
                self.namespace
            )))?;
        Ok(())
    }

    /// Deletes the object `name` (gone already is fine); whether it was there.
    pub async fn delete(&self, kind: Kind, name: &str) -> Result<bool, RunError> {
        match self
            .api(kind)
            .delete(name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(error) => Err(RunError::Api {
                what: format!("deleting {} {}/{name}", kind.name(), self.namespace),
                error,
            }),
        }
    }

    /// The first OLM v0 CRD the cluster lacks, if any.
    pub async fn missing_olm_crd(&self) -> Result<Option<String>, RunError> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        for name in OLM_V0_CRDS {
            let found = crds.get_opt(name).await.map_err(api_error(format!(
                "reading CustomResourceDefinition {name}"
            )))?;
            if found.is_none() {
                return Ok(Some(name.to_string()));
            }
        }
        Ok(None)
    }

    /// Whether the cluster serves the CRD `name`.
    pub async fn has_crd(&self, name: &str) -> Result<bool, RunError> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        Ok(crds
            .get_opt(name)
            .await
            .map_err(api_error(format!(
                "reading CustomResourceDefinition {name}"
            )))?
            .is_some())
    }

    /// Whether the namespace exists.
    pub async fn namespace_exists(&self) -> Result<bool, RunError> {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        Ok(namespaces
            .get_opt(&self.namespace)
            .await
            .map_err(api_error(format!("reading namespace {}", self.namespace)))?
            .is_some())
    }

    /// The last lines of a container's log (the previous run's when it restarted), or why
    /// they could not be read.
    pub async fn log_tail(&self, pod: &str, container: &str, previous: bool) -> String {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = LogParams {
            container: Some(container.to_string()),
            previous,
            tail_lines: Some(10),
            ..LogParams::default()
        };
        match pods.logs(pod, &params).await {
            Ok(text) => text,
            Err(error) => format!("(its log could not be read: {error})"),
        }
    }
}

/// The name of an object read as JSON.
pub fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}
