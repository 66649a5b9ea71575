//! The bytes of bundles asked for again, kept in memory up to a budget.
//!
//! Everything an answer is made of is in the spill file, but reading it back is a `pread`
//! into a fresh buffer per request: a fifth of the server's CPU on the corpus catalog, whose
//! answers are large (a CSV with its icon, sent twice). Bundles that are asked for again
//! (packageserver and resolutions ask for the same channel heads over and over) are worth a
//! little memory; the budget bounds it, and what does not fit is read from the file.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

/// What answers of one bundle are built from.
#[derive(Clone, Debug, Default)]
pub(super) struct KeptBundle {
    /// The stored base message.
    pub base: Bytes,
    /// Its `csvJson`.
    pub csv: Bytes,
    /// Its manifests, one after the other.
    pub objects: Bytes,
}

impl KeptBundle {
    /// Bytes it holds (a CSV that is a slice of the objects counts once).
    fn size(&self) -> usize {
        let objects = self.objects.as_ptr_range();
        let csv_in_objects = !self.csv.is_empty()
            && objects.start <= self.csv.as_ptr()
            && self.csv.as_ptr() < objects.end;
        self.base.len() + self.objects.len() + if csv_in_objects { 0 } else { self.csv.len() }
    }
}

/// Kept bundles by position, and the bytes they hold.
#[derive(Debug)]
pub(super) struct HotBundles {
    budget: usize,
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    bytes: usize,
    bundles: HashMap<u32, KeptBundle>,
}

impl HotBundles {
    /// Keeps at most `budget` bytes.
    pub(super) fn new(budget: usize) -> Self {
        HotBundles {
            budget,
            kept: Mutex::new(Kept::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        // Nothing is left half-updated by a panic between two statements here.
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The kept bytes of the bundle at `position`.
    pub(super) fn get(&self, position: u32) -> Option<KeptBundle> {
        if self.budget == 0 {
            return None;
        }
        self.lock().bundles.get(&position).cloned()
    }

    /// Keeps a bundle's bytes if the budget has room for them; `false` when it does not.
    pub(super) fn keep(&self, position: u32, bundle: KeptBundle) -> bool {
        let size = bundle.size();
        let mut kept = self.lock();
        if kept.bundles.contains_key(&position) {
            return true;
        }
        if kept.bytes + size > self.budget {
            return false;
        }
        kept.bytes += size;
        kept.bundles.insert(position, bundle);
        true
    }

    /// Bytes held.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(base: &'static [u8], csv: &'static [u8]) -> KeptBundle {
        KeptBundle {
            base: Bytes::from_static(base),
            csv: Bytes::from_static(csv),
            objects: Bytes::new(),
        }
    }

    #[test]
    fn keeps_bundles_until_the_budget_is_spent() {
        let hot = HotBundles::new(10);
        assert!(hot.keep(1, bundle(b"ab", b"cdef")));
        assert!(!hot.keep(2, bundle(b"gh", b"ijk")));
        assert!(hot.keep(3, bundle(b"lm", b"no")));
        assert!(hot.keep(1, bundle(b"", b"")));
        assert_eq!(hot.get(1).unwrap().csv, "cdef");
        assert!(hot.get(2).is_none());
        assert_eq!(hot.get(3).unwrap().base, "lm");
        assert_eq!(hot.bytes(), 10);
        let none = HotBundles::new(0);
        assert!(!none.keep(1, bundle(b"x", b"")));
        assert!(none.get(1).is_none());
    }

    #[test]
    fn a_csv_among_the_objects_counts_once() {
        let objects = Bytes::from_static(b"{csv}{crd}");
        let kept = KeptBundle {
            base: Bytes::from_static(b"base"),
            csv: objects.slice(0..5),
            objects,
        };
        assert_eq!(kept.size(), 14);
    }
}
