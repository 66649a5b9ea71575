//! Pushing an image over a plain-HTTP [`Session`] with the distribution API, in the fewest
//! exchanges: for every blob at once, a `POST` that either finds it there (a mount from the
//! repository itself, see [`push_blob`]) or opens its upload, then one monolithic `PUT`;
//! then `PUT` the manifest, and check that the digest the registry answers is ours (with a
//! `HEAD` of the manifest when the answer names none). Each step is retried on its own when
//! it fails transiently. The blobs and the manifest are two calls as well, so that a release
//! sends both its images' blobs side by side and their manifests in order.
//!
//! A large blob that this machine pushed before to another repository of the same registry
//! (the catalog image's server layer, ~10 MB, in every catalog repository) is mounted from
//! there (`POST …/uploads/?mount=…&from=…`, answered 201 without a byte sent) instead of
//! uploaded; a registry that cannot mount it answers with an upload session, which is used.
//! On loopback, mounting instead of uploading the server layer to Debian's docker-registry
//! takes a warm release from ~135 to ~75 ms (docs/benchmarks.md, `release`).

use std::future::Future;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};

use super::BuiltImage;
use super::layer_cache::LayerCache;
use super::retry::with_backoff;
use super::session::{Answer, ExchangeError, Session, status_error};

/// Retries a session exchange with the shared backoff (see [`super::retry`]).
async fn retry<T, F, Fut>(attempts: u32, what: &str, operation: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ExchangeError>>,
{
    with_backoff(attempts, what, |e: &ExchangeError| e.transient, operation).await
}

/// Blobs at least this large have their pushes remembered, to be mounted next time; a small
/// blob costs no more to send than to mount.
const MOUNT_WORTH: u64 = 1 << 20;

/// The first half of a push: every blob of `image` into `repository`, side by side. Blobs
/// no manifest names are invisible to pullers, so several images' blobs may go up at once
/// and their manifests follow in whatever order their meaning needs.
///
/// Blobs smaller than [`MOUNT_WORTH`] take an upload session from `opened` while there is
/// one (see [`open_uploads`]): one `PUT`, without asking whether the registry has them.
pub async fn push_blobs(
    session: &Session,
    attempts: u32,
    repository: &str,
    image: &BuiltImage,
    opened: &mut Vec<String>,
) -> anyhow::Result<()> {
    let cache = LayerCache::from_env();
    let mount_from = |blob_digest: &str, size: u64| -> Option<String> {
        let cache = cache.as_ref().filter(|_| size >= MOUNT_WORTH)?;
        cache
            .pushed_to(blob_digest, session.host())
            .into_iter()
            .find(|source| source != repository)
    };
    let sendings: Vec<Sending> = image
        .blobs()
        .iter()
        .map(|blob| match opened.pop_if(|_| blob.size() < MOUNT_WORTH) {
            Some(location) => Sending::Into(location),
            None => Sending::AskFirst(mount_from(blob.digest(), blob.size())),
        })
        .collect();
    futures::future::try_join_all(
        image
            .blobs()
            .iter()
            .zip(sendings)
            .map(|(blob, sending)| push_blob(session, attempts, repository, blob, sending)),
    )
    .await?;
    // Remembered now rather than after the manifest: the blobs are in the repository, and
    // the cache's file write is then off a release's last step.
    if let Some(cache) = &cache {
        for blob in image
            .blobs()
            .iter()
            .filter(|blob| blob.size() >= MOUNT_WORTH)
        {
            cache.remember_push(blob.digest(), session.host(), repository);
        }
    }
    Ok(())
}

/// Opens up to `count` upload sessions in `repository` before the blobs they will carry are
/// known: a `POST …/uploads/` without a digest answers with a session whatever the blob, so a
/// caller can have them opened while it still builds its image, and each small blob's push
/// is then one `PUT` (on loopback, a `POST` to Debian's docker-registry takes 4–20 ms, most of
/// it creating the session's folders). Best effort: what fails is left out (the blob is then
/// pushed the usual way). Returns the sessions' `Location`s.
pub async fn open_uploads(session: &Session, repository: &str, count: usize) -> Vec<String> {
    let start = format!("/v2/{repository}/blobs/uploads/");
    let opened = futures::future::join_all((0..count).map(|_| async {
        let answer = session
            .exchange(Method::POST, &start, HeaderMap::new(), Bytes::new())
            .await
            .ok()?;
        if answer.status != StatusCode::ACCEPTED {
            return None;
        }
        let location = answer.headers.get(http::header::LOCATION)?.to_str().ok()?;
        Some(location.to_string())
    }))
    .await;
    opened.into_iter().flatten().collect()
}

/// Cancels upload sessions that [`open_uploads`] opened and no blob used (`DELETE` of each;
/// best effort: a registry purges forgotten sessions itself, Debian's docker-registry after
/// a week).
pub async fn cancel_uploads(session: &Session, locations: Vec<String>) {
    futures::future::join_all(locations.iter().map(|location| async move {
        let Ok(path) = session_path(location, session.host()) else {
            return;
        };
        let cancelled = session
            .exchange(Method::DELETE, &path, HeaderMap::new(), Bytes::new())
            .await;
        tracing::debug!(ok = cancelled.is_ok(), "cancelled an unused upload session");
    }))
    .await;
}

/// The second half of a push, once [`push_blobs`] has put every blob of `image` in
/// `repository`: `PUT` the manifest and check the digest the registry stored. Returns it.
pub async fn push_manifest(
    session: &Session,
    attempts: u32,
    repository: &str,
    reference: &str,
    image: &BuiltImage,
) -> anyhow::Result<String> {
    let manifest_path = format!("/v2/{repository}/manifests/{reference}");
    let media_type = HeaderValue::from_str(&image.media_type())?;
    let manifest = Bytes::from(image.manifest.clone());
    // Two rounds at most: a registry that answers the manifest with 400 has not linked a blob
    // into this repository (seen with concurrent pushes of the same blob to two repositories
    // of Debian's docker-registry, where a HEAD said the blob was there). The second round
    // uploads every blob without asking first.
    let mut stored = None;
    for round in 0..2 {
        if round > 0 {
            tracing::debug!("the registry refused the manifest: pushing its blobs again");
            futures::future::try_join_all(
                image
                    .blobs()
                    .iter()
                    .map(|blob| push_blob(session, attempts, repository, blob, Sending::Always)),
            )
            .await?;
        }
        let (status, digest) = retry(attempts, "pushing the manifest", || async {
            let mut headers = HeaderMap::new();
            headers.insert(http::header::CONTENT_TYPE, media_type.clone());
            let answer = session
                .exchange(Method::PUT, &manifest_path, headers, manifest.clone())
                .await?;
            let digest = answer
                .headers
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            match answer.status {
                StatusCode::CREATED | StatusCode::OK | StatusCode::BAD_REQUEST => {
                    Ok((answer.status, digest))
                }
                status => Err(status_error(status, "PUT manifest")),
            }
        })
        .await?;
        if status != StatusCode::BAD_REQUEST {
            stored = digest;
            break;
        }
        if round > 0 {
            anyhow::bail!(
                "pushing the manifest: {}",
                status_error(status, "PUT manifest")
            );
        }
    }
    // The registry's answer to the PUT names the digest of what it stored under the tag (the
    // distribution spec's `Docker-Content-Digest`): that is the check, and a HEAD is only
    // asked when the answer has no digest (a HEAD on Debian's docker-registry is ~5 ms, a
    // tenth of a warm release; docs/benchmarks.md, `release`).
    let reported = match stored {
        Some(digest) => digest,
        None => verify_by_head(session, attempts, &manifest_path, &media_type).await?,
    };
    let expected = image.digest();
    anyhow::ensure!(
        reported == expected,
        "the registry reports digest {reported} for {repository}:{reference}, but we pushed \
         {expected}"
    );
    Ok(reported)
}

/// The digest the registry serves for `manifest_path`: from a HEAD's `Docker-Content-Digest`,
/// else by hashing what a GET gives.
async fn verify_by_head(
    session: &Session,
    attempts: u32,
    manifest_path: &str,
    media_type: &HeaderValue,
) -> anyhow::Result<String> {
    retry(attempts, "verifying the pushed digest", || async {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::ACCEPT, media_type.clone());
        let answer = session
            .exchange(Method::HEAD, manifest_path, headers.clone(), Bytes::new())
            .await?;
        expect(&answer, &[StatusCode::OK], "HEAD manifest")?;
        if let Some(reported) = answer
            .headers
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
        {
            return Ok(reported.to_string());
        }
        // No digest header: hash what the registry serves.
        let answer = session
            .exchange(Method::GET, manifest_path, headers, Bytes::new())
            .await?;
        expect(&answer, &[StatusCode::OK], "GET manifest")?;
        Ok(super::digest(&answer.body))
    })
    .await
}

/// How a blob is sent.
enum Sending {
    /// Only when the registry lacks it; mounted from the named repository of the same
    /// registry when given and the registry can.
    AskFirst(Option<String>),
    /// Uploaded without asking (the manifest's second round).
    Always,
    /// Uploaded into the session at this `Location`, opened beforehand ([`open_uploads`]);
    /// asked for first, as [`Sending::AskFirst`], if that fails (the session may be gone).
    Into(String),
}

/// What the `POST` that starts an upload got.
enum Started {
    /// 201 to a mount: the blob is in the repository now, nothing to send.
    Mounted,
    /// A 4xx to a mount request from a registry that does not take them that way.
    MountRefused(StatusCode),
}

/// Sends one blob as `sending` says.
///
/// Asking first is one exchange, not a `HEAD` then a `POST`: the upload `POST` asks to mount
/// the blob from the repository itself (or from `from`), which a registry answers with 201
/// when the blob is there, the answer a `HEAD` would give, and otherwise with the upload
/// session the `POST` after a `HEAD`'s 404 would open (the distribution spec's fallback for
/// a mount it cannot make). A registry that refuses such a mount outright gets the `HEAD`
/// and plain `POST`. One round trip less per image: ~5 ms of a ~60 ms warm release on
/// loopback (docs/benchmarks.md, `release`).
async fn push_blob(
    session: &Session,
    attempts: u32,
    repository: &str,
    blob: &super::Blob,
    sending: Sending,
) -> anyhow::Result<()> {
    let mount_from = match &sending {
        Sending::AskFirst(from) => Some(from.as_deref().unwrap_or(repository)),
        Sending::Always => None,
        Sending::Into(location) => match put_into(session, location, blob).await {
            Ok(()) => return Ok(()),
            Err(error) => {
                tracing::debug!(blob = blob.digest(), %error, "the opened session failed: asking first");
                Some(repository)
            }
        },
    };
    match upload(session, attempts, repository, blob, mount_from).await? {
        None => return Ok(()),
        Some(Started::Mounted) => return Ok(()),
        Some(Started::MountRefused(status)) => {
            tracing::debug!(blob = blob.digest(), %status, "mount refused: HEAD, then upload");
        }
    }
    let blob_path = format!("/v2/{repository}/blobs/{}", blob.digest());
    let present = retry(attempts, "checking a blob", || async {
        let answer = session
            .exchange(Method::HEAD, &blob_path, HeaderMap::new(), Bytes::new())
            .await?;
        match answer.status {
            StatusCode::OK => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            status => Err(status_error(status, "HEAD blob")),
        }
    })
    .await?;
    if !present {
        upload(session, attempts, repository, blob, None).await?;
    }
    Ok(())
}

/// Starts an upload of `blob` (asking to mount it from `mount_from` when given) and sends
/// it unless the mount was made or refused; `None` when the blob was sent.
async fn upload(
    session: &Session,
    attempts: u32,
    repository: &str,
    blob: &super::Blob,
    mount_from: Option<&str>,
) -> anyhow::Result<Option<Started>> {
    let blob_digest = blob.digest();
    let start = match mount_from {
        // A digest is `sha256:<hex>`: only the colon needs escaping in a query.
        Some(source) => format!(
            "/v2/{repository}/blobs/uploads/?mount={}&from={source}",
            blob_digest.replace(':', "%3A")
        ),
        None => format!("/v2/{repository}/blobs/uploads/"),
    };
    // POST and PUT are retried together: a failed PUT may have used up its upload session.
    retry(attempts, "pushing a blob", || async {
        let answer = session
            .exchange(Method::POST, &start, HeaderMap::new(), Bytes::new())
            .await?;
        if mount_from.is_some() {
            let status = answer.status;
            if status == StatusCode::CREATED {
                tracing::debug!(blob = blob_digest, from = mount_from, "mounted");
                return Ok(Some(Started::Mounted));
            }
            // Refusals of credentials or rate stay errors; other 4xx say "not like this".
            if status.is_client_error()
                && ![
                    StatusCode::UNAUTHORIZED,
                    StatusCode::FORBIDDEN,
                    StatusCode::TOO_MANY_REQUESTS,
                ]
                .contains(&status)
            {
                return Ok(Some(Started::MountRefused(status)));
            }
        }
        expect(&answer, &[StatusCode::ACCEPTED], "POST blob upload")?;
        let location = answer
            .headers
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| ExchangeError {
                message: "POST blob upload: no Location in the answer".into(),
                transient: false,
            })?;
        put_into(session, location, blob).await?;
        Ok(None)
    })
    .await
}

/// Sends `blob` into the upload session at `location` with one `PUT` (not retried here:
/// [`upload`] retries with its `POST`, a session opened ahead falls back to asking first).
/// The blob is read only now: one the registry has, or mounts, is never read (a cached
/// layer is a file until then).
async fn put_into(
    session: &Session,
    location: &str,
    blob: &super::Blob,
) -> Result<(), ExchangeError> {
    let data = blob.bytes().map_err(|e| ExchangeError {
        message: e.to_string(),
        transient: false,
    })?;
    let target = upload_target(location, session.host(), blob.digest())?;
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    let answer = session
        .exchange(Method::PUT, &target, headers, data)
        .await?;
    expect(&answer, &[StatusCode::CREATED], "PUT blob")
}

/// The path and query to `PUT` a blob to, from the `Location` of its upload session (a path,
/// or an absolute URL that must name this registry), with `digest=` added.
fn upload_target(location: &str, host: &str, blob_digest: &str) -> Result<String, ExchangeError> {
    let path = session_path(location, host)?;
    let separator = if path.contains('?') { '&' } else { '?' };
    // A digest is `sha256:<hex>`: only the colon needs escaping in a query.
    let encoded = blob_digest.replace(':', "%3A");
    Ok(format!("{path}{separator}digest={encoded}"))
}

/// The path and query of an upload session's `Location`: a path, or an absolute URL that
/// must name this registry.
fn session_path(location: &str, host: &str) -> Result<String, ExchangeError> {
    let path = match location.split_once("://") {
        None => location,
        Some((_, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if authority != host {
                return Err(ExchangeError {
                    message: format!(
                        "the registry sends uploads to another host ({authority}), which plain \
                         HTTP pushes do not follow"
                    ),
                    transient: false,
                });
            }
            path
        }
    };
    Ok(path.to_string())
}

fn expect(answer: &Answer, wanted: &[StatusCode], what: &str) -> Result<(), ExchangeError> {
    if wanted.contains(&answer.status) {
        Ok(())
    } else {
        Err(status_error(answer.status, what))
    }
}

#[cfg(test)]
mod tests {
    use super::upload_target;

    const DIGEST: &str = "sha256:00ff";

    #[test]
    fn an_upload_location_path_gets_the_digest_as_a_query() {
        assert_eq!(
            upload_target("/v2/a/b/blobs/uploads/u1", "h:5000", DIGEST).unwrap(),
            "/v2/a/b/blobs/uploads/u1?digest=sha256%3A00ff"
        );
        assert_eq!(
            upload_target("/v2/a/blobs/uploads/u1?_state=xyz", "h:5000", DIGEST).unwrap(),
            "/v2/a/blobs/uploads/u1?_state=xyz&digest=sha256%3A00ff"
        );
    }

    #[test]
    fn an_absolute_location_must_name_this_registry() {
        assert_eq!(
            upload_target("http://h:5000/v2/a/blobs/uploads/u1?s=1", "h:5000", DIGEST).unwrap(),
            "/v2/a/blobs/uploads/u1?s=1&digest=sha256%3A00ff"
        );
        let refused =
            upload_target("http://elsewhere/v2/a/blobs/uploads/u1", "h:5000", DIGEST).unwrap_err();
        assert!(!refused.transient);
        assert!(refused.message.contains("elsewhere"), "{}", refused.message);
    }
}
