//! Publishing a release to registries (`--push`): the bundle's blobs as soon as its image is
//! built, the catalog's when it is; then the bundle's manifest, the catalog edit, and the
//! catalog's manifest, in that order, so that neither the catalog folder nor the catalog
//! image ever names a bundle image that is not in its registry. The catalog edit is staged
//! and fsynced while the blobs go up; only its swap waits for the bundle's manifest.
//!
//! The registries are opened ([`Registries::open`]) before the steps run: the references
//! are checked, the password read, and each plain-HTTP session's `/v2/` ping sent on a
//! runtime thread of its own while generate, validate and the builds go on, so the ping and
//! its connection cost the pushes nothing.

use std::sync::Arc;

use oci_client::Reference;

use super::commit::{prepare_commit, swap_in};
use super::summary::{Step, StepStatus, Summary};
use super::{Outputs, Plan, ReleaseError, StepError};
use crate::durable;
use crate::image::{BlobsPushed, BuiltImage, RegistryClient, parse_reference};

/// The bundle's blobs on their way while the catalog steps run.
type BlobsOnTheirWay = tokio::task::JoinHandle<anyhow::Result<BlobsPushed>>;

/// Upload sessions being opened in one repository ([`RegistryClient::open_uploads`]).
type UploadsOpening = tokio::task::JoinHandle<Vec<String>>;

/// Upload sessions opened ahead in each repository: the small blobs of a release's images
/// are two each (the bundle's config and layer; the catalog's config and `/configs` layer,
/// the server layer being mounted), so every small blob's push is one `PUT`.
const UPLOADS_AHEAD: usize = 2;

/// How long a stopped release waits to cancel the upload sessions it opened.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The bundle's and the catalog's registries, their sessions being opened meanwhile.
pub struct Registries {
    /// Multi-threaded with one worker, so that what is spawned on it runs while the steps
    /// hold the calling thread (a current-thread runtime runs nothing outside `block_on`).
    runtime: tokio::runtime::Runtime,
    bundle_target: Reference,
    catalog_target: Reference,
    bundle_client: Arc<RegistryClient>,
    /// The bundle's client again when both images are on one registry, so the catalog's
    /// push reuses its session (ping and kept-alive connections).
    catalog_client: Arc<RegistryClient>,
    /// The bundle's blobs, sent as soon as its image is built ([`Self::send_bundle_blobs`]).
    bundle_blobs: Option<BlobsOnTheirWay>,
    /// Upload sessions being opened in the bundle's repository, until the bundle's blobs take
    /// them.
    bundle_uploads: Option<UploadsOpening>,
    /// Upload sessions being opened in the catalog's repository, until its blobs take them.
    catalog_uploads: Option<UploadsOpening>,
}

impl Registries {
    /// Checks both references, reads the password (`--password-stdin`), and starts each
    /// registry's session.
    pub fn open(plan: &Plan) -> Result<Registries, ReleaseError> {
        let bundle_reference = plan.bundle_image();
        let bundle_target = parse_reference(&bundle_reference)
            .map_err(|e| push_error(&bundle_reference, format!("{e:#}")))?;
        let catalog_target = parse_reference(&plan.catalog_image)
            .map_err(|e| push_error(&plan.catalog_image, format!("{e:#}")))?;
        let access = plan.registry.access().map_err(|e| {
            push_error(
                &bundle_reference,
                format!("reading the password from standard input: {e}"),
            )
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| push_error(&bundle_reference, e.to_string()))?;
        let client = |target: &Reference, shown: &str| {
            access
                .client(target)
                .map(Arc::new)
                .map_err(|e| push_error(shown, e.to_string()))
        };
        let bundle_client = client(&bundle_target, &bundle_reference)?;
        let catalog_client =
            if catalog_target.resolve_registry() == bundle_target.resolve_registry() {
                bundle_client.clone()
            } else {
                client(&catalog_target, &plan.catalog_image)?
            };
        // The ping, then upload sessions for the small blobs. What fails here fails again,
        // and is reported, when the push asks.
        let open_uploads = |client: &Arc<RegistryClient>, target: &Reference| {
            let (client, target) = (client.clone(), target.clone());
            runtime.spawn(async move { client.open_uploads(&target, UPLOADS_AHEAD).await })
        };
        let bundle_uploads = open_uploads(&bundle_client, &bundle_target);
        let catalog_uploads = open_uploads(&catalog_client, &catalog_target);
        Ok(Registries {
            runtime,
            bundle_target,
            catalog_target,
            bundle_client,
            catalog_client,
            bundle_blobs: None,
            bundle_uploads: Some(bundle_uploads),
            catalog_uploads: Some(catalog_uploads),
        })
    }

    /// Starts sending the bundle image's blobs on the registries' runtime thread, so they go
    /// up while the catalog is staged, checked and built (~10 ms of steps that leave the
    /// registry idle otherwise). Blobs no manifest names are invisible to pullers: a release
    /// that stops at a later step has published nothing.
    pub fn send_bundle_blobs(&mut self, bundle: &BuiltImage) {
        let (client, target, image) = (
            self.bundle_client.clone(),
            self.bundle_target.clone(),
            bundle.clone(),
        );
        let uploads = self.bundle_uploads.take();
        self.bundle_blobs = Some(
            self.runtime
                .spawn(async move { push_into_opened(&client, &target, &image, uploads).await }),
        );
    }

    /// Pushes the bundle image, writes the staged files into the catalog folder, pushes the catalog
    /// image; fills in the summary's push steps.
    pub fn publish(
        &mut self,
        plan: &Plan,
        summary: &mut Summary,
        outputs: Outputs,
    ) -> Result<(), ReleaseError> {
        let Outputs {
            bundle,
            catalog,
            staged,
        } = outputs;
        durable::sweep(&plan.catalog_dir);
        let bundle_reference = plan.bundle_image();
        // Blobs first, both images at once: nothing is visible until a manifest names them,
        // so a blob that cannot be pushed stops the release with nothing published. On
        // loopback this takes a warm release's pushes from ~45 to ~30 ms (docs/benchmarks.md,
        // `release`).
        let early = self.bundle_blobs.take();
        let bundle_uploads = self.bundle_uploads.take();
        let catalog_uploads = self.catalog_uploads.take();
        let send_blobs = || {
            self.runtime.block_on(async {
                let bundle_blobs = async {
                    match early {
                        Some(sending) => sending
                            .await
                            .unwrap_or_else(|e| Err(anyhow::anyhow!("sending the blobs: {e}"))),
                        None => {
                            let (client, target) = (&self.bundle_client, &self.bundle_target);
                            push_into_opened(client, target, bundle, bundle_uploads).await
                        }
                    }
                };
                let (client, target) = (&self.catalog_client, &self.catalog_target);
                let catalog_blobs = push_into_opened(client, target, catalog, catalog_uploads);
                futures::join!(bundle_blobs, catalog_blobs)
            })
        };
        // The catalog's new tree is staged and fsynced beside the folder meanwhile, so that
        // only the swap waits for the bundle's manifest (~3 ms less on the critical path).
        let ((bundle_blobs, catalog_blobs), ready) = std::thread::scope(|scope| {
            let preparing =
                staged.map(|staged| scope.spawn(|| prepare_commit(&plan.catalog_dir, staged)));
            let blobs = send_blobs();
            let ready = preparing.map(|preparing| {
                preparing.join().unwrap_or_else(|_| {
                    Err(ReleaseError::step(
                        Step::CatalogAdd,
                        StepError::Message("staging the catalog panicked".into()),
                    ))
                })
            });
            (blobs, ready)
        });
        let bundle_blobs = bundle_blobs
            .map_err(|e| push_error(&bundle_reference, format!("{e:#} (nothing was published)")))?;
        let catalog_blobs = catalog_blobs.map_err(|e| {
            push_error(
                &plan.catalog_image,
                format!(
                    "{e:#} (nothing was published: the bundle's tag and the catalog edit wait \
                     for both images' blobs)"
                ),
            )
        })?;
        // A catalog that could not be staged stops the release before anything is published.
        let ready = ready.transpose()?;
        self.manifest(
            &self.bundle_client,
            &self.bundle_target,
            bundle,
            bundle_blobs,
        )
        .map_err(|message| push_error(&bundle_reference, message))?;
        summary.set(
            Step::PushBundle,
            StepStatus::Done,
            format!("{bundle_reference}@{}", bundle.digest()),
        );
        let old_tree = ready
            .map(|ready| swap_in(&plan.catalog_dir, ready))
            .transpose()?;
        // The catalog's old tree is removed while the catalog's manifest goes up.
        let pushed = std::thread::scope(|scope| {
            if let Some(old_tree) = old_tree {
                scope.spawn(|| old_tree.remove());
            }
            self.manifest(
                &self.catalog_client,
                &self.catalog_target,
                catalog,
                catalog_blobs,
            )
        });
        match pushed {
            Ok(digest) => {
                summary.set(
                    Step::PushCatalog,
                    StepStatus::Done,
                    format!("{}@{digest}", plan.catalog_image),
                );
                Ok(())
            }
            Err(message) => match staged {
                Some(staged) => Err(ReleaseError::CatalogPushAfterCommit {
                    files: staged
                        .files
                        .iter()
                        .map(|(p, _)| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    reference: plan.catalog_image.clone(),
                    message,
                    command: plan.command(),
                }),
                None => Err(push_error(&plan.catalog_image, message)),
            },
        }
    }

    /// The manifest half of a push; the digest the registry stored, which
    /// [`RegistryClient::push_manifest`] has checked is the image's.
    fn manifest(
        &self,
        client: &RegistryClient,
        target: &Reference,
        image: &BuiltImage,
        blobs: BlobsPushed,
    ) -> Result<String, String> {
        self.runtime
            .block_on(client.push_manifest(target, image, blobs))
            .map_err(|e| format!("{e:#}"))
    }
}

/// A stopped release cancels the upload sessions it opened and lets the bundle's blobs
/// already on their way finish (waiting at most [`CANCEL_WAIT`]), so it leaves no open
/// session in the registries.
impl Drop for Registries {
    fn drop(&mut self) {
        let (bundle_blobs, bundle_uploads, catalog_uploads) = (
            self.bundle_blobs.take(),
            self.bundle_uploads.take(),
            self.catalog_uploads.take(),
        );
        if bundle_blobs.is_none() && bundle_uploads.is_none() && catalog_uploads.is_none() {
            return;
        }
        let cleanup = async {
            if let Some(sending) = bundle_blobs {
                let _ = sending.await;
            }
            for (uploads, client, target) in [
                (bundle_uploads, &self.bundle_client, &self.bundle_target),
                (catalog_uploads, &self.catalog_client, &self.catalog_target),
            ] {
                let unused = opened(uploads).await;
                client.cancel_uploads(target, unused).await;
            }
        };
        let _ = self
            .runtime
            .block_on(async { tokio::time::timeout(CANCEL_WAIT, cleanup).await });
    }
}

/// Pushes `image`'s blobs to `target`, the small ones into the sessions `uploads` opened,
/// then cancels the sessions no blob took.
async fn push_into_opened(
    client: &RegistryClient,
    target: &Reference,
    image: &BuiltImage,
    uploads: Option<UploadsOpening>,
) -> anyhow::Result<BlobsPushed> {
    let mut opened = opened(uploads).await;
    let pushed = client.push_blobs_into(target, image, &mut opened).await;
    client.cancel_uploads(target, opened).await;
    pushed
}

/// The sessions an [`UploadsOpening`] opened (none if it was not started or failed).
async fn opened(uploads: Option<UploadsOpening>) -> Vec<String> {
    match uploads {
        Some(opening) => opening.await.unwrap_or_default(),
        None => Vec::new(),
    }
}

fn push_error(reference: &str, message: String) -> ReleaseError {
    ReleaseError::Push {
        reference: reference.to_string(),
        message,
    }
}
