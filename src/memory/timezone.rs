//! UTC offsets of named time zones (`Asia/Shanghai`, `Europe/Berlin`),
//! read from the system's compiled zoneinfo (TZif) files.
//!
//! Reminders are resolved with one [`FixedOffset`]; this module answers
//! "which offset is in force at this instant" for a configured IANA zone,
//! so "tomorrow 3pm" in Berlin is right in summer and in winter. It parses
//! bytes and never touches the disk: `Config::load` reads the file.
//!
//! Subtleties a newcomer trips on:
//! - Modern "slim" TZif files list transitions only up to the point where
//!   the footer's POSIX TZ rule (`CET-1CEST,M3.5.0,M10.5.0/3`) takes over,
//!   sometimes decades ago. Without the footer, every date after that
//!   would get a stale offset, so the rule is implemented too.
//! - POSIX offsets count hours *west* of Greenwich (`CET-1` is UTC+1);
//!   TZif records count seconds east. Everything here stores seconds east.
//! - The DST start time is written in standard local time and the end time
//!   in daylight local time; southern-hemisphere rules start late in the
//!   year and end early in it.
//! - Leap-second records are skipped: Unix time ignores leap seconds.

use super::reminders::{FixedOffset, Timestamp, civil_from_days, days_from_civil, weekday};

/// Why zoneinfo bytes could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZoneError {
    /// The data does not start with the `TZif` magic.
    #[error("not a tzif file")]
    NotTzif,
    /// The data ends early or its counts and indices disagree.
    #[error("corrupt tzif file: {0}")]
    Corrupt(&'static str),
}

/// The offsets a zone uses over time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneRules {
    /// Offset before the first transition.
    initial: FixedOffset,
    /// `(instant, offset from then on)`, sorted by instant.
    transitions: Vec<(Timestamp, FixedOffset)>,
    /// The rule for instants after the last transition.
    footer: Option<PosixRule>,
}

impl ZoneRules {
    /// A zone that is always at `offset`.
    pub fn fixed(offset: FixedOffset) -> ZoneRules {
        ZoneRules {
            initial: offset,
            transitions: Vec::new(),
            footer: None,
        }
    }

    /// Parses a TZif file (RFC 8536, versions 1 to 4).
    pub fn from_tzif(bytes: &[u8]) -> Result<ZoneRules, ZoneError> {
        let mut r = Reader { b: bytes, pos: 0 };
        let header = r.header()?;
        let (header, time_size) = if header.version >= b'2' {
            r.skip_block(&header, 4)?;
            (r.header()?, 8)
        } else {
            (header, 4)
        };
        let corrupt = ZoneError::Corrupt;
        let mut times = Vec::with_capacity(header.timecnt.min(4096));
        for _ in 0..header.timecnt {
            let t = r.take(time_size).ok_or(corrupt("truncated transitions"))?;
            times.push(if time_size == 8 {
                i64::from_be_bytes(t.try_into().map_err(|_| corrupt("bad time"))?)
            } else {
                i64::from(i32::from_be_bytes(
                    t.try_into().map_err(|_| corrupt("bad time"))?,
                ))
            });
        }
        let indices = r
            .take(header.timecnt)
            .ok_or(corrupt("truncated type indices"))?
            .to_vec();
        let mut types = Vec::with_capacity(header.typecnt.min(256));
        for _ in 0..header.typecnt {
            let t = r.take(6).ok_or(corrupt("truncated local time types"))?;
            let utoff = i32::from_be_bytes([t[0], t[1], t[2], t[3]]);
            types.push(FixedOffset::east(utoff).ok_or(corrupt("offset out of range"))?);
        }
        let initial = *types.first().ok_or(corrupt("no local time types"))?;
        let mut transitions = Vec::with_capacity(times.len());
        for (t, i) in times.into_iter().zip(indices) {
            let offset = *types.get(usize::from(i)).ok_or(corrupt("bad type index"))?;
            transitions.push((t, offset));
        }
        if transitions.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(corrupt("transitions out of order"));
        }
        let footer = if time_size == 8 {
            let skipped = header
                .charcnt
                .saturating_add(header.leapcnt.saturating_mul(12))
                .saturating_add(header.isstdcnt)
                .saturating_add(header.isutcnt);
            r.take(skipped).ok_or(corrupt("truncated tail"))?;
            let rest = r.b.get(r.pos..).unwrap_or_default();
            std::str::from_utf8(rest)
                .ok()
                .and_then(|s| s.strip_prefix('\n'))
                .and_then(|s| s.split('\n').next())
                .and_then(PosixRule::parse)
        } else {
            None
        };
        Ok(ZoneRules {
            initial,
            transitions,
            footer,
        })
    }

    /// Parses a POSIX TZ string such as `CET-1CEST,M3.5.0,M10.5.0/3`.
    pub fn from_posix(tz: &str) -> Option<ZoneRules> {
        let rule = PosixRule::parse(tz)?;
        Some(ZoneRules {
            initial: rule.std,
            transitions: Vec::new(),
            footer: Some(rule),
        })
    }

    /// The offset in force at `ts`.
    pub fn offset_at(&self, ts: Timestamp) -> FixedOffset {
        let after = self.transitions.partition_point(|(t, _)| *t <= ts);
        if after == self.transitions.len()
            && let Some(rule) = &self.footer
        {
            return rule.offset_at(ts);
        }
        match after {
            0 => self.initial,
            n => self.transitions[n - 1].1,
        }
    }
}

struct Header {
    version: u8,
    isutcnt: usize,
    isstdcnt: usize,
    leapcnt: usize,
    timecnt: usize,
    typecnt: usize,
    charcnt: usize,
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn header(&mut self) -> Result<Header, ZoneError> {
        let h = self.take(44).ok_or(ZoneError::NotTzif)?;
        if &h[..4] != b"TZif" {
            return Err(ZoneError::NotTzif);
        }
        let count = |i: usize| {
            let at = 20 + 4 * i;
            u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]) as usize
        };
        Ok(Header {
            version: h[4],
            isutcnt: count(0),
            isstdcnt: count(1),
            leapcnt: count(2),
            timecnt: count(3),
            typecnt: count(4),
            charcnt: count(5),
        })
    }

    /// Skips a data block whose transition times are `time_size` bytes.
    fn skip_block(&mut self, h: &Header, time_size: usize) -> Result<(), ZoneError> {
        let len = [
            h.timecnt.checked_mul(time_size + 1),
            h.typecnt.checked_mul(6),
            Some(h.charcnt),
            h.leapcnt.checked_mul(time_size + 4),
            Some(h.isstdcnt),
            Some(h.isutcnt),
        ]
        .into_iter()
        .try_fold(0usize, |acc, n| acc.checked_add(n?));
        len.and_then(|n| self.take(n))
            .map(|_| ())
            .ok_or(ZoneError::Corrupt("truncated version 1 block"))
    }
}

/// A POSIX TZ rule: standard offset and optional yearly DST.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PosixRule {
    std: FixedOffset,
    dst: Option<Dst>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Dst {
    offset: FixedOffset,
    start: (RuleDay, i64),
    end: (RuleDay, i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RuleDay {
    /// `Jn`: day 1..=365, February 29 never counted.
    JulianNoLeap(i64),
    /// `n`: day 0..=365, February 29 counted.
    Julian(i64),
    /// `Mm.w.d`: weekday `d` (0 = Sunday) of week `w` (5 = last) of `m`.
    MonthWeekDay(u32, i64, i64),
}

impl PosixRule {
    fn parse(s: &str) -> Option<PosixRule> {
        let mut p = PosixParser {
            s: s.as_bytes(),
            pos: 0,
        };
        p.name()?;
        let std = posix_offset(p.offset()?)?;
        if p.at_end() {
            return Some(PosixRule { std, dst: None });
        }
        p.name()?;
        let dst_offset = if p
            .peek()
            .is_some_and(|c| c == b'+' || c == b'-' || c.is_ascii_digit())
        {
            posix_offset(p.offset()?)?
        } else {
            FixedOffset::east(std.seconds() + 3600)?
        };
        let (start, end) = if p.at_end() {
            // The POSIX default: US rules.
            (
                (RuleDay::MonthWeekDay(3, 2, 0), 7200),
                (RuleDay::MonthWeekDay(11, 1, 0), 7200),
            )
        } else {
            p.expect(b',')?;
            let start = p.rule()?;
            p.expect(b',')?;
            (start, p.rule()?)
        };
        p.at_end().then_some(PosixRule {
            std,
            dst: Some(Dst {
                offset: dst_offset,
                start,
                end,
            }),
        })
    }

    fn offset_at(&self, ts: Timestamp) -> FixedOffset {
        let Some(dst) = &self.dst else {
            return self.std;
        };
        // Beyond ±30 000 years the yearly rule means nothing, and the
        // arithmetic below could overflow.
        if ts.unsigned_abs() > 1 << 40 {
            return self.std;
        }
        let std = i64::from(self.std.seconds());
        let local = ts + std;
        let (year, _, _) = civil_from_days(local.div_euclid(86_400));
        // Start is in standard time, end in daylight time.
        let start = dst.start.0.day(year) * 86_400 + dst.start.1 - std;
        let end = dst.end.0.day(year) * 86_400 + dst.end.1 - i64::from(dst.offset.seconds());
        let in_dst = if start < end {
            start <= ts && ts < end
        } else {
            !(end <= ts && ts < start)
        };
        if in_dst { dst.offset } else { self.std }
    }
}

/// A POSIX offset (seconds west) as a [`FixedOffset`] (seconds east).
fn posix_offset(west: i64) -> Option<FixedOffset> {
    FixedOffset::east(i32::try_from(-west).ok()?)
}

impl RuleDay {
    /// Day number (days since 1970-01-01) of this rule's day in `year`.
    fn day(self, year: i64) -> i64 {
        let jan1 = days_from_civil(year, 1, 1);
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        match self {
            RuleDay::JulianNoLeap(n) => jan1 + n - 1 + i64::from(leap && n >= 60),
            RuleDay::Julian(n) => jan1 + n,
            RuleDay::MonthWeekDay(m, w, d) => {
                let first = days_from_civil(year, m, 1);
                let next_month = if m == 12 {
                    days_from_civil(year + 1, 1, 1)
                } else {
                    days_from_civil(year, m + 1, 1)
                };
                let first_sunday_based = (i64::from(weekday(first)) + 1) % 7;
                let mut day = first + (d - first_sunday_based).rem_euclid(7) + (w - 1) * 7;
                while day >= next_month {
                    day -= 7;
                }
                day
            }
        }
    }
}

struct PosixParser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl PosixParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.pos += 1)
    }

    /// `CET` or `<+08>`.
    fn name(&mut self) -> Option<()> {
        if self.peek()? == b'<' {
            let close = self.s[self.pos..].iter().position(|c| *c == b'>')?;
            self.pos += close + 1;
            return Some(());
        }
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.pos += 1;
        }
        (self.pos - start >= 3).then_some(())
    }

    fn number(&mut self) -> Option<i64> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) && self.pos - start < 3 {
            self.pos += 1;
        }
        let digits = std::str::from_utf8(&self.s[start..self.pos]).ok()?;
        digits.parse().ok()
    }

    /// `[+-]hh[:mm[:ss]]` in seconds (POSIX sign: positive is west).
    fn offset(&mut self) -> Option<i64> {
        let sign = match self.peek()? {
            b'-' => {
                self.pos += 1;
                -1
            }
            b'+' => {
                self.pos += 1;
                1
            }
            _ => 1,
        };
        let mut seconds = self.number()? * 3600;
        for unit in [60, 1] {
            if self.peek() != Some(b':') {
                break;
            }
            self.pos += 1;
            seconds += self.number()? * unit;
        }
        Some(sign * seconds)
    }

    /// A date and optional `/time` (default 02:00).
    fn rule(&mut self) -> Option<(RuleDay, i64)> {
        let day = match self.peek()? {
            b'J' => {
                self.pos += 1;
                RuleDay::JulianNoLeap(self.number().filter(|n| (1..=365).contains(n))?)
            }
            b'M' => {
                self.pos += 1;
                let m = self.number().filter(|n| (1..=12).contains(n))?;
                self.expect(b'.')?;
                let w = self.number().filter(|n| (1..=5).contains(n))?;
                self.expect(b'.')?;
                let d = self.number().filter(|n| (0..=6).contains(n))?;
                RuleDay::MonthWeekDay(m as u32, w, d)
            }
            _ => RuleDay::Julian(self.number().filter(|n| (0..=365).contains(n))?),
        };
        let time = if self.peek() == Some(b'/') {
            self.pos += 1;
            self.offset()?
        } else {
            7200
        };
        Some((day, time))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn utc(y: i64, m: u32, d: u32, h: i64) -> Timestamp {
        days_from_civil(y, m, d) * 86_400 + h * 3600
    }

    #[test]
    fn posix_rule_for_central_europe() {
        let z = ZoneRules::from_posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        assert_eq!(z.offset_at(utc(2026, 1, 15, 12)).seconds(), 3600);
        assert_eq!(z.offset_at(utc(2026, 7, 15, 12)).seconds(), 7200);
        // 2026-03-29 01:00 UTC is when CEST starts.
        assert_eq!(z.offset_at(utc(2026, 3, 29, 1) - 1).seconds(), 3600);
        assert_eq!(z.offset_at(utc(2026, 3, 29, 1)).seconds(), 7200);
        // 2026-10-25 01:00 UTC is when it ends.
        assert_eq!(z.offset_at(utc(2026, 10, 25, 1) - 1).seconds(), 7200);
        assert_eq!(z.offset_at(utc(2026, 10, 25, 1)).seconds(), 3600);
    }

    #[test]
    fn posix_rule_for_the_southern_hemisphere_and_fixed_zones() {
        let z = ZoneRules::from_posix("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap();
        assert_eq!(z.offset_at(utc(2026, 1, 15, 0)).seconds(), 11 * 3600);
        assert_eq!(z.offset_at(utc(2026, 7, 15, 0)).seconds(), 10 * 3600);
        let z = ZoneRules::from_posix("CST-8").unwrap();
        assert_eq!(z.offset_at(utc(2026, 7, 15, 0)).seconds(), 8 * 3600);
        let z = ZoneRules::from_posix("<+0530>-5:30").unwrap();
        assert_eq!(z.offset_at(0).seconds(), 19_800);
        let z = ZoneRules::from_posix("EST5EDT").unwrap();
        assert_eq!(z.offset_at(utc(2026, 7, 1, 0)).seconds(), -4 * 3600);
        assert_eq!(z.offset_at(utc(2026, 12, 1, 0)).seconds(), -5 * 3600);
        for bad in [
            "",
            "C",
            "CET",
            "CET-1CEST,M13.1.0,M1.1.0",
            "CET-1CEST,",
            "CET-1x",
        ] {
            assert!(ZoneRules::from_posix(bad).is_none(), "{bad}");
        }
    }

    /// A minimal version 2 TZif: one transition, and a footer.
    fn tzif_v2(transition: i64, footer: &str) -> Vec<u8> {
        fn header(out: &mut Vec<u8>, timecnt: u32, typecnt: u32, charcnt: u32) {
            out.extend_from_slice(b"TZif2");
            out.extend_from_slice(&[0; 15]);
            for n in [0, 0, 0, timecnt, typecnt, charcnt] {
                out.extend_from_slice(&n.to_be_bytes());
            }
        }
        let mut out = Vec::new();
        header(&mut out, 0, 1, 4);
        out.extend_from_slice(&0i32.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(b"LMT\0");
        header(&mut out, 1, 2, 8);
        out.extend_from_slice(&transition.to_be_bytes());
        out.push(1);
        out.extend_from_slice(&1800i32.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&(8 * 3600i32).to_be_bytes());
        out.extend_from_slice(&[0, 4]);
        out.extend_from_slice(b"LMT\0CST\0");
        out.push(b'\n');
        out.extend_from_slice(footer.as_bytes());
        out.push(b'\n');
        out
    }

    #[test]
    fn tzif_transitions_then_footer() {
        let z = ZoneRules::from_tzif(&tzif_v2(1_000, "CST-9")).unwrap();
        assert_eq!(z.offset_at(999).seconds(), 1800);
        // After the last transition, the footer rules.
        assert_eq!(z.offset_at(1_000).seconds(), 9 * 3600);
        let z = ZoneRules::from_tzif(&tzif_v2(1_000, "")).unwrap();
        assert_eq!(z.offset_at(5_000).seconds(), 8 * 3600);
    }

    #[test]
    fn corrupt_tzif_is_an_error() {
        assert_eq!(ZoneRules::from_tzif(b""), Err(ZoneError::NotTzif));
        assert_eq!(ZoneRules::from_tzif(&[0; 60]), Err(ZoneError::NotTzif));
        let full = tzif_v2(1_000, "CST-8");
        for cut in [50, 80, 100, full.len() - 20] {
            assert!(ZoneRules::from_tzif(&full[..cut]).is_err(), "{cut}");
        }
    }

    #[test]
    fn system_zoneinfo_when_present() {
        // Only checks real files where the machine has them.
        if let Ok(bytes) = std::fs::read("/usr/share/zoneinfo/Europe/Berlin") {
            let z = ZoneRules::from_tzif(&bytes).unwrap();
            assert_eq!(z.offset_at(utc(2026, 1, 15, 12)).seconds(), 3600);
            assert_eq!(z.offset_at(utc(2026, 7, 15, 12)).seconds(), 7200);
            assert_eq!(z.offset_at(utc(2090, 7, 15, 12)).seconds(), 7200);
        }
        if let Ok(bytes) = std::fs::read("/usr/share/zoneinfo/Asia/Shanghai") {
            let z = ZoneRules::from_tzif(&bytes).unwrap();
            assert_eq!(z.offset_at(utc(2026, 11, 22, 2)).seconds(), 8 * 3600);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200), ts in any::<i64>()) {
            let mut data = b"TZif2".to_vec();
            data.extend_from_slice(&bytes);
            if let Ok(z) = ZoneRules::from_tzif(&data) {
                let _ = z.offset_at(ts);
            }
        }

        #[test]
        fn arbitrary_posix_strings_never_panic(s in "\\PC{0,40}", ts in any::<i64>()) {
            if let Some(z) = ZoneRules::from_posix(&s) {
                let _ = z.offset_at(ts);
            }
        }

        #[test]
        fn posix_like_strings_never_panic(
            s in "[A-Z]{3}[+-]?[0-9]{1,3}(:[0-9]{1,3})?([A-Z]{3}([+-]?[0-9]{1,2})?(,(M[0-9]{1,2}\\.[0-9]\\.[0-9]|J[0-9]{1,3}|[0-9]{1,3})(/[+-]?[0-9]{1,3})?){0,2})?",
            ts in any::<i64>(),
        ) {
            if let Some(z) = ZoneRules::from_posix(&s) {
                let _ = z.offset_at(ts);
            }
        }
    }
}
