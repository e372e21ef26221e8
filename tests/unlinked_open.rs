//! A file unlinked while open keeps working through its descriptor, as on
//! the backing filesystem: fchmod, fchown, futimens, ftruncate and the
//! f*xattr calls give what they give on a plain folder beside the store.

#![cfg(target_os = "linux")]

mod common;

use std::ffi::CString;
use std::fs;
use std::os::fd::AsRawFd;
use std::path::Path;

use common::Mount;

/// The results of metadata calls on an unlinked file's descriptor, as
/// errno (0 for success) and what reading back gave.
fn calls_after_unlink(dir: &Path) -> Vec<(String, i32)> {
    let path = dir.join("gone.md");
    fs::write(&path, "hello\n").unwrap();
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    fs::remove_file(&path).unwrap();
    let fd = file.as_raw_fd();
    let errno = |ret: libc::c_int| {
        if ret < 0 {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
        } else {
            0
        }
    };
    let name = CString::new("user.note").unwrap();
    let mut out = Vec::new();
    // SAFETY: a valid descriptor, NUL-terminated names and sized buffers.
    unsafe {
        out.push(("fchmod".into(), errno(libc::fchmod(fd, 0o600))));
        out.push((
            "fchown".into(),
            errno(libc::fchown(fd, libc::getuid(), libc::getgid())),
        ));
        // Truncated before the times are set: a truncate sets the mtime
        // to now, which differs between the two sides when they straddle
        // a second.
        out.push(("ftruncate".into(), errno(libc::ftruncate(fd, 3))));
        let times = [
            libc::timespec {
                tv_sec: 1_000_000,
                tv_nsec: 0,
            },
            libc::timespec {
                tv_sec: 2_000_000,
                tv_nsec: 0,
            },
        ];
        out.push(("futimens".into(), errno(libc::futimens(fd, times.as_ptr()))));
        out.push((
            "fsetxattr".into(),
            errno(libc::fsetxattr(
                fd,
                name.as_ptr(),
                b"v".as_ptr().cast(),
                1,
                0,
            )),
        ));
        let mut buf = [0u8; 16];
        let got = libc::fgetxattr(fd, name.as_ptr(), buf.as_mut_ptr().cast(), buf.len());
        out.push(("fgetxattr".into(), errno(got as libc::c_int)));
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st);
        out.push((format!("mode {:o}", st.st_mode & 0o7777), 0));
        out.push((format!("mtime {}", st.st_mtime), 0));
        out.push((format!("size {}", st.st_size), 0));
    }
    out
}

#[test]
fn metadata_calls_on_an_unlinked_open_file_work_as_on_the_backing_filesystem() {
    let mut m = Mount::start();
    let plain = calls_after_unlink(&m.plain);
    let mounted = calls_after_unlink(&m.mnt);
    assert_eq!(mounted, plain);
    assert!(plain.iter().take(4).all(|(_, e)| *e == 0), "{plain:?}");
    m.stop();
}
