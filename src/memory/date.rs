//! Frontmatter dates to unix seconds, without a date crate.
//!
//! Dates stay strings in [`Frontmatter`](super::Frontmatter) so nothing is
//! lost or reformatted; this turns them into numbers when something needs
//! to compare or range-query them. Three shapes are accepted because that
//! is what agents and editors actually write: RFC 3339 (`T` or a space
//! between date and time, optional fraction, `Z` or a numeric offset),
//! a bare `YYYY-MM-DD`, and `YYYY-MM-DD HH:MM[:SS]`. A value without an
//! offset is read as UTC: the store has no notion of the writer's zone, and
//! a fixed rule keeps the index deterministic across machines.

/// Parses a frontmatter date into seconds since the unix epoch (UTC).
///
/// Returns `None` for anything that is not one of the accepted shapes or
/// that names an impossible date (`2025-02-30`). Fractional seconds are
/// truncated toward the earlier second.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let b = s.trim().as_bytes();
    let mut cur = Cursor { b, pos: 0 };
    let year = cur.digits(4)?;
    cur.expect(b'-')?;
    let month = cur.digits(2)?;
    cur.expect(b'-')?;
    let day = cur.digits(2)?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    if cur.at_end() {
        return Some(days * 86_400);
    }

    match cur.next()? {
        b'T' | b't' | b' ' => {}
        _ => return None,
    }
    let hour = cur.digits(2)?;
    cur.expect(b':')?;
    let minute = cur.digits(2)?;
    let mut second = 0;
    if cur.peek() == Some(b':') {
        cur.pos += 1;
        second = cur.digits(2)?;
        if cur.peek() == Some(b'.') || cur.peek() == Some(b',') {
            cur.pos += 1;
            let start = cur.pos;
            while cur.peek().is_some_and(|c| c.is_ascii_digit()) {
                cur.pos += 1;
            }
            if cur.pos == start {
                return None;
            }
        }
    }
    // 60 is a leap second; it lands on the next minute like most systems do.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    // Some writers put a space before the zone (`10:00:00 +02:00`).
    if cur.peek() == Some(b' ') {
        cur.pos += 1;
    }
    let offset = match cur.next() {
        None => 0,
        Some(b'Z' | b'z') => 0,
        Some(sign @ (b'+' | b'-')) => {
            let oh = cur.digits(2)?;
            if cur.peek() == Some(b':') {
                cur.pos += 1;
            }
            let om = if cur.at_end() { 0 } else { cur.digits(2)? };
            if oh > 23 || om > 59 {
                return None;
            }
            let secs = oh * 3600 + om * 60;
            if sign == b'+' { secs } else { -secs }
        }
        Some(_) => return None,
    };
    if !cur.at_end() {
        return None;
    }
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.b.len()
    }

    fn expect(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn digits(&mut self, n: usize) -> Option<i64> {
        let mut v = 0i64;
        for _ in 0..n {
            let c = self.next()?;
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Some(v)
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard
/// Hinnant's `days_from_civil`).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01 (Hinnant's
/// `civil_from_days`), the inverse of `days_from_civil`.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Formats unix seconds as RFC 3339 in UTC, e.g. `2026-11-22T10:00:00Z`.
pub fn format_timestamp(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_round_trips_timestamps() {
        assert_eq!(format_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_timestamp(-1), "1969-12-31T23:59:59Z");
        for t in [0, 1_795_319_632, 4_102_444_800, -86_401] {
            assert_eq!(parse_timestamp(&format_timestamp(t)), Some(t));
        }
    }

    #[test]
    fn bare_dates_are_midnight_utc() {
        assert_eq!(parse_timestamp("1970-01-01"), Some(0));
        assert_eq!(parse_timestamp("2000-03-01"), Some(951_868_800));
        assert_eq!(parse_timestamp("1969-12-31"), Some(-86_400));
    }

    #[test]
    fn rfc3339_with_zones_and_fractions() {
        assert_eq!(parse_timestamp("2026-05-07T10:00:00Z"), Some(1_778_148_000));
        assert_eq!(
            parse_timestamp("2026-05-07T12:00:00+02:00"),
            Some(1_778_148_000)
        );
        assert_eq!(
            parse_timestamp("2026-05-07T05:30:00-0430"),
            Some(1_778_148_000)
        );
        assert_eq!(
            parse_timestamp("2026-05-07t10:00:00.999z"),
            Some(1_778_148_000)
        );
    }

    #[test]
    fn space_separated_and_minute_precision() {
        assert_eq!(parse_timestamp("2026-05-07 10:00:00"), Some(1_778_148_000));
        assert_eq!(parse_timestamp("2026-05-07 10:00"), Some(1_778_148_000));
        assert_eq!(
            parse_timestamp(" 2026-05-07 12:00:00 +02:00 "),
            Some(1_778_148_000)
        );
    }

    #[test]
    fn leap_days_are_checked() {
        assert!(parse_timestamp("2024-02-29").is_some());
        assert_eq!(parse_timestamp("2023-02-29"), None);
        assert!(parse_timestamp("2000-02-29").is_some());
        assert_eq!(parse_timestamp("1900-02-29"), None);
    }

    #[test]
    fn garbage_is_none() {
        for s in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-00-10",
            "2026-01-32",
            "2026-1-1",
            "2026-05-07T25:00:00Z",
            "2026-05-07T10:00:00Q",
            "2026-05-07T10:00:00.Z",
            "2026-05-07T10:00:00Zjunk",
            "2026-05-07X",
            "２０２６-05-07",
        ] {
            assert_eq!(parse_timestamp(s), None, "{s:?}");
        }
    }
}
