//! Pushing and pulling images: blobs that the registry already has are not sent again,
//! transient failures (5xx, dropped connections) are retried with backoff, and a push is
//! reported only after the registry's manifest digest matches ours.
//!
//! Plain-HTTP pushes to anonymous or basic-auth registries go through our own
//! [`Session`](super::session::Session) (see there why); pulls, HTTPS and bearer-token
//! registries use oci-client, built only when first needed so that a plain-HTTP push never
//! loads the system's CA certificates.

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::{Client, Reference, RegistryOperation};
use serde_json::Value;

use super::credentials::Credentials;
use super::retry::with_backoff;
use super::session::{Access, ExchangeError, Session};
use super::transport::{Transport, TransportError, untrusted_certificate};
use super::{Blob, BuiltImage, MANIFEST_MEDIA_TYPE, Platform, digest};

/// What [`RegistryClient::push_blobs`] did: `true` when the blobs are in the registry (our
/// plain-HTTP session), `false` when the whole push is left to the manifest half.
#[must_use = "the blobs are invisible until push_manifest names them"]
pub struct BlobsPushed(bool);

/// A client for one registry protocol (HTTPS, or plain HTTP for local registries).
pub struct RegistryClient {
    plain_http: bool,
    /// Over HTTPS, built with the client; over plain HTTP, on first use (a plain-HTTP push
    /// never needs it).
    client: std::sync::OnceLock<Client>,
    /// Plain-HTTP sessions by registry host, shared by every push of this client.
    sessions: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<Session>>>,
    credentials: Credentials,
    /// Attempts per operation before giving up.
    pub attempts: u32,
}

/// Whether an error is worth another try: server errors and broken connections, not refusals
/// (a token server's, a registry's, or an untrusted certificate).
fn transient(error: &oci_client::errors::OciDistributionError) -> bool {
    use oci_client::errors::OciDistributionError as E;
    if matches!(
        error,
        E::AuthenticationFailure(_) | E::UnauthorizedError { .. }
    ) || untrusted_certificate("", error).is_some()
    {
        return false;
    }
    let text = error.to_string();
    let refused = text.contains("401")
        || text.contains("403")
        || text.contains("404")
        || text.to_lowercase().contains("unauthorized");
    !refused
}

impl RegistryClient {
    /// A client over `transport`; fails on a CA file it cannot use, naming it.
    pub fn new(transport: &Transport, credentials: Credentials) -> Result<Self, TransportError> {
        transport.warn_if_insecure();
        Self::over(transport, credentials, transport.insecure_skip_tls_verify)
    }

    /// A client over HTTPS that accepts any certificate, for a registry that registries.conf
    /// marks `insecure`: the file is the user's word for it, so no warning is printed (nor
    /// do podman and skopeo print one).
    pub(super) fn unverified(
        transport: &Transport,
        credentials: Credentials,
    ) -> Result<Self, TransportError> {
        Self::over(
            &Transport {
                plain_http: false,
                ..transport.clone()
            },
            credentials,
            true,
        )
    }

    fn over(
        transport: &Transport,
        credentials: Credentials,
        accept_invalid_certificates: bool,
    ) -> Result<Self, TransportError> {
        let client = std::sync::OnceLock::new();
        if !transport.plain_http {
            let config = ClientConfig {
                protocol: ClientProtocol::Https,
                extra_root_certificates: transport
                    .ca_certificates()?
                    .into_iter()
                    .map(|der| oci_client::client::Certificate {
                        encoding: oci_client::client::CertificateEncoding::Der,
                        data: der.to_vec(),
                    })
                    .collect(),
                accept_invalid_certificates,
                ..Self::config()
            };
            // `Client::new` would fall back to a default client, silently dropping the CAs.
            let built = Client::try_from(config).map_err(|error| TransportError::Client {
                files: transport
                    .ca_files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                message: WithCauses(error).to_string(),
            })?;
            let _ = client.set(built);
        }
        Ok(RegistryClient {
            plain_http: transport.plain_http,
            client,
            sessions: Default::default(),
            credentials,
            attempts: 6,
        })
    }

    /// The settings both transports share.
    fn config() -> ClientConfig {
        let _ = rustls::crypto::ring::default_provider().install_default();
        ClientConfig {
            // Bundle blobs are small: one PUT each instead of a chunked PATCH sequence.
            use_monolithic_push: true,
            ..Default::default()
        }
    }

    fn client(&self) -> &Client {
        self.client.get_or_init(|| {
            Client::new(ClientConfig {
                protocol: ClientProtocol::Http,
                ..Self::config()
            })
        })
    }

    /// The plain-HTTP session for `host`, made on first use.
    fn session(&self, host: &str) -> std::sync::Arc<Session> {
        let mut sessions = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions
            .entry(host.to_string())
            .or_insert_with(|| std::sync::Arc::new(Session::new(host, &self.credentials)))
            .clone()
    }

    /// Retries an oci-client exchange on `reference`'s registry with the shared backoff;
    /// 401/403/404 are final, but a 401 first gets one fresh token: a bearer token can
    /// expire between oci-client's check of its cached expiry and the registry's (a clock a
    /// second apart, a long upload), and oci-client does not ask again by itself. An
    /// untrusted certificate is reported with how to trust it.
    async fn retry<T, F, Fut>(
        &self,
        reference: &Reference,
        operation_kind: RegistryOperation,
        what: &str,
        mut operation: F,
    ) -> anyhow::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, oci_client::errors::OciDistributionError>>,
    {
        let mut renewed = false;
        loop {
            // Whether the last failure was a 401.
            let refused = std::sync::atomic::AtomicBool::new(false);
            let result = with_backoff(
                self.attempts,
                what,
                |e: &WithCauses| transient(&e.0),
                || {
                    let attempt = operation();
                    let refused = &refused;
                    async move {
                        attempt.await.map_err(|error| {
                            refused
                                .store(unauthorized(&error), std::sync::atomic::Ordering::Relaxed);
                            WithCauses(error)
                        })
                    }
                },
            )
            .await;
            let Err(error) = result else {
                return result;
            };
            if let Some(refusal) = untrusted_certificate(reference.resolve_registry(), &*error) {
                anyhow::bail!("{what}: {refusal}");
            }
            if refused.load(std::sync::atomic::Ordering::Relaxed) && !self.plain_http && !renewed {
                renewed = true;
                tracing::debug!("{what}: the registry refused the token; asking for a new one");
                let auth = self.credentials.auth();
                if self
                    .client()
                    .auth(reference, &auth, operation_kind)
                    .await
                    .is_ok()
                {
                    continue;
                }
            }
            if refused.load(std::sync::atomic::Ordering::Relaxed)
                && operation_kind == RegistryOperation::Push
            {
                anyhow::bail!(
                    "denied: the registry {} refused to let {} push to {} ({error:#}); the \
                     token its auth server gave holds no push access to that repository",
                    reference.resolve_registry(),
                    self.credentials.who(),
                    reference.repository()
                );
            }
            return Err(error);
        }
    }

    /// Pushes `image` to `reference`; returns the digest the registry reports, which must be
    /// ours.
    pub async fn push(&self, reference: &Reference, image: &BuiltImage) -> anyhow::Result<String> {
        let blobs = self.push_blobs(reference, image).await?;
        self.push_manifest(reference, image, blobs).await
    }

    /// The first half of [`push`](Self::push): the blobs of `image`, not yet named by any
    /// manifest (so invisible to pullers). Several images' blobs can go up side by side and
    /// their [`push_manifest`](Self::push_manifest)s follow in the order the caller needs.
    /// Over HTTPS or to a bearer-token registry, oci-client does the whole push in the
    /// second half.
    pub async fn push_blobs(
        &self,
        reference: &Reference,
        image: &BuiltImage,
    ) -> anyhow::Result<BlobsPushed> {
        self.push_blobs_into(reference, image, &mut Vec::new())
            .await
    }

    /// Opens up to `count` plain-HTTP upload sessions in `reference`'s repository ahead of a
    /// push whose blobs are not built yet (see [`super::push::open_uploads`]); none over
    /// HTTPS, to a bearer-token registry, or when the registry cannot be reached (the push
    /// meets and reports that).
    pub async fn open_uploads(&self, reference: &Reference, count: usize) -> Vec<String> {
        if !self.plain_http {
            return Vec::new();
        }
        let session = self.session(reference.resolve_registry());
        match session.access().await {
            Ok(Access::Granted) => {
                super::push::open_uploads(&session, reference.repository(), count).await
            }
            Ok(_) => Vec::new(),
            Err(error) => {
                tracing::debug!(%error, "opening the registry session ahead of the push");
                Vec::new()
            }
        }
    }

    /// Cancels sessions from [`open_uploads`](Self::open_uploads) that no blob took.
    pub async fn cancel_uploads(&self, reference: &Reference, locations: Vec<String>) {
        if locations.is_empty() {
            return;
        }
        let session = self.session(reference.resolve_registry());
        super::push::cancel_uploads(&session, locations).await;
    }

    /// [`push_blobs`](Self::push_blobs), small blobs going into the sessions of `opened`
    /// (from [`open_uploads`](Self::open_uploads)) while there are some; those left are the
    /// caller's to cancel.
    pub async fn push_blobs_into(
        &self,
        reference: &Reference,
        image: &BuiltImage,
        opened: &mut Vec<String>,
    ) -> anyhow::Result<BlobsPushed> {
        if self.plain_http && image.is_index() {
            // Every platform's image is pushed whole, by digest, before the index names it.
            let mut any = true;
            for child in &image.children {
                let by_digest = child_reference(reference, &child.digest());
                let blobs = Box::pin(self.push_blobs_into(&by_digest, child, opened)).await?;
                any &= blobs.0;
                self.push_manifest(&by_digest, child, blobs).await?;
            }
            return Ok(BlobsPushed(any));
        }
        if self.plain_http {
            let session = self.session(reference.resolve_registry());
            let access = with_backoff(
                self.attempts,
                "authenticating",
                |e: &ExchangeError| e.transient,
                || session.access(),
            )
            .await?;
            if access == Access::Granted {
                super::push::push_blobs(
                    &session,
                    self.attempts,
                    reference.repository(),
                    image,
                    opened,
                )
                .await?;
                return Ok(BlobsPushed(true));
            }
        }
        Ok(BlobsPushed(false))
    }

    /// The second half of [`push`](Self::push), after [`push_blobs`](Self::push_blobs) of the
    /// same reference and image: the manifest, and the check of the digest the registry
    /// stored, which is returned.
    pub async fn push_manifest(
        &self,
        reference: &Reference,
        image: &BuiltImage,
        blobs: BlobsPushed,
    ) -> anyhow::Result<String> {
        if !blobs.0 {
            return self.push_with_oci_client(reference, image).await;
        }
        let session = self.session(reference.resolve_registry());
        let tag = reference
            .digest()
            .or(reference.tag())
            .unwrap_or("latest")
            .to_string();
        super::push::push_manifest(&session, self.attempts, reference.repository(), &tag, image)
            .await
    }

    async fn push_with_oci_client(
        &self,
        reference: &Reference,
        image: &BuiltImage,
    ) -> anyhow::Result<String> {
        if image.is_index() {
            for child in &image.children {
                let by_digest = child_reference(reference, &child.digest());
                Box::pin(self.push_with_oci_client(&by_digest, child)).await?;
            }
        }
        let auth = self.credentials.auth();
        self.client()
            .store_auth_if_needed(reference.resolve_registry(), &auth)
            .await;
        self.retry(reference, RegistryOperation::Push, "authenticating", || {
            self.client()
                .auth(reference, &auth, RegistryOperation::Push)
        })
        .await?;
        // A progress bar of bytes, only for a person watching a terminal (never in CI logs).
        let blobs = image.blobs();
        let total: u64 = blobs.iter().map(|blob| blob.size()).sum();
        let progress = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_message(format!("pushing {reference}"));
            bar
        } else {
            indicatif::ProgressBar::hidden()
        };
        for blob in &blobs {
            let exists = self
                .retry(
                    reference,
                    RegistryOperation::Pull,
                    "checking a blob",
                    || self.client().blob_exists(reference, blob.digest()),
                )
                .await?;
            if !exists {
                let data = blob.bytes()?;
                self.retry(reference, RegistryOperation::Push, "pushing a blob", || {
                    self.client()
                        .push_blob(reference, data.clone(), blob.digest())
                })
                .await?;
            }
            progress.inc(blob.size());
        }
        progress.finish_and_clear();
        let manifest = bytes::Bytes::from(image.manifest.clone());
        let content_type = http::HeaderValue::from_str(&image.media_type())?;
        self.retry(
            reference,
            RegistryOperation::Push,
            "pushing the manifest",
            || {
                self.client()
                    .push_manifest_raw(reference, manifest.clone(), content_type.clone())
            },
        )
        .await?;
        let reported = self
            .retry(
                reference,
                RegistryOperation::Pull,
                "verifying the pushed digest",
                || self.client().fetch_manifest_digest(reference, &auth),
            )
            .await?;
        let expected = image.digest();
        anyhow::ensure!(
            reported == expected,
            "the registry reports digest {reported} for {reference}, but we pushed {expected}"
        );
        Ok(reported)
    }

    /// Pulls the image at `reference` with all its layers, verifying every digest; of an
    /// index, the image for this machine's platform.
    pub async fn pull(&self, reference: &Reference) -> anyhow::Result<BuiltImage> {
        self.pull_for(reference, Some(&Platform::host())).await
    }

    /// Pulls the image at `reference`: of an index, the image for `platform`, or with `None`
    /// the whole index with every platform's image.
    pub async fn pull_for(
        &self,
        reference: &Reference,
        platform: Option<&Platform>,
    ) -> anyhow::Result<BuiltImage> {
        let manifest = self.pull_manifest(reference).await?;
        let parsed: Value = serde_json::from_slice(&manifest)?;
        let media_type = parsed["mediaType"].as_str().unwrap_or_default();
        if !super::index::is_index_manifest(media_type, &parsed) {
            return self.pull_image(reference, manifest).await;
        }
        let child = |digest: &str| child_reference(reference, digest);
        if let Some(wanted) = platform {
            let (digest, _) = super::index::entry_for(&parsed, wanted).ok_or_else(|| {
                anyhow::anyhow!(
                    "{reference} has no image for {wanted} (it has {})",
                    super::index::listed_platforms(&parsed)
                )
            })?;
            let by_digest = child(&digest);
            let manifest = self.pull_manifest(&by_digest).await?;
            return self.pull_image(&by_digest, manifest).await;
        }
        let mut children = Vec::new();
        for entry in parsed["manifests"].as_array().cloned().unwrap_or_default() {
            let by_digest = child(entry["digest"].as_str().unwrap_or_default());
            let manifest = self.pull_manifest(&by_digest).await?;
            children.push(self.pull_image(&by_digest, manifest).await?);
        }
        anyhow::ensure!(
            !children.is_empty(),
            "{reference}: the index lists no image"
        );
        Ok(BuiltImage {
            manifest,
            config: Vec::new(),
            layers: Vec::new(),
            children,
        })
    }

    /// The digest of the manifest (or index) at `reference`: computed over the bytes the
    /// registry sends, not taken from its `Docker-Content-Digest` header, so a pinned
    /// reference names exactly what a node pulling it gets. Of a multi-platform image it is
    /// the index's digest, as operator-sdk's `--use-image-digests` pins it.
    pub async fn manifest_digest(&self, reference: &Reference) -> anyhow::Result<String> {
        Ok(digest(&self.pull_manifest(reference).await?))
    }

    /// The manifest (or index) at `reference`, its digest checked.
    async fn pull_manifest(&self, reference: &Reference) -> anyhow::Result<Vec<u8>> {
        let auth = self.credentials.auth();
        let (manifest, reported) = self
            .retry(
                reference,
                RegistryOperation::Pull,
                "pulling the manifest",
                || {
                    self.client().pull_manifest_raw(
                        reference,
                        &auth,
                        &[
                            MANIFEST_MEDIA_TYPE,
                            "application/vnd.docker.distribution.manifest.v2+json",
                            super::INDEX_MEDIA_TYPE,
                            super::DOCKER_LIST_MEDIA_TYPE,
                        ],
                    )
                },
            )
            .await?;
        anyhow::ensure!(
            digest(&manifest) == reported || reported.is_empty(),
            "manifest digest mismatch for {reference}"
        );
        if let Some(pinned) = reference.digest() {
            anyhow::ensure!(
                digest(&manifest) == pinned,
                "manifest of {reference} does not match the digest in the reference"
            );
        }
        Ok(manifest.to_vec())
    }

    /// The config and layers of the image manifest `manifest` of `reference`.
    async fn pull_image(
        &self,
        reference: &Reference,
        manifest: Vec<u8>,
    ) -> anyhow::Result<BuiltImage> {
        let parsed: Value = serde_json::from_slice(&manifest)?;
        let fetch = |d: String| async move {
            let out = self
                .retry(reference, RegistryOperation::Pull, "pulling a blob", || {
                    let d = d.clone();
                    async move {
                        let mut out = Vec::new();
                        self.client()
                            .pull_blob(reference, d.as_str(), &mut out)
                            .await
                            .map(|_| out)
                    }
                })
                .await?;
            anyhow::ensure!(digest(&out) == d, "blob {d} does not match its digest");
            anyhow::Ok(out)
        };
        let config = fetch(
            parsed["config"]["digest"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
        .await?;
        let listed = parsed["layers"].as_array().cloned().unwrap_or_default();
        anyhow::ensure!(!listed.is_empty(), "{reference} has no layer");
        let layers = futures::future::try_join_all(listed.iter().map(|layer| {
            let layer_digest = layer["digest"].as_str().unwrap_or_default().to_string();
            async move {
                let bytes = fetch(layer_digest.clone()).await?;
                anyhow::Ok(Blob::with_digest(layer_digest, bytes))
            }
        }))
        .await?;
        Ok(BuiltImage {
            manifest,
            config,
            layers,
            children: Vec::new(),
        })
    }
}

/// Whether the registry answered 401: the token (or the lack of one) does not allow it.
fn unauthorized(error: &oci_client::errors::OciDistributionError) -> bool {
    use oci_client::errors::{OciDistributionError as E, OciErrorCode};
    match error {
        E::UnauthorizedError { .. } => true,
        E::ServerError { code, .. } => *code == 401,
        E::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|e| e.code == OciErrorCode::Unauthorized),
        _ => false,
    }
}

/// The image `digest` in `reference`'s repository.
fn child_reference(reference: &Reference, digest: &str) -> Reference {
    Reference::with_digest(
        reference.registry().to_string(),
        reference.repository().to_string(),
        digest.to_string(),
    )
}

/// An oci-client error shown with its causes. reqwest's own text, "error sending request for
/// url (…)", leaves out why: a refused connection, or a TLS handshake with a registry that
/// speaks plain HTTP. A cause whose text the message already holds is not repeated.
struct WithCauses(oci_client::errors::OciDistributionError);

impl std::fmt::Display for WithCauses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut shown = self.0.to_string();
        f.write_str(&shown)?;
        let mut cause = std::error::Error::source(&self.0);
        while let Some(error) = cause {
            let text = error.to_string();
            if !shown.contains(&text) {
                write!(f, ": {text}")?;
                shown.push_str(&text);
            }
            cause = error.source();
        }
        Ok(())
    }
}
