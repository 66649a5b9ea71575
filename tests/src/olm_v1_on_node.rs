//! OLM v1 installed the way its release installs it, running as pods on the real node, in one
//! of two releases ([`OlmV1Release`]). The catalog side alone:
//! cert-manager first (its static manifest, rendered from its chart as its release renders
//! `cert-manager.yaml`), then operator-controller v1.11.0's `manifests/standard.yaml`
//! (catalogd, its CRDs, RBAC, the cert-manager CA, Issuers and Certificates, catalogd's
//! mutating webhook). Both are applied as written but for:
//!
//! - the images the manifests name (`quay.io/jetstack/cert-manager-*:v1.11.5`,
//!   `quay.io/operator-framework/catalogd:devel`) are built here from the pinned binaries and
//!   pushed to the cluster registry, which mirrors quay.io; nothing in the manifests is edited
//!   for that;
//! - operator-controller's Deployment is left out: its v1.11.0 program cannot be built here
//!   (it imports `pkg.package-operator.run/boxcutter`, which the Go module proxy refuses; see
//!   tests/assets/build-go-assets.sh). Its other objects (RBAC, Service, Certificate, the
//!   ClusterExtension CRD) are applied, and cert-manager issues its certificate;
//! - catalogd pulls catalog images itself (containers/image, not the node's containerd), so
//!   it gets the cluster's mirror as containers/image configuration: a ConfigMap holding
//!   `registries.conf` (quay.io and docker.io mirrored by the cluster registry over plain
//!   HTTP) and `policy.json`, mounted at `/etc/containers` by a patch of the Deployment, as an
//!   admin of such a cluster patches it;
//! - the `cert-manager` and `olmv1-system` namespaces are created first, pinned to the real
//!   node, and the node carries the `node-role.kubernetes.io/control-plane` label that
//!   standard.yaml's Deployments select.
//!
//! The installing side ([`OlmV1Release::InstallerV1_5`]): operator-controller v1.5.1's
//! `manifests/experimental.yaml` (operator-controller with the WebhookProviderCertManager and
//! PreflightPermissions gates, and catalogd of the same release), with `:devel` and
//! `cert-git-version` replaced by the version as the release Makefile's `quickstart` target
//! does, both programs built here, and the same containers/image configuration mounted into
//! both (operator-controller pulls bundle images itself too).

use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::assets::Assets;
use crate::node::{ContainerConfig, RealNode, RootfsEntry};
use crate::olm_on_node::{deployment_log, documents};
use crate::{ControlPlane, eventually};

/// Where OLM v1 runs (standard.yaml's namespace).
pub const OLM_V1_NAMESPACE: &str = "olmv1-system";

/// An `ApiResource` for an OLM v1 kind (`ClusterCatalog`, `ClusterExtension`), as
/// [`crate::olm_on_node::olm_resource`] is for OLM v0's.
pub fn olm_v1_resource(kind: &str, plural: &str) -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "olm.operatorframework.io".into(),
        version: "v1".into(),
        api_version: "olm.operatorframework.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The condition of type `kind` in an object's `status.conditions`.
pub fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}
/// Where cert-manager runs.
pub const CERT_MANAGER_NAMESPACE: &str = "cert-manager";
/// The ConfigMap of containers/image configuration mounted at `/etc/containers`.
pub const CONTAINERS_CONFIG: &str = "containers-registries";

/// The Deployments of each, in the order they come up.
const CERT_MANAGER_DEPLOYMENTS: [&str; 3] = [
    "cert-manager",
    "cert-manager-cainjector",
    "cert-manager-webhook",
];
const CATALOGD_DEPLOYMENT: &str = "catalogd-controller-manager";
/// The Deployment of standard.yaml that is not applied (see the module's documentation).
const OPERATOR_CONTROLLER_DEPLOYMENT: &str = "operator-controller-controller-manager";
/// The release whose operator-controller runs (built from the module, see build-go-assets.sh).
pub const INSTALLER_VERSION: &str = "v1.5.1";

/// Which OLM v1 runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OlmV1Release {
    /// v1.11.0's `standard.yaml`, catalogd only (operator-controller v1.11.0 cannot be built).
    CatalogdV1_11,
    /// v1.5.1's `experimental.yaml`: operator-controller and catalogd.
    InstallerV1_5,
}

impl OlmV1Release {
    fn deployments(self) -> &'static [&'static str] {
        match self {
            OlmV1Release::CatalogdV1_11 => &[CATALOGD_DEPLOYMENT],
            OlmV1Release::InstallerV1_5 => &[CATALOGD_DEPLOYMENT, OPERATOR_CONTROLLER_DEPLOYMENT],
        }
    }

    /// The release's install manifest as the test applies it.
    fn manifest(self, assets: &Assets) -> anyhow::Result<String> {
        Ok(match self {
            OlmV1Release::CatalogdV1_11 => std::fs::read_to_string(assets.olm_v1_manifest()?)?,
            OlmV1Release::InstallerV1_5 => {
                std::fs::read_to_string(assets.olm_v1_experimental_manifest()?)?
                    .replace(":devel", &format!(":{INSTALLER_VERSION}"))
                    .replace("cert-git-version", &format!("cert-{INSTALLER_VERSION}"))
            }
        })
    }
}

/// OLM v1 and cert-manager, up on the real node.
pub struct OlmV1OnNode {
    release: OlmV1Release,
}

impl OlmV1OnNode {
    /// Builds and pushes the images, applies cert-manager and then OLM v1 v1.11.0's catalogd,
    /// and waits until every Deployment applied is available.
    pub async fn deploy(plane: &ControlPlane, node: &RealNode) -> anyhow::Result<Self> {
        Self::deploy_release(plane, node, OlmV1Release::CatalogdV1_11).await
    }

    /// [`deploy`](Self::deploy) of the given release.
    pub async fn deploy_release(
        plane: &ControlPlane,
        node: &RealNode,
        release: OlmV1Release,
    ) -> anyhow::Result<Self> {
        let assets = Assets::locate()?;
        let client = plane.client().await?;
        push_cert_manager_images(node, &assets).await?;
        push_olm_v1_images(node, &assets, release).await?;
        for namespace in [CERT_MANAGER_NAMESPACE, OLM_V1_NAMESPACE] {
            node.namespace(&client, namespace).await?;
        }
        let nodes: Api<Node> = Api::all(client.clone());
        nodes
            .patch(
                crate::node::NODE_NAME,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {
                    "node-role.kubernetes.io/control-plane": ""}}})),
            )
            .await
            .context("labelling the real node as standard.yaml's Deployments select")?;

        let cert_manager = std::fs::read_to_string(assets.cert_manager_manifest()?)?;
        apply_documents(&client, &cert_manager).await?;
        let this = OlmV1OnNode { release };
        this.wait_available(
            &client,
            node,
            CERT_MANAGER_NAMESPACE,
            &CERT_MANAGER_DEPLOYMENTS,
        )
        .await?;
        // cert-manager's webhook refuses nothing until cainjector has put its CA into the
        // webhook configurations (failurePolicy Fail): standard.yaml's Certificates wait for it.
        let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        eventually(
            Duration::from_secs(120),
            "cainjector to inject the CA into cert-manager's webhook",
            || async {
                let config = webhooks.get_opt("cert-manager-webhook").await?;
                Ok(config
                    .and_then(|c| c.webhooks)
                    .and_then(|w| w.first().and_then(|w| w.client_config.ca_bundle.clone()))
                    .filter(|ca| !ca.0.is_empty())
                    .map(|_| ()))
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", this.describe(node)))?;

        let mut objects = documents(&release.manifest(&assets)?)?;
        if release == OlmV1Release::CatalogdV1_11 {
            objects.retain(|o| {
                !(o["kind"] == "Deployment"
                    && o["metadata"]["name"] == OPERATOR_CONTROLLER_DEPLOYMENT)
            });
        }
        let direct_injection = move_direct_injection_out_of_secret_templates(&mut objects);
        for object in &mut objects {
            if object["kind"] == "Deployment" {
                mount_containers_config(object);
            }
        }
        crate::apply_objects(&client, &[containers_config(&node.registry())]).await?;
        // The webhook may still refuse the first requests while its serving certificate loads.
        eventually(
            Duration::from_secs(60),
            "OLM v1's manifest applied (cert-manager's webhook answering)",
            || async {
                match crate::apply_objects(&client, &objects).await {
                    Ok(()) => Ok(Some(())),
                    Err(error) if format!("{error:#}").contains("cert-manager-webhook") => Ok(None),
                    Err(error) => Err(error),
                }
            },
        )
        .await?;
        annotate_secrets(&client, &direct_injection).await?;
        this.wait_available(&client, node, OLM_V1_NAMESPACE, release.deployments())
            .await?;
        Ok(this)
    }

    async fn wait_available(
        &self,
        client: &kube::Client,
        node: &RealNode,
        namespace: &str,
        names: &[&str],
    ) -> anyhow::Result<()> {
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        eventually(
            Duration::from_secs(240),
            &format!("{names:?} available in {namespace}"),
            || async {
                node.check_running()?;
                for name in names {
                    let available = deployments
                        .get_opt(name)
                        .await?
                        .and_then(|d| d.status)
                        .and_then(|s| s.available_replicas)
                        .unwrap_or(0);
                    if available < 1 {
                        return Ok(None);
                    }
                }
                Ok(Some(()))
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", self.describe(node)))
    }

    /// The pods of both and the end of each controller's log, for failure messages.
    pub fn describe(&self, node: &RealNode) -> String {
        let mut out = String::new();
        for namespace in [CERT_MANAGER_NAMESPACE, OLM_V1_NAMESPACE] {
            if let Ok(pods) =
                node.kubectl(&["get", "pods,certificates", "-n", namespace, "-o", "wide"])
            {
                out.push_str(&String::from_utf8_lossy(&pods.stdout));
                out.push_str(&String::from_utf8_lossy(&pods.stderr));
            }
        }
        let deployments = CERT_MANAGER_DEPLOYMENTS
            .iter()
            .map(|d| (CERT_MANAGER_NAMESPACE, *d))
            .chain(
                self.release
                    .deployments()
                    .iter()
                    .map(|d| (OLM_V1_NAMESPACE, *d)),
            );
        for (namespace, deployment) in deployments {
            out.push_str(&deployment_log(node, namespace, deployment));
        }
        out
    }
}

/// The annotation that lets cainjector copy a CA from a Secret (`inject-ca-from-secret`).
const DIRECT_INJECTION: &str = "cert-manager.io/allow-direct-injection";

/// standard.yaml asks for its CA Secret to carry [`DIRECT_INJECTION`] through the
/// Certificate's `secretTemplate`; cert-manager v1.11.5's webhook refuses that ("cert-manager.io/*
/// annotations are not allowed", a rule later releases relaxed for this annotation). So the
/// annotation is taken out of each such Certificate and put on its Secret once issued, which
/// is what the template would have done. Returns the Secrets, as (namespace, name).
fn move_direct_injection_out_of_secret_templates(objects: &mut [Value]) -> Vec<(String, String)> {
    let mut secrets = Vec::new();
    for object in objects.iter_mut().filter(|o| o["kind"] == "Certificate") {
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let spec = &mut object["spec"];
        let Some(annotations) = spec["secretTemplate"]["annotations"].as_object_mut() else {
            continue;
        };
        if annotations.remove(DIRECT_INJECTION).is_none() {
            continue;
        }
        if annotations.is_empty()
            && let Some(template) = spec["secretTemplate"].as_object_mut()
        {
            template.remove("annotations");
        }
        if spec["secretTemplate"]
            .as_object()
            .is_some_and(|t| t.is_empty())
            && let Some(spec) = spec.as_object_mut()
        {
            spec.remove("secretTemplate");
        }
        secrets.push((
            namespace,
            spec["secretName"].as_str().unwrap_or_default().to_string(),
        ));
    }
    secrets
}

/// Puts [`DIRECT_INJECTION`] on each Secret once cert-manager has issued it.
async fn annotate_secrets(
    client: &kube::Client,
    secrets: &[(String, String)],
) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Secret;
    for (namespace, name) in secrets {
        let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
        eventually(
            Duration::from_secs(120),
            &format!("cert-manager to issue the Secret {namespace}/{name}"),
            || async { Ok(api.get_opt(name).await?.map(|_| ())) },
        )
        .await?;
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {DIRECT_INJECTION: "true"}}})),
        )
        .await?;
    }
    Ok(())
}

/// Applies a manifest's CRDs first (waiting until each is served), then the rest.
async fn apply_documents(client: &kube::Client, text: &str) -> anyhow::Result<()> {
    let objects = documents(text)?;
    for crd in objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
    {
        let crd = serde_json::from_value(crd.clone()).context("a CRD of the manifest")?;
        crate::apply_crd(client, &crd).await?;
    }
    let rest: Vec<Value> = objects
        .into_iter()
        .filter(|o| o["kind"] != "CustomResourceDefinition")
        .collect();
    crate::apply_objects(client, &rest).await
}

/// containers/image configuration as an admin of a cluster with a private mirror writes it:
/// quay.io and docker.io come from the cluster registry over plain HTTP (as does anything
/// named by the registry's own address), and any image is accepted (no signatures are
/// published for these test images).
fn containers_config(registry: &str) -> Value {
    let registries = format!(
        "[[registry]]\nprefix = \"quay.io\"\nlocation = \"quay.io\"\n\
         [[registry.mirror]]\nlocation = \"{registry}\"\ninsecure = true\n\n\
         [[registry]]\nprefix = \"docker.io\"\nlocation = \"docker.io\"\n\
         [[registry.mirror]]\nlocation = \"{registry}\"\ninsecure = true\n\n\
         [[registry]]\nlocation = \"{registry}\"\ninsecure = true\n"
    );
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONTAINERS_CONFIG, "namespace": OLM_V1_NAMESPACE},
        "data": {
            "registries.conf": registries,
            "policy.json": "{\"default\": [{\"type\": \"insecureAcceptAnything\"}]}\n",
        },
    })
}

/// Adds the containers/image ConfigMap at `/etc/containers` to a Deployment's `manager`.
fn mount_containers_config(deployment: &mut Value) {
    let spec = &mut deployment["spec"]["template"]["spec"];
    if let Some(volumes) = spec["volumes"].as_array_mut() {
        volumes.push(json!({"name": "containers-config",
            "configMap": {"name": CONTAINERS_CONFIG}}));
    }
    for container in spec["containers"].as_array_mut().into_iter().flatten() {
        if container["name"] == "manager"
            && let Some(mounts) = container["volumeMounts"].as_array_mut()
        {
            mounts.push(json!({"name": "containers-config",
                "mountPath": "/etc/containers", "readOnly": true}));
        }
    }
}

/// cert-manager's images as its chart names them, each the one program as upstream's
/// distroless image has it: the entrypoint, user 1000.
async fn push_cert_manager_images(node: &RealNode, assets: &Assets) -> anyhow::Result<()> {
    let version = assets
        .version_of("CERT_MANAGER")
        .context("the asset index has no cert-manager version")?;
    for program in ["controller", "cainjector", "webhook"] {
        let image = bundle_tool::image::build_rootfs_image(
            &[
                RootfsEntry::File {
                    path: format!("/app/cmd/{program}/{program}"),
                    source: assets.cert_manager(program)?,
                    mode: 0o755,
                },
                RootfsEntry::Dir {
                    path: "/tmp".into(),
                    mode: 0o1777,
                },
            ],
            &ContainerConfig {
                entrypoint: vec![format!("/app/cmd/{program}/{program}")],
                user: "1000".into(),
                ..ContainerConfig::default()
            },
        )?;
        node.push_as(
            &format!("quay.io/jetstack/cert-manager-{program}:{version}"),
            &image,
        )
        .await?;
    }
    Ok(())
}

/// catalogd (and for v1.5.1 operator-controller) under the tag the applied manifest names,
/// laid out as upstream's Dockerfiles lay them out (`/catalogd`, `/operator-controller`, run
/// from `/`), user 65532 as their distroless base.
async fn push_olm_v1_images(
    node: &RealNode,
    assets: &Assets,
    release: OlmV1Release,
) -> anyhow::Result<()> {
    let (tag, programs) = match release {
        OlmV1Release::CatalogdV1_11 => ("devel", vec![("catalogd", assets.catalogd()?)]),
        OlmV1Release::InstallerV1_5 => (
            INSTALLER_VERSION,
            vec![
                ("catalogd", assets.olm_v1("catalogd")?),
                ("operator-controller", assets.olm_v1("operator-controller")?),
            ],
        ),
    };
    for (program, source) in programs {
        let image = bundle_tool::image::build_rootfs_image(
            &[
                RootfsEntry::File {
                    path: format!("/{program}"),
                    source,
                    mode: 0o755,
                },
                RootfsEntry::Dir {
                    path: "/etc/containers".into(),
                    mode: 0o755,
                },
            ],
            &ContainerConfig {
                entrypoint: vec![format!("/{program}")],
                user: "65532:65532".into(),
                ..ContainerConfig::default()
            },
        )?;
        node.push_as(
            &format!("quay.io/operator-framework/{program}:{tag}"),
            &image,
        )
        .await?;
    }
    Ok(())
}
