//! Image references resolved to digests for pinning (`generate --use-image-digests`,
//! `release --pin-digests`): one manifest request per image, all at once.
//!
//! Every image is asked for, and every failure is reported together, each with its image and
//! the registry's words: operator-sdk stops at the first image it cannot resolve, which
//! makes a bundle with several private images a loop of fix-and-retry.

use std::collections::{BTreeMap, BTreeSet};

use super::{RegistryAccess, RegistrySettings, Transport, parse_reference};

/// Why images could not be pinned.
#[derive(Debug)]
pub enum DigestsError {
    /// Each image that failed, with why.
    Unresolved(Vec<(String, String)>),
    /// The runtime or the registry settings could not be set up.
    Io(std::io::Error),
}

impl std::fmt::Display for DigestsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DigestsError::Unresolved(failures) => {
                write!(f, "cannot pin {} image(s) to a digest:", failures.len())?;
                for (image, why) in failures {
                    write!(f, "\n  {image}: {why}")?;
                }
                Ok(())
            }
            DigestsError::Io(error) => write!(f, "{}", crate::error_chain::with_causes(error)),
        }
    }
}

impl std::error::Error for DigestsError {}

/// The digest of each of `images` (reference → `sha256:…`), through the registries' manifest
/// endpoints over `transport`, with the auth files' credentials for each registry (as
/// operator-sdk's default keychain reads them), on a runtime of its own. A mirror that
/// registries.conf gives is asked first, as a node behind it pulls; the pinned reference
/// keeps the image's own name, which the node's mirror configuration maps again.
pub fn resolve_digests(
    images: &BTreeSet<String>,
    transport: &Transport,
) -> Result<BTreeMap<String, String>, DigestsError> {
    let access = RegistrySettings {
        transport: transport.clone(),
        username: None,
    }
    .access()
    .map_err(DigestsError::Io)?;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(DigestsError::Io)?
        .block_on(lookup_all(images, &access))
}

/// Every lookup at once; every failure kept.
async fn lookup_all(
    images: &BTreeSet<String>,
    access: &RegistryAccess,
) -> Result<BTreeMap<String, String>, DigestsError> {
    let lookups = images
        .iter()
        .map(|image| async move { (image.clone(), digest_of(image, access).await) });
    let mut digests = BTreeMap::new();
    let mut failures = Vec::new();
    for (image, result) in futures::future::join_all(lookups).await {
        match result {
            Ok(digest) => {
                digests.insert(image, digest);
            }
            Err(error) => failures.push((image, format!("{error:#}"))),
        }
    }
    if failures.is_empty() {
        Ok(digests)
    } else {
        Err(DigestsError::Unresolved(failures))
    }
}

/// The digest of one image.
async fn digest_of(image: &str, access: &RegistryAccess) -> anyhow::Result<String> {
    let reference = parse_reference(image)?;
    access
        .pull_from_sources(&reference, |client, reference| async move {
            client.manifest_digest(&reference).await
        })
        .await
}
