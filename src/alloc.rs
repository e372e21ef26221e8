//! How the daemon keeps the allocator from holding memory it no longer
//! uses.
//!
//! glibc's malloc gives each thread that allocates concurrently an arena
//! of its own, up to eight per core, and keeps what is freed in them.
//! Under load the FUSE workers, the indexer and tantivy's threads spread
//! their short-lived buffers over a dozen arenas; once idle the daemon
//! held four times the memory it used. Fewer arenas and a trim once the
//! work is done bring it back to what a fresh mount of the store takes.
//!
//! Both are glibc's: on macOS they do nothing (its allocator returns
//! freed pages by itself).

/// Caps malloc's arenas at one per core, at least two and at most eight.
/// Call it before the daemon starts its threads.
#[cfg(target_os = "linux")]
pub fn limit_arenas() {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let arenas = cores.clamp(2, 8) as libc::c_int;
    // SAFETY: mallopt only changes a tunable of the allocator.
    if unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) } != 1 {
        tracing::debug!("cannot limit malloc's arenas");
    }
}

/// Returns freed memory to the system, from every arena.
#[cfg(target_os = "linux")]
pub fn give_back() {
    // SAFETY: malloc_trim only releases memory that is free.
    unsafe { libc::malloc_trim(0) };
}

/// glibc's arena cap; nothing on macOS.
#[cfg(not(target_os = "linux"))]
pub fn limit_arenas() {}

/// glibc's `malloc_trim`; nothing on macOS.
#[cfg(not(target_os = "linux"))]
pub fn give_back() {}
