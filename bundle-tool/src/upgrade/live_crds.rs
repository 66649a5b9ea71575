//! `--kubeconfig`: the versions a cluster has stored objects at, read from its CRDs'
//! `status.storedVersions` as operator-controller's preflight reads them. A bundle file
//! cannot know a version the cluster stored at before its storage version last changed.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;

use super::bundle_contents::UpgradeError;

/// `status.storedVersions` of each CRD in `names` that the cluster has (absent ones are left
/// out: nothing is stored for them).
pub fn stored_versions(
    kubeconfig: &Path,
    names: &[String],
) -> Result<BTreeMap<String, Vec<String>>, UpgradeError> {
    let cluster =
        |message: String| UpgradeError::Cluster(format!("{}: {message}", kubeconfig.display()));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| cluster(e.to_string()))?;
    runtime.block_on(async {
        let config =
            kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| cluster(e.to_string()))?;
        let config = kube::Config::from_custom_kubeconfig(
            config,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| cluster(format!("unusable kubeconfig: {e}")))?;
        let client = kube::Client::try_from(config).map_err(|e| cluster(e.to_string()))?;
        let api: Api<CustomResourceDefinition> = Api::all(client);
        let mut found = BTreeMap::new();
        for name in names {
            let crd = api
                .get_opt(name)
                .await
                .map_err(|e| cluster(format!("reading CRD {name}: {e}")))?;
            if let Some(crd) = crd {
                let stored = crd
                    .status
                    .and_then(|s| s.stored_versions)
                    .unwrap_or_default();
                found.insert(name.clone(), stored);
            }
        }
        Ok(found)
    })
}
