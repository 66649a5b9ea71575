//! Giving memory back after bursts of requests.
//!
//! Answers of the single-bundle RPCs are large (a CSV with its icon is often 100 KiB and more)
//! and 64 concurrent streams hold dozens of them at once. glibc keeps what they free, so
//! without help a server's resident memory stays at its burst peak (measured on the merged
//! corpus: 17 MiB idle, 48 MiB two seconds after 20,000 GetBundle at 64 streams). Trimming
//! after every request would cost throughput; trimming once the server has been quiet for a
//! moment costs one `malloc_trim` per burst.

use std::time::Duration;

use super::state::CatalogHandle;

/// How long without a new RPC counts as the end of a burst.
const QUIET: Duration = Duration::from_millis(500);

/// Returns freed heap pages to the kernel whenever RPCs stop for [`QUIET`] after a burst.
pub async fn trim_after_bursts(catalog: CatalogHandle) {
    let mut seen = catalog.requests_started();
    let mut trimmed = true;
    loop {
        tokio::time::sleep(QUIET).await;
        let now = catalog.requests_started();
        if now != seen {
            seen = now;
            trimmed = false;
        } else if !trimmed {
            trimmed = true;
            // It walks every arena under their locks for a few milliseconds: off the runtime.
            let _ = tokio::task::spawn_blocking(crate::heap::trim_heap).await;
        }
    }
}
