//! What an Obsidian vault or a Logseq graph says about its own notes:
//! which are templates, which day a note belongs to, which files are the
//! attachments notes embed.
//!
//! Read from the tools' own settings, never guessed from folder names:
//! - Obsidian keeps the core Templates plugin's folder in
//!   `.obsidian/templates.json` (`{"folder": "Templates"}`), Templater's in
//!   `.obsidian/plugins/templater-obsidian/data.json`
//!   (`"templates_folder"`), and the daily note's template in
//!   `.obsidian/daily-notes.json` (`"template": "Templates/Daily"`, without
//!   `.md`). A setting is honoured whether or not its plugin is on: the
//!   folder holds templates either way.
//! - Logseq's templates are blocks with a `template:: NAME` property;
//!   `logseq/config.edn` names the journal's default one under
//!   `:default-templates`, and `:hidden` lists folders Logseq itself does
//!   not show. A page is a template when its page properties say
//!   `template::`, or every top-level block of it is one.
//!
//! A note's day comes from its own frontmatter (`created_at`, `created`,
//! `date`, a day written out as Logseq links journals: `[[Nov 1st,
//! 2023]]`), else from its name read with the vault's daily-note format
//! (`.obsidian/daily-notes.json`'s `format`: `DD-MM-YYYY`), else from a
//! date in its name (`2025-11-20`, Logseq's
//! `2025_11_20`, `20251120`), else from the file's time. A bare date is
//! kept bare: the store reads `YYYY-MM-DD` as that day, and no zone is
//! guessed for it.

use std::path::Path;

use serde_json::Value;

use crate::memory::reminders::month_named;

/// The template folders and files a vault's settings name, each with
/// where it was named.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Templates {
    /// Folders, vault-relative, `/`-separated, without slashes at the ends.
    folders: Vec<(String, &'static str)>,
    /// Files, vault-relative, with `.md`.
    files: Vec<(String, &'static str)>,
    /// Logseq template names `config.edn` names.
    names: Vec<String>,
    /// How Obsidian names a daily note (`.obsidian/daily-notes.json`'s
    /// `format`, moment.js tokens such as `DD-MM-YYYY`): it tells a daily
    /// note's day. Kept here because the same settings file names the
    /// daily note's template.
    daily_format: Option<String>,
}

impl Templates {
    /// What an Obsidian vault's settings name as templates.
    pub(super) fn obsidian(root: &Path) -> Templates {
        let mut templates = Templates::default();
        let settings = root.join(".obsidian");
        for (file, key, why) in [
            (
                "templates.json",
                "folder",
                "a template (the Templates folder in .obsidian/templates.json)",
            ),
            (
                "plugins/templater-obsidian/data.json",
                "templates_folder",
                "a template (Templater's folder in .obsidian/plugins)",
            ),
        ] {
            if let Some(folder) = json_string(&settings.join(file), key) {
                let folder = clean(&folder);
                if !folder.is_empty() {
                    templates.folders.push((folder, why));
                }
            }
        }
        let daily = json_file(&settings.join("daily-notes.json"));
        let daily = |key: &str| daily.as_ref()?.get(key)?.as_str().map(str::to_owned);
        templates.daily_format = daily("format").filter(|f| !f.trim().is_empty());
        if let Some(file) = daily("template") {
            let mut file = clean(&file);
            if !file.is_empty() {
                if !file.ends_with(".md") {
                    file.push_str(".md");
                }
                templates.files.push((
                    file,
                    "a template (the daily note's, in .obsidian/daily-notes.json)",
                ));
            }
        }
        templates
    }

    /// What a Logseq graph's `logseq/config.edn` names as templates.
    pub(super) fn logseq(root: &Path) -> Templates {
        let config = std::fs::read_to_string(root.join("logseq/config.edn")).unwrap_or_default();
        Templates {
            names: edn_strings(&config, ":default-templates", '{', '}'),
            ..Templates::default()
        }
    }

    /// The day a note's name says, read with the vault's daily-note
    /// format, as `YYYY-MM-DD`.
    pub(super) fn day_in_name(&self, stem: &str) -> Option<String> {
        day_by_format(stem, self.daily_format.as_deref()?)
    }

    /// Why the note at `rel` is a template, if the settings say it is.
    pub(super) fn by_path(&self, rel: &str) -> Option<&'static str> {
        let file = self
            .files
            .iter()
            .find(|(f, _)| f.eq_ignore_ascii_case(rel))
            .map(|(_, why)| *why);
        file.or_else(|| {
            self.folders
                .iter()
                .find(|(folder, _)| {
                    rel.len() > folder.len()
                        && rel.as_bytes()[folder.len()] == b'/'
                        && rel[..folder.len()].eq_ignore_ascii_case(folder)
                })
                .map(|(_, why)| *why)
        })
    }

    /// Why a Logseq page (its properties, its body) is a template, if it is.
    pub(super) fn logseq_page(
        &self,
        properties: &[(String, String)],
        body: &str,
    ) -> Option<String> {
        if let Some((_, name)) = properties.iter().find(|(k, _)| k == "template") {
            return Some(self.logseq_reason(name));
        }
        let blocks = top_level_blocks(body);
        if blocks.is_empty() {
            return None;
        }
        let mut names = Vec::new();
        for block in &blocks {
            let name = block.lines().find_map(|line| {
                let line = line.trim_start().trim_start_matches("- ").trim();
                line.strip_prefix("template::")
                    .map(|n| n.trim().to_string())
            })?;
            names.push(name);
        }
        Some(self.logseq_reason(&names.join(", ")))
    }

    fn logseq_reason(&self, name: &str) -> String {
        if self.names.iter().any(|n| n == name) {
            format!("a template (template:: {name}, a default in logseq/config.edn)")
        } else {
            format!("a template (template:: {name})")
        }
    }
}

/// The folders a Logseq graph's `logseq/config.edn` hides (`:hidden`),
/// graph-relative, without slashes at the ends.
pub(super) fn logseq_hidden(root: &Path) -> Vec<String> {
    let config = std::fs::read_to_string(root.join("logseq/config.edn")).unwrap_or_default();
    edn_strings(&config, ":hidden", '[', ']')
        .iter()
        .map(|f| clean(f))
        .filter(|f| !f.is_empty())
        .collect()
}

/// Whether `rel` is `folder` or below it.
pub(super) fn within(rel: &str, folder: &str) -> bool {
    rel == folder || (rel.starts_with(folder) && rel.as_bytes().get(folder.len()) == Some(&b'/'))
}

/// A path from a setting, as the vault-relative form `rel` uses.
fn clean(path: &str) -> String {
    path.trim().trim_matches('/').replace('\\', "/")
}

/// The string value of `key` in the JSON object in `file`.
fn json_string(file: &Path, key: &str) -> Option<String> {
    json_file(file)?.get(key)?.as_str().map(str::to_owned)
}

/// A settings file's JSON, if it reads.
fn json_file(file: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
}

/// The string literals inside the `open`..`close` form that follows `key`
/// in an EDN text; enough of EDN for the two settings read here. A key
/// inside a `;` comment is passed over.
fn edn_strings(text: &str, key: &str, open: char, close: char) -> Vec<String> {
    let uncommented: String = text
        .lines()
        .map(|line| line.split(';').next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let Some(at) = uncommented.find(key) else {
        return Vec::new();
    };
    let rest = uncommented[at + key.len()..].trim_start();
    let Some(rest) = rest.strip_prefix(open) else {
        return Vec::new();
    };
    let form = &rest[..rest.find(close).unwrap_or(rest.len())];
    form.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A Logseq body's top-level blocks: from a line that starts with `-` at
/// the margin up to the next one.
fn top_level_blocks(body: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    for line in body.lines() {
        if line.starts_with("- ") || line == "-" {
            blocks.push(String::new());
        }
        if let Some(block) = blocks.last_mut() {
            block.push_str(line);
            block.push('\n');
        }
    }
    blocks
}

/// The date in a note's name, as `YYYY-MM-DD`: `2025-11-20`,
/// `2025_11_20`, `2025.11.20`, alone or among words, or the whole name
/// `20251120`. Only dates that exist count.
pub(super) fn date_in_name(stem: &str) -> Option<String> {
    let b = stem.as_bytes();
    let digits = |from: usize, n: usize| {
        b.get(from..from + n)
            .filter(|d| d.iter().all(u8::is_ascii_digit))
            .map(|d| String::from_utf8_lossy(d).into_owned())
    };
    let real = |date: String| crate::memory::parse_timestamp(&date).map(|_| date);
    if b.len() == 8
        && let (Some(y), Some(m), Some(d)) = (digits(0, 4), digits(4, 2), digits(6, 2))
    {
        return real(format!("{y}-{m}-{d}"));
    }
    for start in 0..b.len() {
        if start > 0 && b[start - 1].is_ascii_digit() {
            continue;
        }
        let (Some(y), Some(m), Some(d)) =
            (digits(start, 4), digits(start + 5, 2), digits(start + 8, 2))
        else {
            continue;
        };
        let sep = b[start + 4];
        if !matches!(sep, b'-' | b'_' | b'.')
            || b[start + 7] != sep
            || b.get(start + 10).is_some_and(u8::is_ascii_digit)
        {
            continue;
        }
        if let Some(date) = real(format!("{y}-{m}-{d}")) {
            return Some(date);
        }
    }
    None
}

/// The day `stem` names when read with `format`, a moment.js date format
/// as Obsidian's daily notes use it (`YYYY-MM-DD`, `DD-MM-YYYY`, `MMMM Do,
/// YYYY`, `YYYY-MM-DD dddd`, `[Journal] YYYY.MM.DD`; folders in the format
/// are left out). The whole name must match and the day must exist.
fn day_by_format(stem: &str, format: &str) -> Option<String> {
    let format = format.rsplit('/').next().unwrap_or(format);
    let (mut year, mut month, mut day) = (None, None, None);
    let mut rest = stem;
    let mut f = format;
    let take_digits = |rest: &mut &str, min: usize, max: usize| -> Option<u32> {
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        if n < min || n > max {
            return None;
        }
        let value = rest[..n].parse().ok()?;
        *rest = &rest[n..];
        Some(value)
    };
    let take_word = |rest: &mut &str| -> String {
        let n = rest
            .char_indices()
            .find(|(_, c)| !c.is_alphabetic())
            .map_or(rest.len(), |(i, _)| i);
        let word = rest[..n].to_lowercase();
        *rest = &rest[n..];
        word
    };
    while !f.is_empty() {
        if let Some(inner) = f.strip_prefix('[') {
            let end = inner.find(']')?;
            rest = strip_prefix_ignoring_case(rest, &inner[..end])?;
            f = &inner[end + 1..];
            continue;
        }
        let token = [
            "YYYY", "YY", "MMMM", "MMM", "MM", "M", "Do", "DD", "D", "dddd", "ddd", "dd", "d",
        ]
        .into_iter()
        .find(|t| f.starts_with(t));
        match token {
            Some("YYYY") => year = Some(take_digits(&mut rest, 4, 4)?),
            Some("YY") => year = Some(2000 + take_digits(&mut rest, 2, 2)?),
            Some("MMMM" | "MMM") => {
                month = Some(month_named(&take_word(&mut rest))?);
            }
            Some("MM") => month = Some(take_digits(&mut rest, 2, 2)?),
            Some("M") => month = Some(take_digits(&mut rest, 1, 2)?),
            Some("DD") => day = Some(take_digits(&mut rest, 2, 2)?),
            Some("D") => day = Some(take_digits(&mut rest, 1, 2)?),
            Some("Do") => {
                day = Some(take_digits(&mut rest, 1, 2)?);
                let suffix = take_word(&mut rest);
                if !["st", "nd", "rd", "th"].contains(&suffix.as_str()) {
                    return None;
                }
            }
            // A weekday's name says nothing the date does not.
            Some(_) => {
                if take_word(&mut rest).is_empty() {
                    return None;
                }
            }
            None => {
                let c = f.chars().next()?;
                rest = strip_prefix_ignoring_case(rest, &c.to_string())?;
                f = &f[c.len_utf8()..];
                continue;
            }
        }
        f = &f[token.map_or(0, str::len)..];
    }
    if !rest.is_empty() {
        return None;
    }
    let date = format!("{:04}-{:02}-{:02}", year?, month?, day?);
    crate::memory::parse_timestamp(&date).map(|_| date)
}

fn strip_prefix_ignoring_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// A date as a note's `created` or `date` holds it: a timestamp or day
/// the store reads (kept as written), else a day written out in English,
/// as Logseq links its journals (`[[Nov 1st, 2023]]`, `November 1, 2023`,
/// `1 Nov 2023`), as `YYYY-MM-DD`.
fn date_written(value: &str) -> Option<String> {
    let text = value.trim();
    if crate::memory::parse_timestamp(text).is_some() {
        return Some(text.to_string());
    }
    let text = text
        .strip_prefix("[[")
        .and_then(|t| t.strip_suffix("]]"))
        .unwrap_or(text);
    // A daily note linked (`[[2025-11-17]]`), or a day written with
    // slashes or dots (`2025/11/18`).
    let dashed = match text.as_bytes() {
        [y @ .., b'/' | b'.', _, _, b'/' | b'.', _, _] if y.len() == 4 => {
            text.replace(['/', '.'], "-")
        }
        _ => text.to_string(),
    };
    if crate::memory::parse_timestamp(&dashed).is_some() {
        return Some(dashed);
    }
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let [a, b, year] = words.as_slice() else {
        return None;
    };
    let day = |w: &str| {
        w.trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .parse::<u8>()
            .ok()
    };
    let (m, d) = match (month_named(a), month_named(b)) {
        (Some(m), None) => (m, day(b)?),
        (None, Some(m)) => (m, day(a)?),
        _ => return None,
    };
    let year: u16 = year.parse().ok().filter(|_| year.len() == 4)?;
    let date = format!("{year:04}-{m:02}-{d:02}");
    crate::memory::parse_timestamp(&date).map(|_| date)
}

/// The `created_at` a note gets, unless its frontmatter has one: its
/// `created` or `date` field when that reads as a date, else the date in
/// its name, else `modified` (unix seconds).
pub(super) fn created_at(
    fields: &[(String, Value)],
    stem: &str,
    named_day: Option<String>,
    modified: Option<i64>,
) -> Option<String> {
    if fields.iter().any(|(k, _)| k == "created_at") {
        return None;
    }
    let written = ["created", "date"].iter().find_map(|key| {
        let (_, value) = fields.iter().find(|(k, _)| k == key)?;
        date_written(value.as_str()?)
    });
    written
        .or(named_day)
        .or_else(|| date_in_name(stem))
        .or_else(|| modified.map(crate::memory::format_timestamp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dates_in_names_of_daily_notes_and_journals() {
        assert_eq!(date_in_name("2025-11-20").as_deref(), Some("2025-11-20"));
        assert_eq!(date_in_name("2025_11_20").as_deref(), Some("2025-11-20"));
        assert_eq!(date_in_name("20251120").as_deref(), Some("2025-11-20"));
        assert_eq!(
            date_in_name("Standup 2025.11.20 notes").as_deref(),
            Some("2025-11-20")
        );
        assert_eq!(date_in_name("2025-02-30"), None);
        assert_eq!(date_in_name("v12025-11-20"), None);
        assert_eq!(date_in_name("2025-11-201"), None);
        assert_eq!(date_in_name("Kubernetes"), None);
        assert_eq!(date_in_name("2025-11_20"), None);
    }

    #[test]
    fn a_day_written_out_as_logseq_links_journals_is_a_date() {
        for (written, day) in [
            ("[[Nov 1st, 2023]]", "2023-11-01"),
            ("Nov 1st, 2023", "2023-11-01"),
            ("November 21, 2025", "2025-11-21"),
            ("1 Nov 2023", "2023-11-01"),
            ("Sept 3rd, 2024", "2024-09-03"),
            ("2024-03-01", "2024-03-01"),
            ("2024-03-01 10:00", "2024-03-01 10:00"),
            ("[[2025-11-17]]", "2025-11-17"),
            ("2025/11/18", "2025-11-18"),
            ("2025.11.18", "2025-11-18"),
        ] {
            assert_eq!(date_written(written).as_deref(), Some(day), "{written}");
        }
        for odd in [
            "Feb 30th, 2024",
            "[[Kubernetes]]",
            "ma 1, 2023",
            "Nov 1st",
            "1 2 2023",
            "2025/13/40",
        ] {
            assert_eq!(date_written(odd), None, "{odd}");
        }
    }

    #[test]
    fn created_at_prefers_the_frontmatter_then_the_name_then_the_file_time() {
        let fields = |pairs: &[(&str, Value)]| -> Vec<(String, Value)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect()
        };
        let none = fields(&[]);
        assert_eq!(
            created_at(
                &fields(&[("created_at", json!("2020-01-01"))]),
                "2025-11-20",
                None,
                Some(0)
            ),
            None
        );
        assert_eq!(
            created_at(
                &fields(&[("created", json!("2024-03-04 09:15"))]),
                "2025-11-20",
                None,
                Some(0)
            )
            .as_deref(),
            Some("2024-03-04 09:15")
        );
        assert_eq!(
            created_at(
                &fields(&[("date", json!("last spring"))]),
                "2025-11-20",
                None,
                Some(0)
            )
            .as_deref(),
            Some("2025-11-20")
        );
        assert_eq!(
            created_at(&none, "Alice", None, Some(86_400)).as_deref(),
            Some(crate::memory::format_timestamp(86_400).as_str())
        );
        // The day the vault's daily-note format reads in the name comes
        // before a date merely found in it.
        assert_eq!(
            created_at(&none, "05-03-2024", Some("2024-03-05".into()), Some(0)).as_deref(),
            Some("2024-03-05")
        );
    }

    #[test]
    fn a_daily_notes_name_is_read_with_the_vaults_format() {
        for (stem, format, day) in [
            ("05-03-2024", "DD-MM-YYYY", "2024-03-05"),
            ("2024-03-05", "YYYY-MM-DD", "2024-03-05"),
            ("2024-03-05 Tuesday", "YYYY-MM-DD dddd", "2024-03-05"),
            ("March 5th, 2024", "MMMM Do, YYYY", "2024-03-05"),
            ("Tue, Mar 5 24", "ddd, MMM D YY", "2024-03-05"),
            ("Journal 2024.03.05", "[Journal] YYYY.MM.DD", "2024-03-05"),
            ("2024-03-05", "YYYY/MM/YYYY-MM-DD", "2024-03-05"),
        ] {
            assert_eq!(
                day_by_format(stem, format).as_deref(),
                Some(day),
                "{stem} as {format}"
            );
        }
        for (stem, format) in [
            ("30-02-2024", "DD-MM-YYYY"),
            ("05-03-2024 notes", "DD-MM-YYYY"),
            ("Kubernetes", "YYYY-MM-DD"),
            ("5-3-2024", "DD-MM-YYYY"),
        ] {
            assert_eq!(day_by_format(stem, format), None, "{stem} as {format}");
        }
    }

    #[test]
    fn logseq_template_pages_and_the_config_that_names_them() {
        let templates = Templates {
            names: edn_strings(
                "{:default-templates {:journals \"daily\"} ; :hidden [\"x\"]\n :hidden [\"/archive\" \"drafts/\"]}",
                ":default-templates",
                '{',
                '}',
            ),
            ..Templates::default()
        };
        assert_eq!(templates.names, ["daily"]);
        let page = "- Daily\n  template:: daily\n\t- ## Morning\n- Meeting\n  template:: meeting\n";
        assert_eq!(
            templates.logseq_page(&[], page).as_deref(),
            Some("a template (template:: daily, meeting)")
        );
        assert_eq!(
            templates.logseq_page(&[], "- Daily\n  template:: daily\n- a plain block\n"),
            None
        );
        assert_eq!(templates.logseq_page(&[], "no blocks at all\n"), None);
        assert_eq!(
            edn_strings(":hidden [\"/archive\" \"drafts/\"]", ":hidden", '[', ']'),
            ["/archive", "drafts/"]
        );
    }

    #[test]
    fn obsidian_template_settings_name_folders_and_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let settings = dir.path().join(".obsidian");
        std::fs::create_dir_all(&settings).expect("mkdir");
        std::fs::write(
            settings.join("templates.json"),
            r#"{"folder": "/Templates/"}"#,
        )
        .expect("write");
        std::fs::write(
            settings.join("daily-notes.json"),
            r#"{"folder": "Daily", "template": "Meta/Day"}"#,
        )
        .expect("write");
        let templates = Templates::obsidian(dir.path());
        assert!(templates.by_path("Templates/Daily.md").is_some());
        assert!(templates.by_path("templates/sub/Meeting.md").is_some());
        assert!(templates.by_path("Meta/Day.md").is_some());
        assert_eq!(templates.by_path("TemplatesX/a.md"), None);
        assert_eq!(templates.by_path("Daily/2025-11-20.md"), None);
        assert_eq!(templates.by_path("Templates.md"), None);
    }
}
