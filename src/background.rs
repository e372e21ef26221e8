//! Helpers for the daemon's background threads.
//!
//! The indexer and the organizer share two cores with the FUSE workers on
//! a small machine. They run at a lower priority so that a `write(2)` or a
//! `stat(2)` is answered first and indexing catches up a moment later.

/// Lowers the calling thread's CPU priority to nice 10. Threads it starts
/// afterwards inherit that.
#[cfg(target_os = "linux")]
pub fn lower_priority() {
    // SAFETY: gettid and setpriority have no memory-safety preconditions;
    // on Linux PRIO_PROCESS with a thread id affects that thread only.
    let failed = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10) != 0
    };
    if failed {
        tracing::debug!("cannot lower the priority of a background thread");
    }
}

/// Nothing on macOS: there a thread's nice value is the whole process's,
/// so background threads run at the FUSE workers' priority.
#[cfg(not(target_os = "linux"))]
pub fn lower_priority() {}
