//! LoCoMo conversations read into what the recall benchmark needs: the
//! memories of each unit (turn, session, observation), the turns each one
//! covers, and the questions with the turns that answer them.
//!
//! The file is read as loose JSON rather than into strict types, because
//! the public data is not uniform and the held-out half must load too.
//! Subtleties:
//! - Evidence is usually a list of `D<session>:<turn>` strings, but some
//!   entries hold several ids in one string (`"D8:6; D9:17"`, `"D9:1 D4:4"`),
//!   some observations cite a nested list, and a few ids are malformed
//!   (`"D:11:26"`). Every string found anywhere in the evidence value is
//!   scanned for `D\d+:\d+`; what does not match is dropped and counted.
//! - Ids are compared as numbers, so `D3:07` and `D3:7` are one turn.
//! - A conversation lists `session_N_date_time` for sessions it never
//!   holds; only `session_N` keys with a list of turns are sessions.
//! - Memory files carry no title and no heading: the title falls back to
//!   the neutral file stem, so it adds no words a question could match.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::Path;

use serde_json::Value;

/// One dialog turn, `D<session>:<turn>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TurnId {
    session: u32,
    turn: u32,
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "D{}:{}", self.session, self.turn)
    }
}

/// What a store is made of: the three units of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// One memory per dialog turn.
    Turn,
    /// One memory per session, all its turns.
    Session,
    /// One memory per observation fact.
    Observation,
}

impl Unit {
    /// Every unit, in the order the tables show them.
    pub const ALL: [Unit; 3] = [Unit::Turn, Unit::Session, Unit::Observation];

    /// The unit's name, as `MNEMOFS_RECALL_UNITS` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Turn => "turn",
            Unit::Session => "session",
            Unit::Observation => "observation",
        }
    }

    /// The unit named `name`, if any.
    pub fn parse(name: &str) -> Option<Unit> {
        Unit::ALL.into_iter().find(|u| u.name() == name)
    }
}

/// The question categories measured (5, adversarial, has no evidence).
pub const CATEGORIES: [(u8, &str); 4] = [
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
];

/// One memory file of a store.
#[derive(Debug, Clone)]
pub struct Memory {
    /// The markdown body.
    pub body: String,
    /// The session's date as RFC 3339, when it could be read.
    pub created_at: Option<String>,
    /// The turns this memory covers.
    pub covers: Vec<TurnId>,
}

impl Memory {
    /// The file as written into the store: frontmatter, then the body.
    pub fn file_text(&self) -> String {
        match &self.created_at {
            Some(date) => format!("---\ncreated_at: {date}\n---\n{}\n", self.body),
            None => format!("{}\n", self.body),
        }
    }
}

/// A question of categories 1 to 4.
#[derive(Debug, Clone)]
pub struct Question {
    /// Exactly as written in the data.
    pub text: String,
    /// 1 to 4.
    pub category: u8,
    /// The expected answer, for the dump.
    pub answer: Value,
    /// The evidence turns, deduplicated, in order.
    pub evidence: Vec<TurnId>,
}

/// A session: its date and its turns.
#[derive(Debug, Clone)]
struct Session {
    date: Option<String>,
    turns: Vec<(TurnId, String)>,
}

/// An observation fact and the turns it cites.
#[derive(Debug, Clone)]
struct Observation {
    date: Option<String>,
    fact: String,
    cites: Vec<TurnId>,
}

/// One LoCoMo conversation.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// `sample_id`, such as `conv-26`.
    pub id: String,
    sessions: Vec<Session>,
    observations: Vec<Observation>,
    /// Categories 1 to 4 with at least one well-formed evidence id.
    pub questions: Vec<Question>,
    /// Each turn as its memory's body (`Speaker: text`).
    lines: HashMap<TurnId, String>,
}

/// What in the data was not as the protocol expects, counted while loading.
#[derive(Debug, Default, Clone)]
pub struct Oddities {
    /// Evidence strings (questions and observations) that held no
    /// well-formed id, such as `D:11:26`.
    pub malformed_evidence: Vec<String>,
    /// Evidence strings that held more than one id (`D8:6; D9:17`).
    pub joined_evidence: usize,
    /// Observation evidence given as a nested list.
    pub nested_evidence: usize,
    /// Questions of categories 1 to 4 citing a turn their conversation
    /// does not have: `conversation question turn`.
    pub missing_turns: Vec<String>,
    /// Questions of categories 1 to 4 with no evidence id at all.
    pub no_evidence: usize,
    /// Observation facts that cite no turn.
    pub uncited_facts: usize,
    /// Session dates that could not be read.
    pub unreadable_dates: usize,
}

/// Reads a LoCoMo file (the public `locomo10.json` format).
pub fn load(path: &Path) -> Result<(Vec<Conversation>, Oddities), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let Value::Array(samples) = value else {
        return Err(format!("{}: not a list of conversations", path.display()));
    };
    let mut odd = Oddities::default();
    let conversations = samples
        .iter()
        .enumerate()
        .map(|(i, sample)| conversation(sample, i, &mut odd))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((conversations, odd))
}

fn conversation(sample: &Value, n: usize, odd: &mut Oddities) -> Result<Conversation, String> {
    let id = sample
        .get("sample_id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("conversation {}", n + 1), str::to_owned);
    let Some(Value::Object(talk)) = sample.get("conversation") else {
        return Err(format!("{id}: no `conversation` object"));
    };
    let date_of = |number: u32, odd: &mut Oddities| {
        let raw = talk.get(&format!("session_{number}_date_time"))?.as_str()?;
        let date = parse_session_date(raw);
        if date.is_none() {
            odd.unreadable_dates += 1;
        }
        date
    };

    let mut numbers: Vec<u32> = talk
        .iter()
        .filter(|(_, v)| v.is_array())
        .filter_map(|(k, _)| k.strip_prefix("session_")?.parse().ok())
        .collect();
    numbers.sort_unstable();
    let mut sessions = Vec::new();
    let mut lines = HashMap::new();
    for number in numbers {
        let mut turns = Vec::new();
        for turn in talk[&format!("session_{number}")]
            .as_array()
            .into_iter()
            .flatten()
        {
            let Some(dia) = turn.get("dia_id").and_then(Value::as_str) else {
                continue;
            };
            let [turn_id] = scan_ids(dia)[..] else {
                continue;
            };
            let line = turn_line(turn);
            lines.insert(turn_id, line.clone());
            turns.push((turn_id, line));
        }
        sessions.push(Session {
            date: date_of(number, odd),
            turns,
        });
    }

    let mut observations = Vec::new();
    if let Some(Value::Object(by_session)) = sample.get("observation") {
        let mut keys: Vec<(u32, &String)> = by_session
            .keys()
            .filter_map(|k| {
                let n = k.strip_prefix("session_")?.strip_suffix("_observation")?;
                Some((n.parse().ok()?, k))
            })
            .collect();
        keys.sort_unstable();
        for (number, key) in keys {
            let date = date_of(number, odd);
            let Some(Value::Object(by_speaker)) = by_session.get(key) else {
                continue;
            };
            for facts in by_speaker.values() {
                for item in facts.as_array().into_iter().flatten() {
                    let (fact, evidence) = match item {
                        Value::Array(parts) => (parts.first(), parts.get(1..)),
                        other => (Some(other), None),
                    };
                    let Some(fact) = fact.and_then(Value::as_str) else {
                        continue;
                    };
                    let mut cites = Vec::new();
                    for part in evidence.into_iter().flatten() {
                        if part.is_array() {
                            odd.nested_evidence += 1;
                        }
                        collect_ids(part, &mut cites, odd);
                    }
                    let cites = dedup(cites);
                    if cites.is_empty() {
                        odd.uncited_facts += 1;
                    }
                    observations.push(Observation {
                        date: date.clone(),
                        fact: fact.trim().to_owned(),
                        cites,
                    });
                }
            }
        }
    }

    let mut questions = Vec::new();
    for qa in sample
        .get("qa")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let category = qa.get("category").and_then(Value::as_u64);
        let Some(category) = category.filter(|c| (1..=4).contains(c)) else {
            continue;
        };
        let Some(text) = qa.get("question").and_then(Value::as_str) else {
            continue;
        };
        let mut evidence = Vec::new();
        if let Some(value) = qa.get("evidence") {
            collect_ids(value, &mut evidence, odd);
        }
        let evidence = dedup(evidence);
        if evidence.is_empty() {
            odd.no_evidence += 1;
            continue;
        }
        for turn in &evidence {
            if !lines.contains_key(turn) {
                odd.missing_turns.push(format!("{id} {text:?} {turn}"));
            }
        }
        questions.push(Question {
            text: text.to_owned(),
            category: category as u8,
            answer: qa.get("answer").cloned().unwrap_or(Value::Null),
            evidence,
        });
    }

    Ok(Conversation {
        id,
        sessions,
        observations,
        questions,
        lines,
    })
}

impl Conversation {
    /// The memories of one unit, in the data's order.
    pub fn memories(&self, unit: Unit) -> Vec<Memory> {
        match unit {
            Unit::Turn => self
                .sessions
                .iter()
                .flat_map(|s| {
                    s.turns.iter().map(|(id, line)| Memory {
                        body: line.clone(),
                        created_at: s.date.clone(),
                        covers: vec![*id],
                    })
                })
                .collect(),
            Unit::Session => self
                .sessions
                .iter()
                .filter(|s| !s.turns.is_empty())
                .map(|s| Memory {
                    body: s
                        .turns
                        .iter()
                        .map(|(_, line)| line.as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    created_at: s.date.clone(),
                    covers: s.turns.iter().map(|(id, _)| *id).collect(),
                })
                .collect(),
            Unit::Observation => self
                .observations
                .iter()
                .map(|o| Memory {
                    body: o.fact.clone(),
                    created_at: o.date.clone(),
                    covers: o.cites.clone(),
                })
                .collect(),
        }
    }

    /// A turn as its memory's body, for the dump.
    pub fn line(&self, turn: TurnId) -> Option<&str> {
        self.lines.get(&turn).map(String::as_str)
    }
}

/// The questions some memory of `memories` can answer: at least one
/// evidence turn covered.
pub fn answerable<'a>(questions: &'a [Question], memories: &[Memory]) -> Vec<&'a Question> {
    let covered: HashSet<TurnId> = memories.iter().flat_map(|m| m.covers.clone()).collect();
    questions
        .iter()
        .filter(|q| q.evidence.iter().any(|t| covered.contains(t)))
        .collect()
}

/// `Speaker: text`, with ` [shares <caption>]` for a shared photo.
fn turn_line(turn: &Value) -> String {
    let speaker = turn.get("speaker").and_then(Value::as_str).unwrap_or("");
    let text = turn.get("text").and_then(Value::as_str).unwrap_or("");
    let mut line = format!("{}: {}", speaker.trim(), text.trim());
    if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str)
        && !caption.trim().is_empty()
    {
        line.push_str(&format!(" [shares {}]", caption.trim()));
    }
    // One line per turn in a session memory.
    line.replace(['\n', '\r'], " ")
}

/// Every id in every string of `value`.
fn collect_ids(value: &Value, out: &mut Vec<TurnId>, odd: &mut Oddities) {
    match value {
        Value::String(s) => {
            let ids = scan_ids(s);
            match ids.len() {
                0 => {
                    if !s.trim().is_empty() {
                        odd.malformed_evidence.push(s.clone());
                    }
                }
                1 => {}
                _ => odd.joined_evidence += 1,
            }
            out.extend(ids);
        }
        Value::Array(items) => {
            for item in items {
                collect_ids(item, out, odd);
            }
        }
        _ => {}
    }
}

/// Every `D\d+:\d+` in `s`, whatever separates them.
fn scan_ids(s: &str) -> Vec<TurnId> {
    let b = s.as_bytes();
    let digits = |mut i: usize| -> (Option<u32>, usize) {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (s[start..i].parse().ok(), i)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'D' {
            let (session, j) = digits(i + 1);
            if let Some(session) = session
                && b.get(j) == Some(&b':')
            {
                let (turn, k) = digits(j + 1);
                if let Some(turn) = turn {
                    out.push(TurnId { session, turn });
                    i = k;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

/// `ids` without repeats, first occurrence kept.
fn dedup(ids: Vec<TurnId>) -> Vec<TurnId> {
    let mut seen = BTreeSet::new();
    ids.into_iter().filter(|t| seen.insert(*t)).collect()
}

/// `1:56 pm on 8 May, 2023` as `2023-05-08T13:56:00Z`; `None` for
/// anything else. The data names no time zone, so the time is written
/// as UTC, which is how mnemofs reads a date without an offset anyway.
pub fn parse_session_date(raw: &str) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let (time, date) = raw.trim().split_once(" on ")?;
    let (clock, meridiem) = time.trim().split_once(' ')?;
    let (hour, minute) = clock.split_once(':')?;
    let (hour, minute): (i8, i8) = (hour.parse().ok()?, minute.parse().ok()?);
    if !(1..=12).contains(&hour) || !(0..60).contains(&minute) {
        return None;
    }
    let hour = match meridiem.trim().to_ascii_lowercase().as_str() {
        "am" => hour % 12,
        "pm" => hour % 12 + 12,
        _ => return None,
    };
    let date = date.replace(',', " ");
    let mut parts = date.split_whitespace();
    let day: i8 = parts.next()?.parse().ok()?;
    let month = parts.next()?.to_ascii_lowercase();
    let year: i16 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || month.len() < 3 {
        return None;
    }
    let month = MONTHS.iter().position(|m| m.starts_with(&month))? as i8 + 1;
    jiff::civil::Date::new(year, month, day).ok()?;
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:00Z"
    ))
}
