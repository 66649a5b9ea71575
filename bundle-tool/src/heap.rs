//! glibc heap settings for the commands that load whole catalogs.

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
