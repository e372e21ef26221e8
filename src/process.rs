//! What the kernel says about this process, read without changing it:
//! fields of `/proc/self/status` on Linux.

/// The process's file mode creation mask, or `None` if it cannot be read.
/// Linux reads it from `/proc`: umask(2) reads it only by setting it, which
/// would change it for a moment under the other threads.
#[cfg(target_os = "linux")]
pub fn umask() -> Option<u32> {
    u32::from_str_radix(&status_field("Umask")?, 8).ok()
}

/// The process's file mode creation mask. macOS has no `/proc`, so it is
/// read with umask(2), which sets one while it reads: 0077 for that
/// moment, so a file another thread creates then is private rather than
/// open.
#[cfg(target_os = "macos")]
pub fn umask() -> Option<u32> {
    // SAFETY: umask has no preconditions; the old mask is put back at once.
    let mask = unsafe {
        let mask = libc::umask(0o077);
        libc::umask(mask);
        mask
    };
    Some(u32::from(mask))
}

/// Whether the process holds a capability that passes file mode and
/// ownership checks: `CAP_CHOWN`, `CAP_DAC_OVERRIDE`, `CAP_DAC_READ_SEARCH`,
/// `CAP_FOWNER` or `CAP_FSETID` (the low five bits of `CapEff`). `None`
/// where that cannot be read.
pub fn overrides_file_modes() -> Option<bool> {
    let caps = u64::from_str_radix(&status_field("CapEff")?, 16).ok()?;
    Some(caps & 0x1f != 0)
}

/// The value of one field of `/proc/self/status`.
fn status_field(name: &str) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    field_in(&status, name).map(str::to_owned)
}

/// The value of the field `name` in the text of a `/proc` status file.
fn field_in<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(':')?;
        Some(value.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_found_by_their_whole_name() {
        let status = "Name:\tmnemofs\nUmaskX:\t0777\nUmask:\t0022\nCapEff:\t000001ffffffffff\n";
        assert_eq!(field_in(status, "Umask"), Some("0022"));
        assert_eq!(field_in(status, "CapEff"), Some("000001ffffffffff"));
        assert_eq!(field_in(status, "Cap"), None);
        assert_eq!(field_in(status, "Missing"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_umask_and_capabilities() {
        assert!(umask().is_some_and(|m| m <= 0o777));
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if !root {
            assert_eq!(overrides_file_modes(), Some(false));
        } else {
            assert!(overrides_file_modes().is_some());
        }
    }
}
