//! Human-written durations (`30s`, `5m`, `12h`, `7d`, `2w`, `1h30m`, `90`)
//! for the config file.
//!
//! Why not jiff's own duration parser: it reads more than we want
//! (`1.5h`, `-5m`, `5 months ago`), and owning the grammar lets the error
//! name exactly what was wrong with what the user typed. The sum is a
//! [`jiff::SignedDuration`], which checks every step for overflow.
//!
//! Subtleties:
//! - A bare number is seconds, because YAML turns `interval: 90` into an
//!   integer and a user who writes that means seconds.
//! - Units are lowercase only. `M` would be read as "month" by some people
//!   and "minute" by others, so it is rejected rather than guessed.
//! - Fractions (`1.5h`) are rejected with a hint to write `1h30m`: exact
//!   whole seconds keep [`format_duration`] a faithful inverse.
//! - Formatting uses days as the largest unit (`90d`, not `12w6d`), which
//!   is how people write retention periods.

use std::fmt;
use std::time::Duration;

use jiff::SignedDuration;

/// Why a duration string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// The string was empty or only whitespace.
    #[error("empty duration (write e.g. `30s`, `5m`, `12h`, `7d`)")]
    Empty,
    /// A unit was expected after a number but something else followed.
    #[error("invalid duration `{input}`: unknown unit `{unit}` (use s, m, h, d or w)")]
    UnknownUnit {
        /// The whole input.
        input: String,
        /// The text that was not a unit.
        unit: String,
    },
    /// A unit or other text appeared where a number was expected.
    #[error("invalid duration `{input}`: expected a number at `{rest}`")]
    ExpectedNumber {
        /// The whole input.
        input: String,
        /// What followed where the number should have been.
        rest: String,
    },
    /// The input had a fractional number such as `1.5h`.
    #[error("invalid duration `{input}`: fractions are not supported, write e.g. `1h30m`")]
    Fraction {
        /// The whole input.
        input: String,
    },
    /// The input started with a minus sign.
    #[error("invalid duration `{input}`: durations cannot be negative")]
    Negative {
        /// The whole input.
        input: String,
    },
    /// The total does not fit in 64-bit seconds (signed, for a sum of
    /// components; a plain number of seconds may use the full `u64`).
    #[error("invalid duration `{input}`: too large")]
    Overflow {
        /// The whole input.
        input: String,
    },
}

/// Parses a duration such as `30s`, `5m`, `12h`, `7d`, `2w`, `1h30m`,
/// `1h 30m` or a plain number of seconds (`90`).
///
/// Components may repeat and come in any order; they are added up.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let input = s.trim();
    if input.is_empty() {
        return Err(DurationError::Empty);
    }
    if input.starts_with('-') {
        return Err(DurationError::Negative {
            input: input.to_owned(),
        });
    }
    if input.bytes().all(|b| b.is_ascii_digit()) {
        return input.parse::<u64>().map(Duration::from_secs).map_err(|_| {
            DurationError::Overflow {
                input: input.to_owned(),
            }
        });
    }

    let overflow = || DurationError::Overflow {
        input: input.to_owned(),
    };
    let mut total = SignedDuration::ZERO;
    let mut rest = input;
    while !rest.is_empty() {
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits_end == 0 {
            return Err(DurationError::ExpectedNumber {
                input: input.to_owned(),
                rest: rest.to_owned(),
            });
        }
        let number: i64 = rest[..digits_end].parse().map_err(|_| overflow())?;
        rest = &rest[digits_end..];
        if rest.starts_with(['.', ',']) {
            return Err(DurationError::Fraction {
                input: input.to_owned(),
            });
        }
        // Allow `1 h` and `1h 30m`: people put spaces in config values.
        rest = rest.trim_start();
        let unit_end = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        let seconds_per_unit = unit_seconds(unit).ok_or_else(|| DurationError::UnknownUnit {
            input: input.to_owned(),
            unit: if unit.is_empty() {
                rest.chars().next().map(String::from).unwrap_or_default()
            } else {
                unit.to_owned()
            },
        })?;
        // `number` seconds times the unit's size, not the other way round:
        // jiff multiplies by an `i32`, which the unit's size always fits.
        let part = SignedDuration::from_secs(number)
            .checked_mul(seconds_per_unit)
            .ok_or_else(overflow)?;
        total = total.checked_add(part).ok_or_else(overflow)?;
        rest = rest[unit_end..].trim_start();
    }
    // Never negative, so only an impossible total could fail here.
    Duration::try_from(total).map_err(|_| overflow())
}

/// Seconds in one `unit`, for the spellings people actually write. Days
/// and weeks are 24 and 168 hours: a config interval is elapsed time, with
/// no calendar (or daylight saving) to consult.
fn unit_seconds(unit: &str) -> Option<i32> {
    Some(match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 7 * 86_400,
        _ => return None,
    })
}

/// Formats a duration the way [`parse_duration`] reads it: `1d2h30m`,
/// `90d`, `45s`, `0s`. Sub-second parts are dropped.
pub fn format_duration(d: Duration) -> String {
    let mut secs = d.as_secs();
    if secs == 0 {
        return "0s".to_owned();
    }
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
        let n = secs / size;
        if n > 0 {
            out.push_str(&n.to_string());
            out.push_str(unit);
            secs %= size;
        }
    }
    out
}

/// A [`Duration`] that displays as [`format_duration`] does, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

/// Serde support for `Duration` fields written as `30s`, `7d` or a number
/// of seconds: `#[serde(with = "crate::memory::duration::serde_duration")]`.
pub mod serde_duration {
    use std::fmt;
    use std::time::Duration;

    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    /// Writes the duration as a string such as `1h30m`.
    pub fn serialize<S: Serializer>(d: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::format_duration(*d))
    }

    /// Reads a duration string or a non-negative number of seconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        deserializer.deserialize_any(DurationVisitor)
    }

    struct DurationVisitor;

    impl Visitor<'_> for DurationVisitor {
        type Value = Duration;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a duration such as `30s`, `5m`, `12h`, `7d` or a number of seconds")
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
            Ok(Duration::from_secs(v))
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
            u64::try_from(v)
                .map(Duration::from_secs)
                .map_err(|_| E::custom("durations cannot be negative"))
        }

        fn visit_f64<E: de::Error>(self, _v: f64) -> Result<Duration, E> {
            Err(E::custom(
                "fractional durations are not supported, write e.g. `1h30m`",
            ))
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
            super::parse_duration(v).map_err(E::custom)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(s: &str) -> u64 {
        parse_duration(s).unwrap().as_secs()
    }

    #[test]
    fn single_units() {
        assert_eq!(secs("30s"), 30);
        assert_eq!(secs("5m"), 300);
        assert_eq!(secs("12h"), 43_200);
        assert_eq!(secs("7d"), 604_800);
        assert_eq!(secs("2w"), 1_209_600);
        assert_eq!(secs("3 days"), 259_200);
    }

    #[test]
    fn plain_numbers_are_seconds() {
        assert_eq!(secs("90"), 90);
        assert_eq!(secs(" 0 "), 0);
    }

    #[test]
    fn compound_durations_add_up() {
        assert_eq!(secs("1h30m"), 5_400);
        assert_eq!(secs("1h 30m"), 5_400);
        assert_eq!(secs("1d12h"), 129_600);
        assert_eq!(secs("30m1h"), 5_400);
    }

    #[test]
    fn errors_name_the_problem() {
        assert_eq!(parse_duration("  "), Err(DurationError::Empty));
        assert!(matches!(
            parse_duration("5M"),
            Err(DurationError::UnknownUnit { unit, .. }) if unit == "M"
        ));
        assert!(matches!(
            parse_duration("5y"),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_duration("1.5h"),
            Err(DurationError::Fraction { .. })
        ));
        assert!(matches!(
            parse_duration("-5m"),
            Err(DurationError::Negative { .. })
        ));
        assert!(matches!(
            parse_duration("h"),
            Err(DurationError::ExpectedNumber { .. })
        ));
        assert!(matches!(
            parse_duration("5m!"),
            Err(DurationError::ExpectedNumber { rest, .. }) if rest == "!"
        ));
        assert!(matches!(
            parse_duration("99999999999999999999w"),
            Err(DurationError::Overflow { .. })
        ));
        assert!(matches!(
            parse_duration("9999999999999999w"),
            Err(DurationError::Overflow { .. })
        ));
        let msg = parse_duration("5y").unwrap_err().to_string();
        assert_eq!(
            msg,
            "invalid duration `5y`: unknown unit `y` (use s, m, h, d or w)"
        );
    }

    #[test]
    fn a_sum_of_components_overflows_past_signed_64_bit_seconds() {
        assert_eq!(secs("9223372036854775807s"), i64::MAX as u64);
        assert_eq!(secs("18446744073709551615"), u64::MAX);
        assert!(matches!(
            parse_duration("9223372036854775807s 1s"),
            Err(DurationError::Overflow { .. })
        ));
        assert_eq!(secs("15250284452471w"), 15_250_284_452_471 * 604_800);
        assert!(matches!(
            parse_duration("15250284452472w"),
            Err(DurationError::Overflow { .. })
        ));
    }

    #[test]
    fn formatting_uses_days_as_the_largest_unit() {
        assert_eq!(format_duration(Duration::from_secs(0)), "0s");
        assert_eq!(format_duration(Duration::from_secs(45)), "45s");
        assert_eq!(format_duration(Duration::from_secs(5_400)), "1h30m");
        assert_eq!(format_duration(Duration::from_secs(90 * 86_400)), "90d");
        assert_eq!(format_duration(Duration::from_secs(93_784)), "1d2h3m4s");
        assert_eq!(HumanDuration(Duration::from_secs(300)).to_string(), "5m");
    }

    #[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq)]
    struct Holder {
        #[serde(with = "serde_duration")]
        d: Duration,
    }

    #[test]
    fn serde_reads_strings_and_integers() {
        let h: Holder = serde_yaml::from_str("d: 1h30m").unwrap();
        assert_eq!(h.d, Duration::from_secs(5_400));
        let h: Holder = serde_yaml::from_str("d: 90").unwrap();
        assert_eq!(h.d, Duration::from_secs(90));
        assert!(serde_yaml::from_str::<Holder>("d: -3").is_err());
        assert!(serde_yaml::from_str::<Holder>("d: 1.5").is_err());
        let err = serde_yaml::from_str::<Holder>("d: 5y").unwrap_err();
        assert!(err.to_string().contains("unknown unit `y`"), "{err}");
        let out = serde_yaml::to_string(&Holder {
            d: Duration::from_secs(604_800),
        })
        .unwrap();
        assert_eq!(out.trim(), "d: 7d");
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(n in 0u64..=u64::MAX / 2) {
            let d = Duration::from_secs(n);
            prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }

        #[test]
        fn arbitrary_input_never_panics(s in "\\PC*") {
            let _ = parse_duration(&s);
        }
    }
}
