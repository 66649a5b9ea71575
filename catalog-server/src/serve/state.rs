//! The reloadable catalog handle and the server's counters.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::index::CatalogIndex;
use super::metas::MetaStore;

/// The snapshot being served, swapped whole on reload, and what the server counted.
#[derive(Clone)]
pub struct CatalogHandle {
    inner: Arc<Inner>,
}

struct Inner {
    current: RwLock<Current>,
    reloads_succeeded: AtomicU64,
    reloads_failed: AtomicU64,
    last_reload_ok: AtomicU64,
    requests_started: AtomicU64,
    requests: Mutex<BTreeMap<&'static str, u64>>,
}

struct Current {
    index: Arc<CatalogIndex>,
    metas: Option<Arc<MetaStore>>,
}

/// What `/metrics` reports.
pub struct Counters {
    /// Reloads that swapped in a new catalog.
    pub reloads_succeeded: u64,
    /// Reloads rejected (the old catalog kept serving).
    pub reloads_failed: u64,
    /// 1 when the last reload attempt succeeded (or none failed since start).
    pub last_reload_ok: u64,
    /// RPCs served, by method.
    pub requests: BTreeMap<&'static str, u64>,
    /// Packages in the current snapshot.
    pub packages: usize,
    /// Distinct bundles in the current snapshot.
    pub bundles: usize,
}

impl CatalogHandle {
    /// A handle serving `index` (and `metas` for the HTTP view).
    pub fn new(index: CatalogIndex, metas: Option<MetaStore>) -> Self {
        CatalogHandle {
            inner: Arc::new(Inner {
                current: RwLock::new(Current {
                    index: Arc::new(index),
                    metas: metas.map(Arc::new),
                }),
                reloads_succeeded: AtomicU64::new(0),
                reloads_failed: AtomicU64::new(0),
                last_reload_ok: AtomicU64::new(1),
                requests_started: AtomicU64::new(0),
                requests: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// The current snapshot; it stays valid however many reloads follow.
    pub fn snapshot(&self) -> Arc<CatalogIndex> {
        self.read().index.clone()
    }

    /// The current documents for the HTTP view.
    pub fn metas(&self) -> Option<Arc<MetaStore>> {
        self.read().metas.clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        // A panic while holding the lock cannot leave `Current` half-written (it is replaced
        // whole), so a poisoned lock is still safe to read.
        self.inner
            .current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Swaps in a new catalog.
    pub fn replace(&self, index: CatalogIndex, metas: Option<MetaStore>) {
        let next = Current {
            index: Arc::new(index),
            metas: metas.map(Arc::new),
        };
        let previous = {
            let mut current = self
                .inner
                .current
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            std::mem::replace(&mut *current, next)
        };
        // The old snapshot is freed here or when its last stream ends, outside the lock.
        drop(previous);
        self.inner.reloads_succeeded.fetch_add(1, Ordering::Relaxed);
        self.inner.last_reload_ok.store(1, Ordering::Relaxed);
    }

    /// Records a rejected reload.
    pub fn reload_failed(&self) {
        self.inner.reloads_failed.fetch_add(1, Ordering::Relaxed);
        self.inner.last_reload_ok.store(0, Ordering::Relaxed);
    }

    /// RPCs started since the server started, all methods.
    pub fn requests_started(&self) -> u64 {
        self.inner.requests_started.load(Ordering::Relaxed)
    }

    /// Counts one RPC.
    pub fn count_request(&self, method: &'static str) {
        self.inner.requests_started.fetch_add(1, Ordering::Relaxed);
        let mut requests = self
            .inner
            .requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *requests.entry(method).or_default() += 1;
    }

    /// The counters and the current catalog's size.
    pub fn counters(&self) -> Counters {
        let index = self.snapshot();
        Counters {
            reloads_succeeded: self.inner.reloads_succeeded.load(Ordering::Relaxed),
            reloads_failed: self.inner.reloads_failed.load(Ordering::Relaxed),
            last_reload_ok: self.inner.last_reload_ok.load(Ordering::Relaxed),
            requests: self
                .inner
                .requests
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone(),
            packages: index.packages().len(),
            bundles: index.bundle_count(),
        }
    }
}
