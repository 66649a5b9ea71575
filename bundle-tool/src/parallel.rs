//! Work split over the machine's cores with results kept in input order.
//!
//! Catalog loading and checking are per-document or per-package work whose first error must
//! be the one a sequential pass would report. Computing the independent part of every item
//! on all cores and then consuming the results in order keeps that property.

/// How many threads to use: the cores available, at most 8 (more only adds contention on
/// the allocator for the sizes of work done here).
pub fn workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
}

/// `items.iter().map(f).collect()`, computed on every core in contiguous chunks.
///
/// Small inputs run on the calling thread: starting threads costs more than they save.
pub fn map_ordered<T, R, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    const SEQUENTIAL_BELOW: usize = 64;
    let workers = workers().min(items.len().div_ceil(SEQUENTIAL_BELOW).max(1));
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let share = items.len().div_ceil(workers);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(share)
            .map(|chunk| scope.spawn(move || chunk.iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for handle in handles {
            match handle.join() {
                Ok(part) => out.extend(part),
                // A panic in `f` is a bug; let it surface where it happened.
                Err(payload) => std::panic::resume_unwind(payload),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_input_order_on_large_and_small_inputs() {
        for n in [0usize, 1, 63, 64, 65, 1000, 10_001] {
            let items: Vec<usize> = (0..n).collect();
            let doubled = map_ordered(&items, |i| i * 2);
            assert_eq!(
                doubled,
                (0..n).map(|i| i * 2).collect::<Vec<_>>(),
                "n = {n}"
            );
        }
    }
}
