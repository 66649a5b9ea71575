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

/// `items.iter().map(f).collect()`, each item taken by the next free worker (so items that
/// differ in cost do not leave cores idle, as contiguous chunks would), the results handed
/// back in input order once all are done.
pub fn map_dynamic<T, R, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    map_dynamic_on(workers(), items, f)
}

/// [`map_dynamic`] on at most `workers` threads (a user's `--jobs`).
pub fn map_dynamic_on<T, R, F>(workers: usize, items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    use std::sync::atomic::{AtomicUsize, Ordering};
    let workers = workers.min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let (next, f) = (AtomicUsize::new(0), &f);
    let mut results: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let next = &next;
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(index) else { break };
                        done.push((index, f(item)));
                    }
                    done
                })
            })
            .collect();
        for handle in handles {
            match handle.join() {
                Ok(done) => {
                    for (index, result) in done {
                        results[index] = Some(result);
                    }
                }
                // A panic in `f` is a bug; let it surface where it happened.
                Err(payload) => std::panic::resume_unwind(payload),
            }
        }
    });
    results.into_iter().flatten().collect()
}

/// Computes `f` for every item on every core and hands the results to `consume` one at a
/// time, in input order, on the calling thread; stops at the first error `consume` returns.
///
/// The largest items by `cost` (of an item's index) are computed first, so that one large
/// item near the end does not leave the other cores idle (a catalog's files differ in size by
/// 100×). Workers never wait for the consumer: use it where results are small, or kept
/// anyway (a render's workers store their text themselves and return only where it is).
pub fn for_each_ordered_largest_first<T, R, E, F, C>(
    items: &[T],
    cost: impl Fn(usize) -> u64,
    f: F,
    mut consume: C,
) -> Result<(), E>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
    C: FnMut(R) -> Result<(), E>,
{
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc;

    let workers = workers().min(items.len());
    if workers <= 1 {
        for item in items {
            consume(f(item))?;
        }
        return Ok(());
    }
    let mut dispatch: Vec<usize> = (0..items.len()).collect();
    dispatch.sort_by_cached_key(|&i| std::cmp::Reverse(cost(i)));
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(usize, R)>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let (next, stop, f, dispatch) = (&next, &stop, &f, &dispatch);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(&index) = dispatch.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    if sender.send((index, f(&items[index]))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut waiting: BTreeMap<usize, R> = BTreeMap::new();
        let mut wanted = 0usize;
        while wanted < items.len() {
            let result = match waiting.remove(&wanted) {
                Some(result) => result,
                None => match receiver.recv() {
                    Ok((index, result)) if index == wanted => result,
                    Ok((index, result)) => {
                        waiting.insert(index, result);
                        continue;
                    }
                    // Every worker ended early: one panicked; the scope re-raises it.
                    Err(_) => break,
                },
            };
            if let Err(e) = consume(result) {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
            wanted += 1;
        }
        Ok(())
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
            assert_eq!(
                map_dynamic(&items, |i| i * 2),
                doubled,
                "map_dynamic, n = {n}"
            );
        }
    }

    #[test]
    fn consumes_in_order_and_stops_at_the_first_error() {
        let items: Vec<u64> = (0..500).collect();
        let mut seen = Vec::new();
        // Uneven work, so that results arrive out of order.
        let slow = |i: &u64| {
            if i.is_multiple_of(7) {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            *i
        };
        for_each_ordered_largest_first(
            &items,
            |i| (i % 10) as u64,
            slow,
            |i| {
                seen.push(i);
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        assert_eq!(seen, items);
        let mut seen = Vec::new();
        let result = for_each_ordered_largest_first(
            &items,
            |i| (i % 10) as u64,
            slow,
            |i| {
                if i == 123 {
                    return Err(i);
                }
                seen.push(i);
                Ok(())
            },
        );
        assert_eq!(result, Err(123));
        assert_eq!(seen, (0..123).collect::<Vec<_>>());
    }
}
