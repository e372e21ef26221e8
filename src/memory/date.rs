//! Frontmatter dates to unix seconds and back.
//!
//! Dates stay strings in [`Frontmatter`](super::Frontmatter) so nothing is
//! lost or reformatted; this turns them into numbers when something needs
//! to compare or range-query them. Three shapes are accepted because that
//! is what agents and editors actually write: RFC 3339 (`T` or a space
//! between date and time, optional fraction, `Z` or a numeric offset),
//! a bare `YYYY-MM-DD`, and `YYYY-MM-DD HH:MM[:SS]`. A value without an
//! offset is read as UTC: the store has no notion of the writer's zone, and
//! a fixed rule keeps the index deterministic across machines.
//!
//! The grammar is ours because it is more lenient than any standard one
//! (a space before the zone, `+0200`, a leap second); jiff decides which
//! dates and times exist and does the calendar arithmetic.
//!
//! Subtleties a newcomer trips on:
//! - Instants are counted from civil date-times, not through
//!   [`jiff::Timestamp`], whose range ends about a day before 9999 does so
//!   that every offset can be applied to it. Both directions here cover
//!   the whole of the years 0000 to 9999.
//! - [`format_timestamp`] clamps to those years, so whatever it writes,
//!   [`parse_timestamp`] reads back.

use jiff::SignedDuration;
use jiff::civil::{Date, DateTime, Time};

/// 1970-01-01T00:00:00, the instant unix seconds count from, on the UTC
/// calendar.
const UNIX_EPOCH: DateTime = DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
/// The first instant a four-digit year can write.
const FIRST_WRITABLE: DateTime = DateTime::constant(0, 1, 1, 0, 0, 0, 0);
/// The last instant a four-digit year can write.
const LAST_WRITABLE: DateTime = DateTime::constant(9999, 12, 31, 23, 59, 59, 0);

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
    let date = Date::new(
        i16::try_from(year).ok()?,
        i8::try_from(month).ok()?,
        i8::try_from(day).ok()?,
    )
    .ok()?;
    if cur.at_end() {
        return Some(unix_seconds(date.to_datetime(Time::midnight())));
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
    let time = Time::new(i8::try_from(hour).ok()?, i8::try_from(minute).ok()?, 0, 0).ok()?;
    // 60 is a leap second; it lands on the next minute like most systems
    // do. jiff has no second 60, so seconds are added, not set.
    if second > 60 {
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
    Some(unix_seconds(date.to_datetime(time)) + second - offset)
}

/// Seconds from the unix epoch to `utc`, a date-time on the UTC calendar.
fn unix_seconds(utc: DateTime) -> i64 {
    utc.duration_since(UNIX_EPOCH).as_secs()
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

/// The day a frontmatter date names as written, in its own zone: the
/// date part of `2026-02-28T23:00:00-05:00` is 28 February, although the
/// instant is 1 March in UTC. `None` for anything [`parse_timestamp`]
/// does not read.
pub fn written_day(s: &str) -> Option<Date> {
    parse_timestamp(s)?;
    s.trim().get(..10)?.parse().ok()
}

/// Formats unix seconds as RFC 3339 in UTC, e.g. `2026-11-22T10:00:00Z`.
///
/// Instants outside the years 0000 to 9999 are clamped to
/// `0000-01-01T00:00:00Z` and `9999-12-31T23:59:59Z`: RFC 3339 has only
/// four-digit years.
pub fn format_timestamp(unix: i64) -> String {
    let utc = UNIX_EPOCH
        .saturating_add(SignedDuration::from_secs(unix))
        .clamp(FIRST_WRITABLE, LAST_WRITABLE);
    // jiff writes years 0 to 9999 with four digits; `.0` drops the
    // fraction, which whole seconds never have anyway.
    format!("{utc:.0}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_day_written_is_the_date_in_its_own_zone() {
        let day = |s: &str| written_day(s).map(|d| d.to_string());
        assert_eq!(
            day("2026-02-28T23:00:00-05:00").as_deref(),
            Some("2026-02-28")
        );
        assert_eq!(
            day("2026-11-27T00:30:00+08:00").as_deref(),
            Some("2026-11-27")
        );
        assert_eq!(day("2023-06-03").as_deref(), Some("2023-06-03"));
        assert_eq!(day("2023-06-03 10:00").as_deref(), Some("2023-06-03"));
        assert_eq!(day("2023-02-30"), None);
        assert_eq!(day("soon"), None);
    }

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
    fn the_years_0000_to_9999_round_trip_and_beyond_them_clamp() {
        let first = -62_167_219_200;
        let last = 253_402_300_799;
        assert_eq!(format_timestamp(first), "0000-01-01T00:00:00Z");
        assert_eq!(format_timestamp(last), "9999-12-31T23:59:59Z");
        assert_eq!(parse_timestamp("0000-01-01"), Some(first));
        assert_eq!(parse_timestamp("9999-12-31T23:59:59Z"), Some(last));
        assert_eq!(format_timestamp(first - 1), "0000-01-01T00:00:00Z");
        assert_eq!(format_timestamp(last + 1), "9999-12-31T23:59:59Z");
        assert_eq!(format_timestamp(i64::MIN), "0000-01-01T00:00:00Z");
        assert_eq!(format_timestamp(i64::MAX), "9999-12-31T23:59:59Z");
        // An offset can carry the last local second past the year's end.
        assert_eq!(
            parse_timestamp("9999-12-31T23:59:59-01:00"),
            Some(last + 3600)
        );
    }

    #[test]
    fn a_leap_second_lands_on_the_next_minute() {
        assert_eq!(parse_timestamp("2026-05-07T09:59:60Z"), Some(1_778_148_000));
        assert_eq!(parse_timestamp("2026-05-07T09:59:61Z"), None);
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
