//! Finding reminders in free text: "tomorrow 3pm", "on 2026-12-01",
//! "next Friday", "in 2 hours", "明天下午三点", "下周五", "12月1日".
//!
//! Dream level 3 turns each expression into a memory under `reminders/`
//! with `expires_at`, and due ones go to `.mnemofs/pending.md`. This module
//! only reads text: given the text, the current instant and the user's
//! time zone it returns what it found, so it is tested with fixed clocks.
//!
//! Subtleties a newcomer trips on:
//! - All calendar math is local to the configured zone: "tomorrow" means
//!   the day after today *there*, not in UTC. Each due time is a wall-clock
//!   time on its own date, turned into an instant with the offset in force
//!   on that date, so "next Monday 3pm" is 15:00 on Monday's clock even
//!   when a DST change falls in between. "in 2 hours" is elapsed time and
//!   ignores the clock.
//! - A wall-clock time that a DST change skips (02:30 on a spring-forward
//!   night) moves forward by the gap, to 03:30; one that it repeats takes
//!   the earlier of the two instants. This is jiff's "compatible" rule, the
//!   one RFC 5545 calendars use.
//! - A date without a time is all-day and falls due at 09:00 local, so the
//!   notification arrives in the morning rather than at midnight.
//! - Past times are dropped; an all-day date is kept through its whole day
//!   (it is not "past" at 10:00 on the day itself). Bare "today"/"今天"
//!   without a time is ignored: in notes it almost always narrates the
//!   past ("today I fixed...").
//! - Weeks start on Monday (ISO, and the Chinese convention). "next Friday"
//!   and "下周五" are the Friday of next week; "on Friday" and a bare
//!   "周五" are the first Friday after today; "this Friday" and "本周五"
//!   are this week's, which may already be past (then it is dropped).
//! - A date without a year ("12月1日", "December 1") takes the year that
//!   puts it nearest to today, so "11月20日" written on 22 November names
//!   the past (and is dropped) instead of next year's.
//! - Chinese hours follow their period: 下午/晚上 add 12 hours, 中午1点 is
//!   13:00; an hour without a period is taken as written (24-hour).
//! - English matches need word boundaries ("Saturday" is not "sat", the
//!   digits of "12026-12-01" are not a date). Repeated weekday patterns
//!   ("每周五", "every Friday") are habits, not one-off reminders.
//! - "Now" is when the note was written ([`written_at`]: the day it names,
//!   else its `created_at`, else its file time), never the moment the
//!   organizer reads it: "tomorrow" in a journal of 20 November 2025 is
//!   21 November 2025, and "Dec 10" in a note of that November is 2025's.
//! - A reminder says what it is about ([`Reminder::about`]): its sentence
//!   without the time phrases, list markers and labels such as "TODO:", so
//!   "Dentist appointment, tomorrow 3pm" is about "Dentist appointment".
//! - A range of times is due at its start: "from 3 to 5pm on Thursday" at
//!   15:00 (a start without am or pm takes the end's half of the day when
//!   it fits before it), "18:00-19:30" at 18:00. Chinese "下下周一" is the
//!   Monday of the week after next.
//! - A zone named after the time is that zone's clock: "3pm EST" is 20:00
//!   UTC, "09:00 UTC+8" is 01:00 UTC. Only abbreviations that name one
//!   offset count (EST, PDT, CET, JST, ...); "CST" (China or America) and
//!   "IST" (India, Ireland or Israel) are read as the user's own zone.

use std::cmp::Reverse;

use jiff::civil::{Date, Time, Weekday};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Span, Timestamp};

/// A time expression found in text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reminder {
    /// The matched text, as written ("tomorrow 3pm", "下周五").
    pub phrase: String,
    /// When it falls due, in unix seconds.
    pub due: i64,
    /// Whether only a date was given; `due` is then 09:00 local that day.
    pub all_day: bool,
    /// The sentence the phrase came from, trimmed (and cut to
    /// [`MAX_CONTEXT_CHARS`]), for the reminder's body.
    pub context: String,
    /// What it is about: the sentence without its time phrases ([`subject`]),
    /// empty when the sentence says nothing else.
    pub about: String,
}

/// How much of a sentence is kept as a reminder's context.
pub const MAX_CONTEXT_CHARS: usize = 300;

/// When an all-day reminder falls due, local time.
const ALL_DAY_TIME: Time = Time::constant(9, 0, 0, 0);

/// Dates further ahead than this (thousands of years) are not reminders.
const FARTHEST_AHEAD: SignedDuration = SignedDuration::from_hours(2_000_000 * 24);

/// Finds every time expression in `text` that was still ahead when it
/// was written, in order of appearance.
///
/// `written` (unix seconds) is when the text was written: relative
/// expressions count from it, and what was already past then is dropped.
/// `tz` is the user's zone, consulted at each due date. The same phrase
/// resolving to the same instant twice is reported once.
pub fn extract_reminders(text: &str, written: i64, tz: &TimeZone) -> Vec<Reminder> {
    let Some(today) = Today::new(written, tz) else {
        return Vec::new();
    };
    // Read in simplified characters, which keep every offset: what is
    // kept of a sentence is cut from it as written.
    let folded = super::hanzi::simplified_text(text);
    let mut found: Vec<Reminder> = Vec::new();
    for sentence in sentences(&folded) {
        let at = sentence.as_ptr() as usize - folded.as_ptr() as usize;
        let written_sentence = &text[at..at + sentence.len()];
        if done_or_cancelled(sentence) {
            continue;
        }
        let mut spans = time_phrases(sentence);
        spans.retain(|span| !repeats_or_past(sentence, span.0) && !struck_out(sentence, span.0));
        // A habit or a rule names weekdays ("never deploy on Friday
        // afternoons"); a day of its own ("tomorrow", "next Friday", a
        // date) is one occasion even in a sentence that says "always".
        let weekdays_only = spans.iter().all(|span| {
            matches!(
                span.2,
                When::On(DateSpec::Weekday(_, WeekMode::Upcoming), _)
                    | When::OnAt(DateSpec::Weekday(_, WeekMode::Upcoming), ..)
            )
        });
        if spans.is_empty()
            || (tells_of_the_past(sentence) && !points_ahead(sentence, &spans))
            || (weekdays_only && is_habit_or_rule(sentence))
        {
            continue;
        }
        // "from 8 to 10 December": due on the 8th, and the title says
        // neither day.
        let mut starts = Vec::with_capacity(spans.len());
        for span in &mut spans {
            let earlier = day_before(sentence, span.0);
            if let Some((at, _)) = earlier {
                span.0 = at;
            }
            starts.push(earlier.map(|(_, day)| day));
        }
        let about = without_struck(&super::hanzi::as_written(
            &about(sentence, &spans),
            written_sentence,
        ));
        // "from 20 December to 3 January", "12月20日到1月3日": one
        // stretch, due when it begins; its end, which the title does not
        // say either, makes no reminder of its own (unless the sentence
        // moves something from one day to the other).
        if !moves(sentence) {
            let ends: Vec<usize> = (1..spans.len())
                .filter(|&i| ends_a_stretch(sentence, spans[i - 1].0, spans[i - 1].1, spans[i].0))
                .collect();
            for i in ends.into_iter().rev() {
                spans.remove(i);
                starts.remove(i);
            }
        }
        for ((start, end, when), first_day) in spans.into_iter().zip(starts) {
            let Some((due, all_day)) = today.resolve(when) else {
                continue;
            };
            let due = first_day
                .and_then(|day| earlier_day(due, day, tz))
                .unwrap_or(due);
            // What must be done before a day is due the day before.
            let due = if all_day && before_the_day(sentence, start, end) {
                Some(due - 86_400).filter(|d| *d > written).unwrap_or(due)
            } else {
                due
            };
            let phrase = written_sentence[start..end].trim().to_owned();
            if !found.iter().any(|r| r.phrase == phrase && r.due == due) {
                found.push(Reminder {
                    phrase,
                    due,
                    all_day,
                    context: cut_chars(written_sentence.trim(), MAX_CONTEXT_CHARS),
                    about: about.clone(),
                });
            }
        }
    }
    found
}

/// `text` (a title, a sentence) without its time phrases, list markers,
/// labels ("TODO:", "Decided:", "记得") and the words that only tied it
/// to the time ("on", "by", "在…前"); empty when nothing else is left.
pub fn subject(text: &str) -> String {
    let text = text.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    let folded = super::hanzi::simplified_text(&text);
    super::hanzi::as_written(&about(&folded, &time_phrases(&folded)), &text)
}

/// `about` (a sentence's subject) made to stand alone as a reminder's
/// title: a person's note says "He is on leave", and its reminder says
/// "Tom Becker is on leave"; another note's "It expires" says which note
/// it came from, "It expires (TLS certificate)". `title` is the note's;
/// `person` whether the note is about a person.
pub fn standing_alone(about: &str, title: &str, person: bool) -> String {
    let title = title.trim();
    if title.is_empty() {
        return about.to_owned();
    }
    let first = about.split_whitespace().next().unwrap_or_default();
    if person {
        if ["He", "She", "he", "she"].contains(&first) {
            return format!("{title}{}", &about[first.len()..]);
        }
        if let Some(rest) = ["他", "她"].iter().find_map(|p| about.strip_prefix(p))
            && !rest.starts_with('们')
        {
            return format!("{title}{rest}");
        }
    }
    let pronoun = [
        "He", "She", "It", "They", "This", "That", "he", "she", "it", "they",
    ]
    .contains(&first)
        || ["他", "她", "它", "这", "那"]
            .iter()
            .any(|p| about.starts_with(p));
    if pronoun {
        format!("{about} ({title})")
    } else {
        about.to_owned()
    }
}

/// When a note was written, for reading its relative dates: the day it
/// names (a `date:` field, a session's `started`, a journal's or daily
/// note's file name such as `2025-11-20` or `2025_11_20`), else its
/// `created_at`, else `fallback` (its file time). A day without a time
/// counts from its start, on `tz`'s clock.
pub fn written_at(
    frontmatter: &crate::memory::Frontmatter,
    stem: &str,
    fallback: i64,
    tz: &TimeZone,
) -> i64 {
    let field = |key: &str| {
        frontmatter
            .extra
            .get(key)
            .and_then(|v| v.as_str())
            .and_then(|v| instant_or_day(v, tz))
    };
    field("date")
        .or_else(|| field("started"))
        .or_else(|| day_in_name(stem, tz))
        .or_else(|| {
            frontmatter
                .created_at
                .as_deref()
                .and_then(|v| instant_or_day(v, tz))
        })
        .unwrap_or(fallback)
}

/// An RFC 3339 instant, or a bare `YYYY-MM-DD` taken as the start of that
/// day on `tz`'s clock.
fn instant_or_day(value: &str, tz: &TimeZone) -> Option<i64> {
    let value = value.trim();
    match value.parse::<Date>() {
        Ok(day) if value.len() == 10 => start_of(day, tz),
        _ => crate::memory::parse_timestamp(value),
    }
}

fn start_of(day: Date, tz: &TimeZone) -> Option<i64> {
    Some(day.to_zoned(tz.clone()).ok()?.timestamp().as_second())
}

/// The day a file name starts with (`2025-11-20`, `2025_11_20`,
/// `2025.11.20`, then the end or a non-digit), as the start of that day.
fn day_in_name(stem: &str, tz: &TimeZone) -> Option<i64> {
    let b = stem.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .filter(|d| d.iter().all(u8::is_ascii_digit))
            .and_then(|_| stem[r].parse::<u32>().ok())
    };
    let sep = |i: usize| b.get(i).filter(|c| matches!(c, b'-' | b'_' | b'.'));
    sep(4)?;
    (b.get(7) == b.get(4)).then_some(())?;
    if b.get(10).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let day = civil_date(i64::from(digits(0..4)?), digits(5..7)?, digits(8..10)?)?;
    start_of(day, tz)
}

/// Formats `unix` seconds as RFC 3339 with the offset `tz` has at that
/// instant, e.g. `2026-11-23T15:00:00+08:00`, for `expires_at` and
/// `.mnemofs/pending.md`. Instants beyond what jiff represents (about
/// ±9999 years) are clamped.
pub fn format_rfc3339(unix: i64, tz: &TimeZone) -> String {
    let instant = Timestamp::from_second(unix).unwrap_or(if unix < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    });
    // `.0`: whole seconds, even for the clamped `Timestamp::MAX`.
    format!("{:.0}", instant.display_with_offset(tz.to_offset(instant)))
}

/// A due time as a person reads it, in `tz`: `Sat 2026-12-12 10:00`.
pub fn format_due(unix: i64, tz: &TimeZone) -> String {
    let instant = Timestamp::from_second(unix).unwrap_or(if unix < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    });
    instant
        .to_zoned(tz.clone())
        .strftime("%a %Y-%m-%d %H:%M")
        .to_string()
}

/// The date, if it exists and lies in the years 1 to 9999 that reminders
/// are written in.
fn civil_date(year: i64, month: u32, day: u32) -> Option<Date> {
    if !(1..=9999).contains(&year) {
        return None;
    }
    Date::new(
        i16::try_from(year).ok()?,
        i8::try_from(month).ok()?,
        i8::try_from(day).ok()?,
    )
    .ok()
}

/// Whether `month`/`day` exists in some year. The year is checked once it
/// is known: 29 February passes here.
fn month_day_exists(month: u32, day: u32) -> bool {
    // 2000 is a leap year.
    civil_date(2000, month, day).is_some()
}

/// A time of day, if `hour` and `minute` make one.
fn clock(hour: u32, minute: u32) -> Option<Time> {
    Time::new(i8::try_from(hour).ok()?, i8::try_from(minute).ok()?, 0, 0).ok()
}

// ---------------------------------------------------------------------------
// What a phrase means, before it is anchored to today.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DateSpec {
    /// A full date.
    Ymd(i64, u32, u32),
    /// A date without a year: the nearest occurrence.
    MonthDay(u32, u32),
    /// Days from today.
    Days(i64),
    /// A weekday (0 = Monday) counted as `WeekMode` says.
    Weekday(u32, WeekMode),
    /// The first (`false`) or last (`true`) day of the month this many
    /// months from today's ("下个月初", "月底").
    MonthEdge(i64, bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WeekMode {
    /// The first such day after today.
    Upcoming,
    /// That day of the current Monday-based week.
    ThisWeek,
    /// That day of next week.
    NextWeek,
    /// That day of the week after next ("下下周一").
    WeekAfterNext,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// A day, at a local time of day or all-day.
    On(DateSpec, Option<Time>),
    /// A number of seconds from now.
    After(i64),
    /// A day, at a time of day in a zone the text names ("3pm EST"), as
    /// seconds east of UTC.
    OnAt(DateSpec, Time, i32),
}

/// What a date phrase implies when no time follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Untimed {
    /// All-day.
    AllDay,
    /// Only meaningful with a time ("today", a bare weekday).
    NeedsTime,
    /// A time of day is implied ("tonight", "今晚", "明早").
    Implied(Period),
}

/// Parts of the day in Chinese time expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Period {
    Dawn,
    Morning,
    EarlyMorning,
    Noon,
    Afternoon,
    Dusk,
    Evening,
    Night,
}

impl Period {
    /// The time meant when only the period is given ("明天下午").
    fn default_clock(self) -> Option<Time> {
        let hour = match self {
            Period::Dawn => return None,
            Period::EarlyMorning => 8,
            Period::Morning => 9,
            Period::Noon => 12,
            Period::Afternoon => 15,
            Period::Dusk => 18,
            Period::Evening => 20,
            Period::Night => 21,
        };
        clock(hour, 0)
    }

    /// Turns a 12-hour-style hour said in this period into 0..24.
    fn adjust(self, hour: u32) -> u32 {
        match self {
            Period::Afternoon | Period::Dusk | Period::Evening | Period::Night if hour < 12 => {
                hour + 12
            }
            Period::Noon if hour < 11 => hour + 12,
            Period::Dawn | Period::EarlyMorning | Period::Morning if hour == 12 => 0,
            _ => hour,
        }
    }
}

// ---------------------------------------------------------------------------
// Anchoring to now.

/// The instant of writing and what it is on the user's calendar.
struct Today<'a> {
    now: Timestamp,
    tz: &'a TimeZone,
    date: Date,
}

impl Today<'_> {
    /// `None` when `now` is outside the years 1 to 9999, where no date
    /// can be written and nothing is meaningful.
    fn new(now: i64, tz: &TimeZone) -> Option<Today<'_>> {
        let now = Timestamp::from_second(now).ok()?;
        let date = tz.to_datetime(now).date();
        (1..=9999)
            .contains(&date.year())
            .then_some(Today { now, tz, date })
    }

    /// Due instant (unix seconds) and all-day flag, or `None` if invalid
    /// or past.
    fn resolve(&self, when: When) -> Option<(i64, bool)> {
        match when {
            When::After(seconds) => {
                if seconds <= 0 {
                    return None;
                }
                let due = self
                    .now
                    .checked_add(SignedDuration::from_secs(seconds))
                    .ok()?;
                Some((due.as_second(), false))
            }
            When::OnAt(spec, time, offset) => {
                let day = self.day_of(spec)?;
                if day.duration_since(self.date) > FARTHEST_AHEAD {
                    return None;
                }
                let zone = TimeZone::fixed(jiff::tz::Offset::from_seconds(offset).ok()?);
                let due = day.to_datetime(time).to_zoned(zone).ok()?.timestamp();
                (due >= self.now).then_some((due.as_second(), false))
            }
            When::On(spec, time) => {
                let day = self.day_of(spec)?;
                if day.duration_since(self.date) > FARTHEST_AHEAD {
                    return None;
                }
                // The offset in force on `day`, not today's.
                let due = day
                    .to_datetime(time.unwrap_or(ALL_DAY_TIME))
                    .to_zoned(self.tz.clone())
                    .ok()?
                    .timestamp();
                let past = match time {
                    Some(_) => due < self.now,
                    None => day < self.date,
                };
                (!past).then_some((due.as_second(), time.is_none()))
            }
        }
    }

    fn day_of(&self, spec: DateSpec) -> Option<Date> {
        let days_later = |n: i64| self.date.checked_add(Span::new().try_days(n).ok()?).ok();
        match spec {
            DateSpec::Ymd(y, m, d) => civil_date(y, m, d),
            DateSpec::MonthDay(m, d) => {
                let year = i64::from(self.date.year());
                [year - 1, year, year + 1]
                    .into_iter()
                    .filter_map(|y| civil_date(y, m, d))
                    // Nearest to today; on a tie, the future one.
                    .min_by_key(|day| (day.duration_since(self.date).unsigned_abs(), Reverse(*day)))
            }
            DateSpec::Days(n) => days_later(n),
            DateSpec::MonthEdge(months, last) => {
                let first = self
                    .date
                    .first_of_month()
                    .checked_add(Span::new().try_months(months).ok()?)
                    .ok()?;
                Some(if last { first.last_of_month() } else { first })
            }
            DateSpec::Weekday(wd, mode) => {
                let target = Weekday::from_monday_zero_offset(i8::try_from(wd).ok()?).ok()?;
                let from_monday = |weekday: Weekday| i64::from(weekday.to_monday_zero_offset());
                let this_week = from_monday(target) - from_monday(self.date.weekday());
                match mode {
                    WeekMode::ThisWeek => days_later(this_week),
                    WeekMode::NextWeek => days_later(this_week + 7),
                    WeekMode::WeekAfterNext => days_later(this_week + 14),
                    // Strictly after today: "on Friday" said on a Friday
                    // is next week's.
                    WeekMode::Upcoming => self.date.nth_weekday(1, target).ok(),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Splitting text into sentences (for context) and scanning them.

/// Sentences: split at line breaks, CJK sentence punctuation, `!?;`, and
/// a `.` followed by whitespace (not inside `3 p.m. tomorrow`).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let next = iter.peek().map(|(_, n)| *n);
        let ends = match c {
            '\n' | '。' | '！' | '？' | '；' | '!' | '?' | ';' => true,
            '.' => {
                let before = &text.as_bytes()[..i];
                let tail = before
                    .get(before.len().saturating_sub(3)..)
                    .unwrap_or_default();
                next.is_none_or(char::is_whitespace)
                    && !tail.eq_ignore_ascii_case(b"a.m")
                    && !tail.eq_ignore_ascii_case(b"p.m")
                    && !is_abbreviation(&text[..i])
            }
            _ => false,
        };
        if ends {
            let end = i + c.len_utf8();
            if !text[start..end].trim().is_empty() {
                out.push(&text[start..end]);
            }
            start = end;
        }
    }
    if !text[start..].trim().is_empty() {
        out.push(&text[start..]);
    }
    out
}

/// The words of `sentence`, lowercased.
fn words_of(sentence: &str) -> Vec<String> {
    sentence
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `sentence` tells of what happened, not of what is to come: a
/// subject ("we", or a noun after "the", "my"…) then a verb in the past
/// ("we reviewed", "the server crashed", "the plumber came"), or a
/// Chinese sentence done with ("来过了", "已经"), and nothing that points
/// ahead ("will", "going to", "to" before a verb, "plan", 要, 将).
/// "On Monday we reviewed the contract" makes no reminder for next
/// Monday; "we agreed to sign it on Friday" does.
fn tells_of_the_past(sentence: &str) -> bool {
    const SUBJECTS: [&str; 7] = ["i", "we", "he", "she", "they", "you", "it"];
    const DETERMINERS: [&str; 10] = [
        "the", "a", "an", "my", "our", "your", "his", "her", "their", "this",
    ];
    const PAST: [&str; 18] = [
        "was", "were", "had", "did", "went", "met", "saw", "got", "made", "took", "came", "left",
        "broke", "fell", "ran", "told", "said", "gave",
    ];
    // Verbs in the past that arrange what is still to come ("the dentist
    // confirmed Friday at 3pm").
    const ARRANGING: [&str; 12] = [
        "scheduled",
        "rescheduled",
        "booked",
        "confirmed",
        "postponed",
        "moved",
        "delayed",
        "arranged",
        "asked",
        "invited",
        "agreed",
        "decided",
    ];
    const AHEAD: [&str; 8] = [
        "will", "shall", "going", "to", "plan", "plans", "planned", "need",
    ];
    if sentence.contains(is_cjk) {
        let ahead = [
            "要", "将", "会", "准备", "打算", "计划", "记得", "提醒", "别忘",
        ];
        let done = ["过了", "已经", "刚才", "完了"];
        return !ahead.iter().any(|a| sentence.contains(a))
            && done.iter().any(|d| sentence.contains(d));
    }
    let words = words_of(sentence);
    if words
        .iter()
        .any(|w| AHEAD.contains(&w.as_str()) || w.ends_with("'ll"))
    {
        return false;
    }
    let past = |w: &str| {
        PAST.contains(&w) || (w.len() > 4 && w.ends_with("ed") && !ARRANGING.contains(&w))
    };
    words
        .windows(2)
        .any(|pair| SUBJECTS.contains(&pair[0].as_str()) && past(&pair[1]))
        || words
            .windows(3)
            .any(|w| DETERMINERS.contains(&w[0].as_str()) && !past(&w[1]) && past(&w[2]))
}

/// Whether a time phrase of `sentence` is tied to what is to come by the
/// word before it ("moved to Friday", "booked for Tuesday at 3pm").
fn points_ahead(sentence: &str, spans: &[(usize, usize, When)]) -> bool {
    spans.iter().any(|span| {
        matches!(
            word_before(sentence, span.0).as_str(),
            "to" | "for" | "until" | "till" | "by"
        )
    })
}

/// The word just before byte `start` of `sentence`, lowercased.
fn word_before(sentence: &str, start: usize) -> String {
    sentence
        .get(..start)
        .unwrap_or_default()
        .trim_end()
        .rsplit(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_lowercase()
}

/// Whether the time phrase at `start` repeats or is gone: "every Friday
/// at 4pm", "each Monday", "last Tuesday at 2pm" (read alone, "Tuesday at
/// 2pm" would be the next one).
fn repeats_or_past(sentence: &str, start: usize) -> bool {
    matches!(
        word_before(sentence, start).as_str(),
        "every" | "each" | "last" | "past" | "previous"
    )
}

/// Whether `sentence` tells of a habit or a rule, not of one occasion:
/// "every" or "each" before a day, a part of one or a week ("I run every
/// Monday and Thursday morning"), days in the plural ("on Fridays"),
/// "never", "always", "usually", or 每天, 每周, 每个, 每逢, 总是, 从不, and
/// the prohibitions 不要在, 别在, 禁止在, 绝不.
fn is_habit_or_rule(sentence: &str) -> bool {
    const RULES: [&str; 4] = ["never", "always", "usually", "daily"];
    const PERIODS: [&str; 12] = [
        "day",
        "morning",
        "afternoon",
        "evening",
        "night",
        "week",
        "weekday",
        "weekend",
        "month",
        "year",
        "other",
        "single",
    ];
    if [
        "每天",
        "每周",
        "每个",
        "每逢",
        "每星期",
        "每月",
        "总是",
        "从不",
        "从来不",
        // Prohibitions: "不要在周五下午部署", "千万别在周一早上开长会".
        "不要在",
        "别在",
        "不能在",
        "禁止在",
        "绝不",
        "切勿",
    ]
    .iter()
    .any(|w| sentence.contains(w))
    {
        return true;
    }
    let words = words_of(sentence);
    let is_day = |w: &str| {
        let w = w.strip_suffix('s').unwrap_or(w);
        WEEKDAYS_EN.iter().any(|(name, _)| *name == w) || PERIODS.contains(&w)
    };
    words.iter().any(|w| RULES.contains(&w.as_str()))
        || words
            .windows(2)
            .any(|pair| matches!(pair[0].as_str(), "every" | "each") && is_day(&pair[1]))
        || words.iter().any(|w| {
            WEEKDAYS_EN
                .iter()
                .any(|(name, _)| name.len() >= 6 && w.strip_suffix('s') == Some(name))
        })
}

/// Whether `before` (a text up to a full stop) ends in a title or an
/// abbreviation that a full stop does not end a sentence after: "Dr.",
/// "Mr.", "e.g.", an initial ("J.").
fn is_abbreviation(before: &str) -> bool {
    const SHORT: [&str; 14] = [
        "dr", "mr", "mrs", "ms", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "approx",
        "no",
    ];
    // The word as written, without what opens it: "(Dr", "[[Dr".
    let word = before
        .rsplit(|c: char| c.is_whitespace() || matches!(c, '(' | '[' | '"' | '\''))
        .next()
        .unwrap_or_default();
    let lower = word.to_ascii_lowercase();
    SHORT.contains(&lower.as_str())
        || (word.chars().count() == 1 && word.chars().all(|c| c.is_ascii_uppercase()))
}

/// A task ticked off (`- [x]`, Obsidian Tasks' `✅`, its cancelled `[-]`
/// and `❌`) or a plan called off: nothing to be reminded of.
fn done_or_cancelled(sentence: &str) -> bool {
    let line = sentence.trim_start();
    let line = line
        .strip_prefix(['-', '*', '+'])
        .map_or(line, str::trim_start);
    let ticked = ["[x]", "[X]", "[-]"].iter().any(|t| line.starts_with(t));
    let lower = sentence.to_lowercase();
    ticked
        || sentence.contains(['✅', '❌'])
        || ["cancelled", "canceled", "called off", "已取消", "取消了"]
            .iter()
            .any(|w| lower.contains(w))
}

/// Whether the byte `at` of `sentence` is struck out (`~~like this~~`,
/// `<del>like this</del>`, `<s>this</s>`).
fn struck_out(sentence: &str, at: usize) -> bool {
    let before = sentence[..at].to_ascii_lowercase();
    let opened = before.matches("<del>").count() + before.matches("<s>").count();
    let closed = before.matches("</del>").count() + before.matches("</s>").count();
    before.matches("~~").count() % 2 == 1 || opened > closed
}

/// `text` without what is struck out in it, and the marks: "Lunch with
/// ~~Alice~~ Carol" is about lunch with Carol.
fn without_struck(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let lower = rest.to_ascii_lowercase();
        let next = [("~~", "~~"), ("<del>", "</del>"), ("<s>", "</s>")]
            .into_iter()
            .filter_map(|(open, close)| lower.find(open).map(|at| (at, open, close)))
            .min_by_key(|(at, ..)| *at);
        let Some((at, open, close)) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..at]);
        let after = at + open.len();
        match lower[after..].find(close) {
            Some(end) => rest = &rest[after + end + close.len()..],
            None => {
                out.push_str(&rest[after..]);
                break;
            }
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A day alone just before the date phrase at `start`, joined to it ("from
/// 8 to 10 December", "8-10 December", "between 8 and 10 December"): where
/// it starts (with its "from" or "between") and the day.
fn day_before(sentence: &str, start: usize) -> Option<(usize, u32)> {
    let before = sentence.get(..start)?.trim_end();
    let lower = before.to_ascii_lowercase();
    let join = [" to", " until", " till", " through", " and", "-", "–", "—"]
        .into_iter()
        .find(|j| lower.ends_with(j))?;
    let rest = before[..before.len() - join.len()].trim_end();
    let rest = ["st", "nd", "rd", "th"]
        .into_iter()
        .find_map(|s| rest.strip_suffix(s))
        .unwrap_or(rest);
    let digits = rest.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 2 {
        return None;
    }
    let at = rest.len() - digits;
    if rest[..at]
        .chars()
        .next_back()
        .is_some_and(|c| !c.is_whitespace())
    {
        return None;
    }
    let day: u32 = rest[at..].parse().ok()?;
    let lead = rest[..at].trim_end();
    let lead_lower = lead.to_ascii_lowercase();
    let from = ["from", "between"]
        .into_iter()
        .find(|w| {
            lead_lower.ends_with(w)
                && lead[..lead.len() - w.len()]
                    .chars()
                    .next_back()
                    .is_none_or(char::is_whitespace)
        })
        .map_or(at, |w| lead.len() - w.len());
    (1..=31).contains(&day).then_some((from, day))
}

/// Whether `sentence` moves something from one time to another
/// ("moved from Monday to Tuesday", "改到周五"): its two times are then
/// two occasions, not one stretch.
fn moves(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    let words = words_of(&lower);
    let english = words.iter().any(|w| {
        [
            "move",
            "moved",
            "moves",
            "moving",
            "reschedule",
            "rescheduled",
            "postpone",
            "postponed",
            "push",
            "pushed",
            "shift",
            "shifted",
            "change",
            "changed",
        ]
        .contains(&w.as_str())
    });
    english
        || [
            "改到",
            "改成",
            "改期",
            "推迟",
            "推到",
            "挪到",
            "延期",
            "提前到",
            "换到",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

/// Whether the time phrase at `next` ends a stretch that the one at
/// `start..end` begins: only a range's joining word lies between them
/// ("to", "until", "-", "到", "至"; "and" after "between").
fn ends_a_stretch(sentence: &str, start: usize, end: usize, next: usize) -> bool {
    let Some(between) = sentence.get(end..next) else {
        return false;
    };
    let between = between.trim().to_lowercase();
    if between == "and" {
        let before = sentence.get(..start).unwrap_or_default().to_lowercase();
        return before.trim_end().ends_with("between");
    }
    [
        "to",
        "until",
        "till",
        "through",
        "thru",
        "-",
        "–",
        "—",
        "~",
        "到",
        "至",
        "一直到",
    ]
    .contains(&between.as_str())
}

/// Whether the day at `start..end` of `sentence` is a day by which
/// something must be done ahead of it: "before 10 January", "1月10日之前",
/// "expires 10 January, rotate it before then"; not the end of a month or
/// a year, the last day of which is still before it.
fn before_the_day(sentence: &str, start: usize, end: usize) -> bool {
    let lower = sentence.to_lowercase();
    // Before a month's or a year's end is still within it.
    let phrase = lower.get(start..end).unwrap_or_default();
    if ["end", "底", "末"].iter().any(|w| phrase.contains(w)) {
        return false;
    }
    let ahead = lower.get(..start).unwrap_or_default();
    let after = lower.get(end..).unwrap_or_default();
    let words_ahead = words_of(ahead);
    words_ahead.last().is_some_and(|w| w == "before")
        || ["之前", "以前", "前"].iter().any(|w| after.starts_with(w))
        || [
            "before then",
            "before that",
            "before it",
            "ahead of it",
            "ahead of then",
        ]
        .iter()
        .any(|w| after.contains(w))
}

/// `due` (seconds, in `tz`) moved to `day` of its month, when that is
/// earlier.
fn earlier_day(due: i64, day: u32, tz: &TimeZone) -> Option<i64> {
    let zoned = jiff::Timestamp::from_second(due).ok()?.to_zoned(tz.clone());
    let day = i8::try_from(day).ok()?;
    if day >= zoned.day() {
        return None;
    }
    Some(zoned.with().day(day).build().ok()?.timestamp().as_second())
}

/// Every time expression in `sentence`, as byte spans and meanings,
/// whether or not it is still ahead.
/// Whether `text` names a time a reminder could be made for ("next
/// Tuesday", "tomorrow 3pm", "明天下午三点"), wherever it falls.
pub fn names_a_time(text: &str) -> bool {
    sentences(text)
        .into_iter()
        .any(|sentence| !time_phrases(sentence).is_empty())
}

fn time_phrases(sentence: &str) -> Vec<(usize, usize, When)> {
    let lower = sentence.to_ascii_lowercase();
    let scan = Scan { s: &lower };
    let mut spans = Vec::new();
    let mut pos = 0;
    while let Some(cur) = lower[pos..].chars().next() {
        let prev = lower[..pos].chars().next_back();
        // Never start inside a word or number ("sat" in "saturday").
        let inside_word =
            prev.is_some_and(|p| p.is_ascii_alphanumeric()) && cur.is_ascii_alphanumeric();
        if !inside_word && let Some((end, when)) = scan.longest_at(pos) {
            spans.push((pos, end, when));
            pos = end;
            continue;
        }
        pos += cur.len_utf8();
    }
    spans
}

/// How long a reminder's subject may be, in characters.
const MAX_ABOUT_CHARS: usize = 80;

/// Words that only tie what comes before them to a time ("on", "by"),
/// dropped from the end of what precedes a removed time phrase.
const BEFORE_TIME_EN: [&str; 18] = [
    "on", "at", "by", "in", "for", "from", "until", "till", "before", "after", "due", "around",
    "starting", "is", "are", "and", "to", "through",
];

/// The same in Chinese, as suffixes of what precedes a time phrase.
const BEFORE_TIME_ZH: [&str; 6] = ["截止到", "截止", "在", "于", "到", "从"];

/// What may follow a Chinese time phrase and belongs to it ("…之前").
const AFTER_TIME_ZH: [&str; 8] = ["之前", "以前", "之后", "以后", "前", "后", "的", "起"];

/// Labels and asks at the start of a sentence that say nothing about
/// what is to be done, lowercased.
const LABELS: [&str; 20] = [
    "remind me to ",
    "remind me:",
    "remind me ",
    "don't forget to ",
    "dont forget to ",
    "remember to ",
    "reminder:",
    "remember:",
    "todo:",
    "to do:",
    "to-do:",
    "note:",
    "decided:",
    "decision:",
    "deadline:",
    "提醒我",
    "提醒：",
    "记得",
    "别忘了",
    "不要忘记",
];

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{2E80}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{FF00}'..='\u{FFEF}')
}

/// Punctuation and markup trimmed from the ends of a subject.
fn is_edge(c: char) -> bool {
    c.is_whitespace()
        || (c.is_ascii_punctuation() && !matches!(c, '"' | '\'' | '[' | ']' | ')' | '$' | '`'))
        || "，。、：；！？（【「《—–…".contains(c)
}

/// `piece` without the end of a stretch of time it opens with: "到五点",
/// "至下午6点", "- 5pm", "to 5:30pm", "until 17:00".
fn without_range_end(piece: &str) -> &str {
    let Some(rest) = ["到", "至", "-", "–", "~", "to ", "until ", "till "]
        .iter()
        .find_map(|w| piece.strip_prefix(w))
    else {
        return piece;
    };
    let rest = rest.trim_start();
    let rest = ["上午", "下午", "晚上", "中午", "早上"]
        .iter()
        .find_map(|w| rest.strip_prefix(w))
        .unwrap_or(rest);
    let time_len = rest
        .char_indices()
        .take_while(|(_, c)| {
            c.is_ascii_digit() || "零一二三四五六七八九十两:：点时半刻分钟".contains(*c)
        })
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8());
    if time_len == 0 {
        return piece;
    }
    let after = &rest[time_len..];
    let after = ["am", "pm", "a.m.", "p.m."]
        .iter()
        .find_map(|w| after.strip_prefix(w))
        .unwrap_or(after);
    after.trim_start_matches(is_edge)
}

/// `sentence` without the `spans`, cleaned into a subject.
fn about(sentence: &str, spans: &[(usize, usize, When)]) -> String {
    let mut pieces: Vec<&str> = Vec::with_capacity(spans.len() + 1);
    let mut start = 0;
    for (from, to, _) in spans {
        // Spans may overlap ("Dec 24-Jan 1"): what one took is gone.
        if *to <= start {
            continue;
        }
        pieces.push(&sentence[start..(*from).max(start)]);
        start = *to;
    }
    pieces.push(&sentence[start..]);
    let last = pieces.len() - 1;
    let mut out = String::new();
    for (i, piece) in pieces.into_iter().enumerate() {
        let mut piece = piece;
        if i > 0 {
            // Right after a time phrase, which may have been in brackets.
            piece = piece.trim_start_matches(|c| is_edge(c) || matches!(c, ')' | ']' | '）'));
            if let Some(rest) = AFTER_TIME_ZH.iter().find_map(|w| piece.strip_prefix(w)) {
                piece = rest.trim_start_matches(is_edge);
            }
            // The end of a stretch the phrase began ("三点到五点", "3pm
            // to 5pm") belongs to it.
            piece = without_range_end(piece);
            // A time that was what the sentence is about ("12月3日是李娜
            // 的生日", "December 3 is Lina's birthday") leaves its verb.
            if out.is_empty() {
                for copula in ["是", "is ", "was "] {
                    if let Some(rest) = piece.strip_prefix(copula) {
                        piece = rest.trim_start_matches(is_edge);
                    }
                }
            }
        }
        if i < last {
            // Right before one.
            piece = trim_tie(piece);
        }
        if piece.is_empty() {
            continue;
        }
        let joined = out.chars().next_back();
        let next = piece.chars().next();
        if joined.is_some_and(|c| !is_cjk(c)) && next.is_some_and(|c| !is_cjk(c)) {
            out.push(' ');
        }
        out.push_str(piece);
    }
    let mut text = out.split_whitespace().collect::<Vec<_>>().join(" ");
    loop {
        let trimmed = strip_markup(&text);
        let lower = trimmed.to_lowercase();
        let unlabeled = LABELS
            .iter()
            .find(|l| lower.starts_with(*l))
            .and_then(|l| trimmed.get(l.len()..))
            .map(|rest| rest.trim_start_matches(is_edge));
        let next = unlabeled.unwrap_or(trimmed).trim_end_matches(is_edge);
        if next.len() == text.len() {
            break;
        }
        text = next.to_string();
    }
    if !text.chars().any(char::is_alphanumeric) {
        return String::new();
    }
    let mut chars = text.chars();
    let mut text = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => text,
    };
    if let Some((i, _)) = text.char_indices().nth(MAX_ABOUT_CHARS) {
        let cut = text[..i].rfind(' ').filter(|at| *at > i / 2).unwrap_or(i);
        text = format!("{}…", text[..cut].trim_end_matches(is_edge));
    }
    text
}

/// `piece` without the punctuation and the words that tie it to the time
/// phrase after it.
fn trim_tie(piece: &str) -> &str {
    let mut piece = piece.trim_end_matches(is_edge);
    loop {
        let zh = BEFORE_TIME_ZH.iter().find_map(|w| piece.strip_suffix(w));
        let en = piece
            .rsplit_once(|c: char| c.is_whitespace())
            .and_then(|(head, word)| {
                BEFORE_TIME_EN
                    .contains(&word.to_ascii_lowercase().as_str())
                    .then_some(head)
            });
        let whole_word = BEFORE_TIME_EN
            .contains(&piece.to_ascii_lowercase().as_str())
            .then_some("");
        match zh.or(en).or(whole_word) {
            Some(rest) => piece = rest.trim_end_matches(is_edge),
            None => return piece,
        }
    }
}

/// `text` without leading list markers, check boxes, heading marks and
/// quote marks.
fn strip_markup(text: &str) -> &str {
    let mut text = text.trim_start_matches(is_edge);
    loop {
        let numbered = text
            .find(|c: char| !c.is_ascii_digit())
            .filter(|i| *i > 0)
            .and_then(|i| {
                text[i..]
                    .strip_prefix(". ")
                    .or(text[i..].strip_prefix(") "))
            });
        let next = ["[ ]", "[x]", "[X]"]
            .iter()
            .find_map(|m| text.strip_prefix(m))
            .or(numbered)
            .map(|rest| rest.trim_start_matches(is_edge));
        match next {
            Some(rest) => text = rest,
            None => return text,
        }
    }
}

fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// A lowercased sentence and parsers over byte positions in it. Every
/// parser advances only over what it matched, so positions stay on char
/// boundaries.
struct Scan<'a> {
    s: &'a str,
}

const WEEKDAYS_EN: [(&str, u32); 18] = [
    ("monday", 0),
    ("tuesday", 1),
    ("wednesday", 2),
    ("thursday", 3),
    ("friday", 4),
    ("saturday", 5),
    ("sunday", 6),
    ("mon", 0),
    ("tues", 1),
    ("tue", 1),
    ("wed", 2),
    ("thurs", 3),
    ("thur", 3),
    ("thu", 3),
    ("fri", 4),
    ("sat", 5),
    ("sun", 6),
    ("weds", 2),
];

/// Zone abbreviations that name one offset, in hours east of UTC; `0`
/// for UTC and GMT, which may carry an offset of their own.
const ZONES_EN: [(&str, i32); 16] = [
    ("utc", 0),
    ("gmt", 0),
    ("est", -5),
    ("edt", -4),
    ("cdt", -5),
    ("mst", -7),
    ("mdt", -6),
    ("pst", -8),
    ("pdt", -7),
    ("akst", -9),
    ("cet", 1),
    ("cest", 2),
    ("eet", 2),
    ("eest", 3),
    ("jst", 9),
    ("kst", 9),
];

/// The month an English name or its usual abbreviation names (`Nov`,
/// `november`, `Sept.`), any case.
pub fn month_named(word: &str) -> Option<u32> {
    let word = word.trim_end_matches('.').to_ascii_lowercase();
    MONTHS_EN
        .iter()
        .find(|(name, _)| *name == word)
        .map(|(_, m)| *m)
}

const MONTHS_EN: [(&str, u32); 24] = [
    ("january", 1),
    ("february", 2),
    ("march", 3),
    ("april", 4),
    ("may", 5),
    ("june", 6),
    ("july", 7),
    ("august", 8),
    ("september", 9),
    ("october", 10),
    ("november", 11),
    ("december", 12),
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sept", 9),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];

const NUMBER_WORDS: [(&str, u32); 14] = [
    ("a", 1),
    ("an", 1),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
];

impl Scan<'_> {
    /// The longest expression starting at `pos`.
    fn longest_at(&self, pos: usize) -> Option<(usize, When)> {
        [self.english(pos), self.chinese(pos)]
            .into_iter()
            .flatten()
            .max_by_key(|(end, _)| *end)
    }

    fn rest(&self, pos: usize) -> &str {
        self.s.get(pos..).unwrap_or_default()
    }

    fn lit(&self, pos: usize, w: &str) -> Option<usize> {
        self.rest(pos).starts_with(w).then_some(pos + w.len())
    }

    /// `w` followed by a word boundary.
    fn word(&self, pos: usize, w: &str) -> Option<usize> {
        let end = self.lit(pos, w)?;
        let next = self.rest(end).chars().next();
        (!next.is_some_and(|c| c.is_ascii_alphanumeric())).then_some(end)
    }

    /// The first of `words` (with a boundary after it) and its value.
    fn one_of(&self, pos: usize, words: &[(&str, u32)]) -> Option<(usize, u32)> {
        words
            .iter()
            .find_map(|(w, v)| self.word(pos, w).map(|e| (e, *v)))
    }

    fn ws(&self, pos: usize) -> usize {
        pos + self
            .rest(pos)
            .bytes()
            .take_while(|b| *b == b' ' || *b == b'\t')
            .count()
    }

    fn ws1(&self, pos: usize) -> Option<usize> {
        let end = self.ws(pos);
        (end > pos).then_some(end)
    }

    /// A run of `min..=max` ASCII digits not followed by another digit.
    fn digits(&self, pos: usize, min: usize, max: usize) -> Option<(usize, u32)> {
        let n = self
            .rest(pos)
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if n < min || n > max {
            return None;
        }
        let value = self.rest(pos)[..n].parse().ok()?;
        Some((pos + n, value))
    }

    // -- English ------------------------------------------------------------

    fn english(&self, pos: usize) -> Option<(usize, When)> {
        let mut best: Option<(usize, When)> = None;
        let mut offer = |m: Option<(usize, When)>| {
            if let Some(m) = m
                && best.is_none_or(|b| m.0 > b.0)
            {
                best = Some(m);
            }
        };
        // Date, then an optional time.
        if let Some((end, spec, default)) = self.date_en(pos) {
            match self.time_suffix(end) {
                Some((end, time)) => offer(Some((end, When::On(spec, Some(time))))),
                None => offer(self.untimed(end, spec, default)),
            }
        }
        // Time, then a date: "3pm tomorrow", "at 15:00 on Friday",
        // "from 3 to 5pm on Thursday".
        for time in [self.time_range_en(pos), self.time_en(pos)] {
            offer(time.and_then(|(end, time)| {
                let p = self.ws1(end)?;
                let (end, spec, _) = self.date_en(p)?;
                Some((end, When::On(spec, Some(time))))
            }));
        }
        offer(self.in_en(pos));
        // A zone after the time: "3pm EST", "09:00 UTC".
        match best {
            Some((end, When::On(spec, Some(time)))) => match self.zone_en(end) {
                Some((end, offset)) => Some((end, When::OnAt(spec, time, offset))),
                None => best,
            },
            _ => best,
        }
    }

    /// A time zone named after a time, as seconds east of UTC: `UTC`,
    /// `GMT`, either with `+8` or `-05:00`, or an abbreviation that names
    /// one offset (`EST`, `PDT`, `CET`, `JST`; not `CST` or `IST`, which
    /// name several).
    fn zone_en(&self, pos: usize) -> Option<(usize, i32)> {
        let p = self.ws1(pos)?;
        for (name, hours) in ZONES_EN {
            let Some(end) = self.word(p, name) else {
                continue;
            };
            if hours != 0 {
                return Some((end, hours * 3600));
            }
            // UTC or GMT, perhaps with an offset.
            let sign = match self.rest(end).bytes().next() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return Some((end, 0)),
            };
            let Some((q, h)) = self.digits(end + 1, 1, 2) else {
                return Some((end, 0));
            };
            let (q, m) = match self.lit(q, ":").and_then(|r| self.digits(r, 2, 2)) {
                Some((r, m)) => (r, m),
                None => (q, 0),
            };
            if h > 14 || m > 59 {
                return Some((end, 0));
            }
            return Some((q, sign * i32::try_from(h * 3600 + m * 60).ok()?));
        }
        None
    }

    /// A range of times as its start: `3-5pm`, `3 to 5pm`, `from 18:00 to
    /// 19:30`, `10am-noon`. A start without am or pm is in the end's half
    /// of the day when it fits before the end ("3 to 5pm" starts at 15:00).
    fn time_range_en(&self, pos: usize) -> Option<(usize, Time)> {
        let p = self
            .word(pos, "from")
            .and_then(|p| self.ws1(p))
            .unwrap_or(pos);
        let (q, start) = match self.time_en(p) {
            Some(m) => m,
            None => {
                let (q, hour) = self.digits(p, 1, 2)?;
                (q, clock(hour, 0)?)
            }
        };
        let said_half = self.s[p..q].contains('m');
        let r = self.ws(q);
        let r = ["-", "–", "—"]
            .into_iter()
            .find_map(|w| self.lit(r, w))
            .or_else(|| {
                ["to", "until", "till"]
                    .into_iter()
                    .find_map(|w| self.word(r, w))
            })?;
        let r = self.ws(r);
        let (end, finish) = self.time_en(r)?;
        let (h, f) = (start.hour(), finish.hour());
        let start = if !said_half && h < 12 && f >= 12 && h + 12 <= f {
            clock(
                u32::try_from(h + 12).ok()?,
                u32::try_from(start.minute()).ok()?,
            )?
        } else {
            start
        };
        Some((end, start))
    }

    fn untimed(&self, end: usize, spec: DateSpec, default: Untimed) -> Option<(usize, When)> {
        match default {
            Untimed::AllDay => Some((end, When::On(spec, None))),
            Untimed::NeedsTime => None,
            Untimed::Implied(p) => Some((end, When::On(spec, Some(p.default_clock()?)))),
        }
    }

    fn date_en(&self, pos: usize) -> Option<(usize, DateSpec, Untimed)> {
        use Untimed::*;
        for (w, days, default) in [
            ("the day after tomorrow", 2, AllDay),
            ("day after tomorrow", 2, AllDay),
            ("tomorrow", 1, AllDay),
            ("today", 0, NeedsTime),
            ("tonight", 0, Implied(Period::Evening)),
        ] {
            if let Some(end) = self.word(pos, w) {
                return Some((end, DateSpec::Days(days), default));
            }
        }
        // The end or the start of a month, a weekend, a holiday.
        for (w, spec) in [
            ("the end of next month", DateSpec::MonthEdge(1, true)),
            ("end of next month", DateSpec::MonthEdge(1, true)),
            ("the end of the month", DateSpec::MonthEdge(0, true)),
            ("end of the month", DateSpec::MonthEdge(0, true)),
            ("end of month", DateSpec::MonthEdge(0, true)),
            ("early next month", DateSpec::MonthEdge(1, false)),
            ("the beginning of next month", DateSpec::MonthEdge(1, false)),
            ("beginning of next month", DateSpec::MonthEdge(1, false)),
            ("the start of next month", DateSpec::MonthEdge(1, false)),
            ("start of next month", DateSpec::MonthEdge(1, false)),
            ("next weekend", DateSpec::Weekday(5, WeekMode::NextWeek)),
            ("this weekend", DateSpec::Weekday(5, WeekMode::ThisWeek)),
            ("new year's day", DateSpec::MonthDay(1, 1)),
            ("christmas", DateSpec::MonthDay(12, 25)),
        ] {
            if let Some(end) = self.word(pos, w) {
                return Some((end, spec, AllDay));
            }
        }
        let weekday_after = |p: usize, mode| {
            let p = self.ws1(p)?;
            let (end, wd) = self.one_of(p, &WEEKDAYS_EN)?;
            Some((end, DateSpec::Weekday(wd, mode), AllDay))
        };
        if let Some(p) = self.word(pos, "next") {
            return weekday_after(p, WeekMode::NextWeek);
        }
        if let Some(p) = self.word(pos, "this") {
            return weekday_after(p, WeekMode::ThisWeek);
        }
        if let Some(p) = self.word(pos, "on").or_else(|| self.word(pos, "by")) {
            return weekday_after(p, WeekMode::Upcoming).or_else(|| {
                let (end, spec) = self.absolute_en(self.ws1(p)?)?;
                Some((end, spec, AllDay))
            });
        }
        if let Some((end, wd)) = self.one_of(pos, &WEEKDAYS_EN) {
            return Some((end, DateSpec::Weekday(wd, WeekMode::Upcoming), NeedsTime));
        }
        let (end, spec) = self.absolute_en(pos)?;
        Some((end, spec, AllDay))
    }

    /// `2026-12-01`, `2026/12/01`, `December 1[st][, 2026]`,
    /// `1[st] December [2026]`.
    fn absolute_en(&self, pos: usize) -> Option<(usize, DateSpec)> {
        if let Some((p, y)) = self.digits(pos, 4, 4) {
            let sep = self
                .rest(p)
                .bytes()
                .next()
                .filter(|b| *b == b'-' || *b == b'/')?;
            let (p, m) = self.digits(p + 1, 1, 2)?;
            let p = (self.rest(p).bytes().next() == Some(sep)).then_some(p + 1)?;
            let (end, d) = self.digits(p, 1, 2)?;
            civil_date(i64::from(y), m, d)?;
            return Some((end, DateSpec::Ymd(i64::from(y), m, d)));
        }
        let year_after = |p: usize| -> Option<(usize, u32)> {
            let p = self.lit(p, ",").unwrap_or(p);
            let p = self.ws1(p)?;
            let (end, y) = self.digits(p, 4, 4)?;
            // "December 1, 2026 3pm" keeps the year; "Dec 1 2000 people"
            // would not be a year, but such text is rare enough.
            Some((end, y))
        };
        let spec = |end: usize, y: Option<u32>, m: u32, d: u32| {
            let spec = match y {
                Some(y) => DateSpec::Ymd(i64::from(y), m, d),
                None => DateSpec::MonthDay(m, d),
            };
            // Reject impossible dates (a leap day is checked when resolved).
            month_day_exists(m, d).then_some((end, spec))
        };
        if let Some((p, m)) = self.one_of(pos, &MONTHS_EN) {
            let p = self.lit(p, ".").unwrap_or(p);
            let p = self.ws1(p)?;
            let (p, d) = self.digits(p, 1, 2)?;
            let p = self.ordinal(p);
            return match year_after(p) {
                Some((end, y)) => spec(end, Some(y), m, d),
                None => spec(p, None, m, d),
            };
        }
        let (p, d) = self.digits(pos, 1, 2)?;
        let p = self.ordinal(p);
        let p = self.ws1(p)?;
        let p = self.word(p, "of").and_then(|p| self.ws1(p)).unwrap_or(p);
        let (p, m) = self.one_of(p, &MONTHS_EN)?;
        match self.ws1(p).and_then(|q| self.digits(q, 4, 4)) {
            Some((end, y)) => spec(end, Some(y), m, d),
            None => spec(p, None, m, d),
        }
    }

    /// Skips `st`, `nd`, `rd`, `th` after a day number.
    fn ordinal(&self, pos: usize) -> usize {
        ["st", "nd", "rd", "th"]
            .iter()
            .find_map(|s| self.word(pos, s))
            .unwrap_or(pos)
    }

    /// ` 3pm`, ` at 15:30`, `, 9am`, `T14:00`, ` morning`, after a date.
    fn time_suffix(&self, pos: usize) -> Option<(usize, Time)> {
        if let Some(p) = self.lit(pos, "t")
            && let Some(m) = self.clock_24h(p)
        {
            return Some(m);
        }
        let p = self.lit(pos, ",").unwrap_or(pos);
        let p = self.ws(p);
        if p == pos {
            // A time must be separated from the date ("tomorrow3pm" is not
            // how anyone writes, and guards against digit runs).
            return self.chinese_time(pos, None);
        }
        if let Some(m) = self.time_range_en(p).or_else(|| self.time_en(p)) {
            return Some(m);
        }
        for (w, hour) in [
            ("morning", 9),
            ("noon", 12),
            ("afternoon", 15),
            ("evening", 19),
            ("night", 21),
        ] {
            if let Some(end) = self.word(p, w) {
                return Some((end, clock(hour, 0)?));
            }
        }
        self.chinese_time(p, None)
    }

    /// `3pm`, `3 pm`, `3:30pm`, `3 p.m.`, `15:30`, `noon`, with an
    /// optional leading `at `.
    fn time_en(&self, pos: usize) -> Option<(usize, Time)> {
        let p = self
            .word(pos, "at")
            .and_then(|p| self.ws1(p))
            .unwrap_or(pos);
        if let Some(end) = self.word(p, "noon") {
            return Some((end, clock(12, 0)?));
        }
        let (q, hour) = self.digits(p, 1, 2)?;
        let (q, minute) = match self.lit(q, ":") {
            Some(r) => {
                let (r, m) = self.digits(r, 2, 2)?;
                (r, Some(m))
            }
            None => (q, None),
        };
        let r = self.ws(q);
        let meridiem = [("am", false), ("a.m.", false), ("pm", true), ("p.m.", true)]
            .into_iter()
            .find_map(|(w, pm)| {
                let end = self.lit(r, w)?;
                let boundary = w.ends_with('.')
                    || !self
                        .rest(end)
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphanumeric());
                boundary.then_some((end, pm))
            });
        match meridiem {
            Some((end, pm)) => {
                if !(1..=12).contains(&hour) {
                    return None;
                }
                let hour = match (hour, pm) {
                    (12, false) => 0,
                    (12, true) => 12,
                    (h, true) => h + 12,
                    (h, false) => h,
                };
                Some((end, clock(hour, minute.unwrap_or(0))?))
            }
            None if minute.is_some() => self.clock_24h(p),
            None => None,
        }
    }

    /// `HH:MM[:SS]` in 24-hour form.
    fn clock_24h(&self, pos: usize) -> Option<(usize, Time)> {
        let (p, hour) = self.digits(pos, 1, 2)?;
        let p = self.lit(p, ":")?;
        let (mut end, minute) = self.digits(p, 2, 2)?;
        if let Some((e, _)) = self.lit(end, ":").and_then(|p| self.digits(p, 2, 2)) {
            end = e;
        }
        Some((end, clock(hour, minute)?))
    }

    /// `in 3 days`, `in 2 hours`, `in an hour`, `in 30 minutes`,
    /// `in two weeks`.
    fn in_en(&self, pos: usize) -> Option<(usize, When)> {
        let p = self.ws1(self.word(pos, "in")?)?;
        let (p, n) = self
            .digits(p, 1, 5)
            .or_else(|| self.one_of(p, &NUMBER_WORDS))?;
        let p = self.ws1(p)?;
        let n = i64::from(n);
        for (w, seconds) in [
            ("minutes", 60),
            ("minute", 60),
            ("mins", 60),
            ("min", 60),
            ("hours", 3600),
            ("hour", 3600),
            ("hrs", 3600),
            ("hr", 3600),
        ] {
            if let Some(end) = self.word(p, w) {
                return Some((end, When::After(n * seconds)));
            }
        }
        for (w, days) in [("days", 1), ("day", 1), ("weeks", 7), ("week", 7)] {
            if let Some(end) = self.word(p, w) {
                let spec = DateSpec::Days(n * days);
                return Some(match self.time_suffix(end) {
                    Some((end, time)) => (end, When::On(spec, Some(time))),
                    None => (end, When::On(spec, None)),
                });
            }
        }
        None
    }

    // -- Chinese ------------------------------------------------------------

    fn chinese(&self, pos: usize) -> Option<(usize, When)> {
        if let Some((end, spec, default)) = self.date_zh(pos) {
            let implied = match default {
                Untimed::Implied(p) => Some(p),
                _ => None,
            };
            let p = self.ws(end);
            let timed = self.chinese_time(p, implied).or_else(|| self.time_en(p));
            return match timed {
                Some((end, time)) => Some((end, When::On(spec, Some(time)))),
                None => self.untimed(end, spec, default),
            };
        }
        self.relative_zh(pos)
    }

    fn date_zh(&self, pos: usize) -> Option<(usize, DateSpec, Untimed)> {
        use Untimed::*;
        for (w, days, default) in [
            ("大后天", 3, AllDay),
            ("后天", 2, AllDay),
            ("明天", 1, AllDay),
            ("明日", 1, AllDay),
            ("明早", 1, Implied(Period::EarlyMorning)),
            ("明晚", 1, Implied(Period::Evening)),
            ("今天", 0, NeedsTime),
            ("今日", 0, NeedsTime),
            ("今早", 0, Implied(Period::EarlyMorning)),
            ("今晚", 0, Implied(Period::Evening)),
        ] {
            if let Some(end) = self.lit(pos, w) {
                return Some((end, DateSpec::Days(days), default));
            }
        }
        // The end or the start of a month, a weekend, a holiday.
        for (w, spec) in [
            ("下个月底", DateSpec::MonthEdge(1, true)),
            ("下月底", DateSpec::MonthEdge(1, true)),
            ("下个月初", DateSpec::MonthEdge(1, false)),
            ("下月初", DateSpec::MonthEdge(1, false)),
            ("这个月底", DateSpec::MonthEdge(0, true)),
            ("本月底", DateSpec::MonthEdge(0, true)),
            ("月底", DateSpec::MonthEdge(0, true)),
            ("下下周末", DateSpec::Weekday(5, WeekMode::WeekAfterNext)),
            ("下个周末", DateSpec::Weekday(5, WeekMode::NextWeek)),
            ("下周末", DateSpec::Weekday(5, WeekMode::NextWeek)),
            ("这个周末", DateSpec::Weekday(5, WeekMode::ThisWeek)),
            ("这周末", DateSpec::Weekday(5, WeekMode::ThisWeek)),
            ("本周末", DateSpec::Weekday(5, WeekMode::ThisWeek)),
            ("元旦", DateSpec::MonthDay(1, 1)),
            ("国庆", DateSpec::MonthDay(10, 1)),
            ("圣诞", DateSpec::MonthDay(12, 25)),
        ] {
            if let Some(end) = self.lit(pos, w) {
                return Some((end, spec, AllDay));
            }
        }
        let prev = self.s[..pos].chars().next_back();
        for (prefix, mode) in [
            ("下下个星期", WeekMode::WeekAfterNext),
            ("下下个礼拜", WeekMode::WeekAfterNext),
            ("下下星期", WeekMode::WeekAfterNext),
            ("下下礼拜", WeekMode::WeekAfterNext),
            ("下下周", WeekMode::WeekAfterNext),
            ("下个星期", WeekMode::NextWeek),
            ("下个礼拜", WeekMode::NextWeek),
            ("下星期", WeekMode::NextWeek),
            ("下礼拜", WeekMode::NextWeek),
            ("下周", WeekMode::NextWeek),
            ("这个星期", WeekMode::ThisWeek),
            ("这星期", WeekMode::ThisWeek),
            ("本星期", WeekMode::ThisWeek),
            ("这周", WeekMode::ThisWeek),
            ("本周", WeekMode::ThisWeek),
            ("星期", WeekMode::Upcoming),
            ("礼拜", WeekMode::Upcoming),
            ("周", WeekMode::Upcoming),
        ] {
            if let Some(p) = self.lit(pos, prefix) {
                // "每周五" repeats (a habit); "上周五" is past.
                if mode == WeekMode::Upcoming && matches!(prev, Some('每' | '上' | '个')) {
                    return None;
                }
                let c = self.rest(p).chars().next()?;
                let wd = match c {
                    '一' | '1' => 0,
                    '二' | '2' => 1,
                    '三' | '3' => 2,
                    '四' | '4' => 3,
                    '五' | '5' => 4,
                    '六' | '6' => 5,
                    '日' | '天' | '七' | '7' => 6,
                    _ => return None,
                };
                return Some((p + c.len_utf8(), DateSpec::Weekday(wd, mode), AllDay));
            }
        }
        // [YYYY年]M月D日|号
        let (p, year) = match self.cn_number(pos) {
            Some((p, y)) if y >= 1000 => match self.lit(p, "年") {
                Some(p) => (p, Some(y)),
                None => return None,
            },
            _ => (pos, None),
        };
        let (p, m) = self.cn_number(p)?;
        let p = self.lit(p, "月")?;
        let (p, d) = self.cn_number(p)?;
        let end = self.lit(p, "日").or_else(|| self.lit(p, "号"))?;
        let spec = match year {
            Some(y) => DateSpec::Ymd(i64::from(y), m, d),
            None => DateSpec::MonthDay(m, d),
        };
        month_day_exists(m, d).then_some((end, spec, AllDay))
    }

    /// `[时段][N点|时[半|一刻|N分]]`, or a time like `15:30`; with only
    /// a period (`下午`), that period's usual hour. `implied` is the period
    /// carried by a word such as 今晚.
    fn chinese_time(&self, pos: usize, implied: Option<Period>) -> Option<(usize, Time)> {
        let mut p = pos;
        let mut period = implied;
        for (w, per) in [
            ("凌晨", Period::Dawn),
            ("早上", Period::EarlyMorning),
            ("早晨", Period::EarlyMorning),
            ("上午", Period::Morning),
            ("中午", Period::Noon),
            ("下午", Period::Afternoon),
            ("傍晚", Period::Dusk),
            ("晚上", Period::Evening),
            ("夜里", Period::Night),
        ] {
            if let Some(end) = self.lit(p, w) {
                period = Some(per);
                p = end;
                break;
            }
        }
        let explicit_period = p > pos;
        let hour_and_minute = self.cn_number(p).and_then(|(q, hour)| {
            let q = self
                .lit(q, "点")
                .or_else(|| self.lit(q, "時").or_else(|| self.lit(q, "时")))?;
            let q = self.lit(q, "钟").unwrap_or(q);
            if let Some(e) = self.lit(q, "半") {
                return Some((e, hour, 30));
            }
            if let Some(e) = self.lit(q, "一刻") {
                return Some((e, hour, 15));
            }
            if let Some(e) = self.lit(q, "三刻") {
                return Some((e, hour, 45));
            }
            match self.cn_number(q) {
                Some((e, minute)) => match self.lit(e, "分") {
                    Some(e) => Some((e, hour, minute)),
                    // "三点十五" has minutes, but in "三点一起" the 一 is
                    // the next word: without 分, only two-character
                    // minutes count.
                    None if self.s[q..e].chars().count() >= 2 || minute >= 10 => {
                        Some((e, hour, minute))
                    }
                    None => Some((q, hour, 0)),
                },
                None => Some((q, hour, 0)),
            }
        });
        if let Some((end, hour, minute)) = hour_and_minute {
            let hour = period.map_or(hour, |per| per.adjust(hour));
            return Some((end, clock(hour, minute)?));
        }
        if explicit_period && let Some((end, time)) = self.clock_24h(self.ws(p)) {
            let hour = u32::from(time.hour().unsigned_abs());
            let minute = u32::from(time.minute().unsigned_abs());
            let hour = period.map_or(hour, |per| per.adjust(hour));
            return Some((end, clock(hour, minute)?));
        }
        if explicit_period {
            return Some((p, period?.default_clock()?));
        }
        None
    }

    /// `3天后`, `三天之后`, `两周后`, `2个小时后`, `半小时后`, `十分钟后`.
    fn relative_zh(&self, pos: usize) -> Option<(usize, When)> {
        let after = |p: usize| ["之后", "以后", "后"].iter().find_map(|w| self.lit(p, w));
        if let Some(p) = self
            .lit(pos, "半小时")
            .or_else(|| self.lit(pos, "半个小时"))
        {
            return Some((after(p)?, When::After(1800)));
        }
        let (p, n) = self.cn_number(pos)?;
        let p = self.lit(p, "个").unwrap_or(p);
        let n = i64::from(n);
        // 一个半小时: and a half.
        if let Some(q) = self.lit(p, "半小时").or_else(|| self.lit(p, "半钟头")) {
            return Some((after(q)?, When::After(n * 3600 + 1800)));
        }
        for (w, seconds) in [("小时", 3600), ("钟头", 3600), ("分钟", 60)] {
            if let Some(q) = self.lit(p, w) {
                // 1小时30分钟后: the minutes too.
                if seconds == 3600
                    && let Some((r, minutes)) = self.cn_number(q)
                    && let Some(r) = self.lit(r, "分钟").or_else(|| self.lit(r, "分"))
                    && let Some(end) = after(r)
                {
                    return Some((end, When::After(n * 3600 + i64::from(minutes) * 60)));
                }
                return Some((after(q)?, When::After(n * seconds)));
            }
        }
        for (w, days) in [("天", 1), ("日", 1), ("星期", 7), ("礼拜", 7), ("周", 7)] {
            if let Some(q) = self.lit(p, w) {
                let end = after(q)?;
                let spec = DateSpec::Days(n * days);
                let q = self.ws(end);
                return Some(match self.chinese_time(q, None) {
                    Some((end, time)) => (end, When::On(spec, Some(time))),
                    None => (end, When::On(spec, None)),
                });
            }
        }
        None
    }

    /// ASCII digits (1–4) or a Chinese numeral up to 99, or four Chinese
    /// digits for a year (二〇二六).
    fn cn_number(&self, pos: usize) -> Option<(usize, u32)> {
        if let Some(m) = self.digits(pos, 1, 4) {
            return Some(m);
        }
        let mut chars = Vec::new();
        let mut end = pos;
        for c in self.rest(pos).chars() {
            if chars.len() == 4 || !(c == '十' || cn_digit(c).is_some()) {
                break;
            }
            chars.push(c);
            end += c.len_utf8();
        }
        if chars.is_empty() {
            return None;
        }
        let value = match chars.iter().position(|c| *c == '十') {
            Some(i) => {
                let tens = match &chars[..i] {
                    [] => 1,
                    [d] => cn_digit(*d)?,
                    _ => return None,
                };
                let ones = match &chars[i + 1..] {
                    [] => 0,
                    [d] => cn_digit(*d)?,
                    _ => return None,
                };
                tens * 10 + ones
            }
            None => chars
                .iter()
                .try_fold(0u32, |acc, c| Some(acc * 10 + cn_digit(*c)?))?,
        };
        Some((end, value))
    }
}

fn cn_digit(c: char) -> Option<u32> {
    Some(match c {
        '零' | '〇' => 0,
        '一' => 1,
        '二' | '两' => 2,
        '三' => 3,
        '四' => 4,
        '五' => 5,
        '六' => 6,
        '七' => 7,
        '八' => 8,
        '九' => 9,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use jiff::civil::date;
    use jiff::tz;

    /// China Standard Time, +08:00 all year.
    fn cst() -> TimeZone {
        TimeZone::fixed(tz::offset(8))
    }

    /// 2026-11-22T10:00:00+08:00, a Sunday.
    fn now() -> i64 {
        at(2026, 11, 22, 10, 0)
    }

    /// Unix seconds of a local (+08:00) date and time.
    fn at(y: i16, m: i8, d: i8, h: i8, min: i8) -> i64 {
        local(&cst(), y, m, d, h, min)
    }

    /// Unix seconds of a date and time on `zone`'s clock.
    fn local(zone: &TimeZone, y: i16, m: i8, d: i8, h: i8, min: i8) -> i64 {
        date(y, m, d)
            .at(h, min, 0, 0)
            .to_zoned(zone.clone())
            .unwrap()
            .timestamp()
            .as_second()
    }

    /// Unix seconds of an RFC 3339 instant.
    fn instant(rfc3339: &str) -> i64 {
        rfc3339.parse::<Timestamp>().unwrap().as_second()
    }

    fn one(text: &str) -> Reminder {
        let found = extract_reminders(text, now(), &cst());
        assert_eq!(found.len(), 1, "{text}: {found:#?}");
        found.into_iter().next().unwrap()
    }

    fn due(text: &str) -> (i64, bool) {
        let r = one(text);
        (r.due, r.all_day)
    }

    fn none(text: &str) {
        let found = extract_reminders(text, now(), &cst());
        assert!(found.is_empty(), "{text}: {found:#?}");
    }

    #[test]
    fn a_sentence_that_tells_of_the_past_makes_no_reminder() {
        none("On Monday we reviewed the Acme contract.");
        none("We shipped the beta on Friday.");
        none("On 3 December I was in Lisbon.");
        // What points ahead still does.
        one("We reviewed the contract and will sign it on Friday.");
        one("We agreed to sign it on Friday.");
        one("Decided: ship Mobile v3 beta on Dec 10.");
        one("Dentist on Friday at 3pm.");
        // A noun for a subject, and Chinese.
        none("Last Tuesday at 2pm the server crashed.");
        none("The plumber came on Friday at 9am.");
        none("周五上午九点水管工来过了。");
        one("The dentist moved the appointment to Friday at 3pm.");
        one("The dentist confirmed Friday at 3pm.");
        one("周五上午九点水管工要来。");
    }

    #[test]
    fn habits_and_rules_make_no_reminder() {
        none("Every Friday at 4pm I review the week.");
        none("I run every Monday and Thursday morning.");
        none("Each Monday at 10am we plan the sprint.");
        none("Lesson learned: never deploy on Friday afternoons.");
        none("Standup is daily at 9:30.");
        none("On Fridays at 5pm the office closes early.");
        none("每天早上八点跑步。");
        none("不要在周五下午部署生产环境。");
        none("千万别在周一早上开长会。");
        one("别忘了周五下午三点交报告。");
        one("Deploy the hotfix on Friday afternoon at 3pm.");
        one("Each of us presents on Friday at 3pm.");
        // A day of its own is one occasion, whatever else the sentence says.
        one("Always bring your ID to the dentist tomorrow at 3pm.");
        one("Daily standup moves to tomorrow at 10am.");
    }

    #[test]
    fn a_stretch_of_days_is_due_on_its_first_and_titles_keep_doctors() {
        // Written on Sunday 22 November 2026.
        for text in [
            "Team offsite in Lisbon from 8 to 10 December.",
            "Team offsite in Lisbon 8-10 December.",
            "Team offsite in Lisbon between 8 and 10 December.",
        ] {
            let r = one(text);
            assert_eq!(r.due, at(2026, 12, 8, 9, 0), "{text}");
            assert!(r.all_day, "{text}");
            assert_eq!(r.about, "Team offsite in Lisbon", "{text}");
        }
        let r = one("Dentist appointment with Dr. Lee tomorrow at 3pm.");
        assert_eq!(r.about, "Dentist appointment with Dr. Lee");
        assert_eq!(r.due, at(2026, 11, 23, 15, 0));
        // A full stop after a sentence still ends it.
        let found = extract_reminders("Call Bob tomorrow. Pay rent on Friday.", now(), &cst());
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(found[0].about, "Call Bob");
        assert_eq!(found[1].about, "Pay rent");
    }

    #[test]
    fn a_stretch_across_months_is_one_reminder_due_on_its_first_day() {
        // Written on Sunday 22 November 2026.
        for text in [
            "12月20日到1月3日回老家过年。",
            "12月20日至1月3日回老家过年。",
            "Back home for the holidays from 20 December to 3 January.",
            "Back home for the holidays 20 December - 3 January.",
        ] {
            let r = one(text);
            assert_eq!(r.due, at(2026, 12, 20, 9, 0), "{text}");
            assert!(r.all_day, "{text}");
            assert!(!r.about.contains('3'), "{text}: {}", r.about);
            assert!(!r.about.ends_with(" to"), "{text}: {}", r.about);
        }
    }

    #[test]
    fn what_must_happen_before_a_day_is_due_the_day_before() {
        // Written on Sunday 22 November 2026.
        for text in [
            "The TLS certificate expires 10 January, rotate it before then.",
            "Rotate the TLS certificate before 10 January.",
            "1月10日之前把证书换掉。",
        ] {
            let r = one(text);
            assert_eq!(r.due, at(2027, 1, 9, 9, 0), "{text}");
            assert!(r.all_day, "{text}");
        }
        // On the day itself when it says nothing of before.
        assert_eq!(due("Dentist on 10 January."), (at(2027, 1, 10, 9, 0), true));
        // A time of day keeps its day: "before 3pm" is a time, not a day.
        assert_eq!(
            due("Send the slides before 3pm tomorrow.").0,
            at(2026, 11, 23, 15, 0)
        );
    }

    #[test]
    fn a_subject_told_by_a_pronoun_is_named() {
        assert_eq!(
            standing_alone("He is on leave", "Tom Becker", true),
            "Tom Becker is on leave"
        );
        assert_eq!(standing_alone("她请假", "王芳", true), "王芳请假");
        assert_eq!(
            standing_alone("It expires", "TLS certificate", false),
            "It expires (TLS certificate)"
        );
        assert_eq!(
            standing_alone("They fly to Lisbon", "Tom Becker", true),
            "They fly to Lisbon (Tom Becker)"
        );
        assert_eq!(standing_alone("Call Bob", "Notes", false), "Call Bob");
        assert_eq!(
            standing_alone("Help desk rota", "Tom", true),
            "Help desk rota"
        );
        assert_eq!(standing_alone("He is on leave", "", true), "He is on leave");
    }

    #[test]
    fn the_fixed_clock_and_formatting() {
        // The fixed "now" really is a Sunday at 10:00 in +08:00.
        let local_now = cst().to_datetime(Timestamp::from_second(now()).unwrap());
        assert_eq!(local_now, date(2026, 11, 22).at(10, 0, 0, 0));
        assert_eq!(local_now.weekday(), Weekday::Sunday);
        assert_eq!(format_rfc3339(now(), &cst()), "2026-11-22T10:00:00+08:00");
        assert_eq!(
            format_rfc3339(now(), &TimeZone::UTC),
            "2026-11-22T02:00:00+00:00"
        );
        assert_eq!(
            format_rfc3339(now(), &TimeZone::fixed(tz::offset(-5))),
            "2026-11-21T21:00:00-05:00"
        );
        // Beyond jiff's range: clamped, still whole seconds.
        assert_eq!(
            format_rfc3339(i64::MAX, &TimeZone::UTC),
            "9999-12-30T22:00:00+00:00"
        );
        assert!(format_rfc3339(i64::MIN, &TimeZone::UTC).starts_with("-009999-01-0"));
    }

    #[test]
    fn dates_must_exist_in_the_years_1_to_9999() {
        assert!(civil_date(2024, 2, 29).is_some());
        assert!(civil_date(2026, 2, 29).is_none());
        assert!(civil_date(2100, 2, 29).is_none());
        assert!(civil_date(2000, 2, 29).is_some());
        assert!(civil_date(0, 1, 1).is_none());
        assert!(civil_date(10_000, 1, 1).is_none());
        assert!(civil_date(2026, 13, 1).is_none());
        assert!(civil_date(2026, 1, 0).is_none());
        assert!(month_day_exists(2, 29));
        assert!(!month_day_exists(2, 30));
        assert!(!month_day_exists(4, 31));
        assert!(!month_day_exists(u32::MAX, 1));
        assert_eq!(clock(23, 59), Some(Time::constant(23, 59, 0, 0)));
        assert_eq!(clock(24, 0), None);
        assert_eq!(clock(12, 60), None);
        assert_eq!(clock(u32::MAX, 0), None);
    }

    #[test]
    fn english_relative_days_with_times() {
        assert_eq!(
            due("Call Bob tomorrow 3pm"),
            (at(2026, 11, 23, 15, 0), false)
        );
        assert_eq!(due("tomorrow at 15:30"), (at(2026, 11, 23, 15, 30), false));
        assert_eq!(
            due("Tomorrow at 3:30 p.m. please"),
            (at(2026, 11, 23, 15, 30), false)
        );
        assert_eq!(due("tomorrow 12am"), (at(2026, 11, 23, 0, 0), false));
        assert_eq!(due("tomorrow noon"), (at(2026, 11, 23, 12, 0), false));
        assert_eq!(due("tomorrow morning"), (at(2026, 11, 23, 9, 0), false));
        assert_eq!(due("3pm tomorrow"), (at(2026, 11, 23, 15, 0), false));
        assert_eq!(due("at 9am tomorrow"), (at(2026, 11, 23, 9, 0), false));
        assert_eq!(due("tomorrow"), (at(2026, 11, 23, 9, 0), true));
        assert_eq!(due("day after tomorrow"), (at(2026, 11, 24, 9, 0), true));
        assert_eq!(due("tonight"), (at(2026, 11, 22, 20, 0), false));
        assert_eq!(due("today 11am"), (at(2026, 11, 22, 11, 0), false));
        assert_eq!(one("Call Bob tomorrow 3pm.").phrase, "tomorrow 3pm");
    }

    #[test]
    fn today_9am_resolves_before_and_is_past_after() {
        let early = at(2026, 11, 22, 8, 0);
        let found = extract_reminders("today 9am standup", early, &cst());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].due, at(2026, 11, 22, 9, 0));
        assert_eq!(found[0].phrase, "today 9am");
        // At 10:00 it is past.
        none("today 9am standup");
        // Bare "today" narrates, it does not remind.
        none("today I fixed the build");
    }

    #[test]
    fn english_absolute_dates() {
        let r = one("Launch on 2026-12-01.");
        assert_eq!((r.due, r.all_day), (at(2026, 12, 1, 9, 0), true));
        assert_eq!(r.phrase, "on 2026-12-01");
        assert_eq!(r.context, "Launch on 2026-12-01.");
        assert_eq!(due("2026-12-01 14:00"), (at(2026, 12, 1, 14, 0), false));
        assert_eq!(due("2026-12-01T14:00"), (at(2026, 12, 1, 14, 0), false));
        assert_eq!(due("2026-12-01 at 2pm"), (at(2026, 12, 1, 14, 0), false));
        assert_eq!(due("2026/12/1"), (at(2026, 12, 1, 9, 0), true));
        assert_eq!(due("on December 1"), (at(2026, 12, 1, 9, 0), true));
        assert_eq!(
            due("Dec 1st, 2027 at 10am"),
            (at(2027, 12, 1, 10, 0), false)
        );
        assert_eq!(due("1 December"), (at(2026, 12, 1, 9, 0), true));
        assert_eq!(due("the 3rd of January"), (at(2027, 1, 3, 9, 0), true));
    }

    #[test]
    fn past_and_impossible_dates_are_ignored() {
        none("on 2020-01-01");
        none("2026-11-21 was fun");
        none("2026-02-30");
        none("2026-13-01");
        none("12026-12-01");
        none("November 20"); // two days ago, not next year
        none("11月20日开会了");
        // Today's all-day date is kept through the day.
        assert_eq!(due("2026-11-22"), (at(2026, 11, 22, 9, 0), true));
    }

    #[test]
    fn english_weekdays() {
        // Sunday 22 Nov: next week is Mon 23 .. Sun 29.
        assert_eq!(due("next Friday"), (at(2026, 11, 27, 9, 0), true));
        assert_eq!(due("on Friday"), (at(2026, 11, 27, 9, 0), true));
        assert_eq!(due("by fri"), (at(2026, 11, 27, 9, 0), true));
        assert_eq!(due("next Monday 10am"), (at(2026, 11, 23, 10, 0), false));
        assert_eq!(due("on Sunday"), (at(2026, 11, 29, 9, 0), true));
        assert_eq!(due("Friday 3pm"), (at(2026, 11, 27, 15, 0), false));
        none("this Friday"); // Friday 20, past
        none("Friday was great");
        none("the Saturday sale"); // a bare weekday needs a time
        // From a Wednesday, "next Friday" skips this week's.
        let wed = at(2026, 11, 25, 10, 0);
        let r = extract_reminders("next Friday", wed, &cst());
        assert_eq!(r[0].due, at(2026, 12, 4, 9, 0));
        let r = extract_reminders("on Friday", wed, &cst());
        assert_eq!(r[0].due, at(2026, 11, 27, 9, 0));
        let r = extract_reminders("this Friday", wed, &cst());
        assert_eq!(r[0].due, at(2026, 11, 27, 9, 0));
    }

    #[test]
    fn a_range_of_times_is_due_at_its_start() {
        assert_eq!(
            due("Design review from 3 to 5pm on Thursday"),
            (at(2026, 11, 26, 15, 0), false)
        );
        assert_eq!(
            due("Yoga on Friday from 18:00 to 19:30"),
            (at(2026, 11, 27, 18, 0), false)
        );
        assert_eq!(due("tomorrow 3-5pm"), (at(2026, 11, 23, 15, 0), false));
        assert_eq!(due("tomorrow 10am-noon"), (at(2026, 11, 23, 10, 0), false));
        assert_eq!(due("tomorrow 11 to 1pm"), (at(2026, 11, 23, 11, 0), false));
        assert_eq!(due("tomorrow 9:30-11am"), (at(2026, 11, 23, 9, 30), false));
    }

    #[test]
    fn a_zone_after_the_time_is_the_time_there() {
        // 3pm in New York in winter is 20:00 UTC, 04:00 the next day here.
        assert_eq!(
            due("Webinar tomorrow at 3pm EST"),
            (instant("2026-11-23T20:00:00Z"), false)
        );
        assert_eq!(
            due("Call with Tokyo tomorrow 9am JST"),
            (instant("2026-11-23T00:00:00Z"), false)
        );
        assert_eq!(
            due("Deploy tomorrow 14:00 UTC"),
            (instant("2026-11-23T14:00:00Z"), false)
        );
        assert_eq!(
            due("Standup tomorrow 9am GMT+2"),
            (instant("2026-11-23T07:00:00Z"), false)
        );
        // CST names China's zone and America's: read as the user's own.
        assert_eq!(due("tomorrow 3pm CST"), (at(2026, 11, 23, 15, 0), false));
        let r = one("Webinar tomorrow at 3pm EST");
        assert_eq!(r.phrase, "tomorrow at 3pm EST");
        assert_eq!(r.about, "Webinar");
    }

    #[test]
    fn english_durations() {
        assert_eq!(due("in 3 days"), (at(2026, 11, 25, 9, 0), true));
        assert_eq!(due("in 2 hours"), (now() + 7200, false));
        assert_eq!(due("in an hour"), (now() + 3600, false));
        assert_eq!(due("in 30 minutes"), (now() + 1800, false));
        assert_eq!(due("in two weeks"), (at(2026, 12, 6, 9, 0), true));
        assert_eq!(due("in 3 days at 5pm"), (at(2026, 11, 25, 17, 0), false));
        none("in 0 hours");
        none("in the morning");
        none("within 3 days");
    }

    #[test]
    fn chinese_relative_days_with_times() {
        let r = one("明天下午三点开会");
        assert_eq!((r.due, r.all_day), (at(2026, 11, 23, 15, 0), false));
        assert_eq!(r.phrase, "明天下午三点");
        assert_eq!(due("明天下午3点"), (at(2026, 11, 23, 15, 0), false));
        assert_eq!(due("后天上午十点"), (at(2026, 11, 24, 10, 0), false));
        assert_eq!(due("大后天"), (at(2026, 11, 25, 9, 0), true));
        assert_eq!(due("明天"), (at(2026, 11, 23, 9, 0), true));
        assert_eq!(due("明天 15:30"), (at(2026, 11, 23, 15, 30), false));
        assert_eq!(due("明天下午 3:30"), (at(2026, 11, 23, 15, 30), false));
        assert_eq!(due("明天3pm"), (at(2026, 11, 23, 15, 0), false));
        assert_eq!(due("明天 3pm"), (at(2026, 11, 23, 15, 0), false));
        assert_eq!(due("明天下午"), (at(2026, 11, 23, 15, 0), false));
        assert_eq!(due("今晚八点"), (at(2026, 11, 22, 20, 0), false));
        assert_eq!(due("今晚"), (at(2026, 11, 22, 20, 0), false));
        assert_eq!(due("明早"), (at(2026, 11, 23, 8, 0), false));
        assert_eq!(due("明天中午1点"), (at(2026, 11, 23, 13, 0), false));
        assert_eq!(due("明天凌晨两点"), (at(2026, 11, 23, 2, 0), false));
        assert_eq!(due("明天3点半"), (at(2026, 11, 23, 3, 30), false));
        assert_eq!(due("明天三点一起吃饭"), (at(2026, 11, 23, 3, 0), false));
        assert_eq!(due("明天下午三点二十"), (at(2026, 11, 23, 15, 20), false));
        assert_eq!(due("明天下午三点十五分"), (at(2026, 11, 23, 15, 15), false));
        assert_eq!(due("明天下午三点一刻"), (at(2026, 11, 23, 15, 15), false));
        assert_eq!(due("今天下午三点"), (at(2026, 11, 22, 15, 0), false));
        none("今天上午九点"); // past
        none("今天修好了构建");
    }

    #[test]
    fn what_is_done_or_called_off_makes_no_reminder() {
        none("- [x] Submit the tax report by 10 December");
        none("* [X] Submit the tax report tomorrow");
        none("- [-] Call the caterer tomorrow");
        none("- [ ] Done thing 📅 2026-12-02 ✅ 2026-11-27");
        none("~~Call the caterer on 9 December~~ (moved)");
        none("The offsite next Friday is cancelled");
        none("明天的会议已取消");
        assert_eq!(
            one("- [ ] Submit the tax report tomorrow").phrase,
            "tomorrow"
        );
        assert_eq!(
            one("~~Monday~~ Call the caterer tomorrow").phrase,
            "tomorrow"
        );
        none("<del>Call Alice tomorrow 5pm</del>");
        none("<s>Call Alice tomorrow 5pm</s>");
        assert_eq!(
            one("Lunch with ~~Alice~~ Carol tomorrow at noon").about,
            "Lunch with Carol"
        );
        assert_eq!(
            one("Lunch with <del>Alice</del> Carol tomorrow at noon").about,
            "Lunch with Carol"
        );
        // An abbreviation inside a link does not end the sentence.
        let r = one("Dentist appointment with [[Dr. Chen Wei]] tomorrow at 3pm.");
        assert_eq!(r.about, "Dentist appointment with [[Dr. Chen Wei]]");
    }

    #[test]
    fn traditional_chinese_is_read_and_kept_as_written() {
        let r = one("明天下午三點在會議室開會");
        assert_eq!((r.due, r.all_day), (at(2026, 11, 23, 15, 0), false));
        assert_eq!(r.phrase, "明天下午三點");
        assert_eq!(r.about, "在會議室開會");
        assert_eq!(r.context, "明天下午三點在會議室開會");
        assert_eq!(due("下週五"), due("下周五"));
        assert_eq!(due("下個月初"), due("下个月初"));
        assert_eq!(due("兩小時後"), due("两小时后"));
        assert_eq!(subject("記得下週二交房租"), "交房租");
    }

    #[test]
    fn chinese_weekdays() {
        assert_eq!(due("下周五"), (at(2026, 11, 27, 9, 0), true));
        assert_eq!(due("下星期一上午十点"), (at(2026, 11, 23, 10, 0), false));
        assert_eq!(due("周五"), (at(2026, 11, 27, 9, 0), true));
        assert_eq!(due("星期天"), (at(2026, 11, 29, 9, 0), true));
        assert_eq!(due("下周日"), (at(2026, 11, 29, 9, 0), true));
        assert_eq!(due("下下周一"), (at(2026, 11, 30, 9, 0), true));
        assert_eq!(due("下下个星期五"), (at(2026, 12, 4, 9, 0), true));
        none("本周五"); // 20 Nov, past
        none("每周五健身");
        none("上周五");
        none("两个周五");
    }

    #[test]
    fn chinese_dates() {
        assert_eq!(due("12月1日"), (at(2026, 12, 1, 9, 0), true));
        assert_eq!(due("12月1号下午3点"), (at(2026, 12, 1, 15, 0), false));
        assert_eq!(due("十二月一日"), (at(2026, 12, 1, 9, 0), true));
        assert_eq!(due("2026年12月1日"), (at(2026, 12, 1, 9, 0), true));
        assert_eq!(due("二〇二七年一月五日"), (at(2027, 1, 5, 9, 0), true));
        assert_eq!(due("1月5日"), (at(2027, 1, 5, 9, 0), true));
        assert_eq!(due("十二月三十一日"), (at(2026, 12, 31, 9, 0), true));
        none("2020年12月1日");
        none("13月1日");
        none("2月30日");
    }

    #[test]
    fn ends_and_starts_of_months_weekends_and_holidays() {
        // Today is Sunday 22 November 2026.
        let day = |m, d| at(if m == 1 { 2027 } else { 2026 }, m, d, 9, 0);
        assert_eq!(due("月底前交季度报告"), (day(11, 30), true));
        assert_eq!(due("下个月初续签劳动合同"), (day(12, 1), true));
        assert_eq!(due("下月底交房租"), (day(12, 31), true));
        assert_eq!(due("下周末去杭州"), (day(11, 28), true));
        // Before a day is the day before it; before a month's end is
        // within it.
        assert_eq!(due("元旦前把年终总结写完"), (day(12, 31), true));
        assert_eq!(
            due("Submit the report by end of month"),
            (day(11, 30), true)
        );
        assert_eq!(due("Renew the lease early next month"), (day(12, 1), true));
        assert_eq!(due("Visit grandma next weekend"), (day(11, 28), true));
        assert_eq!(due("Buy presents before Christmas"), (day(12, 24), true));
        assert_eq!(
            due("Submit the report before the end of the month"),
            (day(11, 30), true)
        );
        assert_eq!(about("月底前交季度报告"), "交季度报告");
    }

    #[test]
    fn chinese_durations() {
        assert_eq!(due("3天后"), (at(2026, 11, 25, 9, 0), true));
        assert_eq!(due("三天之后"), (at(2026, 11, 25, 9, 0), true));
        assert_eq!(due("两周后"), (at(2026, 12, 6, 9, 0), true));
        assert_eq!(due("2个小时后"), (now() + 7200, false));
        assert_eq!(due("半小时后"), (now() + 1800, false));
        assert_eq!(due("十分钟后"), (now() + 600, false));
        assert_eq!(due("1小时30分钟后关掉压测机器"), (now() + 5400, false));
        assert_eq!(due("一个半小时后开会"), (now() + 5400, false));
        assert_eq!(about("1小时30分钟后关掉压测机器"), "关掉压测机器");
        none("三天"); // a length, not a time
    }

    #[test]
    fn chinese_numerals() {
        let n = |t: &str| Scan { s: t }.cn_number(0).map(|(_, v)| v);
        assert_eq!(n("一"), Some(1));
        assert_eq!(n("两"), Some(2));
        assert_eq!(n("十"), Some(10));
        assert_eq!(n("十二"), Some(12));
        assert_eq!(n("二十"), Some(20));
        assert_eq!(n("二十三"), Some(23));
        assert_eq!(n("三十一日"), Some(31));
        assert_eq!(n("二〇二六年"), Some(2026));
        assert_eq!(n("十十"), None);
        assert_eq!(n("12点"), Some(12));
        assert_eq!(n("点"), None);
        assert_eq!(n("十二两二"), None);
    }

    #[test]
    fn several_reminders_in_order_with_their_sentences() {
        let text = "Dentist tomorrow at 9am. Also: pay rent on 2026-12-01!\n下周五交报告。";
        let found = extract_reminders(text, now(), &cst());
        let phrases: Vec<_> = found.iter().map(|r| r.phrase.as_str()).collect();
        assert_eq!(phrases, ["tomorrow at 9am", "on 2026-12-01", "下周五"]);
        assert_eq!(found[0].context, "Dentist tomorrow at 9am.");
        assert_eq!(found[1].context, "Also: pay rent on 2026-12-01!");
        assert_eq!(found[2].context, "下周五交报告。");
    }

    #[test]
    fn a_m_and_p_m_do_not_end_sentences() {
        let r = one("Meet at 3 p.m. tomorrow");
        assert_eq!(r.due, at(2026, 11, 23, 15, 0));
        assert_eq!(r.context, "Meet at 3 p.m. tomorrow");
    }

    #[test]
    fn repeated_phrases_are_reported_once() {
        let found = extract_reminders("tomorrow. tomorrow!", now(), &cst());
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn word_boundaries_are_respected() {
        none("saturday sale 3pm");
        none("the metadata 2pmx");
        assert_eq!(due("Saturday 3pm"), (at(2026, 11, 28, 15, 0), false));
        // "sat" inside "saturday" is never tried on its own.
        assert_eq!(one("saturday 3pm").phrase, "saturday 3pm");
    }

    #[test]
    fn long_context_is_cut() {
        let text = format!("tomorrow {}", "x".repeat(1000));
        let r = one(&text);
        assert_eq!(r.context.chars().count(), MAX_CONTEXT_CHARS + 1);
    }

    #[test]
    fn the_offset_decides_what_tomorrow_is() {
        // 2026-11-22T02:00Z is still the 21st in New York (-05:00).
        let ny = TimeZone::fixed(tz::offset(-5));
        let r = extract_reminders("tomorrow 3pm", now(), &ny);
        assert_eq!(r[0].due, instant("2026-11-22T20:00:00Z"));
    }

    #[test]
    fn a_due_time_after_spring_forward_keeps_its_wall_clock_time() {
        // Berlin moves from +01:00 to +02:00 on Sunday 29 March 2026.
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let friday = local(&berlin, 2026, 3, 27, 10, 0);
        assert_eq!(format_rfc3339(friday, &berlin), "2026-03-27T10:00:00+01:00");

        let r = extract_reminders("Dentist next Monday 3pm.", friday, &berlin);
        assert_eq!(r.len(), 1, "{r:#?}");
        // Today's offset would have made this 14:00Z, 16:00 on Monday's clock.
        assert_eq!(r[0].due, instant("2026-03-30T13:00:00Z"));
        assert_eq!(
            format_rfc3339(r[0].due, &berlin),
            "2026-03-30T15:00:00+02:00"
        );

        // All-day: 09:00 on the day of the change itself.
        let r = extract_reminders("in 2 days", friday, &berlin);
        assert_eq!(
            format_rfc3339(r[0].due, &berlin),
            "2026-03-29T09:00:00+02:00"
        );
        // Elapsed time ignores the clock: 5 hours after 22:00 is 04:00.
        let saturday_night = local(&berlin, 2026, 3, 28, 22, 0);
        let r = extract_reminders("in 5 hours", saturday_night, &berlin);
        assert_eq!(r[0].due, saturday_night + 5 * 3600);
        assert_eq!(
            format_rfc3339(r[0].due, &berlin),
            "2026-03-29T04:00:00+02:00"
        );
        // 02:30 does not exist that night; it moves on by the hour skipped.
        let r = extract_reminders("on 2026-03-29 at 2:30am", friday, &berlin);
        assert_eq!(
            format_rfc3339(r[0].due, &berlin),
            "2026-03-29T03:30:00+02:00"
        );
    }

    #[test]
    fn southern_hemisphere_dst_ends_in_april_and_starts_in_october() {
        let sydney = TimeZone::get("Australia/Sydney").unwrap();

        // Summer time (+11:00) ends on Sunday 5 April 2026.
        let thursday = local(&sydney, 2026, 4, 2, 10, 0);
        assert_eq!(
            format_rfc3339(thursday, &sydney),
            "2026-04-02T10:00:00+11:00"
        );
        let r = extract_reminders("next Monday 9am", thursday, &sydney);
        assert_eq!(r[0].due, instant("2026-04-05T23:00:00Z"));
        assert_eq!(
            format_rfc3339(r[0].due, &sydney),
            "2026-04-06T09:00:00+10:00"
        );
        // 02:30 that night happens twice; the first (still +11:00) is meant.
        let r = extract_reminders("on 2026-04-05 at 2:30am", thursday, &sydney);
        assert_eq!(
            format_rfc3339(r[0].due, &sydney),
            "2026-04-05T02:30:00+11:00"
        );

        // Summer time starts again on Sunday 4 October 2026.
        let friday = local(&sydney, 2026, 10, 2, 10, 0);
        assert_eq!(format_rfc3339(friday, &sydney), "2026-10-02T10:00:00+10:00");
        let r = extract_reminders("on Monday", friday, &sydney);
        assert!(r[0].all_day);
        assert_eq!(r[0].due, instant("2026-10-04T22:00:00Z"));
        assert_eq!(
            format_rfc3339(r[0].due, &sydney),
            "2026-10-05T09:00:00+11:00"
        );
    }

    #[test]
    fn absurd_now_values_give_nothing() {
        assert!(extract_reminders("tomorrow", i64::MAX, &cst()).is_empty());
        assert!(extract_reminders("tomorrow", i64::MIN, &cst()).is_empty());
    }

    #[test]
    fn dates_thousands_of_years_ahead_are_not_reminders() {
        none("on 9999-01-01");
        assert_eq!(due("on 3026-01-01"), (at(3026, 1, 1, 9, 0), true));
    }

    fn about(text: &str) -> String {
        one(text).about
    }

    #[test]
    fn a_reminder_is_about_its_sentence_not_its_time_phrase() {
        assert_eq!(
            about("Dentist appointment, tomorrow 3pm"),
            "Dentist appointment"
        );
        assert_eq!(about("Meeting with Bob tomorrow 3pm"), "Meeting with Bob");
        assert_eq!(
            about("Decided: ship Mobile v3 beta on Dec 10."),
            "Ship Mobile v3 beta"
        );
        assert_eq!(
            about("- [ ] Submit the tax forms by 2026-12-01"),
            "Submit the tax forms"
        );
        assert_eq!(about("Remind me to call mom next Tuesday!"), "Call mom");
        assert_eq!(about("Remind me: dentist tomorrow at 3pm"), "Dentist");
        assert_eq!(
            about("Ship the beta on Dec 10 with QA sign-off"),
            "Ship the beta with QA sign-off"
        );
        assert_eq!(about("Standup (tomorrow 9am)"), "Standup");
        assert_eq!(about("明天下午三点和王医生见面"), "和王医生见面");
        assert_eq!(about("在下周五前提交报告。"), "提交报告");
        assert_eq!(about("记得下周二交房租"), "交房租");
        assert_eq!(
            about("明天下午三点到五点在会议室A做架构评审"),
            "在会议室A做架构评审"
        );
        assert_eq!(
            about("Review tomorrow 3pm to 5pm in room A"),
            "Review in room A"
        );
        assert_eq!(
            about("12月3日是李娜的生日，记得买蛋糕"),
            "李娜的生日，记得买蛋糕"
        );
        assert_eq!(about("December 3 is Lina's birthday"), "Lina's birthday");
    }

    #[test]
    fn a_sentence_that_is_only_a_time_is_about_nothing() {
        assert_eq!(about("next Tuesday"), "");
        assert_eq!(about("明天下午三点"), "");
        assert_eq!(about("## Tomorrow at 3pm:"), "");
        assert_eq!(subject("明天下午三点"), "");
        assert_eq!(subject("Standup notes"), "Standup notes");
        assert_eq!(subject("Dentist, tomorrow"), "Dentist");
    }

    #[test]
    fn a_long_subject_is_cut_at_a_word() {
        let long = format!("{} tomorrow", "word ".repeat(40));
        let cut = about(&long);
        assert!(cut.ends_with("Word…") || cut.ends_with("word…"), "{cut}");
        assert!(cut.chars().count() <= MAX_ABOUT_CHARS + 1, "{cut}");
    }

    #[test]
    fn relative_dates_count_from_when_the_note_was_written() {
        let written = at(2025, 11, 20, 10, 0);
        let found = extract_reminders("Decided: ship Mobile v3 beta on Dec 10", written, &cst());
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].due, at(2025, 12, 10, 9, 0));
        let found = extract_reminders("Meeting with Bob tomorrow 3pm", written, &cst());
        assert_eq!(found[0].due, at(2025, 11, 21, 15, 0));
        // Already past when it was written: no reminder at all.
        assert!(extract_reminders("The launch was on Nov 3.", written, &cst()).is_empty());
        assert!(extract_reminders("Paid on 2025-11-01.", written, &cst()).is_empty());
    }

    #[test]
    fn a_note_is_written_on_the_day_it_names_else_its_created_at_else_its_file_time() {
        let fm = |yaml: &str| crate::memory::parse("", &format!("---\n{yaml}---\nx\n")).frontmatter;
        let fallback = at(2026, 1, 1, 0, 0);
        let created = "created_at: 2025-11-20T10:00:00+08:00\n";
        assert_eq!(
            written_at(&fm(created), "note", fallback, &cst()),
            at(2025, 11, 20, 10, 0)
        );
        assert_eq!(
            written_at(
                &fm(&format!("date: 2025-11-18\n{created}")),
                "x",
                fallback,
                &cst()
            ),
            at(2025, 11, 18, 0, 0)
        );
        assert_eq!(
            written_at(
                &fm("started: 2025-11-17T08:30:00+08:00\n"),
                "x",
                fallback,
                &cst()
            ),
            at(2025, 11, 17, 8, 30)
        );
        for journal in ["2025-11-19", "2025_11_19", "2025-11-19-standup"] {
            assert_eq!(
                written_at(&fm(created), journal, fallback, &cst()),
                at(2025, 11, 19, 0, 0),
                "{journal}"
            );
        }
        for not_a_day in ["2025-11-190", "2025-11_19", "2025-13-01", "notes"] {
            assert_eq!(
                written_at(&fm("title: t\n"), not_a_day, fallback, &cst()),
                fallback,
                "{not_a_day}"
            );
        }
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*", now in any::<i64>(), off in -86_399i32..86_399) {
            let tz = TimeZone::fixed(tz::Offset::from_seconds(off).unwrap());
            let _ = extract_reminders(&text, now, &tz);
        }

        #[test]
        fn zones_with_dst_resolve_to_the_future(
            day in "tomorrow|next monday|next sunday|on 2026-03-29|on 2026-10-04|in 3 days|明天",
            time in "( at [0-9]{1,2}(:[0-9]{2})?(am|pm)?)?",
            now in -100_000_000_000i64..100_000_000_000,
            zone in prop_oneof![
                Just("Europe/Berlin"),
                Just("Australia/Sydney"),
                Just("America/New_York"),
            ],
        ) {
            let text = format!("{day}{time}");
            let tz = TimeZone::get(zone).unwrap();
            for r in extract_reminders(&text, now, &tz) {
                prop_assert!(r.due >= now || r.all_day);
            }
        }

        #[test]
        fn time_words_mixed_with_noise_never_panic(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("tomorrow"), Just("3pm"), Just(" "), Just("on"), Just("2026-12-01"),
                    Just("明天"), Just("下午"), Just("三点"), Just("十"), Just("月"), Just("日"),
                    Just("下周"), Just("五"), Just("in"), Just("99999"), Just("days"), Just(":"),
                    Just("后"), Just("p.m."), Just("年"), Just("9999"), Just("."),
                ],
                0..12,
            ),
            now in -100_000_000_000i64..100_000_000_000,
        ) {
            let text: String = parts.concat();
            for r in extract_reminders(&text, now, &TimeZone::UTC) {
                prop_assert!(text.contains(&r.phrase));
                prop_assert!(r.due >= now || r.all_day);
            }
        }
    }
}

#[cfg(test)]
mod ranges {
    use super::*;

    #[test]
    fn date_ranges_across_months_make_no_panic() {
        let tz = TimeZone::UTC;
        for text in [
            "Deploy freeze: Dec 24-Jan 1, no production deploys.",
            "School break runs December 15 to January 5.",
            "Holidays Dec 24 - Jan 1 and Jul 3-Jul 5.",
        ] {
            let _ = extract_reminders(text, 1_790_000_000, &tz);
            let _ = subject(text);
        }
    }
}
