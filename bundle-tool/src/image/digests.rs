//! Image references resolved to digests for pinning (`generate --use-image-digests`,
//! `release --pin-digests`): one manifest request per image, all at once.
//!
//! Every image is asked for, and every failure is reported together, each with its image and
//! the registry's words: operator-sdk stops at the first image it cannot resolve, which
//! makes a bundle with several private images a loop of fix-and-retry.

use std::collections::{BTreeMap, BTreeSet};

use super::{RegistryAccess, parse_reference};

/// Some images could not be resolved.
#[derive(Debug)]
pub struct DigestsError {
    /// Each image that failed, with why.
    pub failures: Vec<(String, String)>,
}

impl std::fmt::Display for DigestsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot pin {} image(s) to a digest:",
            self.failures.len()
        )?;
        for (image, why) in &self.failures {
            write!(f, "\n  {image}: {why}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DigestsError {}

/// The digest of each of `images` (reference → `sha256:…`), through the registries' manifest
/// endpoints with `access`'s transport and credentials (the auth files per registry).
pub async fn resolve_digests(
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
        Err(DigestsError { failures })
    }
}

/// The digest of one image.
async fn digest_of(image: &str, access: &RegistryAccess) -> anyhow::Result<String> {
    let reference = parse_reference(image)?;
    let client = access.client(&reference)?;
    client.manifest_digest(&reference).await
}
