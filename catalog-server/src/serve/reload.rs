//! Reloading: on SIGHUP, and when the catalog's files change (polled: a fingerprint of every
//! file's path, size and modification time, which costs one `stat` per file).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::load::{LoadOptions, load_snapshot};
use super::state::CatalogHandle;

/// Watches until the task is dropped.
pub async fn watch(
    root: PathBuf,
    options: LoadOptions,
    catalog: CatalogHandle,
    interval: Option<Duration>,
) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangup = signal(SignalKind::hangup()).ok();
    let mut last = fingerprint_blocking(&root).await;
    let mut ticker = tokio::time::interval(interval.unwrap_or(Duration::from_secs(3600)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        let (reason, seen) = tokio::select! {
            Some(()) = async { match hangup.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => {
                ("SIGHUP", fingerprint_blocking(&root).await)
            }
            _ = ticker.tick(), if interval.is_some() => {
                let now = fingerprint_blocking(&root).await;
                if now == last {
                    continue;
                }
                ("files changed", now)
            }
        };
        reload(&root, &options, &catalog, reason).await;
        // The files as they were before the load, not after it: a catalog still being written
        // when the load read it (half a file, one package of two) changes again after, and the
        // next tick loads that. Taking the fingerprint after the load would record the finished
        // files as loaded and keep serving what was read half-way (seen under load: a package
        // copied in never appeared).
        last = seen;
    }
}

/// Loads the catalog again and swaps it in, or keeps the old one and records why not.
pub async fn reload(root: &Path, options: &LoadOptions, catalog: &CatalogHandle, reason: &str) {
    let (dir, opts) = (root.to_path_buf(), options.clone());
    let loaded = tokio::task::spawn_blocking(move || load_snapshot(&dir, &opts)).await;
    match loaded {
        Ok(Ok(snapshot)) => {
            let (packages, bundles) = (
                snapshot.index.packages().len(),
                snapshot.index.bundle_count(),
            );
            catalog.replace(snapshot.index, snapshot.metas);
            tracing::info!(reason, packages, bundles, "catalog reloaded");
        }
        Ok(Err(error)) => {
            catalog.reload_failed();
            tracing::error!(reason, %error, "catalog reload rejected; still serving the previous catalog");
        }
        Err(error) => {
            catalog.reload_failed();
            tracing::error!(reason, %error, "catalog reload failed");
        }
    }
}

async fn fingerprint_blocking(root: &Path) -> u64 {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || fingerprint(&root))
        .await
        .unwrap_or_default()
}

/// A hash of every file's path, size and modification time under `root`.
pub fn fingerprint(root: &Path) -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut stack = vec![root.to_path_buf()];
    let mut entries = Vec::new();
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            let path = entry.path();
            let Ok(metadata) = std::fs::metadata(&path) else {
                continue;
            };
            if metadata.is_dir() {
                stack.push(path);
            } else {
                let modified = metadata
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .unwrap_or_default();
                entries.push((path, metadata.len(), modified));
            }
        }
    }
    entries.sort();
    entries.hash(&mut hasher);
    hasher.finish()
}
