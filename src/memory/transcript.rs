//! What an agent session was about, read from Claude Code's transcript.
//!
//! The transcript is JSON lines: `type` is `user` or `assistant` (others,
//! such as `summary` or `system`, are skipped), and `message.content` is a
//! string or a list of blocks: `text`, `tool_use` (with the tool's `input`)
//! and `tool_result` (with `is_error`). The digest is extractive, with no
//! model: what the user asked, the files read and edited, sentences that
//! state a decision, what was tried and dropped, errors, and the next step
//! the last assistant turns name. A line that is not JSON, or not in this
//! shape, is skipped: a transcript cut off mid-line still gives a digest.
//!
//! [`conversation`] gives the same transcript's words for a model to read:
//! what the user and the assistant said, without tool calls, tool output
//! or the text hooks and slash commands inject.

use serde_json::Value;

/// Most items kept per list.
const MAX_ITEMS: usize = 12;
/// Longest item, in characters.
const MAX_CHARS: usize = 240;

/// What a session was about (also as it crosses the control socket).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Digest {
    /// What the user asked, first request first.
    pub asked: Vec<String>,
    /// Files the agent read.
    pub files_read: Vec<String>,
    /// Files the agent wrote or edited.
    pub files_edited: Vec<String>,
    /// Sentences that state a decision.
    pub decisions: Vec<String>,
    /// What was tried and did not work, or was dropped.
    pub attempted: Vec<String>,
    /// Errors the tools reported.
    pub problems: Vec<String>,
    /// The next step the last assistant turns name.
    pub next_steps: Vec<String>,
    /// The first and last timestamps seen (as written).
    pub started: Option<String>,
    /// See `started`.
    pub last: Option<String>,
}

/// Reads a transcript's text.
pub fn digest(jsonl: &str) -> Digest {
    let mut d = Digest::default();
    let mut assistant_texts: Vec<String> = Vec::new();
    for line in jsonl.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(t) = entry.get("timestamp").and_then(Value::as_str) {
            if d.started.is_none() {
                d.started = Some(t.to_string());
            }
            d.last = Some(t.to_string());
        }
        let role = entry
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let content = entry.get("message").and_then(|m| m.get("content"));
        match (role, content) {
            ("user", Some(Value::String(text))) => user_text(&mut d, text),
            ("user", Some(Value::Array(blocks))) => {
                for block in blocks {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => user_text(&mut d, str_of(block, "text")),
                        Some("tool_result")
                            if block.get("is_error") == Some(&Value::Bool(true)) =>
                        {
                            if let Some(line) = telling_line(&result_text(block)) {
                                push(&mut d.problems, line);
                            }
                        }
                        _ => {}
                    }
                }
            }
            ("assistant", Some(Value::String(text))) => {
                assistant_text(&mut d, text);
                assistant_texts.push(text.clone());
            }
            ("assistant", Some(Value::Array(blocks))) => {
                for block in blocks {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            let text = str_of(block, "text");
                            assistant_text(&mut d, text);
                            assistant_texts.push(text.to_string());
                        }
                        Some("tool_use") => tool_use(&mut d, block),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    // The next step: from the last few assistant texts, latest first.
    for text in assistant_texts.iter().rev().take(4) {
        for sentence in sentences(text) {
            if names_next_step(&sentence) {
                push(&mut d.next_steps, &sentence);
            }
        }
        if !d.next_steps.is_empty() {
            break;
        }
    }
    d
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn result_text(block: &Value) -> String {
    match block.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn user_text(d: &mut Digest, text: &str) {
    let text = text.trim();
    // Slash-command wrappers and hook output are not the user's words.
    if text.is_empty() || text.starts_with('<') || text.starts_with("Caveat:") {
        return;
    }
    push(&mut d.asked, text);
    for sentence in sentences(text) {
        if states_decision(&sentence) {
            push(&mut d.decisions, &sentence);
        }
    }
}

fn assistant_text(d: &mut Digest, text: &str) {
    for sentence in sentences(text) {
        if states_decision(&sentence) {
            push(&mut d.decisions, &sentence);
        } else if was_dropped(&sentence) {
            push(&mut d.attempted, &sentence);
        } else if states_problem(&sentence) {
            push(&mut d.problems, &sentence);
        }
    }
}

fn tool_use(d: &mut Digest, block: &Value) {
    let input = block.get("input").cloned().unwrap_or(Value::Null);
    let path = ["file_path", "path", "notebook_path"]
        .iter()
        .find_map(|k| input.get(k).and_then(Value::as_str));
    let Some(path) = path else {
        return;
    };
    match str_of(block, "name") {
        "Read" | "View" | "NotebookRead" => push(&mut d.files_read, path),
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => push(&mut d.files_edited, path),
        _ => {}
    }
}

/// Splits prose into sentences (and list items), trimmed.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line
            .trim()
            .trim_start_matches(['-', '*', '•', '#', '>'])
            .trim();
        if line.is_empty() || line.starts_with("```") {
            continue;
        }
        let mut start = 0;
        let bytes = line.as_bytes();
        for (i, c) in line.char_indices() {
            let end = i + c.len_utf8();
            let boundary = matches!(c, '。' | '！' | '？')
                || (matches!(c, '.' | '!' | '?') && bytes.get(end).is_none_or(|b| *b == b' '));
            if boundary {
                let s = line[start..end].trim();
                if !s.is_empty() {
                    out.push(s.to_string());
                }
                start = end;
            }
        }
        let rest = line[start..].trim();
        if !rest.is_empty() {
            out.push(rest.to_string());
        }
    }
    out
}

fn contains_any(sentence: &str, needles: &[&str]) -> bool {
    let lower = sentence.to_lowercase();
    needles.iter().any(|n| lower.contains(n))
}

fn states_decision(sentence: &str) -> bool {
    contains_any(
        sentence,
        &[
            "we decided",
            "i decided",
            "decided to",
            "decision:",
            "we'll go with",
            "we will go with",
            "let's go with",
            "going with",
            "we chose",
            "we agreed",
            "decision noted",
            "decided:",
            "we'll ",
            "we will ",
            "settled on",
            "opted for",
            "决定",
        ],
    )
}

/// An open problem stated in prose ("the retry test still fails").
fn states_problem(sentence: &str) -> bool {
    // "Problem: the staging Kafka is on 2.8, which lacks KIP-848."
    let lower = sentence.trim_start().to_lowercase();
    [
        "problem:",
        "issue:",
        "blocker:",
        "bug:",
        "the issue is",
        "the catch is",
    ]
    .iter()
    .any(|label| lower.starts_with(label))
        || contains_any(
            sentence,
            &[
                "still fail",
                "still broken",
                "open problem",
                "the problem is",
                "is failing",
                "keeps failing",
                "blocked by",
                "does not pass",
                "doesn't pass",
            ],
        )
}

fn was_dropped(sentence: &str) -> bool {
    // "I tried flushing the cache, but it still failed": an attempt.
    let tried = contains_any(sentence, &["tried ", "attempted "])
        && contains_any(
            sentence,
            &[
                "fail",
                "didn't help",
                "did not help",
                "no luck",
                "no effect",
            ],
        );
    tried
        || contains_any(
            sentence,
            &[
                "didn't work",
                "did not work",
                "doesn't work",
                "does not work",
                "rejected",
                "reverted",
                "rolled back",
                "abandoned",
                "gave up on",
                "instead of",
                "no longer",
            ],
        )
}

fn names_next_step(sentence: &str) -> bool {
    contains_any(
        sentence,
        &[
            "next step",
            "next, ",
            "next we",
            "next i",
            "next:",
            "todo",
            "still need to",
            "remaining:",
            "left to do",
            "下一步",
        ],
    )
}

fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// The line of a failed tool's output that says what failed: a failing
/// test, a panic, an error; else its first line. Build and test tools
/// start with progress ("running 3 tests"), which says nothing.
fn telling_line(text: &str) -> Option<&str> {
    const SIGNS: &[&str] = &[
        "... FAILED",
        "panicked at",
        "error[",
        "error:",
        "Error:",
        "FAILED",
        "Traceback",
        "failed",
    ];
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    SIGNS
        .iter()
        .find_map(|sign| {
            lines
                .iter()
                .find(|l| l.contains(sign) && !l.starts_with("test result:"))
        })
        .copied()
        .or_else(|| first_line(text))
}

/// `text` on one line, at most `max` characters, cut at the last word
/// that fits (with `…` when cut).
pub fn clip_at_word(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max).collect();
    let at_word = match cut.rfind(' ') {
        Some(space) if space > 0 => &cut[..space],
        _ => cut.as_str(),
    };
    format!("{}…", at_word.trim_end_matches([',', ';', ':', '.', '-']))
}

/// The user's and the assistant's words, oldest first, one turn a
/// paragraph (`User: ...`, `Assistant: ...`): the last `max_bytes` of
/// them, cut at a turn, or inside the first turn kept when it alone is
/// longer.
pub fn conversation(jsonl: &str, max_bytes: usize) -> String {
    let mut turns: Vec<String> = Vec::new();
    for line in jsonl.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if entry.get("isMeta") == Some(&Value::Bool(true)) {
            continue;
        }
        let speaker = match entry.get("type").and_then(Value::as_str) {
            Some("user") => "User",
            Some("assistant") => "Assistant",
            _ => continue,
        };
        let texts: Vec<&str> = match entry.get("message").and_then(|m| m.get("content")) {
            Some(Value::String(text)) => vec![text.as_str()],
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .map(|b| str_of(b, "text"))
                .collect(),
            _ => continue,
        };
        for text in texts {
            let text = text.trim();
            // Slash-command wrappers and hook output are nobody's words.
            if text.is_empty() || text.starts_with('<') || text.starts_with("Caveat:") {
                continue;
            }
            turns.push(format!("{speaker}: {text}"));
        }
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut size = 0;
    for turn in turns.iter().rev() {
        let room = max_bytes.saturating_sub(size);
        if turn.len() + 2 <= room {
            kept.push(turn);
            size += turn.len() + 2;
            continue;
        }
        if kept.is_empty() {
            let mut start = turn.len() - room.min(turn.len());
            while !turn.is_char_boundary(start) {
                start += 1;
            }
            kept.push(&turn[start..]);
        }
        break;
    }
    kept.reverse();
    kept.join("\n\n")
}

/// Adds an item (shortened, once) if the list has room.
fn push(list: &mut Vec<String>, item: &str) {
    let item = item.trim();
    if item.is_empty() || list.len() >= MAX_ITEMS {
        return;
    }
    let short = clip_at_word(item, MAX_CHARS);
    if !list.contains(&short) {
        list.push(short);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conversation_is_the_words_without_tools_and_ends_with_the_latest() {
        let words = conversation(TRANSCRIPT, 10_000);
        assert!(
            words.starts_with("User: Make the importer skip binary files.\n\nAssistant: Let me look at the importer.\n\n"),
            "{words}"
        );
        assert!(
            words.ends_with("Assistant: Fixed. Next step: add a test for an empty file."),
            "{words}"
        );
        for noise in [
            "fn import()",
            "cargo test",
            "E0425",
            "old",
            "/src/import.rs",
        ] {
            assert!(!words.contains(noise), "{noise}: {words}");
        }
        let tail = conversation(TRANSCRIPT, 70);
        assert_eq!(
            tail,
            "Assistant: Fixed. Next step: add a test for an empty file."
        );
        let cut = conversation(TRANSCRIPT, 20);
        assert_eq!(cut, "t for an empty file.");
        let wide = r#"{"type":"user","message":{"content":"ééé"}}"#;
        assert_eq!(conversation(wide, 3), "é");
        let meta = r#"{"type":"user","isMeta":true,"message":{"content":"skill text"}}"#;
        assert_eq!(conversation(meta, 100), "");
    }

    #[test]
    fn labelled_problems_and_failed_attempts_are_told_apart() {
        let mut d = Digest::default();
        assistant_text(
            &mut d,
            "Problem: the staging Kafka is on 2.8, which lacks KIP-848. \
             I tried flushing the consumer offsets, but it still failed.",
        );
        assert_eq!(
            d.problems,
            ["Problem: the staging Kafka is on 2.8, which lacks KIP-848."]
        );
        assert_eq!(
            d.attempted,
            ["I tried flushing the consumer offsets, but it still failed."]
        );
    }

    const TRANSCRIPT: &str = r#"{"type":"summary","summary":"old"}
{"type":"user","timestamp":"2026-11-20T09:00:00Z","message":{"role":"user","content":"Make the importer skip binary files."}}
{"type":"assistant","timestamp":"2026-11-20T09:00:05Z","message":{"role":"assistant","content":[{"type":"text","text":"Let me look at the importer."},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/src/import.rs"}}]}}
{"type":"user","timestamp":"2026-11-20T09:00:06Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"fn import() {}"}]}}
{"type":"assistant","timestamp":"2026-11-20T09:01:00Z","message":{"role":"assistant","content":[{"type":"text","text":"Sniffing the extension didn't work for files without one. We decided to check for NUL bytes instead."},{"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"/src/import.rs","old_string":"a","new_string":"b"}},{"type":"tool_use","id":"t3","name":"Bash","input":{"command":"cargo test"}}]}}
{"type":"user","timestamp":"2026-11-20T09:02:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"error[E0425]: cannot find value `x`\nmore","is_error":true}]}}
not json at all
{"type":"assistant","timestamp":"2026-11-20T09:03:00Z","message":{"role":"assistant","content":"Fixed. Next step: add a test for an empty file."}}
{"type":"user","timestamp":"2026-11-20T09:03"#;

    #[test]
    fn a_transcript_gives_what_was_asked_done_decided_and_next() {
        let d = digest(TRANSCRIPT);
        assert_eq!(d.asked, ["Make the importer skip binary files."]);
        assert_eq!(d.files_read, ["/src/import.rs"]);
        assert_eq!(d.files_edited, ["/src/import.rs"]);
        assert_eq!(d.decisions, ["We decided to check for NUL bytes instead."]);
        assert_eq!(
            d.attempted,
            ["Sniffing the extension didn't work for files without one."]
        );
        assert_eq!(d.problems, ["error[E0425]: cannot find value `x`"]);
        assert_eq!(d.next_steps, ["Next step: add a test for an empty file."]);
        assert_eq!(d.started.as_deref(), Some("2026-11-20T09:00:00Z"));
        assert_eq!(d.last.as_deref(), Some("2026-11-20T09:03:00Z"));
    }

    #[test]
    fn garbage_gives_an_empty_digest() {
        assert_eq!(digest("\u{0}\u{1}{{{\n[1,2]\n\"x\""), Digest::default());
    }

    #[test]
    fn lists_are_capped_and_items_shortened() {
        let mut lines = String::new();
        for i in 0..100 {
            lines.push_str(&format!(
                "{{\"type\":\"user\",\"message\":{{\"content\":\"request {i} {}\"}}}}\n",
                "x".repeat(1000)
            ));
        }
        let d = digest(&lines);
        assert_eq!(d.asked.len(), MAX_ITEMS);
        assert!(d.asked.iter().all(|a| a.chars().count() <= MAX_CHARS + 1));
    }

    #[test]
    fn items_are_cut_at_a_word() {
        let ask = "Make the importer skip binary files and report every skipped file with its size";
        assert_eq!(
            clip_at_word(ask, 40),
            "Make the importer skip binary files and…"
        );
        assert_eq!(clip_at_word("short\nask", 40), "short ask");
    }

    #[test]
    fn a_failed_test_run_is_its_failing_line_and_decisions_are_noted() {
        let output = "running 3 tests\ntest ok_path ... ok\ntest retries_on_503 ... FAILED\n\ntest result: FAILED. 2 passed; 1 failed";
        assert_eq!(telling_line(output), Some("test retries_on_503 ... FAILED"));
        assert_eq!(telling_line("just one line"), Some("just one line"));
        assert!(states_decision(
            "Decision noted: we'll hand-write the retry loop instead of pulling in a crate."
        ));
        assert!(states_problem("The retry test still fails on a 503."));
    }
}
