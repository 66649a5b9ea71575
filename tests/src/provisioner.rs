//! A small dynamic volume provisioner, so that `volumeClaimTemplates` bind without a kubelet
//! or a CSI driver.
//!
//! It works like an external provisioner: for each Pending claim of the default class it
//! creates a `hostPath` PersistentVolume pre-bound to the claim (the controller-manager's PV
//! binder then completes the binding), and it deletes its Released volumes, as the class's
//! `reclaimPolicy: Delete` promises. Nothing is mounted: kwok's pods never run.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, DeleteParams, ListParams, PostParams};

/// The default StorageClass's name.
pub const STORAGE_CLASS: &str = "standard";
/// The provisioner name the StorageClass names.
pub const PROVISIONER_NAME: &str = "e2e.local/hostpath";

/// The running provisioner; stops when dropped.
pub struct Provisioner {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Provisioner {
    /// Starts it on a thread with its own runtime, so it does not depend on any test's runtime.
    pub fn start(kubeconfig: PathBuf, volumes_dir: PathBuf) -> anyhow::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("e2e-provisioner".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let Ok(runtime) = runtime else { return };
                runtime.block_on(async move {
                    let Ok(client) = super::control_plane_client(&kubeconfig).await else {
                        return;
                    };
                    while !flag.load(Ordering::Relaxed) {
                        if let Err(error) = provision_once(&client, &volumes_dir).await {
                            tracing::debug!("provisioner: {error:#}");
                        }
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                });
            })?;
        Ok(Provisioner {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Provisioner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn provision_once(
    client: &kube::Client,
    volumes_dir: &std::path::Path,
) -> anyhow::Result<()> {
    let claims: Api<PersistentVolumeClaim> = Api::all(client.clone());
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let existing = volumes.list(&ListParams::default()).await?.items;

    for claim in claims.list(&ListParams::default()).await?.items {
        let Some(spec) = &claim.spec else { continue };
        let pending = claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending");
        if !pending
            || spec.storage_class_name.as_deref() != Some(STORAGE_CLASS)
            || spec.volume_name.is_some()
        {
            continue;
        }
        let (Some(uid), Some(name), Some(namespace)) = (
            &claim.metadata.uid,
            &claim.metadata.name,
            &claim.metadata.namespace,
        ) else {
            continue;
        };
        let volume_name = format!("pvc-{uid}");
        if existing
            .iter()
            .any(|v| v.metadata.name.as_deref() == Some(volume_name.as_str()))
        {
            continue;
        }
        let size = spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage"))
            .map(|q| q.0.clone())
            .unwrap_or_else(|| "1Gi".into());
        let access_modes = spec
            .access_modes
            .clone()
            .unwrap_or_else(|| vec!["ReadWriteOnce".into()]);
        // The folder exists before any pod mounts it (containerd refuses a missing bind-mount
        // source) and any user may write it: a hostPath volume ignores fsGroup, and Redis
        // and the test pods run as non-root users. It outlives its pods, so a recreated pod
        // gets its data back.
        let path = volumes_dir.join(&volume_name);
        std::fs::create_dir_all(&path)?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o777))?;
        let volume: PersistentVolume = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": volume_name,
                "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER_NAME}
            },
            "spec": {
                "capacity": {"storage": size},
                "accessModes": access_modes,
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": STORAGE_CLASS,
                "hostPath": {"path": path.display().to_string(), "type": "Directory"},
                "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": namespace, "name": name, "uid": uid}
            }
        }))?;
        volumes.create(&PostParams::default(), &volume).await?;
    }

    for volume in existing {
        let ours = volume
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("pv.kubernetes.io/provisioned-by"))
            .is_some_and(|p| p == PROVISIONER_NAME);
        let released = volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
        if ours
            && released
            && let Some(name) = &volume.metadata.name
        {
            volumes.delete(name, &DeleteParams::default()).await?;
            // Reclaim policy Delete: the data goes with the volume.
            let _ = std::fs::remove_dir_all(volumes_dir.join(name));
        }
    }
    Ok(())
}
