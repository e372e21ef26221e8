//! The names of conflict copies: the other machine's version of a file
//! that both machines changed, kept beside ours by `mnemofs sync`.
//!
//! A copy of `notes/plan.md` made from the version `laptop` committed at
//! 2025-01-02 03:04:05 UTC is `notes/plan.conflict-laptop-20250102T030405Z.md`:
//! in the same folder, found by the same searches, and named so that a
//! person sees at once what it is. The time is the other side's commit
//! time, not the time of the sync, so a sync that is run again after a
//! crash names the copy the same way instead of making a second one.
//!
//! The index, the status and the brief use [`parse`] to name the copies
//! that are still waiting for someone to resolve them.

/// What a conflict copy's name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictName {
    /// The path of the file it is a version of.
    pub original: String,
    /// The machine whose version it holds.
    pub host: String,
    /// When that machine committed it, as `YYYYMMDDTHHMMSSZ`.
    pub when: String,
}

/// The infix that marks a conflict copy.
const MARK: &str = ".conflict-";

/// The length of `YYYYMMDDTHHMMSSZ`.
const WHEN_LEN: usize = 16;

/// The name of the conflict copy of `path` holding `host`'s version of
/// `when` (`YYYYMMDDTHHMMSSZ`); `n` above 1 tells copies with the same
/// name apart.
pub fn conflict_path(path: &str, host: &str, when: &str, n: usize) -> String {
    let (folder, name) = match path.rfind('/') {
        Some(i) => (&path[..=i], &path[i + 1..]),
        None => ("", path),
    };
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    };
    let host = host_label(host);
    let count = if n > 1 {
        format!("-{n}")
    } else {
        String::new()
    };
    format!("{folder}{stem}{MARK}{host}-{when}{count}{ext}")
}

/// `host` as it can appear in a file name: letters, digits, `-` and `_`.
pub fn host_label(host: &str) -> String {
    let label: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let label = label.trim_matches('-');
    if label.is_empty() {
        "unknown".to_owned()
    } else {
        label.to_owned()
    }
}

/// What the name of `path` says, if it is a conflict copy.
pub fn parse(path: &str) -> Option<ConflictName> {
    let (folder, name) = match path.rfind('/') {
        Some(i) => (&path[..=i], &path[i + 1..]),
        None => ("", path),
    };
    let at = name.rfind(MARK)?;
    let stem = &name[..at];
    let rest = &name[at + MARK.len()..];
    // host-WHEN[-n][.ext]; the host may hold dashes, the time never does.
    let (rest, ext) = match rest.find('.') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let rest = match rest.rsplit_once('-') {
        Some((head, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => rest,
    };
    let (host, when) = rest.rsplit_once('-')?;
    if stem.is_empty() || host.is_empty() || !is_when(when) {
        return None;
    }
    Some(ConflictName {
        original: format!("{folder}{stem}{ext}"),
        host: host.to_owned(),
        when: when.to_owned(),
    })
}

/// True if `path` is a conflict copy.
pub fn is_conflict(path: &str) -> bool {
    parse(path).is_some()
}

fn is_when(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == WHEN_LEN
        && b[8] == b'T'
        && b[15] == b'Z'
        && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
}

/// A unix time as `YYYYMMDDTHHMMSSZ`.
pub fn when_of(unix_seconds: i64) -> String {
    match jiff::Timestamp::from_second(unix_seconds) {
        Ok(t) => t.strftime("%Y%m%dT%H%M%SZ").to_string(),
        Err(_) => "19700101T000000Z".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_sits_beside_its_original_and_says_whose_it_is() {
        let p = conflict_path("notes/plan.md", "lap top", "20250102T030405Z", 1);
        assert_eq!(p, "notes/plan.conflict-lap-top-20250102T030405Z.md");
        assert_eq!(
            parse(&p),
            Some(ConflictName {
                original: "notes/plan.md".into(),
                host: "lap-top".into(),
                when: "20250102T030405Z".into(),
            })
        );
        let second = conflict_path("plan", "h", "20250102T030405Z", 2);
        assert_eq!(second, "plan.conflict-h-20250102T030405Z-2");
        assert_eq!(parse(&second).unwrap().original, "plan");
    }

    #[test]
    fn ordinary_names_are_not_copies() {
        for path in [
            "a.md",
            "conflict-h-20250102T030405Z.md",
            "a.conflict-h-2025.md",
            "a.conflict-20250102T030405Z.md",
            "notes/the.conflict-of-ideas.md",
        ] {
            assert_eq!(parse(path), None, "{path}");
        }
    }

    #[test]
    fn times_are_utc_to_the_second() {
        assert_eq!(when_of(1_735_787_045), "20250102T030405Z");
    }
}
