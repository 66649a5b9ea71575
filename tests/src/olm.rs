//! OLM v0 on the test control plane: its CRDs, namespaces and default OperatorGroups, and its
//! two controllers (olm-operator, catalog-operator) as local processes built by the
//! foundation script. Both bind `:8080` on every interface: the test binary's private network
//! namespace keeps that local (and the second bind only logs an error).

use std::path::Path;

use anyhow::Context as _;

use crate::assets::Assets;
use crate::{ControlPlane, ManagedProcess};

/// The namespace OLM runs in, and where global CatalogSources live.
pub const OLM_NAMESPACE: &str = "olm";

/// OLM's controllers, running against a control plane.
pub struct Olm {
    olm_operator: ManagedProcess,
    catalog_operator: ManagedProcess,
}

impl Olm {
    /// Installs OLM's CRDs and default objects, then starts both controllers.
    pub async fn start(control_plane: &ControlPlane) -> anyhow::Result<Olm> {
        crate::require_isolated_network()?;
        let assets = Assets::locate()?;
        let client = control_plane.client().await?;
        for file in assets.olm_crds()? {
            let text = std::fs::read_to_string(&file)?;
            let crd = serde_saphyr::from_str(&text)
                .with_context(|| format!("parse {}", file.display()))?;
            crate::apply_crd(&client, &crd)
                .await
                .with_context(|| format!("apply {}", file.display()))?;
        }
        apply_yaml(
            &client,
            r#"
apiVersion: v1
kind: Namespace
metadata:
  name: olm
---
apiVersion: v1
kind: Namespace
metadata:
  name: operators
---
apiVersion: operators.coreos.com/v1
kind: OLMConfig
metadata:
  name: cluster
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata:
  name: global-operators
  namespace: operators
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata:
  name: olm-operators
  namespace: olm
spec:
  targetNamespaces:
  - olm
"#,
        )
        .await?;
        let kubeconfig = control_plane.kubeconfig_path().display().to_string();
        let logs = control_plane.root();
        let olm_operator = ManagedProcess::spawn(
            "olm-operator",
            &assets.olm("olm")?,
            &["--namespace".into(), OLM_NAMESPACE.into()],
            &[("KUBECONFIG", &kubeconfig)],
            &logs.join("olm-operator.log"),
        )?;
        let catalog_operator = ManagedProcess::spawn(
            "catalog-operator",
            &assets.olm("catalog")?,
            &[
                "--namespace".into(),
                OLM_NAMESPACE.into(),
                "--kubeconfig".into(),
                kubeconfig.clone(),
            ],
            &[("KUBECONFIG", &kubeconfig)],
            &logs.join("catalog-operator.log"),
        )?;
        Ok(Olm {
            olm_operator,
            catalog_operator,
        })
    }

    /// Fails if a controller exited, with the end of its log.
    pub fn check_running(&self) -> anyhow::Result<()> {
        self.olm_operator.check_running()?;
        self.catalog_operator.check_running()
    }

    /// The last lines of both controllers' logs, for failure messages.
    pub fn log_tails(&self, lines: usize) -> String {
        format!(
            "--- olm-operator ---\n{}\n--- catalog-operator ---\n{}",
            self.olm_operator.log_tail(lines),
            self.catalog_operator.log_tail(lines)
        )
    }
}

/// Server-side applies every document of a YAML stream (any kind the cluster serves).
pub async fn apply_yaml(client: &kube::Client, text: &str) -> anyhow::Result<()> {
    let mut objects = Vec::new();
    for document in text.split("\n---").filter(|d| !d.trim().is_empty()) {
        let object: serde_json::Value = serde_saphyr::from_str(document)
            .with_context(|| format!("parse a manifest:\n{document}"))?;
        // A document of comments only, or an empty one.
        if object.is_null()
            || (object["apiVersion"].is_null() && object["metadata"]["name"].is_null())
        {
            continue;
        }
        objects.push(object);
    }
    crate::apply_objects(client, &objects).await
}

/// Reads a YAML file and applies it, replacing each `(from, to)` pair in its text first.
pub async fn apply_file(
    client: &kube::Client,
    path: &Path,
    replacements: &[(&str, &str)],
) -> anyhow::Result<()> {
    let mut text =
        std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    for (from, to) in replacements {
        anyhow::ensure!(text.contains(from), "{} has no {from:?}", path.display());
        text = text.replace(from, to);
    }
    apply_yaml(client, &text).await
}
