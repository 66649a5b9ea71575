//! glibc heap settings for the commands that load whole catalogs, and for the server.

/// Keeps every allocation of 256 KiB and more in its own mapping, returned to the kernel
/// when freed.
///
/// glibc raises its mapping threshold each time such a block is freed, after which large
/// buffers (a YAML file's text, its JSON transcoding, the growing document vectors) come
/// from the heap and leave holes it cannot give back. Measured on `catalog render` of the
/// merged corpus: peak RSS 43.5 -> 31 MiB, time unchanged. Call it before other threads
/// start.
pub fn map_large_allocations() {
    // SAFETY: mallopt only changes an allocator tunable; it runs before other threads exist.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

/// Grows the heap 4 MiB at a time instead of glibc's 128 KiB.
///
/// `catalog render` allocates and frees every document of every file on the loader
/// threads; with the default padding their arenas grow and shrink in small steps, a system
/// call and page faults each time (system time was 40 % of a render). Measured on the
/// generated 20,000-bundle catalog, alternating runs with and without (quick-release build,
/// medians of 9): 0.19 -> 0.16 s wall, system time 0.07 -> 0.05 s; merged corpus 0.18 ->
/// 0.14 s, peak RSS 21 -> 25.5 MiB (opm: 113 MiB). `catalog validate` did not get faster,
/// so it does not set it.
pub fn grow_heap_in_large_steps() {
    // SAFETY: mallopt only changes an allocator tunable; it runs before other threads exist.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 4 << 20);
    }
}

/// Caps glibc's malloc arenas at two (one per core here) for the server's life; call it
/// before any thread starts. By default each thread that allocates concurrently gets its own
/// arena (up to 8 per core): the loader threads' arenas end up holding a few long-lived index
/// allocations on pages `malloc_trim` then cannot return. Measured on the generated 20,000
/// bundle catalog: RSS after load 148 -> 117 MiB, start-up unchanged; `catalog validate` and
/// `render` peaks did not change, so only the server sets it.
pub fn limit_malloc_arenas() {
    // SAFETY: mallopt only changes an allocator tunable; it runs before other threads exist.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Turns off glibc's fast bins: every small block is merged with its free neighbours when it
/// is freed, as larger blocks are; call it before any thread starts.
///
/// Blocks in fast bins count as used until something consolidates them. After a catalog
/// load, `malloc_trim` does consolidate them, but in a thread arena (not the main one) what
/// that frees ends up merged into the arena's top, which `malloc_trim` does not give back;
/// only a later large free would. Measured on the server with the generated 20,000-bundle
/// catalog (quick-release, pinned to one CPU, `malloc_stats` at idle): the second arena kept
/// 32 MB of system memory with 20 KB in use, idle RSS 47.7 MiB; with fast bins off the arena
/// holds 1.7 MB and RSS is 18.1 MiB. Stage times did not move (load 55 ms, index 63–67 ms on
/// two cores). One arena instead gave the same RSS but doubled the parallel load (55 -> 120
/// ms) through lock contention.
pub fn merge_small_frees() {
    // SAFETY: mallopt only changes an allocator tunable; it runs before other threads exist.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

/// Returns free heap pages (in every arena) to the kernel.
pub fn trim_heap() {
    // SAFETY: malloc_trim only returns free heap pages to the kernel; glibc makes it
    // thread-safe.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::malloc_trim(0);
    }
}
