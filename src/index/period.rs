//! The stretch of time a question names: "on 3 June, 2023", "in August
//! 2023", "yesterday", "next week", "上个月".
//!
//! A memory is written when what it tells happens, or soon after, or it
//! names the time ahead ("the dentist on Friday"), so a question that
//! names a day, a month or a year asks first of all about the memories
//! written then or naming it (see `Index::ranked`). This module only
//! finds the period and where the question says it.
//!
//! Subtleties:
//! - A month is read beside a number ("June 3", "3 June", "June 2023")
//!   or after "in" ("in May", the latest May): "may" and "march" are
//!   words too.
//! - A day without its year is in the year the question names elsewhere
//!   ("between August 11 and August 15 2023"), else its latest one not
//!   after today: a question about what was written looks back. Such a
//!   period is `yearless`: if no memory was written in it, the search
//!   asks of the years before, the latest with memories first (a store
//!   of older notes means its own July by "in July").
//! - Spring, summer and autumn are the northern ones; winter, which
//!   straddles two years, names no period with a year ("winter 2023"),
//!   but "last winter" and 今年冬天 begin in December.
//! - "before" a day reaches a week back, "after" it a week on: "the
//!   weekend before April 10" is in neither April 10 nor a month. Before
//!   or after a month or a year is all of time that way; "since" runs to
//!   today, "until" from all time.
//! - Days are calendar days, compared with the day each memory says it
//!   was written in its own zone (`created_at: 2026-02-28T23:00:00-05:00`
//!   was written on 28 February), so no zone enters; "today" is the local
//!   one.
//! - Two dates joined by "to", "until", "-" or "between … and" make one
//!   stretch from the first to the second; otherwise each date is its own.

use std::ops::Range;

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, Zoned};

use crate::memory::reminders::month_named;

/// The stretches of time a question names, and where it says them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Period {
    /// Each stretch: its first day and the day after its last, as the
    /// index keeps days (their first second in UTC, see
    /// `document::day_start`).
    pub(crate) ranges: Vec<(i64, i64)>,
    /// The question without the words that name it.
    pub(crate) rest: String,
    /// Whether every date in it is a day or a month named without a
    /// year ("in July", "on March 3"), read as the latest one not after
    /// today: a store whose memories are older may mean an earlier one.
    pub(crate) yearless: bool,
}

impl Period {
    /// Whether it is single days ("on 3 June 2023", "yesterday"), not a
    /// stretch of them (a week, a month, a year).
    pub(crate) fn is_days(&self) -> bool {
        self.ranges.iter().all(|(from, to)| to - from <= 86_400)
    }

    /// Its days as a reader says them: "on 2026-11-27", "from 2026-11-01
    /// to 2026-11-30" (the last day included), in UTC as the index keeps
    /// days.
    pub(crate) fn described(&self) -> String {
        let day = |s: i64| {
            Timestamp::from_second(s)
                .map(|t| t.to_zoned(TimeZone::UTC).date().to_string())
                .unwrap_or_default()
        };
        let said: Vec<String> = self
            .ranges
            .iter()
            .map(|&(first, end)| {
                let last = end - 86_400;
                if last <= first {
                    format!("on {}", day(first))
                } else {
                    format!("from {} to {}", day(first), day(last))
                }
            })
            .collect();
        said.join(" or ")
    }
}

/// One word of a question: its text, lowercase, and its byte range.
struct Word {
    text: String,
    start: usize,
    end: usize,
}

/// The words of `text`: runs of letters and digits, a CJK character
/// alone, and `YYYY-MM-DD` or `YYYY/MM/DD` whole.
fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if is_cjk(c) {
            let end = start + c.len_utf8();
            out.push(Word {
                text: c.to_string(),
                start,
                end,
            });
            continue;
        }
        if !c.is_alphanumeric() {
            continue;
        }
        let mut end = start + c.len_utf8();
        // Whether the word so far is digits, dashes and slashes only.
        let mut numeric = c.is_ascii_digit();
        while let Some(&(i, n)) = chars.peek() {
            let joins = (n == '-' || n == '/')
                && numeric
                && i - start >= 4
                && text[i + 1..].starts_with(|d: char| d.is_ascii_digit());
            if (n.is_alphanumeric() && !is_cjk(n)) || joins {
                numeric &= n.is_ascii_digit() || joins;
                end = i + n.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        out.push(Word {
            text: text[start..end].to_lowercase(),
            start,
            end,
        });
    }
    out
}

/// Whether `word` is written apart from its neighbours: `2025-03` is a
/// month, `report-2025-03.md` a name.
fn stands_alone(text: &str, word: &Word) -> bool {
    let before = text[..word.start].chars().next_back();
    let after = text[word.end..].chars().next();
    let joined = |c: Option<char>| {
        c.is_some_and(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '/' | '.' | '\\'))
    };
    // A full stop ends a sentence when what follows it is not a word.
    let after_joins = joined(after)
        && !(after == Some('.')
            && text[word.end + 1..]
                .chars()
                .next()
                .is_none_or(char::is_whitespace));
    !joined(before) && !after_joins
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}')
}

/// How much of time a found date covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    Day,
    /// This many days from the first.
    Days(u16),
    Week,
    Month,
    Season,
    Year,
}

/// The first month of a season named in English.
fn season_start(word: &str) -> Option<i8> {
    match word {
        "spring" => Some(3),
        "summer" => Some(6),
        "autumn" | "fall" => Some(9),
        _ => None,
    }
}

/// A date found in a question: its first day and how far it reaches,
/// and which words said it.
struct Found {
    first: Date,
    span: Span,
    words: std::ops::Range<usize>,
    /// A day or a month named without a year, here or elsewhere in the
    /// question: its year was taken as the latest one not after today.
    yearless: bool,
}

/// A day of the month as written: `3`, `3rd`, `03`.
fn day_number(word: &str) -> Option<i8> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year_number(word: &str) -> Option<i16> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| (1900..=2200).contains(y))
}

fn month_number(word: &str) -> Option<i8> {
    month_named(word).map(|m| m as i8)
}

/// `YYYY-MM-DD`, `YYYY/MM/DD` or `YYYY-MM`.
fn numeric_date(word: &str) -> Option<(Date, Span)> {
    let parts: Vec<&str> = word.split(['-', '/']).collect();
    let year = year_number(parts.first()?)?;
    let month: i8 = parts.get(1)?.parse().ok()?;
    match parts.get(2) {
        Some(day) => Some((Date::new(year, month, day.parse().ok()?).ok()?, Span::Day)),
        None if parts.len() == 2 => Some((Date::new(year, month, 1).ok()?, Span::Month)),
        None => None,
    }
}

/// The latest `month`/`day` not after `today`.
fn latest(month: i8, day: i8, today: Date) -> Option<Date> {
    let this_year = Date::new(today.year(), month, day).ok();
    match this_year {
        Some(d) if d <= today => Some(d),
        _ => Date::new(today.year() - 1, month, day).ok(),
    }
}

/// The dates written out in `words` with month names or digits.
fn written_dates(text_of: &str, words: &[Word], today: Date) -> Vec<Found> {
    let mut found = Vec::new();
    let mut i = 0;
    let text = |i: usize| words.get(i).map(|w| w.text.as_str());
    let skip_of = |i: usize| if text(i) == Some("of") { i + 1 } else { i };
    // "between August 11 and August 15 2023": a day without its year is
    // in the year the question names.
    let named_year = words.iter().find_map(|w| year_number(&w.text));
    let day_in = |month: i8, day: i8, year: Option<i16>| match year.or(named_year) {
        Some(y) => Date::new(y, month, day).ok(),
        None => latest(month, day, today),
    };
    // A day whose year, if written, is the word at `y`: the date and the
    // word after it.
    let dated = |month: i8, day: i8, y: usize| {
        let year = text(y).and_then(year_number);
        let yearless = year.or(named_year).is_none();
        Some((
            day_in(month, day, year)?,
            y + usize::from(year.is_some()),
            yearless,
        ))
    };
    while i < words.len() {
        let w = words[i].text.as_str();
        if let Some((first, span)) = numeric_date(w).filter(|_| stands_alone(text_of, &words[i])) {
            found.push(Found {
                first,
                span,
                words: i..i + 1,
                yearless: false,
            });
            i += 1;
            continue;
        }
        // 3 June [2023], 3rd of June [2023], June 3[rd] [2023]
        let day_first = day_number(w).and_then(|day| {
            let m = skip_of(i + 1);
            dated(text(m).and_then(month_number)?, day, m + 1)
        });
        let month_first = || dated(month_number(w)?, text(i + 1).and_then(day_number)?, i + 2);
        if let Some((first, end, yearless)) = day_first.or_else(month_first) {
            found.push(Found {
                first,
                span: Span::Day,
                words: i..end,
                yearless,
            });
            i = end;
            continue;
        }
        // on the 12th: of the latest month that had it, this one if past
        if i >= 2
            && text(i - 1) == Some("the")
            && text(i - 2) == Some("on")
            && w.ends_with(|c: char| c.is_ascii_alphabetic())
            && text(i + 1).and_then(month_number).is_none()
            && text(i + 1) != Some("of")
            && let Some(day) = day_number(w)
            && let Some(first) = latest_day(day, today)
        {
            found.push(Found {
                first,
                span: Span::Day,
                words: i - 1..i + 1,
                yearless: false,
            });
            i += 1;
            continue;
        }
        // early October, the end of June 2023, the first week of November
        if let Some(month) = month_number(w)
            && let Some((start, part)) = part_before(words, i)
        {
            let year = text(i + 1).and_then(year_number);
            let month_first = match year.or(named_year) {
                Some(y) => Date::new(y, month, 1).ok(),
                None => latest(month, 1, today.first_of_month()),
            };
            if let Some((first, span)) = month_first.and_then(|m| part.of(m)) {
                let end = i + 1 + usize::from(year.is_some());
                found.push(Found {
                    first,
                    span,
                    words: start..end,
                    yearless: year.or(named_year).is_none(),
                });
                i = end;
                continue;
            }
        }
        // June 2023
        if let Some(month) = month_number(w)
            && let Some(year) = text(i + 1).and_then(year_number)
            && let Ok(first) = Date::new(year, month, 1)
        {
            found.push(Found {
                first,
                span: Span::Month,
                words: i..i + 2,
                yearless: false,
            });
            i += 2;
            continue;
        }
        // in November: the latest November not after this month
        if let Some(month) = month_number(w)
            && i > 0
            && matches!(
                text(i - 1),
                Some("in" | "during" | "since" | "throughout" | "before" | "after" | "until")
            )
            && let Some(first) = latest(month, 1, today.first_of_month())
        {
            found.push(Found {
                first,
                span: Span::Month,
                words: i..i + 1,
                yearless: true,
            });
            i += 1;
            continue;
        }
        // summer 2023, the spring of 2024 (the northern seasons; winter
        // straddles two years and is left alone)
        if let Some(month) = season_start(w) {
            let y = skip_of(i + 1);
            if let Some(year) = text(y).and_then(year_number)
                && let Ok(first) = Date::new(year, month, 1)
            {
                found.push(Found {
                    first,
                    span: Span::Season,
                    words: i..y + 1,
                    yearless: false,
                });
                i = y + 1;
                continue;
            }
        }
        // in 2023
        if let Some(year) = year_number(w)
            && i > 0
            && matches!(
                text(i - 1),
                Some(
                    "in" | "during"
                        | "of"
                        | "throughout"
                        | "before"
                        | "after"
                        | "since"
                        | "until"
                        | "till"
                )
            )
            && let Ok(first) = Date::new(year, 1, 1)
        {
            found.push(Found {
                first,
                span: Span::Year,
                words: i..i + 1,
                yearless: false,
            });
        }
        i += 1;
    }
    found
}

/// The latest day numbered `day` not after `today`: this month's, else
/// the month before's (or the one before that, for a 31st).
fn latest_day(day: i8, today: Date) -> Option<Date> {
    let mut month = today.first_of_month();
    for _ in 0..3 {
        if let Ok(date) = month.with().day(day).build()
            && date <= today
        {
            return Some(date);
        }
        month = month.checked_sub(1.month()).ok()?;
    }
    None
}

/// A part of a month a question names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Its first ten days: "early", "the beginning of".
    Early,
    /// Days 11 to 20: "mid", "the middle of".
    Middle,
    /// From the 21st: "late", "the end of".
    Late,
    /// Its Nth week of seven days: "the first week of".
    Week(u8),
    /// Its last seven days.
    LastWeek,
}

impl Part {
    /// Its first day and reach, in the month that starts on `first`.
    fn of(self, first: Date) -> Option<(Date, Span)> {
        let days = first.days_in_month();
        let from = |day: i8, span: Span| Some((first.with().day(day).build().ok()?, span));
        match self {
            Part::Early => from(1, Span::Days(10)),
            Part::Middle => from(11, Span::Days(10)),
            Part::Late => from(21, Span::Days(u16::try_from(days - 20).ok()?)),
            Part::Week(n) => from(1 + 7 * (n as i8 - 1), Span::Week),
            Part::LastWeek => from(days - 6, Span::Week),
        }
    }
}

/// The part of a month the words before the month at `i` name, and where
/// they start: "early", "mid", "late", "the beginning of", "the middle
/// of", "the end of", "the first week of".
fn part_before(words: &[Word], i: usize) -> Option<(usize, Part)> {
    let text = |k: usize| -> &str { words.get(k).map_or("", |w| w.text.as_str()) };
    let back = |n: usize| i.checked_sub(n).map(text).unwrap_or_default();
    match back(1) {
        "early" => return Some((i - 1, Part::Early)),
        "mid" | "middle" => return Some((i - 1, Part::Middle)),
        "late" => return Some((i - 1, Part::Late)),
        "of" => {}
        _ => return None,
    }
    let part = match back(2) {
        "beginning" | "start" => Part::Early,
        "middle" => Part::Middle,
        "end" => Part::Late,
        "week" => match back(3) {
            "first" | "1st" => Part::Week(1),
            "second" | "2nd" => Part::Week(2),
            "third" | "3rd" => Part::Week(3),
            "fourth" | "4th" => Part::Week(4),
            "last" | "final" => Part::LastWeek,
            _ => return None,
        },
        _ => return None,
    };
    let start = i - if matches!(part, Part::Week(_) | Part::LastWeek) {
        3
    } else {
        2
    };
    Some((start, part))
}

/// The periods named relative to today: "yesterday", "last week", 上个月.
fn relative_dates(words: &[Word], today: Date) -> Vec<Found> {
    let mut found = Vec::new();
    let monday = today
        .checked_sub((today.weekday().to_monday_zero_offset() as i64).days())
        .ok();
    let month_start = today.first_of_month();
    let year_start = Date::new(today.year(), 1, 1).ok();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].text.as_str();
        let next = words.get(i + 1).map(|w| w.text.as_str());
        let one = |first: Option<Date>, span: Span| first.map(|first| (first, span, 1));
        let two = |first: Option<Date>, span: Span| first.map(|first| (first, span, 2));
        let counted = monday.and_then(|monday| {
            weekend(&words[i..], monday).or_else(|| counted(&words[i..], today, monday))
        });
        let hit = counted
            .or_else(|| further(&words[i..], today, monday?))
            .or_else(|| relative_season(&words[i..], today));
        let hit = hit.or(match (w, next) {
            ("today", _) => one(Some(today), Span::Day),
            ("今", Some("天")) => two(Some(today), Span::Day),
            ("yesterday", _) => one(today.yesterday().ok(), Span::Day),
            ("昨", Some("天")) => two(today.yesterday().ok(), Span::Day),
            ("前", Some("天")) => two(today.checked_sub(2.days()).ok(), Span::Day),
            ("tomorrow", _) => one(today.tomorrow().ok(), Span::Day),
            ("明", Some("天")) => two(today.tomorrow().ok(), Span::Day),
            ("后", Some("天")) => two(today.checked_add(2.days()).ok(), Span::Day),
            ("next", Some("week")) | ("下", Some("周")) => two(
                monday.and_then(|m| m.checked_add(7.days()).ok()),
                Span::Week,
            ),
            ("next", Some("month")) => two(month_start.checked_add(1.month()).ok(), Span::Month),
            ("next", Some("year")) | ("明", Some("年")) => two(
                year_start.and_then(|y| y.checked_add(1.year()).ok()),
                Span::Year,
            ),
            ("this", Some("week")) | ("本", Some("周")) | ("这", Some("周")) => {
                two(monday, Span::Week)
            }
            ("last", Some("week")) | ("上", Some("周")) => two(
                monday.and_then(|m| m.checked_sub(7.days()).ok()),
                Span::Week,
            ),
            ("this", Some("month")) | ("本", Some("月")) => two(Some(month_start), Span::Month),
            ("last", Some("month")) => two(month_start.checked_sub(1.month()).ok(), Span::Month),
            ("this", Some("year")) | ("今", Some("年")) => two(year_start, Span::Year),
            ("last", Some("year")) | ("去", Some("年")) => two(
                year_start.and_then(|y| y.checked_sub(1.year()).ok()),
                Span::Year,
            ),
            _ => None,
        });
        // 上个月, 这个月
        let hit = hit.or_else(|| {
            let three = words.get(i + 2).map(|w| w.text.as_str());
            match (w, next, three) {
                ("上", Some("个"), Some("月")) => month_start
                    .checked_sub(1.month())
                    .ok()
                    .map(|d| (d, Span::Month, 3)),
                ("这" | "本", Some("个"), Some("月")) => Some((month_start, Span::Month, 3)),
                ("下", Some("个"), Some("月")) => month_start
                    .checked_add(1.month())
                    .ok()
                    .map(|d| (d, Span::Month, 3)),
                // 上星期, 这星期, 下星期
                (step, Some("星"), Some("期")) => {
                    let weeks = chinese_step(step)?;
                    let first = monday?.checked_add((7 * weeks).days()).ok()?;
                    Some((first, Span::Week, 3))
                }
                _ => None,
            }
        });
        match hit {
            Some((first, span, n)) => {
                found.push(Found {
                    first,
                    span,
                    words: i..i + n,
                    yearless: false,
                });
                i += n;
            }
            None => i += 1,
        }
    }
    found
}

/// A weekend named from this week: "last weekend" (the one before this
/// week's Monday), "this weekend", "next weekend" (next week's), "the
/// weekend before last", 上周末, 这个周末, 下下周末. On a Saturday or a
/// Sunday, this weekend is the one under way. "The weekend before April
/// 10" is that date's (see [`reach`]), so "last weekend" followed by
/// "before" or "after" is left to it.
fn weekend(words: &[Word], monday: Date) -> Option<(Date, Span, usize)> {
    let w = |i: usize| words.get(i).map(|w| w.text.as_str());
    let (weeks, n) = match (w(0), w(1), w(2), w(3)) {
        (Some("weekend"), Some("before"), Some("last"), _) => (-2, 3),
        (Some("weekend"), Some("after"), Some("next"), _) => (2, 3),
        (
            Some("last" | "this" | "next"),
            Some("weekend"),
            Some("before" | "after" | "prior"),
            _,
        ) => {
            return None;
        }
        (Some("last"), Some("weekend"), ..) => (-1, 2),
        (Some("this"), Some("weekend"), ..) => (0, 2),
        (Some("next"), Some("weekend"), ..) => (1, 2),
        (Some("上"), Some("上"), Some("周"), Some("末")) => (-2, 4),
        (Some("下"), Some("下"), Some("周"), Some("末")) => (2, 4),
        (Some(step), Some("周"), Some("末"), _) => (chinese_step(step)?, 3),
        (Some(step), Some("个"), Some("周"), Some("末")) => (chinese_step(step)?, 4),
        _ => return None,
    };
    let saturday = monday.checked_add((7 * weeks + 5).days()).ok()?;
    Some((saturday, Span::Days(2), n))
}

/// How many weeks from this one 上, 这 or 本, and 下 step.
fn chinese_step(word: &str) -> Option<i64> {
    match word {
        "上" => Some(-1),
        "这" | "本" => Some(0),
        "下" => Some(1),
        _ => None,
    }
}

/// One step further than "last" or "next": 上上周, 下下个月, 大前天,
/// "the week before last", "the day after tomorrow".
fn further(words: &[Word], today: Date, monday: Date) -> Option<(Date, Span, usize)> {
    let w = |i: usize| words.get(i).map(|w| w.text.as_str());
    let weeks = |n: i64| monday.checked_add((7 * n).days()).ok();
    let months = |n: i64| today.first_of_month().checked_add(n.months()).ok();
    let days = |n: i64| today.checked_add(n.days()).ok();
    let (first, span, n) = match (w(0), w(1), w(2), w(3)) {
        (Some("上"), Some("上"), Some("周"), _) => (weeks(-2)?, Span::Week, 3),
        (Some("下"), Some("下"), Some("周"), _) => (weeks(2)?, Span::Week, 3),
        (Some("上"), Some("上"), Some("个"), Some("月")) => (months(-2)?, Span::Month, 4),
        (Some("下"), Some("下"), Some("个"), Some("月")) => (months(2)?, Span::Month, 4),
        (Some("大"), Some("前"), Some("天"), _) => (days(-3)?, Span::Day, 3),
        (Some("大"), Some("后"), Some("天"), _) => (days(3)?, Span::Day, 3),
        (Some("week"), Some("before"), Some("last"), _) => (weeks(-2)?, Span::Week, 3),
        (Some("week"), Some("after"), Some("next"), _) => (weeks(2)?, Span::Week, 3),
        (Some("month"), Some("before"), Some("last"), _) => (months(-2)?, Span::Month, 3),
        (Some("month"), Some("after"), Some("next"), _) => (months(2)?, Span::Month, 3),
        (Some("day"), Some("before"), Some("yesterday"), _) => (days(-2)?, Span::Day, 3),
        (Some("day"), Some("after"), Some("tomorrow"), _) => (days(2)?, Span::Day, 3),
        _ => return None,
    };
    Some((first, span, n))
}

/// A season named relative to today: "last summer" (the latest one over
/// before today), "this winter", "next spring", 去年夏天, 今年冬天. Winter
/// starts in December, so last winter's first day is in the year before
/// its end.
fn relative_season(words: &[Word], today: Date) -> Option<(Date, Span, usize)> {
    let w = |i: usize| words.get(i).map(|w| w.text.as_str());
    let english = |word: Option<&str>| match word? {
        "winter" => Some(12),
        other => season_start(other),
    };
    let chinese = |a: Option<&str>, b: Option<&str>| {
        if !matches!(b, Some("天" | "季")) {
            return None;
        }
        match a? {
            "春" => Some(3),
            "夏" => Some(6),
            "秋" => Some(9),
            "冬" => Some(12),
            _ => None,
        }
    };
    // The season of `year` that starts in `month`.
    let of = |year: i16, month: i8| Date::new(year, month, 1).ok();
    let this_year = today.year();
    match (w(0), w(1)) {
        (Some("last"), _) => {
            let month = english(w(1))?;
            // The latest one whose end is not after today.
            let mut first = of(this_year, month)?;
            while end_of(first, Span::Season)? > today {
                first = first.checked_sub(1.year()).ok()?;
            }
            Some((first, Span::Season, 2))
        }
        (Some("this"), _) => Some((of(this_year, english(w(1))?)?, Span::Season, 2)),
        (Some("next"), _) => {
            let month = english(w(1))?;
            let mut first = of(this_year, month)?;
            while first <= today {
                first = first.checked_add(1.year()).ok()?;
            }
            Some((first, Span::Season, 2))
        }
        (Some(a), Some("年")) => {
            let back = match a {
                "今" => 0,
                "去" => 1,
                "前" => 2,
                "明" => -1,
                _ => return None,
            };
            let month = chinese(w(2), w(3))?;
            Some((of(this_year - back, month)?, Span::Season, 4))
        }
        _ => None,
    }
}

/// A count written as a digit or an English word up to twelve.
fn count(word: &str) -> Option<u16> {
    const WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    match word {
        "a" | "an" => Some(1),
        "一" => Some(1),
        "两" | "二" => Some(2),
        "三" => Some(3),
        "四" => Some(4),
        "五" => Some(5),
        "六" => Some(6),
        "七" => Some(7),
        "八" => Some(8),
        "九" => Some(9),
        "十" => Some(10),
        _ => WORDS
            .iter()
            .position(|w| *w == word)
            .map(|i| i as u16 + 1)
            .or_else(|| word.parse().ok().filter(|n| (1..=400).contains(n))),
    }
}

/// A day of the week named in English (`monday`, `mon`) or after 周 or
/// 星期 (`五`, `日`).
fn weekday(word: &str) -> Option<Weekday> {
    Some(match word {
        "monday" | "mon" | "一" => Weekday::Monday,
        "tuesday" | "tue" | "tues" | "二" => Weekday::Tuesday,
        "wednesday" | "wed" | "三" => Weekday::Wednesday,
        "thursday" | "thu" | "thurs" | "四" => Weekday::Thursday,
        "friday" | "fri" | "五" => Weekday::Friday,
        "saturday" | "sat" | "六" => Weekday::Saturday,
        "sunday" | "sun" | "日" | "天" => Weekday::Sunday,
        _ => return None,
    })
}

/// Periods counted back from today, at the start of `words`, and how many
/// words say them: "3 days ago", "two weeks ago", "the past 7 days",
/// "last Friday", "on Monday", 三天前, 上周五.
fn counted(words: &[Word], today: Date, monday: Date) -> Option<(Date, Span, usize)> {
    let w = |i: usize| words.get(i).map(|w| w.text.as_str());
    let before = |n: i64| today.checked_sub(n.days()).ok();
    // 3 days ago, two weeks ago, a month ago
    if let (Some(n), Some(unit), Some("ago")) = (w(0).and_then(count), w(1), w(2)) {
        let n = i64::from(n);
        return match unit {
            "day" | "days" => before(n).map(|d| (d, Span::Day, 3)),
            "week" | "weeks" => before(7 * n).map(|d| (week_of(d), Span::Week, 3)),
            "month" | "months" => today
                .first_of_month()
                .checked_sub(n.months())
                .ok()
                .map(|d| (d, Span::Month, 3)),
            _ => None,
        };
    }
    // the past 7 days, the last two weeks
    if let (Some("past" | "last"), Some(n), Some(unit)) = (w(0), w(1).and_then(count), w(2)) {
        let days = match unit {
            "days" => n,
            "weeks" => n.saturating_mul(7),
            _ => 0,
        };
        if days > 0 {
            return before(i64::from(days) - 1).map(|d| (d, Span::Days(days), 3));
        }
    }
    // last Friday, on Monday: the latest one before today; not "on
    // Tuesday evenings", a routine
    let routine = matches!(
        (w(0), w(2)),
        (
            Some("on"),
            Some("mornings" | "afternoons" | "evenings" | "nights")
        )
    );
    if let (Some("last" | "on"), Some(day), false) = (w(0), w(1).and_then(weekday), routine) {
        let back =
            (today.weekday().to_monday_zero_offset() - day.to_monday_zero_offset() + 6) % 7 + 1;
        return before(i64::from(back)).map(|d| (d, Span::Day, 2));
    }
    // 三天前, 3天前
    if let (Some(n), Some("天"), Some("前")) = (w(0).and_then(count), w(1), w(2)) {
        return before(i64::from(n)).map(|d| (d, Span::Day, 3));
    }
    // 两周前, 三个星期前, 两个月前, 三年前
    if let Some(n) = w(0).and_then(count).map(i64::from) {
        let weeks_ago = |d: Date| Some((week_of(d), Span::Week));
        let hit = match (w(1), w(2), w(3), w(4)) {
            (Some("周"), Some("前"), ..) => before(7 * n).and_then(weeks_ago).map(|h| (h, 3)),
            (Some("个"), Some("星"), Some("期"), Some("前")) => {
                before(7 * n).and_then(weeks_ago).map(|h| (h, 5))
            }
            (Some("个"), Some("月"), Some("前"), _) => today
                .first_of_month()
                .checked_sub(n.months())
                .ok()
                .map(|d| ((d, Span::Month), 4)),
            (Some("年"), Some("前"), ..) => Date::new(today.year(), 1, 1)
                .ok()
                .and_then(|d| d.checked_sub(n.years()).ok())
                .map(|d| ((d, Span::Year), 3)),
            _ => None,
        };
        if let Some(((first, span), words)) = hit {
            return Some((first, span, words));
        }
    }
    // That day of a week: next Wednesday and this Friday (as reminders
    // read them: next week's, this week's), 上周五, 这周三, 下星期三.
    let day_of_week = |weeks: i64, day: Weekday| {
        monday
            .checked_add((7 * weeks + i64::from(day.to_monday_zero_offset())).days())
            .ok()
    };
    let english = match w(0) {
        Some("next") => Some(1),
        Some("this") => Some(0),
        _ => None,
    };
    if let (Some(weeks), Some(day)) = (english, w(1).and_then(weekday)) {
        return day_of_week(weeks, day).map(|d| (d, Span::Day, 2));
    }
    let chinese = match (w(0).and_then(chinese_step), w(1), w(2)) {
        (Some(weeks), Some("周"), _) => Some((weeks, 2)),
        (Some(weeks), Some("星"), Some("期")) => Some((weeks, 3)),
        _ => None,
    };
    if let Some((weeks, at)) = chinese
        && let Some(day) = w(at).and_then(weekday)
    {
        return day_of_week(weeks, day).map(|d| (d, Span::Day, at + 1));
    }
    None
}

/// The Monday of the week `day` is in.
fn week_of(day: Date) -> Date {
    day.checked_sub(i64::from(day.weekday().to_monday_zero_offset()).days())
        .unwrap_or(day)
}

/// Years named relative to this one, and how many years back.
const RELATIVE_YEARS: [(&str, i16); 4] = [("今年", 0), ("去年", 1), ("前年", 2), ("明年", -1)];

/// Dates written the Chinese way: 2023年6月3日, 6月3号, 2023年6月,
/// 去年6月3日.
fn chinese_dates(text: &str, today: Date) -> Vec<(Date, Span, std::ops::Range<usize>)> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    // Digits, or a month or day in Chinese numerals (十一, 二十三).
    let number_at = |at: usize| -> Option<(u32, usize)> {
        let digits = text[at..].bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            return Some((text[at..at + digits].parse().ok()?, at + digits));
        }
        chinese_day_number(&text[at..]).map(|(n, len)| (n, at + len))
    };
    let mut at = 0;
    while at < bytes.len() {
        let Some(c) = text[at..].chars().next() else {
            break;
        };
        let numeral = cn_numeral(c).is_some();
        let after_number = text[..at]
            .chars()
            .next_back()
            .is_some_and(|p| p.is_ascii_digit() || cn_numeral(p).is_some());
        if !(c.is_ascii_digit() || numeral) || after_number {
            at += c.len_utf8();
            continue;
        }
        let Some((first, after)) = number_at(at) else {
            at += c.len_utf8();
            continue;
        };
        // In Chinese numerals, only a month: 十一月 (三年 is a count).
        if numeral && !text[after..].starts_with('月') {
            at = after;
            continue;
        }
        // 今年6月, 去年6月3日
        let (mut year, start) = RELATIVE_YEARS
            .iter()
            .find(|(prefix, _)| text[..at].ends_with(prefix))
            .map_or((None, at), |(prefix, back)| {
                (Some(today.year() - back), at - prefix.len())
            });
        let mut p = after;
        let mut month = None;
        if year.is_none() && text[p..].starts_with('年') {
            year = i16::try_from(first).ok();
            p += '年'.len_utf8();
            if let Some((m, q)) = number_at(p)
                && text[q..].starts_with('月')
            {
                month = Some(m);
                p = q + '月'.len_utf8();
            }
        } else if text[p..].starts_with('月') {
            month = Some(first);
            p += '月'.len_utf8();
        }
        // 2023年 alone: the year (a count such as 3年 is no year).
        if month.is_none()
            && let Some(year) = year.filter(|y| (1900..=2200).contains(y))
            && text[at..].starts_with(|c: char| c.is_ascii_digit())
            && !text[..at].ends_with(|c: char| c.is_ascii_digit())
            && after - at == 4
        {
            if let Ok(first) = Date::new(year, 1, 1) {
                found.push((first, Span::Year, start..p));
            }
            at = p;
            continue;
        }
        let Some(month) = month.and_then(|m| i8::try_from(m).ok()) else {
            at = after;
            continue;
        };
        let day = number_at(p).and_then(|(d, q)| {
            let unit = ['日', '号']
                .into_iter()
                .find(|u| text[q..].starts_with(*u))?;
            Some((i8::try_from(d).ok()?, q + unit.len_utf8()))
        });
        // 十月上旬, 6月底: a part of the month.
        let part = [
            ("上旬", Part::Early),
            ("初", Part::Early),
            ("中旬", Part::Middle),
            ("下旬", Part::Late),
            ("底", Part::Late),
            ("末", Part::Late),
        ]
        .into_iter()
        .find(|(w, _)| day.is_none() && text[p..].starts_with(w));
        let hit = match (year, day) {
            (Some(y), Some((d, q))) => Date::new(y, month, d).ok().map(|x| (x, Span::Day, q)),
            (None, Some((d, q))) => latest(month, d, today).map(|x| (x, Span::Day, q)),
            (Some(y), None) => Date::new(y, month, 1).ok().map(|x| (x, Span::Month, p)),
            (None, None) => latest(month, 1, today.first_of_month()).map(|x| (x, Span::Month, p)),
        };
        let hit = match (hit, part) {
            (Some((first, _, _)), Some((word, part))) => part
                .of(first)
                .map(|(first, span)| (first, span, p + word.len())),
            (hit, _) => hit,
        };
        match hit {
            Some((date, span, end)) => {
                found.push((date, span, start..end));
                at = end;
            }
            None => at = after,
        }
    }
    found
}

/// The value of a Chinese numeral character (一 to 十), as [`count`]
/// reads it.
fn cn_numeral(c: char) -> Option<u32> {
    is_cjk(c)
        .then(|| count(c.encode_utf8(&mut [0; 4])))
        .flatten()
        .map(u32::from)
}

/// A number from 1 to 31 in Chinese numerals at the start of `text` (九,
/// 十一, 二十, 三十一), and its length in bytes.
fn chinese_day_number(text: &str) -> Option<(u32, usize)> {
    let mut chars = text.char_indices().peekable();
    let (_, c) = chars.next()?;
    let first = cn_numeral(c)?;
    let mut value = first;
    let mut end = c.len_utf8();
    if let Some(&(i, n)) = chars.peek()
        && let Some(next) = cn_numeral(n)
    {
        chars.next();
        end = i + n.len_utf8();
        value = match (first, next) {
            (10, 1..=9) => 10 + next,
            (2..=3, 10) => {
                let mut tens = first * 10;
                if let Some(&(j, u)) = chars.peek()
                    && let Some(unit @ 1..=9) = cn_numeral(u)
                {
                    tens += unit;
                    end = j + u.len_utf8();
                }
                tens
            }
            _ => return None,
        };
    }
    (1..=31).contains(&value).then_some((value, end))
}

/// Words that say the period reaches before or after the date.
const BEFORE: &[&str] = &["before", "prior"];
const AFTER: &[&str] = &["after"];
/// Words that say the period runs from the date to today, or from all
/// time to the date.
const SINCE: &[&str] = &["since"];
const UNTIL: &[&str] = &["until", "till"];
/// The ends of all time, for a period open on one side.
const EARLIEST: Date = Date::constant(1900, 1, 1);
const LATEST: Date = Date::constant(2200, 1, 1);
/// Words that only lead into a date, dropped with it.
const LEADING: &[&str] = &[
    "on",
    "in",
    "during",
    "of",
    "at",
    "around",
    "throughout",
    "from",
    "before",
    "after",
    "since",
    "prior",
    "to",
    "until",
    "till",
];

/// How far ahead the next one of a day named without its year is asked
/// about too (see [`named_period`]), in days.
const UPCOMING: i64 = 92;

/// Whether `text` says a year: a number such as 2023, "year" (last year,
/// this year) or 年 (去年, 2023年).
fn names_a_year(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("year")
        || text.contains('年')
        || text
            .split(|c: char| !c.is_ascii_digit())
            .any(|digits| digits.len() == 4)
}

/// The period `text` names, as of `now`; `None` if it names none.
pub(crate) fn named_period(text: &str, now: &Zoned) -> Option<Period> {
    let today = now.date();
    let words = words(text);
    // Each date: its days, the bytes that say it with the words leading
    // into it, and the bytes of the date alone.
    let mut spans: Vec<(Date, Date, Range<usize>, Range<usize>)> = Vec::new();
    // Chinese dates first: 去年6月 is one date, not 去年 and 6月.
    for (date, span, bytes) in chinese_dates(text, today).into_iter().take(MAX_DATES) {
        let a_day = matches!(span, Span::Day | Span::Days(_));
        let mut said = bytes.clone();
        let (mut first, mut last) = (date, end_of(date, span)?);
        // 2023年之前, 6月3日以后, 自2023年以来
        let tail = &text[bytes.end..];
        let mark = CHINESE_REACH.iter().find(|(mark, _)| {
            tail.starts_with(mark)
                && (mark.chars().count() > 1 || !tail[mark.len()..].starts_with(['天', '年']))
        });
        if let Some((mark, toward)) = mark {
            (first, last) = reach(first, last, a_day, *toward, today)?;
            said.end += mark.len();
            if *toward == Toward::Since
                && let Some(from) = ["自", "从"]
                    .iter()
                    .find(|f| text[..said.start].ends_with(**f))
            {
                said.start -= from.len();
            }
        }
        spans.push((first, last, said, bytes));
    }
    // Chinese dates are read with their years, or relative to today.
    let mut yearless = spans.is_empty();
    let mut found = written_dates(text, &words, today);
    // "Thursday 12 November": the date says which Thursday.
    let dated_from: Vec<usize> = found.iter().map(|f| f.words.start).collect();
    found.extend(relative_dates(&words, today).into_iter().filter(|f| {
        // "Thursday", "on Thursday", "last Thursday": ends in a weekday.
        let a_weekday = f.words.len() <= 2 && weekday(&words[f.words.end - 1].text).is_some();
        !(a_weekday && dated_from.contains(&f.words.end))
    }));
    found.truncate(MAX_DATES);
    for mut f in found {
        // "from 18 to 22 November", "18-22 November", "November 18 to 22":
        // a day alone beside a day with its month is of that month.
        let (mut first, mut last) = (f.first, end_of(f.first, f.span)?);
        if f.span == Span::Day {
            if let Some((day, at)) = day_beside(text, &words, f.words.start, f.first, Side::Before)
            {
                first = day;
                f.words.start = at;
            }
            if let Some((day, at)) = day_beside(text, &words, f.words.end, f.first, Side::After) {
                last = day.tomorrow().ok()?;
                f.words.end = at + 1;
            }
        }
        let said_at = words[f.words.start].start..words[f.words.end - 1].end;
        if spans
            .iter()
            .any(|s| s.2.start < said_at.end && said_at.start < s.2.end)
        {
            continue;
        }
        let mut lead = f.words.start;
        while lead > 0 && LEADING.contains(&words[lead - 1].text.as_str()) {
            lead -= 1;
        }
        let said = |set: &[&str]| {
            words[lead..f.words.start]
                .iter()
                .any(|w| set.contains(&w.text.as_str()))
        };
        let a_day = matches!(f.span, Span::Day | Span::Days(_));
        let toward = [
            (SINCE, Toward::Since),
            (UNTIL, Toward::Until),
            (BEFORE, Toward::Before),
            (AFTER, Toward::After),
        ]
        .into_iter()
        .find(|(set, _)| said(set))
        .map_or(Toward::Within, |(_, toward)| toward);
        let (first, last) = reach(first, last, a_day, toward, today)?;
        let end = words[f.words.end - 1].end;
        yearless &= f.yearless;
        spans.push((
            first,
            last,
            words[lead].start..end,
            words[f.words.start].start..end,
        ));
    }
    spans.sort_by_key(|s| s.3.start);
    // "between March 3 and March 9", "from June to August 2023": one
    // stretch; "on 2023-06-03 and 2026-11-26": two days.
    let mut ranges: Vec<(Date, Date)> = Vec::new();
    for (i, (first, last, _, date)) in spans.iter().enumerate() {
        let joined = i > 0 && {
            let between = text[spans[i - 1].3.end..date.start].trim().to_lowercase();
            let opened = text[..spans[0].3.start].to_lowercase().contains("between");
            RANGE_JOINS.contains(&between.as_str()) && (between != "and" || opened)
        };
        match ranges.last_mut() {
            Some(range) if joined => {
                range.0 = range.0.min(*first);
                range.1 = range.1.max(*last);
            }
            _ => ranges.push((*first, *last)),
        }
    }
    // A day named without its year is its latest one, but when that was
    // most of a year ago the next one, soon to come, is meant as much:
    // "12月3日" asked on 28 November is also the coming one, which a
    // memory may name ahead (a birthday, a deadline).
    if !names_a_year(text) {
        let soon = today.checked_add(UPCOMING.days()).ok()?;
        for (first, last) in ranges.clone() {
            if let (Ok(next), Ok(end)) = (first.checked_add(1.year()), last.checked_add(1.year()))
                && first.tomorrow().ok() == Some(last)
                && next > today
                && next <= soon
            {
                ranges.push((next, end));
            }
        }
    }
    let ranges: Vec<(i64, i64)> = ranges
        .into_iter()
        .map(|(a, b)| (super::document::day_start(a), super::document::day_start(b)))
        .filter(|(a, b)| a < b)
        .collect();
    if ranges.is_empty() {
        return None;
    }
    let mut rest = String::with_capacity(text.len());
    let mut from = 0;
    for (_, _, bytes, _) in &spans {
        if bytes.start >= from {
            rest.push_str(&text[from..bytes.start]);
            from = bytes.end;
        }
    }
    rest.push_str(&text[from..]);
    Some(Period {
        ranges,
        rest: rest.split_whitespace().collect::<Vec<_>>().join(" "),
        yearless,
    })
}

/// Which side of a date a day alone is looked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Before,
    After,
}

/// A day of `date`'s month written alone next to it, joined by "to",
/// "and", "-" and the like (before it, an earlier day; after it, a later
/// one and no month of its own follows), and the index of its word.
/// `at` is the date's first word (`Before`) or the word after it
/// (`After`).
fn day_beside(
    text: &str,
    words: &[Word],
    at: usize,
    date: Date,
    side: Side,
) -> Option<(Date, usize)> {
    let joined_by_word = |i: usize| {
        words.get(i).is_some_and(|w| {
            matches!(
                w.text.as_str(),
                "to" | "until" | "till" | "through" | "thru" | "and"
            )
        })
    };
    let dashed = |a: &Word, b: &Word| {
        matches!(
            text.get(a.end..b.start).map(str::trim),
            Some("-" | "–" | "—" | "~")
        )
    };
    let (day_at, ok) = match side {
        Side::Before => {
            if at >= 2 && joined_by_word(at - 1) {
                (at - 2, true)
            } else if at >= 1 {
                (at - 1, dashed(&words[at - 1], &words[at]))
            } else {
                return None;
            }
        }
        Side::After => {
            if joined_by_word(at) {
                (at + 1, true)
            } else if at >= 1 && at < words.len() {
                (at, dashed(&words[at - 1], &words[at]))
            } else {
                return None;
            }
        }
    };
    let word = words.get(day_at)?;
    if !ok || word.text.chars().any(|c| !c.is_ascii_alphanumeric()) {
        return None;
    }
    let day = day_number(&word.text)?;
    // A day with a month of its own is a date of its own.
    let month_at = |i: Option<usize>| {
        i.and_then(|i| words.get(i))
            .is_some_and(|w| month_number(&w.text).is_some())
    };
    if month_at(Some(day_at + 1)) || month_at(day_at.checked_sub(1)) {
        return None;
    }
    let beside = date.with().day(day).build().ok()?;
    let in_order = match side {
        Side::Before => beside < date,
        Side::After => beside > date,
    };
    in_order.then_some((beside, day_at))
}

/// Which way a period reaches from the date that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Toward {
    Within,
    Since,
    Until,
    Before,
    After,
}

/// What follows a Chinese date to say which way it reaches: 之前, 以后,
/// 以来. 前 and 后 alone count too, but not as the start of 前天 or 后年.
const CHINESE_REACH: &[(&str, Toward)] = &[
    ("之前", Toward::Before),
    ("以前", Toward::Before),
    ("之后", Toward::After),
    ("以后", Toward::After),
    ("以来", Toward::Since),
    ("起", Toward::Since),
    ("前", Toward::Before),
    ("后", Toward::After),
];

/// The days from `first` to `last` (exclusive), reaching `toward` one
/// side. Before or after a day: the week next to it ("the weekend before
/// April 10"); before or after a month or a year: all of time that way;
/// since: to today; until: from all time.
fn reach(
    first: Date,
    last: Date,
    a_day: bool,
    toward: Toward,
    today: Date,
) -> Option<(Date, Date)> {
    Some(match toward {
        Toward::Within => (first, last),
        Toward::Since => (first, last.max(today.tomorrow().ok()?)),
        Toward::Until => (EARLIEST, last),
        Toward::Before if a_day => (first.checked_sub(7.days()).ok()?, last),
        Toward::Before => (EARLIEST, first),
        Toward::After if a_day => (first, last.checked_add(7.days()).ok()?),
        Toward::After => (last, LATEST),
    })
}

/// The most dates of one question read: a question is not a calendar.
const MAX_DATES: usize = 16;

/// What joins two dates into one stretch from the first to the second.
const RANGE_JOINS: &[&str] = &[
    "and", "to", "until", "till", "through", "thru", "-", "–", "—", "~", "至", "到",
];

/// The day after the last day of the period from `first` over `span`.
fn end_of(first: Date, span: Span) -> Option<Date> {
    match span {
        Span::Day => first.tomorrow().ok(),
        Span::Days(n) => first.checked_add(i64::from(n).days()).ok(),
        Span::Week => first.checked_add(7.days()).ok(),
        Span::Month => first.first_of_month().checked_add(1.month()).ok(),
        Span::Season => first.first_of_month().checked_add(3.months()).ok(),
        Span::Year => first.checked_add(1.year()).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Zoned {
        "2026-11-27T10:00:00+00:00[UTC]".parse().unwrap()
    }

    fn days(text: &str) -> Option<(String, String, String)> {
        let p = named_period(text, &now())?;
        let day = |s: i64| {
            Timestamp::from_second(s)
                .unwrap()
                .to_zoned(TimeZone::UTC)
                .date()
                .to_string()
        };
        let start = p.ranges.iter().map(|r| r.0).min()?;
        let end = p.ranges.iter().map(|r| r.1).max()?;
        Some((day(start), day(end), p.rest))
    }

    fn span(text: &str) -> (String, String) {
        let (a, b, _) = days(text).unwrap_or_else(|| panic!("no period in {text:?}"));
        (a, b)
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_owned(), b.to_owned())
    }

    #[test]
    fn a_day_or_month_without_its_year_is_said_to_be_yearless() {
        let yearless = |text: &str| {
            named_period(text, &now())
                .unwrap_or_else(|| panic!("no period in {text:?}"))
                .yearless
        };
        for text in [
            "what did we do in July?",
            "the dentist on March 3",
            "what happened on 3rd of June?",
            "early October",
            "between August 11 and August 15",
        ] {
            assert!(yearless(text), "{text}");
        }
        for text in [
            "what did we do in July 2023?",
            "between August 11 and August 15 2023",
            "on 2023-06-03",
            "what did I write yesterday?",
            "last month",
            "in July and last week",
            "去年6月",
            "summer 2023",
        ] {
            assert!(!yearless(text), "{text}");
        }
    }

    #[test]
    fn a_day_written_out_is_that_day() {
        assert_eq!(
            days("What new activity did Maria start recently, as mentioned on 3 June, 2023?"),
            Some((
                "2023-06-03".into(),
                "2023-06-04".into(),
                "What new activity did Maria start recently, as mentioned ?".into()
            ))
        );
        assert_eq!(
            span("Which book did Tim recommend on 8th December, 2023?"),
            pair("2023-12-08", "2023-12-09")
        );
        assert_eq!(
            span("What event is on May 25, 2023?"),
            pair("2023-05-25", "2023-05-26")
        );
        assert_eq!(
            span("the 3rd of June 2023"),
            pair("2023-06-03", "2023-06-04")
        );
        assert_eq!(
            span("notes from 2024-02-29"),
            pair("2024-02-29", "2024-03-01")
        );
        assert_eq!(span("2023年6月3日的会议"), pair("2023-06-03", "2023-06-04"));
    }

    #[test]
    fn a_month_or_a_year_is_all_of_it() {
        assert_eq!(
            span("What happened to John's job in August 2023?"),
            pair("2023-08-01", "2023-09-01")
        );
        assert_eq!(
            span("beach trips in 2023"),
            pair("2023-01-01", "2024-01-01")
        );
        assert_eq!(span("2023年12月的计划"), pair("2023-12-01", "2024-01-01"));
        assert_eq!(span("plans for 2025-03"), pair("2025-03-01", "2025-04-01"));
        assert_eq!(
            span("What happened towards the end of summer 2023?"),
            pair("2023-06-01", "2023-09-01")
        );
        assert_eq!(
            span("in the fall of 2024"),
            pair("2024-09-01", "2024-12-01")
        );
    }

    #[test]
    fn a_day_without_its_year_is_the_latest_not_after_today() {
        assert_eq!(
            span("what did I do on June 3?"),
            pair("2026-06-03", "2026-06-04")
        );
        assert_eq!(span("6月3号聊了什么"), pair("2026-06-03", "2026-06-04"));
        // Most of a year ago: the coming one, which a memory may name
        // ahead, is asked about too.
        let today = now().date();
        let both = named_period("what's on December 24th?", &now()).expect("a period");
        assert_eq!(
            both.described(),
            "on 2025-12-24 or on 2026-12-24",
            "today is {today}"
        );
        let both = named_period("12月3日有什么事", &now()).expect("a period");
        assert_eq!(both.described(), "on 2025-12-03 or on 2026-12-03");
        // Not when the question says the year, nor for more than a day.
        assert_eq!(
            span("what did I do on December 24th 2025?"),
            pair("2025-12-24", "2025-12-25")
        );
        assert_eq!(span("去年12月3日"), pair("2025-12-03", "2025-12-04"));
        assert_eq!(span("in December"), pair("2025-12-01", "2026-01-01"));
    }

    #[test]
    fn a_day_without_its_year_takes_the_year_the_question_names() {
        assert_eq!(
            span("Where was John between August 11 and August 15 2023?"),
            pair("2023-08-11", "2023-08-16")
        );
    }

    #[test]
    fn a_date_inside_a_name_is_no_period() {
        for text in [
            "fix report-2025-03.md",
            "see logs/2024-02-29/run.txt",
            "build v2023-06-03b",
        ] {
            assert_eq!(named_period(text, &now()), None, "{text}");
        }
        assert_eq!(
            span("what did we ship on 2025-03-04."),
            pair("2025-03-04", "2025-03-05")
        );
        assert_eq!(span("notes (2025-03-04)"), pair("2025-03-04", "2025-03-05"));
    }

    #[test]
    fn a_part_of_a_month_is_those_days() {
        // Today is 2026-11-27 (see `now`).
        assert_eq!(
            span("what happened in early March?"),
            pair("2026-03-01", "2026-03-11")
        );
        assert_eq!(span("mid-March"), pair("2026-03-11", "2026-03-21"));
        assert_eq!(
            span("at the end of February"),
            pair("2026-02-21", "2026-03-01")
        );
        assert_eq!(span("late April 2024"), pair("2024-04-21", "2024-05-01"));
        assert_eq!(
            span("in the first week of March"),
            pair("2026-03-01", "2026-03-08")
        );
        assert_eq!(
            span("the last week of January 2025"),
            pair("2025-01-25", "2025-02-01")
        );
        assert_eq!(
            span("the beginning of May"),
            pair("2026-05-01", "2026-05-11")
        );
        // What the question asks about stays.
        let period = named_period(
            "what did we decide in early March about the ledger?",
            &now(),
        )
        .expect("a period");
        assert!(
            period.rest.contains("ledger") && !period.rest.contains("early"),
            "{}",
            period.rest
        );
    }

    #[test]
    fn the_nth_alone_is_of_the_latest_month_that_had_it() {
        // Today is 2026-11-27 (see `now`).
        assert_eq!(
            span("what happened on the 12th?"),
            pair("2026-11-12", "2026-11-13")
        );
        assert_eq!(span("on the 28th"), pair("2026-10-28", "2026-10-29"));
        assert_eq!(span("on the 31st"), pair("2026-10-31", "2026-11-01"));
        assert_eq!(
            span("on the 12th of March"),
            pair("2026-03-12", "2026-03-13")
        );
    }

    #[test]
    fn a_weekday_before_its_date_is_that_date() {
        assert_eq!(
            span("what happened on Thursday 12 November"),
            pair("2026-11-12", "2026-11-13")
        );
        assert_eq!(
            span("Thursday, 12 November 2026"),
            pair("2026-11-12", "2026-11-13")
        );
        // Alone, it is the last one.
        assert_eq!(span("on Thursday"), pair("2026-11-26", "2026-11-27"));
    }

    #[test]
    fn chinese_months_in_numerals_and_their_parts() {
        // Today is 2026-11-27 (see `now`).
        assert_eq!(span("十一月发生了什么"), pair("2026-11-01", "2026-12-01"));
        assert_eq!(
            span("十一月十二日发生了什么"),
            pair("2026-11-12", "2026-11-13")
        );
        assert_eq!(span("十月上旬"), pair("2026-10-01", "2026-10-11"));
        assert_eq!(span("6月底"), pair("2026-06-21", "2026-07-01"));
        assert_eq!(span("九月中旬的会议"), pair("2026-09-11", "2026-09-21"));
        assert!(days("三年前我们一起").is_some_and(|(a, _, _)| a.starts_with("2023")));
        assert_eq!(days("一个人"), None);
        // 中 alone is too common a character to mean the middle (6月中国).
        assert_eq!(span("6月中国的发布会"), pair("2026-06-01", "2026-07-01"));
    }

    #[test]
    fn a_month_without_its_year_is_its_latest() {
        assert_eq!(
            span("what did John do in August?"),
            pair("2026-08-01", "2026-09-01")
        );
        assert_eq!(
            span("what did we decide in November"),
            pair("2026-11-01", "2026-12-01")
        );
        assert_eq!(span("in December"), pair("2025-12-01", "2026-01-01"));
        assert_eq!(span("6月做了什么"), pair("2026-06-01", "2026-07-01"));
        assert_eq!(span("今年6月"), pair("2026-06-01", "2026-07-01"));
        assert_eq!(span("去年6月3日的事"), pair("2025-06-03", "2025-06-04"));
        assert_eq!(span("since October"), pair("2026-10-01", "2026-11-28"));
    }

    #[test]
    fn counted_back_from_today() {
        // 2026-11-27 is a Friday.
        assert_eq!(
            span("what did we do 3 days ago?"),
            pair("2026-11-24", "2026-11-25")
        );
        assert_eq!(span("two weeks ago"), pair("2026-11-09", "2026-11-16"));
        assert_eq!(span("a month ago"), pair("2026-10-01", "2026-11-01"));
        assert_eq!(span("in the past 7 days"), pair("2026-11-21", "2026-11-28"));
        assert_eq!(
            span("what did we decide last Friday?"),
            pair("2026-11-20", "2026-11-21")
        );
        assert_eq!(
            span("the standup on Monday"),
            pair("2026-11-23", "2026-11-24")
        );
        // A routine names no day.
        assert_eq!(days("what does she do on Tuesday evenings?"), None);
        assert_eq!(days("what does she do on Tuesdays?"), None);
        assert_eq!(
            span("what did she do last Tuesday evening?"),
            pair("2026-11-24", "2026-11-25")
        );
        assert_eq!(span("三天前说的"), pair("2026-11-24", "2026-11-25"));
        assert_eq!(span("上周五的会"), pair("2026-11-20", "2026-11-21"));
        // A day of this week or the next, ahead (as reminders read them).
        assert_eq!(
            span("what do I have next Wednesday?"),
            pair("2026-12-02", "2026-12-03")
        );
        assert_eq!(span("this Friday"), pair("2026-11-27", "2026-11-28"));
        assert_eq!(span("下周三有什么安排"), pair("2026-12-02", "2026-12-03"));
        assert_eq!(span("下星期三"), pair("2026-12-02", "2026-12-03"));
        assert_eq!(span("这周三"), pair("2026-11-25", "2026-11-26"));
        // The week alone is still the week.
        assert_eq!(span("下周的安排"), pair("2026-11-30", "2026-12-07"));
        assert_eq!(span("next week"), pair("2026-11-30", "2026-12-07"));
    }

    #[test]
    fn since_until_and_before_or_after_a_month_are_open() {
        assert_eq!(span("since October 2026"), pair("2026-10-01", "2026-11-28"));
        assert_eq!(span("before March 2026"), pair("1900-01-01", "2026-03-01"));
        assert_eq!(span("after 2025"), pair("2026-01-01", "2200-01-01"));
        assert_eq!(span("until 2024"), pair("1900-01-01", "2025-01-01"));
        assert_eq!(
            span("since 3 November 2026"),
            pair("2026-11-03", "2026-11-28")
        );
    }

    #[test]
    fn before_and_after_reach_a_week() {
        assert_eq!(
            span("What did Maria do last weekend before April 10, 2023?"),
            pair("2023-04-03", "2023-04-11")
        );
        assert_eq!(
            span("what changed after 1 March 2024"),
            pair("2024-03-01", "2024-03-09")
        );
    }

    #[test]
    fn days_relative_to_today() {
        assert_eq!(
            span("what did we decide yesterday?"),
            pair("2026-11-26", "2026-11-27")
        );
        assert_eq!(
            span("what did I note last week"),
            pair("2026-11-16", "2026-11-23")
        );
        assert_eq!(
            span("last month's invoices"),
            pair("2026-10-01", "2026-11-01")
        );
        assert_eq!(span("上个月的会议"), pair("2026-10-01", "2026-11-01"));
        assert_eq!(span("昨天说了什么"), pair("2026-11-26", "2026-11-27"));
        assert_eq!(
            span("what is on tomorrow?"),
            pair("2026-11-28", "2026-11-29")
        );
        assert_eq!(
            span("plans for next week"),
            pair("2026-11-30", "2026-12-07")
        );
        assert_eq!(span("下个月的安排"), pair("2026-12-01", "2027-01-01"));
        assert_eq!(span("明天有什么"), pair("2026-11-28", "2026-11-29"));
    }

    #[test]
    fn words_that_are_months_alone_name_no_period() {
        for text in [
            "what may the user prefer?",
            "the march on Washington",
            "version 2023 of the parser",
            "port 8080",
            "1984 by Orwell",
        ] {
            assert_eq!(named_period(text, &now()), None, "{text}");
        }
    }

    #[test]
    fn long_and_odd_text_is_read_in_one_pass() {
        let long = "2023-".repeat(200_000);
        // A word is looked at once: read again at each character, these
        // would not finish.
        let _ = named_period(&long, &now());
        let _ = named_period(&"9".repeat(1_000_000), &now());
        let _ = named_period(&"3 June ".repeat(100_000), &now());
        assert_eq!(named_period("", &now()), None);
        // A day that does not exist leaves its month.
        assert_eq!(span("31 February 2023"), pair("2023-02-01", "2023-03-01"));
        assert_eq!(named_period("2023-13-45", &now()), None);
    }

    #[test]
    fn dates_joined_make_one_stretch_and_others_stay_apart() {
        assert_eq!(
            span("between 3 June 2023 and 5 July 2023"),
            pair("2023-06-03", "2023-07-06")
        );
        assert_eq!(
            span("from March 3 to March 9 2026"),
            pair("2026-03-03", "2026-03-10")
        );
        let apart = named_period("what did we decide on 2023-06-03 and 2026-11-26", &now())
            .unwrap()
            .ranges;
        assert_eq!(apart.len(), 2, "{apart:?}");
    }

    #[test]
    fn one_step_further_than_last_or_next() {
        // Friday 27 November 2026: this week began on Monday the 23rd.
        assert_eq!(span("上上周做了什么"), pair("2026-11-09", "2026-11-16"));
        assert_eq!(
            span("the week before last"),
            pair("2026-11-09", "2026-11-16")
        );
        assert_eq!(span("下下周"), pair("2026-12-07", "2026-12-14"));
        assert_eq!(span("上上个月的会议"), pair("2026-09-01", "2026-10-01"));
        assert_eq!(
            span("the month after next"),
            pair("2027-01-01", "2027-02-01")
        );
        assert_eq!(span("大前天"), pair("2026-11-24", "2026-11-25"));
        assert_eq!(span("大后天的会"), pair("2026-11-30", "2026-12-01"));
        assert_eq!(
            span("the day before yesterday"),
            pair("2026-11-25", "2026-11-26")
        );
        // What is left to search has none of it.
        assert_eq!(days("上上周做了什么").unwrap().2, "做了什么");
        assert_eq!(days("上上个月的会议").unwrap().2, "的会议");
    }

    #[test]
    fn a_day_alone_beside_a_date_is_of_its_month() {
        assert_eq!(
            span("what happened from 18 to 22 November?"),
            pair("2026-11-18", "2026-11-23")
        );
        assert_eq!(span("18-22 November"), pair("2026-11-18", "2026-11-23"));
        assert_eq!(
            span("between 18 and 22 November 2025"),
            pair("2025-11-18", "2025-11-23")
        );
        assert_eq!(
            span("from November 18 to 22"),
            pair("2026-11-18", "2026-11-23")
        );
        assert_eq!(
            days("what happened from 18 to 22 November?").unwrap().2,
            "what happened ?"
        );
        // Two dates with their months stay two dates joined.
        assert_eq!(
            span("between August 11 and August 15 2023"),
            pair("2023-08-11", "2023-08-16")
        );
    }

    #[test]
    fn weeks_months_and_years_ago_in_chinese() {
        assert_eq!(
            span("两周前我们决定了什么"),
            pair("2026-11-09", "2026-11-16")
        );
        assert_eq!(span("三个星期前"), pair("2026-11-02", "2026-11-09"));
        assert_eq!(span("两个月前的会议"), pair("2026-09-01", "2026-10-01"));
        assert_eq!(span("三年前"), pair("2023-01-01", "2024-01-01"));
        assert_eq!(days("两周前我们决定了什么").unwrap().2, "我们决定了什么");
    }

    #[test]
    fn weekends_named_from_this_week() {
        // Friday 27 November 2026: this week's weekend is the 28th and 29th.
        assert_eq!(
            span("what did I do last weekend"),
            pair("2026-11-21", "2026-11-23")
        );
        assert_eq!(span("this weekend"), pair("2026-11-28", "2026-11-30"));
        assert_eq!(span("next weekend"), pair("2026-12-05", "2026-12-07"));
        assert_eq!(
            span("the weekend before last"),
            pair("2026-11-14", "2026-11-16")
        );
        assert_eq!(span("上周末去了哪里"), pair("2026-11-21", "2026-11-23"));
        assert_eq!(span("这个周末"), pair("2026-11-28", "2026-11-30"));
        assert_eq!(span("下下周末"), pair("2026-12-12", "2026-12-14"));
        assert_eq!(span("上上周末"), pair("2026-11-14", "2026-11-16"));
        assert_eq!(days("上周末去了哪里").unwrap().2, "去了哪里");
        assert_eq!(
            days("what did I do last weekend").unwrap().2,
            "what did I do"
        );
        // On the Sunday, this weekend is the one under way.
        let sunday: Zoned = "2026-11-29T10:00:00+00:00[UTC]".parse().unwrap();
        let p = named_period("this weekend", &sunday).unwrap();
        assert_eq!(
            p.ranges[0].0,
            super::super::document::day_start(Date::constant(2026, 11, 28))
        );
        // A weekend before a date is that date's, one period.
        assert_eq!(
            named_period(
                "What did Maria do last weekend before April 10, 2023?",
                &now()
            )
            .unwrap()
            .ranges
            .len(),
            1
        );
        // 上星期 is last week, as 上周 is.
        assert_eq!(span("上星期的会"), pair("2026-11-16", "2026-11-23"));
        assert_eq!(span("下星期"), pair("2026-11-30", "2026-12-07"));
    }

    #[test]
    fn seasons_named_from_today() {
        assert_eq!(
            span("what did we do last summer"),
            pair("2026-06-01", "2026-09-01")
        );
        assert_eq!(span("last winter"), pair("2025-12-01", "2026-03-01"));
        assert_eq!(span("this spring"), pair("2026-03-01", "2026-06-01"));
        assert_eq!(span("next spring"), pair("2027-03-01", "2027-06-01"));
        assert_eq!(span("去年夏天去了哪里"), pair("2025-06-01", "2025-09-01"));
        assert_eq!(span("今年冬天"), pair("2026-12-01", "2027-03-01"));
        // In July, last summer is the one before: this one is not over.
        let july: Zoned = "2026-07-10T10:00:00+00:00[UTC]".parse().unwrap();
        let p = named_period("last summer", &july).unwrap();
        assert_eq!(
            p.ranges[0].0,
            super::super::document::day_start(Date::constant(2025, 6, 1))
        );
    }

    #[test]
    fn a_year_written_the_chinese_way_and_which_way_it_reaches() {
        assert_eq!(span("2023年的项目"), pair("2023-01-01", "2024-01-01"));
        assert_eq!(span("2023年之前的决定"), pair("1900-01-01", "2023-01-01"));
        assert_eq!(span("2023年以后"), pair("2024-01-01", "2200-01-01"));
        assert_eq!(span("自2023年以来"), pair("2023-01-01", "2026-11-28"));
        assert_eq!(span("2023年前的事"), pair("1900-01-01", "2023-01-01"));
        // Before or after a day: the week next to it, as in English.
        assert_eq!(span("6月3日以后"), pair("2026-06-03", "2026-06-11"));
        assert_eq!(days("自2023年以来的决定").unwrap().2, "的决定");
        // A count of years is no year.
        assert!(days("3年的经验").is_none());
    }
}
