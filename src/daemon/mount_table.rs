//! The mount table on macOS, which has no `/proc/self/mountinfo`:
//! `getmntinfo(MNT_NOWAIT)`, which answers from the kernel's list without
//! asking any filesystem, so a hung mount cannot hang it.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// One mounted filesystem.
#[derive(Debug)]
pub(crate) struct Mounted {
    /// Where it is mounted.
    pub(crate) mountpoint: PathBuf,
    /// Its type (`macfuse` for a macFUSE filesystem).
    pub(crate) fstype: String,
    /// What was mounted (a macFUSE filesystem's `fsname`: `mnemofs`).
    pub(crate) source: String,
}

impl Mounted {
    /// A mnemofs mount: macFUSE (or its older name) with `fsname=mnemofs`.
    pub(crate) fn is_mnemofs(&self) -> bool {
        (self.fstype.starts_with("macfuse") || self.fstype.starts_with("osxfuse"))
            && self.source == "mnemofs"
    }
}

fn text(field: &[libc::c_char]) -> &[u8] {
    // SAFETY: c_char and u8 have the same size and alignment.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(field.as_ptr().cast(), field.len()) };
    CStr::from_bytes_until_nul(bytes).map_or(bytes, CStr::to_bytes)
}

/// Every filesystem mounted now; empty if the table cannot be read.
pub(crate) fn mounts() -> Vec<Mounted> {
    let mut table: *mut libc::statfs = std::ptr::null_mut();
    // SAFETY: getmntinfo points `table` at an array of `n` entries that it
    // owns and that stays valid until the next call on this thread.
    let n = unsafe { libc::getmntinfo(&mut table, libc::MNT_NOWAIT) };
    if n <= 0 || table.is_null() {
        return Vec::new();
    }
    // SAFETY: as above; `n` entries.
    let entries = unsafe { std::slice::from_raw_parts(table, n as usize) };
    entries
        .iter()
        .map(|st| Mounted {
            mountpoint: PathBuf::from(OsStr::from_bytes(text(&st.f_mntonname))),
            fstype: String::from_utf8_lossy(text(&st.f_fstypename)).into_owned(),
            source: String::from_utf8_lossy(text(&st.f_mntfromname)).into_owned(),
        })
        .collect()
}
