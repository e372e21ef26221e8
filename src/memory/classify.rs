//! Deciding which category an inbox memory belongs to, from keywords.
//!
//! The organizer moves an inbox item into `<category>/` only when this
//! module names a category; `None` means "leave it in the inbox", which is
//! the safe answer for anything ambiguous. Rules are keyword lists in
//! English and Chinese; the built-in ones ([`builtin_rules`]) are always
//! used and rules from the config file add to them.
//!
//! Subtleties a newcomer trips on:
//! - English keywords match whole words (`til` does not match `until`,
//!   `project` does not match `projects`), so inflections are listed
//!   explicitly. A keyword containing CJK text matches as a substring,
//!   because Chinese has no spaces between words.
//! - Matching is case-insensitive and treats any run of whitespace as one
//!   space, so `Remind\n me` still matches `remind me`.
//! - Longer phrases weigh more (`today i learned` beats `learned`), and a
//!   match in the title counts twice: the title is the writer's summary.
//!   Each keyword counts once per field, so repeating a word does not
//!   outvote a different cue.
//! - Ties go to the category earlier in [`PRIORITY`]: time-bound and
//!   specific categories before broad ones. This and the fixed rule order
//!   make the result deterministic.
//! - An explicit `category: inbox` is treated as "not decided yet", since
//!   inbox is exactly what an unclassified memory is; any other explicit
//!   category wins outright.
//! - Only the first [`MAX_SCANNED_BYTES`] of the body are read, so a huge
//!   pasted log cannot make one organizer pass slow.

use std::collections::BTreeMap;

use crate::memory::Category;

/// How much of a body classification reads.
pub const MAX_SCANNED_BYTES: usize = 64 * 1024;

/// Tie-break order: earlier wins when two categories score the same.
pub const PRIORITY: [Category; 13] = [
    Category::Reminders,
    Category::Date,
    Category::Decisions,
    Category::Lessons,
    Category::Preferences,
    Category::Feedback,
    Category::Habits,
    Category::Skills,
    Category::People,
    Category::Project,
    Category::Soul,
    Category::Character,
    Category::Knowledge,
];

/// A classification rule: text matching any keyword or pattern counts
/// towards `category`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "RawRule")]
pub struct Rule {
    /// Where matching memories go.
    pub category: Category,
    /// Words or phrases. English ones match whole words; ones containing
    /// CJK characters match anywhere. Case-insensitive.
    pub keywords: Vec<String>,
    /// Wildcard patterns matched anywhere within one line: `*` is any run
    /// of characters, `?` one character, `#` one ASCII digit.
    /// Case-insensitive. Example: `ticket #####`, `remind* me`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
}

impl Rule {
    /// A rule with keywords only.
    pub fn new(category: Category, keywords: &[&str]) -> Self {
        Rule {
            category,
            keywords: keywords.iter().map(|k| (*k).to_owned()).collect(),
            patterns: Vec::new(),
        }
    }
}

/// A rule as written in the config file, before its category is checked.
#[derive(serde::Deserialize)]
struct RawRule {
    category: String,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    patterns: Vec<String>,
}

impl TryFrom<RawRule> for Rule {
    type Error = crate::memory::UnknownName;

    fn try_from(raw: RawRule) -> Result<Self, Self::Error> {
        Ok(Rule {
            category: raw.category.parse()?,
            keywords: raw.keywords,
            patterns: raw.patterns,
        })
    }
}

/// The rules that always apply. Config rules extend these.
pub fn builtin_rules() -> Vec<Rule> {
    use Category::*;
    vec![
        Rule::new(
            Preferences,
            &[
                "prefer",
                "prefers",
                "preferred",
                "preference",
                "preferences",
                "likes",
                "dislike",
                "dislikes",
                "i like",
                "i love",
                "i hate",
                "favorite",
                "favourite",
                "偏好",
                "喜欢",
                "不喜欢",
                "讨厌",
                "更喜欢",
            ],
        ),
        Rule::new(
            Lessons,
            &[
                "learned",
                "learnt",
                "lesson",
                "lessons",
                "mistake",
                "mistakes",
                "gotcha",
                "pitfall",
                "never again",
                "教训",
                "经验",
                "踩坑",
                "坑",
            ],
        ),
        Rule::new(
            Date,
            &[
                "deadline",
                "due on",
                "due by",
                "due date",
                "is due",
                "schedule",
                "scheduled",
                "appointment",
                "截止",
                "到期",
                "日程",
                "期限",
            ],
        ),
        Rule::new(
            Reminders,
            &[
                "remind me",
                "reminder",
                "reminders",
                "don't forget",
                "do not forget",
                "提醒",
                "别忘了",
                "不要忘记",
            ],
        ),
        Rule::new(
            Decisions,
            &[
                "decided",
                "decision",
                "decisions",
                "we chose",
                "i chose",
                "we went with",
                "决定",
                "决策",
                "选定",
            ],
        ),
        Rule::new(
            Habits,
            &[
                "habit",
                "habits",
                "routine",
                "every morning",
                "every day",
                "every night",
                "every week",
                "每天",
                "每周",
                "每晚",
                "习惯",
            ],
        ),
        Rule::new(
            Skills,
            &[
                "how to",
                "skill",
                "skills",
                "technique",
                "recipe",
                "技能",
                "如何",
                "怎么做",
            ],
        ),
        Rule::new(
            Feedback,
            &[
                "feedback",
                "suggestion",
                "suggestions",
                "review comment",
                "反馈",
                "建议",
            ],
        ),
        Rule::new(
            Project,
            &[
                "project",
                "projects",
                "repo",
                "repository",
                "codebase",
                "milestone",
                "项目",
                "仓库",
                "里程碑",
            ],
        ),
        Rule::new(
            People,
            &[
                "met",
                "talked to",
                "spoke with",
                "colleague",
                "coworker",
                "co-worker",
                "friend",
                "朋友",
                "同事",
                "老板",
                "认识了",
            ],
        ),
        Rule::new(
            Knowledge,
            &[
                "til",
                "today i learned",
                "fact:",
                "facts:",
                "fun fact",
                "知识",
                "原理",
            ],
        ),
        Rule::new(
            Soul,
            &[
                "my values",
                "core values",
                "my mission",
                "who i am",
                "价值观",
                "使命",
            ],
        ),
        Rule::new(
            Character,
            &[
                "personality",
                "communication style",
                "tone of voice",
                "性格",
                "语气",
                "说话风格",
            ],
        ),
    ]
}

/// Picks the category for a memory.
///
/// `explicit` is the frontmatter `category:`, which wins unless it is
/// `inbox`. Otherwise the built-in rules plus `rules` score the title and
/// body, and the best-scoring category is returned; ties go by
/// [`PRIORITY`]. `None` means nothing matched: the item stays in the inbox.
pub fn classify(
    title: &str,
    body: &str,
    explicit: Option<Category>,
    rules: &[Rule],
) -> Option<Category> {
    if let Some(category) = explicit.filter(|c| *c != Category::Inbox) {
        return Some(category);
    }
    best(&scores(title, body, rules))
}

/// Every category's score for this text, for diagnostics (`dream`
/// summaries, tests). Categories that scored nothing are left out.
pub fn scores(title: &str, body: &str, rules: &[Rule]) -> BTreeMap<Category, u32> {
    let title = normalize(title);
    let body = normalize(truncate_at_char(body, MAX_SCANNED_BYTES));

    // Deduplicated so a config rule repeating a built-in keyword does not
    // count it twice.
    let mut keywords: BTreeMap<(Category, String), ()> = BTreeMap::new();
    let mut patterns: BTreeMap<(Category, String), ()> = BTreeMap::new();
    let builtins = builtin_rules();
    for rule in builtins.iter().chain(rules) {
        // A rule cannot move memories into the inbox they are leaving.
        if rule.category == Category::Inbox {
            continue;
        }
        for k in &rule.keywords {
            let k = normalize(k);
            if !k.is_empty() {
                keywords.insert((rule.category, k), ());
            }
        }
        for p in &rule.patterns {
            let p = p.trim().to_lowercase();
            if !p.is_empty() && p.chars().any(|c| c != '*') {
                patterns.insert((rule.category, p), ());
            }
        }
    }

    let mut scores: BTreeMap<Category, u32> = BTreeMap::new();
    let mut add = |category: Category, weight: u32, in_title: bool, in_body: bool| {
        let points = weight * (2 * u32::from(in_title) + u32::from(in_body));
        if points > 0 {
            *scores.entry(category).or_default() += points;
        }
    };
    // Keywords may span a line break; patterns stay within one line.
    let title_flat = title.replace('\n', " ");
    let body_flat = body.replace('\n', " ");
    for (category, keyword) in keywords.keys() {
        add(
            *category,
            keyword_weight(keyword),
            contains_keyword(&title_flat, keyword),
            contains_keyword(&body_flat, keyword),
        );
    }
    for (category, pattern) in patterns.keys() {
        add(
            *category,
            1,
            title.lines().any(|l| wildcard_find(l, pattern)),
            body.lines().any(|l| wildcard_find(l, pattern)),
        );
    }
    // A calendar date is a deadline or schedule cue no keyword list can
    // express.
    add(
        Category::Date,
        1,
        mentions_date(&title),
        mentions_date(&body),
    );
    scores
}

/// The highest score, ties broken by [`PRIORITY`].
fn best(scores: &BTreeMap<Category, u32>) -> Option<Category> {
    let rank = |c: &Category| {
        PRIORITY
            .iter()
            .position(|p| p == c)
            .unwrap_or(PRIORITY.len())
    };
    scores
        .iter()
        .filter(|(_, s)| **s > 0)
        .max_by(|(a, sa), (b, sb)| sa.cmp(sb).then_with(|| rank(b).cmp(&rank(a))))
        .map(|(c, _)| *c)
}

/// Lowercases and turns every whitespace run into one space, except that
/// line breaks are kept (as single `\n`) for line-bound patterns.
fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.trim().chars() {
        if c == '\n' {
            // Kept so patterns stay within one line.
            out.push('\n');
            pending_space = false;
        } else if c.is_whitespace() {
            pending_space = true;
        } else {
            if pending_space && !out.ends_with('\n') && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

fn truncate_at_char(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Longer phrases are more specific, so they weigh more (1 to 3).
fn keyword_weight(keyword: &str) -> u32 {
    let n = if keyword.chars().any(is_cjk) {
        keyword.chars().count().div_ceil(2)
    } else {
        keyword.split(' ').count()
    };
    n.clamp(1, 3) as u32
}

/// Whether `text` (normalized) contains `keyword` (normalized), as whole
/// words unless the keyword has CJK characters.
fn contains_keyword(text: &str, keyword: &str) -> bool {
    if keyword.chars().any(is_cjk) {
        return text.contains(keyword);
    }
    let first_is_word = keyword.chars().next().is_some_and(is_word_char);
    let last_is_word = keyword.chars().next_back().is_some_and(is_word_char);
    text.match_indices(keyword).any(|(start, m)| {
        let before_ok =
            !first_is_word || !text[..start].chars().next_back().is_some_and(is_word_char);
        let after_ok = !last_is_word
            || !text[start + m.len()..]
                .chars()
                .next()
                .is_some_and(is_word_char);
        before_ok && after_ok
    })
}

/// Letters and digits of alphabetic scripts; CJK characters are not, so
/// an English keyword right next to Chinese text still matches.
fn is_word_char(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_cjk(c)
}

/// CJK ideographs, kana and hangul: scripts written without spaces.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30ff}'   // hiragana, katakana
        | '\u{3400}'..='\u{4dbf}' // CJK extension A
        | '\u{4e00}'..='\u{9fff}' // CJK unified ideographs
        | '\u{ac00}'..='\u{d7af}' // hangul syllables
        | '\u{f900}'..='\u{faff}' // compatibility ideographs
        | '\u{20000}'..='\u{2fa1f}')
}

/// Wildcard search: does `pattern` match some substring of `line`?
/// `*` is any run, `?` any one character, `#` one ASCII digit.
///
/// Greedy matching with backtracking to the last `*`, which is linear in
/// practice and at worst `O(line × pattern)`: no exponential blow-up.
fn wildcard_find(line: &str, pattern: &str) -> bool {
    let text: Vec<char> = line.chars().collect();
    let mut pat: Vec<char> = Vec::with_capacity(pattern.len() + 2);
    pat.push('*');
    pat.extend(pattern.chars());
    pat.push('*');
    let single = |p: char, t: char| match p {
        '?' => true,
        '#' => t.is_ascii_digit(),
        _ => p == t,
    };
    let (mut t, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pat.len() && pat[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if p < pat.len() && single(pat[p], text[t]) {
            t += 1;
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|c| *c == '*')
}

/// Whether the text names a calendar date: `2026-12-01`, `2026/12/01`,
/// `12月1日` or `12月1号`.
fn mentions_date(text: &str) -> bool {
    let b = text.as_bytes();
    let digits_at =
        |i: usize, n: usize| i + n <= b.len() && b[i..i + n].iter().all(u8::is_ascii_digit);
    for i in 0..b.len() {
        let starts_number = i == 0 || !b[i - 1].is_ascii_digit();
        if starts_number
            && digits_at(i, 4)
            && matches!(b.get(i + 4), Some(b'-' | b'/'))
            && digits_at(i + 5, 2)
            && b.get(i + 7) == Some(&b[i + 4])
            && digits_at(i + 8, 2)
            && !b.get(i + 10).is_some_and(u8::is_ascii_digit)
        {
            let month = (b[i + 5] - b'0') * 10 + (b[i + 6] - b'0');
            let day = (b[i + 8] - b'0') * 10 + (b[i + 9] - b'0');
            if (1..=12).contains(&month) && (1..=31).contains(&day) {
                return true;
            }
        }
    }
    // `N月N日` / `N月N号` with Arabic or Chinese numerals.
    let chars: Vec<char> = text.chars().collect();
    let is_num = |c: char| c.is_ascii_digit() || "一二三四五六七八九十两".contains(c);
    chars.iter().enumerate().any(|(i, c)| {
        if *c != '月' || i == 0 || !is_num(chars[i - 1]) {
            return false;
        }
        let mut j = i + 1;
        while j < chars.len() && is_num(chars[j]) {
            j += 1;
        }
        j > i + 1 && j < chars.len() && (chars[j] == '日' || chars[j] == '号')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Category::*;
    use proptest::prelude::*;

    fn c(text: &str) -> Option<Category> {
        classify("", text, None, &[])
    }

    #[test]
    fn explicit_category_wins() {
        assert_eq!(
            classify("", "I prefer tea", Some(Project), &[]),
            Some(Project)
        );
    }

    #[test]
    fn explicit_inbox_means_undecided() {
        assert_eq!(
            classify("", "I prefer tea", Some(Inbox), &[]),
            Some(Preferences)
        );
        assert_eq!(classify("", "hello", Some(Inbox), &[]), None);
    }

    #[test]
    fn english_examples() {
        assert_eq!(c("The user prefers dark mode"), Some(Preferences));
        assert_eq!(c("She dislikes long meetings"), Some(Preferences));
        assert_eq!(c("Lesson: always pin the toolchain"), Some(Lessons));
        assert_eq!(c("I made a mistake with the migration"), Some(Lessons));
        assert_eq!(c("The report is due by Friday"), Some(Date));
        assert_eq!(c("Launch on 2026-12-01"), Some(Date));
        assert_eq!(c("Remind me to call the bank"), Some(Reminders));
        assert_eq!(c("We chose Postgres over MySQL"), Some(Decisions));
        assert_eq!(c("Every morning I run 5k"), Some(Habits));
        assert_eq!(c("How to rotate the TLS certificates"), Some(Skills));
        assert_eq!(c("Feedback from the design review"), Some(Feedback));
        assert_eq!(c("The project uses a monorepo"), Some(Project));
        assert_eq!(c("Met Alice at the conference"), Some(People));
        assert_eq!(c("TIL: tantivy readers reload manually"), Some(Knowledge));
        assert_eq!(c("Today I learned that fsync is slow"), Some(Knowledge));
        assert_eq!(c("Core values: honesty first"), Some(Soul));
        assert_eq!(c("Keep a friendly tone of voice"), Some(Character));
    }

    #[test]
    fn chinese_examples() {
        assert_eq!(c("用户偏好深色模式"), Some(Preferences));
        assert_eq!(c("他不喜欢开会"), Some(Preferences));
        assert_eq!(c("这次的教训是先备份"), Some(Lessons));
        assert_eq!(c("报告周五截止"), Some(Date));
        assert_eq!(c("提醒我明天交电费"), Some(Reminders));
        assert_eq!(c("我们决定用 Rust"), Some(Decisions));
        assert_eq!(c("每天早上跑步"), Some(Habits));
        assert_eq!(c("新技能：写 FUSE"), Some(Skills));
        assert_eq!(c("用户反馈：搜索太慢"), Some(Feedback));
        assert_eq!(c("这个项目用 tantivy"), Some(Project));
        assert_eq!(c("和同事讨论了架构"), Some(People));
        assert_eq!(c("一个知识点"), Some(Knowledge));
        assert_eq!(c("12月1日发布"), Some(Date));
    }

    #[test]
    fn english_keywords_match_whole_words_only() {
        assert_eq!(c("wait until later"), None); // not "til"
        assert_eq!(c("the metadata was stale"), None); // not "met"
        assert_eq!(c("it seems likely"), None); // not "likes"
        assert_eq!(c("due to a bug"), None);
        assert_eq!(c("in fact, nothing"), None); // only "fact:" is a cue
        assert_eq!(c("Fun fact: octopuses have three hearts"), Some(Knowledge));
        assert_eq!(c("Alice likes tea"), Some(Preferences));
        // English keyword right next to Chinese text.
        assert_eq!(c("今天TIL了"), Some(Knowledge));
    }

    #[test]
    fn matching_ignores_case_and_whitespace_layout() {
        assert_eq!(c("REMIND\n   ME tomorrow"), Some(Reminders));
        assert_eq!(c("  We   Chose  x"), Some(Decisions));
    }

    #[test]
    fn nothing_matched_stays_in_the_inbox() {
        assert_eq!(c(""), None);
        assert_eq!(c("random words about nothing"), None);
        assert_eq!(classify("", "", None, &[]), None);
    }

    #[test]
    fn title_counts_double() {
        // Body alone: decisions (1) vs lessons (1) would tie -> decisions.
        assert_eq!(c("decided; mistake"), Some(Decisions));
        assert_eq!(
            classify("A mistake", "we decided", None, &[]),
            Some(Lessons)
        );
    }

    #[test]
    fn longer_phrases_and_more_cues_win() {
        // "remind me" (2) beats "deadline" (1).
        assert_eq!(c("remind me about the deadline"), Some(Reminders));
        // Two different cues beat one.
        assert_eq!(c("lesson learned; I prefer tests"), Some(Lessons));
    }

    #[test]
    fn ties_follow_the_fixed_priority() {
        assert_eq!(c("I prefer this habit"), Some(Preferences));
        assert_eq!(c("habit: I prefer this"), Some(Preferences));
        assert_eq!(c("project feedback"), Some(Feedback));
    }

    #[test]
    fn repeating_a_keyword_does_not_outvote_a_different_cue() {
        assert_eq!(
            c("project project project project, lesson learned"),
            Some(Lessons)
        );
    }

    #[test]
    fn config_rules_extend_the_builtins() {
        let rules = vec![Rule::new(Project, &["mnemofs", "kubernetes cluster"])];
        assert_eq!(
            classify("", "mnemofs indexing", None, &rules),
            Some(Project)
        );
        assert_eq!(classify("", "mnemofs indexing", None, &[]), None);
        // Built-ins still apply.
        assert_eq!(
            classify("", "I prefer tea", None, &rules),
            Some(Preferences)
        );
        // Duplicating a built-in keyword does not double it.
        let dup = vec![Rule::new(Project, &["Project"])];
        assert_eq!(scores("", "project", &dup).get(&Project), Some(&1));
    }

    #[test]
    fn config_rules_into_inbox_are_ignored() {
        let rules = vec![Rule::new(Inbox, &["hello"])];
        assert_eq!(classify("", "hello", None, &rules), None);
    }

    #[test]
    fn patterns_are_wildcards_within_a_line() {
        let rules = vec![Rule {
            category: Project,
            keywords: vec![],
            patterns: vec!["JIRA-####".into(), "deploy*prod".into()],
        }];
        assert_eq!(
            classify("", "see jira-1234 now", None, &rules),
            Some(Project)
        );
        assert_eq!(classify("", "see JIRA-12x4", None, &rules), None);
        assert_eq!(classify("", "deploy to prod", None, &rules), Some(Project));
        assert_eq!(classify("", "deploy\nto prod", None, &rules), None);
        // A pattern of only stars would match everything; it is ignored.
        let stars = vec![Rule {
            category: Project,
            keywords: vec![],
            patterns: vec!["**".into()],
        }];
        assert_eq!(classify("", "anything", None, &stars), None);
    }

    #[test]
    fn wildcard_matching() {
        assert!(wildcard_find("abc", "b"));
        assert!(wildcard_find("abc", "a?c"));
        assert!(!wildcard_find("abc", "a?d"));
        assert!(wildcard_find("x12y", "##"));
        assert!(wildcard_find("aaaaaaaaab", "a*a*b"));
        assert!(!wildcard_find("aaaaaaaaaa", "a*a*b"));
        assert!(wildcard_find("", "*"));
    }

    #[test]
    fn date_shapes() {
        assert!(mentions_date("on 2026-12-01."));
        assert!(mentions_date("2026/12/01"));
        assert!(!mentions_date("2026-13-01"));
        assert!(!mentions_date("12026-12-01"));
        assert!(!mentions_date("2026-12/01"));
        assert!(mentions_date("十二月一日"));
        assert!(mentions_date("12月1号"));
        assert!(!mentions_date("月日"));
    }

    #[test]
    fn huge_bodies_are_truncated_on_a_char_boundary() {
        let body = "偏".repeat(MAX_SCANNED_BYTES); // 3 bytes each
        assert_eq!(c(&body), None);
        let mut body = "x ".repeat(MAX_SCANNED_BYTES);
        body.push_str("prefers");
        assert_eq!(c(&body), None);
    }

    #[test]
    fn builtin_rules_cover_every_category_but_inbox() {
        let rules = builtin_rules();
        for cat in Category::ALL {
            let has = rules.iter().any(|r| r.category == cat);
            assert_eq!(has, cat != Inbox, "{cat}");
        }
        for cat in PRIORITY {
            assert_ne!(cat, Inbox);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(title in "\\PC*", body in "\\PC*", kw in "\\PC{0,8}") {
            let rules = vec![Rule {
                category: Project,
                keywords: vec![kw.clone()],
                patterns: vec![kw],
            }];
            let a = classify(&title, &body, None, &rules);
            // Deterministic.
            prop_assert_eq!(a, classify(&title, &body, None, &rules));
        }
    }
}
