//! Deciding which category an inbox memory belongs to: first from what
//! the note says about itself, then from its words.
//!
//! [`classify_note`] reads, in order: the frontmatter `category` (any but
//! `inbox` wins outright); then votes from the note's `type`, its tags
//! (every level of `people/colleague`), the folders it sits in or was
//! imported from (`source_path`), a title that is a person's name (backed
//! by aliases, links to it or words about a person), and the outline of a
//! project's hub page that many notes link to; only when none of these
//! speaks, keywords. A `type: task` (or a `todo` tag) is never a `date`:
//! its date is when to do it, so it counts for `reminders`.
//!
//! [`said_by_note`] and [`voted_by_words`] are the two halves, for the
//! organizer to put placing by meaning between them when a model is
//! loaded (`tasks::meaning`).
//!
//! `None` means nothing placed the note. The organizer then files it
//! under `classification.default_category` when the config names one, and
//! otherwise leaves it in the inbox: no category is ever guessed.
//!
//! Keyword subtleties a newcomer trips on:
//! - English keywords match whole words (`til` does not match `until`,
//!   `project` does not match `projects`), so inflections are listed
//!   explicitly. A keyword containing CJK text matches as a substring,
//!   because Chinese has no spaces between words.
//! - Matching is case-insensitive and treats any run of whitespace as one
//!   space, so `Remind\n me` still matches `remind me`.
//! - Longer phrases weigh more (`today i learned` beats `learned`), and a
//!   match in the title counts twice: the title is the writer's summary.
//!   A title made from the file name counts only when it is more than the
//!   body's first words (`remember` and imports name files that way).
//!   Each keyword counts once per field, so repeating a word does not
//!   outvote a different cue.
//! - Ties go to the category earlier in [`PRIORITY`]: time-bound and
//!   specific categories before broad ones. This and the fixed rule order
//!   make the result deterministic.
//! - An explicit `category: inbox` is treated as "not decided yet", since
//!   inbox is exactly what an unclassified memory is.
//! - Only the first [`MAX_SCANNED_BYTES`] of the body are read, so a huge
//!   pasted log cannot make one organizer pass slow.
//! - `tests/data/classify/labeled.jsonl` is the yardstick: change a rule,
//!   then run `cargo test --test classification -- --nocapture figures`
//!   (BENCHMARKS.md, "Classification").

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::memory::head::{Head, note_text};
use crate::memory::{Category, Frontmatter, Memory};

/// How much of a body classification reads.
pub const MAX_SCANNED_BYTES: usize = 64 * 1024;

/// Tie-break order: earlier wins when two categories score the same.
pub const PRIORITY: [Category; 13] = [
    Category::Reminders,
    Category::Date,
    Category::Decisions,
    Category::Lessons,
    Category::Preferences,
    Category::Habits,
    Category::Feedback,
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

    /// A rule with keywords and wildcard patterns.
    pub fn with_patterns(category: Category, keywords: &[&str], patterns: &[&str]) -> Self {
        Rule {
            patterns: patterns.iter().map(|p| (*p).to_owned()).collect(),
            ..Rule::new(category, keywords)
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
                "for me",
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
                "favourites",
                "favorites",
                "i'd rather",
                "would rather",
                "rather than",
                "rather not",
                "always use",
                "never use",
                "don't use",
                "do not use",
                "no meetings",
                "please use",
                "i drink",
                "i don't eat",
                "i take my",
                "seat",
                "偏好",
                "喜欢",
                "不喜欢",
                "讨厌",
                "更喜欢",
                "不吃",
                "不喝",
                "更习惯",
                "尽量",
                "最好用",
                "习惯用",
                "用中文",
                "用英文",
            ],
        ),
        Rule::new(
            Lessons,
            &[
                "we lost",
                "cost us",
                "lost the",
                "learned",
                "learnt",
                "lesson",
                "lessons",
                "mistake",
                "mistakes",
                "gotcha",
                "gotchas",
                "pitfall",
                "pitfalls",
                "never again",
                "lesson learned",
                "the hard way",
                "turns out",
                "turned out",
                "in hindsight",
                "next time",
                "takeaway",
                "takeaways",
                "went wrong",
                "caused by",
                "root cause",
                "postmortem",
                "post-mortem",
                "outage",
                "should have",
                "shouldn't have",
                "don't trust",
                "never trust",
                "watch out",
                "be careful",
                "keep making",
                "underestimated",
                "overestimated",
                "教训",
                "经验",
                "踩坑",
                "坑",
                "复盘",
                "原来",
                "下次",
                "以后不要",
                "以后一定",
                "小心",
                "失败",
                "原因是",
                "总结",
                "搞坏",
                "出事",
                "事故",
                "故障",
                "吸取",
            ],
        ),
        Rule::with_patterns(
            Date,
            &[
                "lunch with",
                "dinner with",
                "meeting with",
                "call with",
                "deadline",
                "deadlines",
                "due on",
                "due by",
                "due date",
                "is due",
                "schedule",
                "scheduled",
                "appointment",
                "expires on",
                "expires",
                "expiry",
                "ends on",
                "starts on",
                "closes on",
                "opens on",
                "birthday",
                "anniversary",
                "offsite",
                "flight departs",
                "arrives",
                "every weekday",
                "standup",
                "截止",
                "到期",
                "日程",
                "期限",
                "安排",
                "假期",
                "放假",
                "开学",
                "生日",
                "纪念日",
                "例会",
                "上班",
                "前交",
                "考试",
            ],
            &[
                "january #",
                "jan #",
                "february #",
                "feb #",
                "march #",
                "mar #",
                "april #",
                "apr #",
                "may #",
                "june #",
                "jun #",
                "july #",
                "jul #",
                "august #",
                "aug #",
                "september #",
                "sep #",
                "sept #",
                "october #",
                "oct #",
                "november #",
                "nov #",
                "december #",
                "dec #",
                "#年#月",
                "#号",
                "# 号",
            ],
        ),
        Rule::with_patterns(
            Reminders,
            &[
                "on monday",
                "on tuesday",
                "on wednesday",
                "on thursday",
                "on friday",
                "on saturday",
                "on sunday",
                "remind",
                "remind me",
                "reminder",
                "reminders",
                "don't forget",
                "do not forget",
                "remember to",
                "make sure to",
                "need to",
                "have to",
                "follow up",
                "ping",
                "pick up",
                "book the",
                "renew",
                "cancel",
                "todo",
                "to-do",
                "tonight",
                "tomorrow",
                "this weekend",
                "next week",
                "next month",
                "before leaving",
                "on the way home",
                "by friday",
                "by monday",
                "before it",
                "提醒",
                "别忘了",
                "别忘",
                "不要忘记",
                "记得",
                "明天",
                "后天",
                "今晚",
                "周末",
                "下班前",
                "下周",
                "之前",
                "别迟到",
                "待办",
            ],
            &["#pm", "#am", "# pm", "# am"],
        ),
        Rule::new(
            Decisions,
            &[
                "we decided",
                "i decided",
                "agreed with",
                "decided",
                "decide",
                "decision",
                "decisions",
                "we chose",
                "i chose",
                "chose",
                "we went with",
                "going with",
                "went with",
                "picked",
                "settled on",
                "final call",
                "agreed",
                "we'll drop",
                "will drop",
                "will stay",
                "not going to",
                "design choice",
                "adr",
                "opted",
                "we will use",
                "we'll use",
                "off the table",
                "approved",
                "决定",
                "决策",
                "选定",
                "定了",
                "定下来",
                "通过了",
                "统一用",
                "改用",
                "放弃",
                "确定",
                "最终",
                "选了",
                "拍板",
                "采用",
            ],
        ),
        Rule::new(
            Habits,
            &[
                "monday mornings",
                "monday evenings",
                "monday nights",
                "monday afternoons",
                "tuesday mornings",
                "tuesday evenings",
                "tuesday nights",
                "tuesday afternoons",
                "wednesday mornings",
                "wednesday evenings",
                "wednesday nights",
                "wednesday afternoons",
                "thursday mornings",
                "thursday evenings",
                "thursday nights",
                "thursday afternoons",
                "friday mornings",
                "friday evenings",
                "friday nights",
                "friday afternoons",
                "saturday mornings",
                "saturday evenings",
                "saturday nights",
                "saturday afternoons",
                "sunday mornings",
                "sunday evenings",
                "sunday nights",
                "sunday afternoons",
                "mondays",
                "tuesdays",
                "wednesdays",
                "thursdays",
                "fridays",
                "saturdays",
                "sundays",
                "mornings",
                "evenings",
                "habit",
                "habits",
                "routine",
                "routines",
                "every morning",
                "every day",
                "every night",
                "every week",
                "every evening",
                "every month",
                "each morning",
                "usually",
                "typically",
                "tends to",
                "most days",
                "weekly",
                "daily",
                "bedtime",
                "first thing",
                "on weekends",
                "on saturdays",
                "on sundays",
                "after work",
                "after lunch",
                "before bed",
                "often",
                "always starts",
                "每天",
                "每周",
                "每晚",
                "每月",
                "每个月",
                "习惯",
                "一般",
                "坚持",
                "睡前",
                "早上",
                "通常",
                "经常",
                "总是",
                "每次",
            ],
        ),
        Rule::new(
            Skills,
            &[
                "how to",
                "skill",
                "skills",
                "technique",
                "techniques",
                "recipe",
                "steps to",
                "to restore",
                "to install",
                "to rotate",
                "fluent",
                "can read",
                "can speak",
                "can do",
                "can run",
                "can manage",
                "knows",
                "good at",
                "learning to",
                "certified",
                "certification",
                "comfortable with",
                "experienced",
                "expert",
                "proficient",
                "familiar with",
                "able to",
                "技能",
                "如何",
                "怎么做",
                "怎么",
                "我会",
                "会用",
                "擅长",
                "熟练",
                "精通",
                "学会",
                "在学",
                "正在学",
                "能独立",
                "步骤",
                "会修",
                "会弹",
                "会说",
            ],
        ),
        Rule::new(
            Feedback,
            &[
                "suggestion from",
                "feedback from",
                "feedback",
                "suggestion",
                "suggestions",
                "review comment",
                "code review",
                "reviewer",
                "review",
                "said",
                "complain",
                "complains",
                "complained",
                "too long",
                "too slow",
                "too many",
                "too small",
                "keep doing",
                "good job",
                "well done",
                "please don't",
                "stop doing",
                "you keep",
                "you wrote",
                "your answers",
                "should delegate",
                "could be better",
                "confusing",
                "hard to",
                "users say",
                "customer interview",
                "反馈",
                "建议",
                "意见",
                "评审",
                "吐槽",
                "满意",
                "不满意",
                "太慢",
                "太长",
                "太啰嗦",
                "太小",
                "希望",
                "说我",
                "你上次",
                "以后回答",
                "没跑通",
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
                "milestones",
                "deploy",
                "deploys",
                "deployed",
                "deployment",
                "staging",
                "production",
                "sprint",
                "release",
                "monorepo",
                "github.com",
                "gitlab",
                "ci",
                "cluster",
                "backend",
                "frontend",
                "service",
                "services",
                "stack",
                "thesis",
                "prototype",
                "mvp",
                "launch",
                "migration",
                "rewrite",
                "redesign",
                "revamp",
                "roadmap",
                "hosted",
                "hosting",
                "项目",
                "仓库",
                "里程碑",
                "部署",
                "上线",
                "迁移",
                "前端",
                "后端",
                "系统",
                "改版",
                "毕业设计",
                "开发",
                "平台",
                "一期",
                "二期",
                "集群",
                "外包",
                "设计稿",
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
                "my manager",
                "my boss",
                "my sister",
                "my brother",
                "my mother",
                "my father",
                "my mom",
                "my dad",
                "my wife",
                "my husband",
                "my son",
                "my daughter",
                "my landlord",
                "landlord",
                "intern",
                "contractor",
                "mentor",
                "neighbour",
                "neighbor",
                "recruiter",
                "runs the",
                "is the new",
                "reach him",
                "reach her",
                "ping him",
                "ping her",
                "he is",
                "she is",
                "he's",
                "she's",
                "his",
                "her",
                "朋友",
                "同事",
                "老板",
                "认识了",
                "导师",
                "老师",
                "妈妈",
                "爸爸",
                "父亲",
                "母亲",
                "哥哥",
                "姐姐",
                "弟弟",
                "妹妹",
                "领导",
                "负责人",
                "他",
                "她",
                "微信号",
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
                "means",
                "by default",
                "defaults to",
                "is not supported",
                "is a",
                "are",
                "protocol",
                "algorithm",
                "encodes",
                "header",
                "index",
                "indexes",
                "cache",
                "thread",
                "threads",
                "kernel",
                "compiler",
                "database",
                "transaction",
                "isolation",
                "checksum",
                "latency",
                "bytes",
                "mode",
                "知识",
                "原理",
                "定理",
                "协议",
                "算法",
                "默认",
                "机制",
                "是指",
                "保证",
                "用来",
                "持久化",
                "隔离级别",
                "线程",
                "进程",
                "并发",
                "状态",
                "转化",
            ],
        ),
        Rule::new(
            Soul,
            &[
                "my values",
                "core values",
                "my mission",
                "who i am",
                "core belief",
                "i believe",
                "believe",
                "mission",
                "purpose",
                "north star",
                "matters most",
                "what matters",
                "line i won't cross",
                "i want to be",
                "i want everything",
                "i'd rather ship",
                "first of all",
                "fundamentally",
                "i see myself",
                "stand for",
                "the agent should act",
                "价值观",
                "使命",
                "人生",
                "信条",
                "意义",
                "相信",
                "最重要",
                "这辈子",
                "初心",
                "理想",
            ],
        ),
        Rule::new(
            Character,
            &[
                "come across",
                "comes across",
                "personality",
                "communication style",
                "tone of voice",
                "tone",
                "persona",
                "introvert",
                "introverted",
                "extrovert",
                "extroverted",
                "impatient",
                "patient",
                "direct",
                "blunt",
                "sense of humour",
                "sense of humor",
                "humour",
                "humor",
                "perfectionist",
                "stubborn",
                "optimistic",
                "pessimistic",
                "skeptical",
                "sceptical",
                "shy",
                "quiet",
                "calm",
                "by nature",
                "to a fault",
                "when stressed",
                "i tend to be",
                "i'm an",
                "sycophantic",
                "formally",
                "性格",
                "语气",
                "说话风格",
                "风格",
                "这个人",
                "个性",
                "内向",
                "外向",
                "慢热",
                "急",
                "耐心",
                "完美主义",
                "冲动",
                "幽默",
                "焦虑",
                "温和",
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

/// A note as the organizer sees it: its words, and what it says about
/// itself (frontmatter, tags, folder) and what others say about it (how
/// many notes link to it).
#[derive(Debug, Clone, Default)]
pub struct Note<'a> {
    /// Frontmatter `title`, else the first heading, else the file name's
    /// words (none when they only repeat the body's first words).
    pub title: Cow<'a, str>,
    /// The title as written or derived, for telling a person's name.
    pub name: &'a str,
    /// The body, without the frontmatter.
    pub body: &'a str,
    /// The parsed file, when there is one: frontmatter and tags.
    pub memory: Option<&'a Memory>,
    /// Where the note is in the store, such as `inbox/x.md` or
    /// `obsidian/People/x.md`.
    pub path: &'a str,
    /// How many other notes link to this one.
    pub linked_from: usize,
}

impl<'a> Note<'a> {
    /// A note known only by its words.
    pub fn text(title: &'a str, body: &'a str) -> Note<'a> {
        Note {
            title: Cow::Borrowed(title),
            name: title,
            body,
            ..Note::default()
        }
    }

    /// A parsed file: `text` is what `memory` was parsed from.
    pub fn of(memory: &'a Memory, text: &'a str, path: &'a str, linked_from: usize) -> Note<'a> {
        let body = memory.body(text);
        let stem = path
            .rsplit('/')
            .next()
            .and_then(|name| name.strip_suffix(".md"))
            .unwrap_or_default();
        let title = if memory.title == stem {
            file_name_title(stem, body)
        } else {
            Cow::Borrowed(memory.title.as_str())
        };
        Note {
            title,
            name: &memory.title,
            body,
            memory: Some(memory),
            path,
            linked_from,
        }
    }

    fn frontmatter(&self) -> Option<&'a Frontmatter> {
        self.memory.map(|m| &m.frontmatter)
    }

    /// The frontmatter `type`, lowercased.
    fn kind(&self) -> Option<String> {
        self.frontmatter()
            .and_then(|f| f.kind.as_deref())
            .map(|k| k.trim().to_lowercase())
    }

    /// A task or to-do: its date is when to do it, not a date to keep.
    pub fn is_task(&self) -> bool {
        let task = |w: &str| matches!(w, "task" | "tasks" | "todo" | "to-do");
        self.kind().is_some_and(|k| task(&k))
            || self
                .memory
                .is_some_and(|m| m.tags.iter().any(|t| task(t.as_str())))
    }

    /// The folders the note sits in and the one it was imported from
    /// (`source_path`), without the inbox.
    fn folders(&self) -> Vec<&'a str> {
        let source = self
            .frontmatter()
            .and_then(|f| f.extra.get("source_path"))
            .and_then(|v| v.as_str());
        let mut out = Vec::new();
        for path in std::iter::once(self.path).chain(source) {
            let mut parts: Vec<&str> = path.split(['/', '\\']).collect();
            parts.pop();
            out.extend(parts.into_iter().filter(|p| *p != "inbox"));
        }
        out
    }
}

/// The words of a file name used as a title: `dentist-tuesday` is
/// `dentist tuesday`, but a name made from the body's first words (as
/// `remember` and imports name notes) says nothing the body does not.
fn file_name_title<'a>(stem: &'a str, body: &str) -> Cow<'a, str> {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let name = words(stem);
    let head = words(truncate_at_char(body, 512));
    if name.is_empty() || head.starts_with(&name) || head.concat().starts_with(&name.concat()) {
        return Cow::Borrowed("");
    }
    Cow::Owned(name.join(" "))
}

/// Picks the category for a note: the one it names, else what its type,
/// tags, folder, title or links say it is, else its words (see
/// [`classify`]). `None` means nothing placed it: the organizer then
/// files it under the configured default category, or leaves it in the
/// inbox.
pub fn classify_note(note: &Note<'_>, rules: &[Rule]) -> Option<Category> {
    filing(note, rules).map(|(category, _)| category)
}

/// [`classify_note`], with what decided it.
pub fn filing(note: &Note<'_>, rules: &[Rule]) -> Option<(Category, FiledBy)> {
    filing_with(note, rules, Head::words())
}

/// [`filing`] with `head` (one that reads letters alone) as the learned
/// head, or none: what a note says about itself, then the user's rules,
/// then the head's likeliest category as [`learned_or_words`] takes it,
/// and without a head the words.
pub fn filing_with(
    note: &Note<'_>,
    rules: &[Rule],
    head: Option<&Head>,
) -> Option<(Category, FiledBy)> {
    if let Some(filed) =
        said_by_note_why(note).or_else(|| voted_by_rules(note, rules).map(|c| (c, FiledBy::Rules)))
    {
        return Some(filed);
    }
    match head.and_then(|h| h.likeliest(None, &note_text(note))) {
        Some(likeliest) => learned_or_words(note, rules, likeliest, FiledBy::LearnedFromWords),
        None => voted_by_words(note, rules).map(|c| (c, FiledBy::Words)),
    }
}

/// Where the learned head's `likeliest` category places a note: nowhere
/// when it is the inbox (most like a fragment); there when it is at least
/// [`head::FLOOR`] sure; else where the note's words vote, and there
/// when they vote for nothing. `by` says how the head read the note.
pub fn learned_or_words(
    note: &Note<'_>,
    rules: &[Rule],
    (category, p): (Category, f32),
    by: fn(f32) -> FiledBy,
) -> Option<(Category, FiledBy)> {
    if category == Category::Inbox {
        return None;
    }
    if p < super::head::FLOOR
        && let Some(voted) = voted_by_words(note, rules)
    {
        return Some((voted, FiledBy::Words));
    }
    Some((as_filed(note, category), by(p)))
}

/// What placed a note in its category, for the organizer's report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FiledBy {
    /// Its frontmatter `category`.
    Named,
    /// Its `type`, tags, folders, a person's name as title, a hub's shape.
    SaidByNote,
    /// The user's own rules (`classification.rules`).
    Rules,
    /// Its meaning, by the learned head, this sure (0..1).
    Learned(f32),
    /// Its words, by the learned head that reads letters alone, this
    /// sure (0..1).
    LearnedFromWords(f32),
    /// Its meaning, nearest to the category's example sentences.
    Examples,
    /// Its words.
    Words,
}

impl std::fmt::Display for FiledBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FiledBy::Named => f.write_str("its category field"),
            FiledBy::SaidByNote => {
                f.write_str("what it says about itself (type, tags, folder, a name)")
            }
            FiledBy::Rules => f.write_str("your classification rules"),
            FiledBy::Learned(p) => write!(
                f,
                "its meaning, by the classifier learned from labeled notes ({:.0}% sure)",
                p * 100.0
            ),
            FiledBy::LearnedFromWords(p) => write!(
                f,
                "its words, by the classifier learned from labeled notes ({:.0}% sure)",
                p * 100.0
            ),
            FiledBy::Examples => f.write_str("its meaning, nearest to the category's examples"),
            FiledBy::Words => f.write_str("its words"),
        }
    }
}

/// The category the note gives itself: the one it names, else what its
/// type, tags, folder, title or links say. These are the confident
/// decisions; `None` leaves only guesses from its words or its meaning.
pub fn said_by_note(note: &Note<'_>) -> Option<Category> {
    said_by_note_why(note).map(|(category, _)| category)
}

/// [`said_by_note`], with what decided it.
pub fn said_by_note_why(note: &Note<'_>) -> Option<(Category, FiledBy)> {
    let named = note.frontmatter().and_then(|f| f.category);
    if let Some(category) = named.filter(|c| *c != Category::Inbox) {
        return Some((category, FiledBy::Named));
    }
    best(&self_description(note)).map(|c| (as_filed(note, c), FiledBy::SaidByNote))
}

/// The category the user's own rules (`classification.rules`) vote for,
/// without the built-in keywords: the user said what these words mean,
/// so they speak before any guess from meaning. `None` when none scored
/// or there are none.
pub fn voted_by_rules(note: &Note<'_>, rules: &[Rule]) -> Option<Category> {
    if rules.is_empty() {
        return None;
    }
    let scores = scores_by(&note.title, note.body, &[], rules);
    best(&scores).map(|c| as_filed(note, c))
}

/// The category the note's words vote for (see [`scores`]), `None` when
/// none scored.
pub fn voted_by_words(note: &Note<'_>, rules: &[Rule]) -> Option<Category> {
    let mut scores = scores(&note.title, note.body, rules);
    if note.is_task()
        && let Some(points) = scores.remove(&Category::Date)
    {
        *scores.entry(Category::Reminders).or_default() += points;
    }
    best(&scores)
}

/// `category` as the note is filed under it: a task's date says when to
/// do it, so a task is a reminder, never a date.
pub fn as_filed(note: &Note<'_>, category: Category) -> Category {
    if category == Category::Date && note.is_task() {
        Category::Reminders
    } else {
        category
    }
}

/// Votes from what the note says about itself: its `type`, its tags
/// (each level of `people/colleague`), its folders, a title that names a
/// person, and the shape of a project's hub page.
fn self_description(note: &Note<'_>) -> BTreeMap<Category, u32> {
    let mut votes: BTreeMap<Category, u32> = BTreeMap::new();
    let mut vote = |category: Option<Category>, points: u32| {
        if let Some(c) = category.filter(|c| *c != Category::Inbox) {
            *votes.entry(c).or_default() += points;
        }
    };
    if let Some(kind) = note.kind() {
        vote(named_category(&kind), TYPE_VOTE);
    }
    if let Some(memory) = note.memory {
        for tag in &memory.tags {
            let mut levels = tag.split('/');
            vote(levels.next().and_then(named_category), TAG_VOTE);
            for level in levels {
                vote(named_category(level), FOLDER_VOTE);
            }
        }
    }
    for folder in note.folders() {
        vote(named_category(folder), FOLDER_VOTE);
    }
    if let Some(category) = labelled(note) {
        vote(Some(category), TYPE_VOTE);
    }
    if names_a_person(note) || introduces_a_person(note) {
        vote(Some(Category::People), TAG_VOTE);
    }
    if note.linked_from >= HUB_LINKS && outlines_a_project(note.body) {
        vote(Some(Category::Project), TAG_VOTE);
    }
    votes
}

/// The category a note names in the label it opens with, as a `type`
/// would: "Decision: use Postgres", "教训：Redis 的 KEYS 会阻塞",
/// "Lesson learned - ...". The label is the words before the first colon
/// (or full-width colon, or " - ") of the title or of the body's first
/// line, at most three words or six characters of Chinese.
fn labelled(note: &Note<'_>) -> Option<Category> {
    let first_line = note
        .body
        .lines()
        .map(|l| l.trim().trim_start_matches(['#', '-', '*', '>', ' ']))
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    [note.title.as_ref(), first_line]
        .into_iter()
        .find_map(|line| {
            let (label, rest) = line
                .split_once([':', '：'])
                .or_else(|| line.split_once(" - "))?;
            let label = label.trim();
            let short = label.split_whitespace().count() <= 3 && label.chars().count() <= 24;
            if !short || rest.trim().is_empty() {
                return None;
            }
            named_category(label).or_else(|| label_category(label))
        })
}

/// Labels that name a category without being one of its names.
fn label_category(label: &str) -> Option<Category> {
    use Category::*;
    Some(match label.to_lowercase().as_str() {
        "decided" | "we decided" | "final decision" | "决议" => Decisions,
        "lesson learned" | "lessons learned" | "learned" | "gotcha" | "经验" | "经验教训" => {
            Lessons
        }
        "todo" | "to do" | "to-do" | "待办" | "待办事项" => Reminders,
        "preferred" | "prefer" | "likes" | "喜好" => Preferences,
        _ => return None,
    })
}

/// Votes: a `type` counts most, a tag's first level next, then a deeper
/// tag level or a folder.
const TYPE_VOTE: u32 = 4;
const TAG_VOTE: u32 = 3;
const FOLDER_VOTE: u32 = 2;

/// A note that this many others link to, outlined like a project (goals,
/// team, milestones), is the project's hub, whatever decisions it lists.
const HUB_LINKS: usize = 3;

/// The category a type, tag or folder name stands for: `people`,
/// `Projects`, `ADR`, `2. Decisions`, `人物`.
fn named_category(name: &str) -> Option<Category> {
    use Category::*;
    let name = name
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_digit() || c.is_ascii_punctuation() || c == ' ')
        .to_lowercase();
    let category =
        match name.as_str() {
            "person" | "people" | "persons" | "contact" | "contacts" | "colleague"
            | "colleagues" | "friend" | "friends" | "family" | "人物" | "人" | "联系人"
            | "同事" | "朋友" | "家人" => People,
            "project" | "projects" | "项目" => Project,
            "decision" | "decisions" | "adr" | "adrs" | "决策" | "决定" => Decisions,
            "lesson" | "lessons" | "postmortem" | "postmortems" | "post-mortem" | "incident"
            | "incidents" | "教训" | "复盘" | "踩坑" => Lessons,
            "habit" | "habits" | "routine" | "routines" | "习惯" => Habits,
            "skill" | "skills" | "howto" | "how-to" | "howtos" | "技能" | "教程" => Skills,
            "preference" | "preferences" | "prefs" | "偏好" => Preferences,
            "knowledge" | "reference" | "references" | "til" | "fact" | "facts" | "concept"
            | "concepts" | "wiki" | "tech" | "知识" | "读书笔记" => Knowledge,
            "feedback" | "review" | "reviews" | "反馈" => Feedback,
            "daily" | "journal" | "journals" | "calendar" | "event" | "events" | "日记"
            | "日程" => Date,
            "reminder" | "reminders" | "提醒" => Reminders,
            "soul" | "identity" | "values" | "价值观" => Soul,
            "character" | "personality" | "性格" => Character,
            _ => return None,
        };
    Some(category)
}

/// Every category's score for this text, for diagnostics (`dream`
/// summaries, tests). Categories that scored nothing are left out.
pub fn scores(title: &str, body: &str, rules: &[Rule]) -> BTreeMap<Category, u32> {
    scores_by(title, body, &builtin_rules(), rules)
}

/// [`scores`] by `builtins` and `rules` together.
fn scores_by(
    title: &str,
    body: &str,
    builtins: &[Rule],
    rules: &[Rule],
) -> BTreeMap<Category, u32> {
    let (title_raw, body_raw) = (title, truncate_at_char(body, MAX_SCANNED_BYTES));
    let title = normalize(title);
    let body = normalize(body_raw);

    // Deduplicated so a config rule repeating a built-in keyword does not
    // count it twice.
    let mut keywords: BTreeMap<(Category, String), ()> = BTreeMap::new();
    let mut patterns: BTreeMap<(Category, String), ()> = BTreeMap::new();
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
    // Technical terms (`TCP`, `ext4`, `Arc<T>`) mark a technical fact;
    // knowledge comes last in the tie-break, so they only decide when
    // nothing more specific spoke.
    let technical = technical_terms(title_raw) + technical_terms(body_raw);
    add(Category::Knowledge, 1, false, technical >= TECHNICAL_TERMS);
    // A note that opens with an instruction ("Use British spelling")
    // states how its reader wants things done.
    add(
        Category::Preferences,
        1,
        false,
        opens_with_an_instruction(&body),
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

/// Whether the title is a person's name: `Bob Martinez`, `Dr. Patel`,
/// `Carol`, `陈建国`, `老陈`. A known given name says so for a name of
/// two or three words; otherwise, and for a lone word, something must
/// back the name: aliases, notes linking to it, or words about a person.
fn names_a_person(note: &Note<'_>) -> bool {
    let title = note.name.trim();
    let backed = note
        .memory
        .is_some_and(|m| !m.frontmatter.aliases.is_empty())
        || note.linked_from > 0
        || speaks_of_a_person(note.body);
    if title.chars().any(is_cjk) {
        let chars: Vec<char> = title.chars().collect();
        let name = match chars.first() {
            Some('老' | '小' | '阿') => &chars[1..],
            _ => &chars[..],
        };
        let surname = name.first().is_some_and(|c| CJK_SURNAMES.contains(*c))
            || (name.len() >= 3
                && CJK_COMPOUND_SURNAMES.contains(&name[..2].iter().collect::<String>().as_str()));
        return backed
            && surname
            && (2..=4).contains(&chars.len())
            && chars.iter().all(|c| is_cjk(*c));
    }
    let words: Vec<&str> = title.split_whitespace().collect();
    if !(1..=3).contains(&words.len()) || !words.iter().all(|w| is_name_word(w)) {
        return false;
    }
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    if lower.iter().any(|w| NOT_NAMES.contains(&w.as_str())) {
        return false;
    }
    let first = lower[0].trim_end_matches('.');
    let honorific = HONORIFICS.contains(&first) && words.len() > 1;
    let known = GIVEN_NAMES.contains(&first);
    match words.len() {
        1 => known && backed,
        _ => honorific || known || backed,
    }
}

/// Whether the note opens by saying who someone is: "Bob Martinez is our
/// backend lead", "Priya was my manager", "张伟是我们后端组的负责人",
/// "孙强负责运维", "周杰（Jay Zhou）是我们的设计师". A name, then "is" and a
/// role within a few words ([`ROLES`]); in Chinese a name (a surname and
/// one or two characters), then 是 and a role, or 负责 (in charge of).
fn introduces_a_person(note: &Note<'_>) -> bool {
    let opening = note
        .body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let opening = truncate_at_char(opening, 200);
    if opening.chars().next().is_some_and(is_cjk) {
        return introduces_in_chinese(opening);
    }
    let words: Vec<&str> = opening
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '.' | ':'))
        .filter(|w| !w.is_empty())
        .collect();
    let name_len = words
        .iter()
        .take(3)
        .take_while(|w| is_name_word(w) && !NOT_NAMES.contains(&w.to_lowercase().as_str()))
        .count();
    if name_len == 0 || !matches!(words.get(name_len), Some(&("is" | "was"))) {
        return false;
    }
    words[name_len + 1..]
        .iter()
        .take(5)
        .any(|w| ROLES.contains(&w.to_lowercase().trim_end_matches("'s")))
}

/// [`introduces_a_person`] for a note that opens in Chinese.
fn introduces_in_chinese(opening: &str) -> bool {
    let chars: Vec<char> = opening.chars().collect();
    let start = usize::from(matches!(chars.first(), Some('老' | '小' | '阿')));
    if !chars.get(start).is_some_and(|c| CJK_SURNAMES.contains(*c)) {
        return false;
    }
    // The name's two or three characters, then what is said of it, past a
    // name in brackets: 周杰（Jay Zhou）是…
    (start + 2..=start + 3).any(|end| {
        let mut rest: String = chars.get(end..).unwrap_or_default().iter().collect();
        if let Some(after) = rest
            .strip_prefix(['（', '('])
            .and_then(|r| r.split_once(['）', ')']))
            .map(|(_, after)| after.to_string())
        {
            rest = after;
        }
        let lower = rest.to_lowercase();
        lower.starts_with("负责")
            || (lower.starts_with('是')
                && ROLES_ZH
                    .iter()
                    .any(|role| lower.chars().take(16).collect::<String>().contains(role)))
    })
}

/// What a person is to the user, in English (one word each).
const ROLES: &[&str] = &[
    "lead",
    "manager",
    "boss",
    "designer",
    "engineer",
    "developer",
    "colleague",
    "coworker",
    "co-worker",
    "teammate",
    "friend",
    "cto",
    "ceo",
    "cfo",
    "coo",
    "vp",
    "director",
    "dba",
    "pm",
    "founder",
    "cofounder",
    "co-founder",
    "intern",
    "mentor",
    "teacher",
    "tutor",
    "doctor",
    "dentist",
    "therapist",
    "wife",
    "husband",
    "partner",
    "girlfriend",
    "boyfriend",
    "daughter",
    "son",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "sister",
    "brother",
    "aunt",
    "uncle",
    "cousin",
    "neighbour",
    "neighbor",
    "landlord",
    "accountant",
    "lawyer",
    "recruiter",
    "contractor",
    "assistant",
    "coach",
    "roommate",
    "classmate",
    "advisor",
    "adviser",
    "consultant",
    "architect",
    "analyst",
    "researcher",
    "reviewer",
    "maintainer",
    "client",
    "customer",
];

/// What a person is to the user, in Chinese (and the English titles
/// Chinese notes use), lowercase.
const ROLES_ZH: &[&str] = &[
    "负责人",
    "组长",
    "经理",
    "主管",
    "总监",
    "老板",
    "上司",
    "领导",
    "同事",
    "朋友",
    "设计师",
    "工程师",
    "架构师",
    "运维",
    "实习生",
    "老师",
    "导师",
    "医生",
    "律师",
    "会计",
    "妻子",
    "老婆",
    "丈夫",
    "老公",
    "女儿",
    "儿子",
    "妈妈",
    "爸爸",
    "母亲",
    "父亲",
    "姐姐",
    "妹妹",
    "哥哥",
    "弟弟",
    "邻居",
    "合伙人",
    "创始人",
    "客户",
    "顾问",
    "cto",
    "ceo",
    "dba",
    "pm",
];

/// A word of a name: capitalized letters (`Nguyen`, `O'Brien`,
/// `Jean-Luc`) or an initial (`A.`).
fn is_name_word(word: &str) -> bool {
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let rest: Vec<char> = chars.collect();
    first.is_uppercase()
        && (rest == ['.']
            || (!rest.is_empty()
                && rest
                    .iter()
                    .all(|c| c.is_alphabetic() || matches!(c, '-' | '\'' | '’' | '.'))
                && rest.iter().any(|c| c.is_lowercase())))
}

/// Words that say the text is about a person.
fn speaks_of_a_person(body: &str) -> bool {
    let text = normalize(truncate_at_char(body, 4096)).replace('\n', " ");
    PERSON_CUES.iter().any(|cue| contains_keyword(&text, cue))
}

const PERSON_CUES: &[&str] = &[
    "he",
    "she",
    "him",
    "her",
    "his",
    "hers",
    "met",
    "phone",
    "email",
    "birthday",
    "works at",
    "works on",
    "works from",
    "lives in",
    "married",
    "son",
    "daughter",
    "wife",
    "husband",
    "brother",
    "sister",
    "mother",
    "father",
    "neighbour",
    "neighbor",
    "co-founder",
    "cofounder",
    "colleague",
    "manager",
    "friend",
    "recruiter",
    "contractor",
    "intern",
    "他",
    "她",
    "同事",
    "朋友",
    "老师",
    "领导",
    "经理",
    "生日",
    "电话",
    "微信",
    "邮箱",
];

/// Titles and honorifics before a name.
const HONORIFICS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "miss", "prof", "uncle", "aunt", "auntie", "grandma", "grandpa",
    "cousin", "sir",
];

/// Capitalized words of titles that are not names.
const NOT_NAMES: &[&str] = &[
    "the",
    "a",
    "an",
    "of",
    "and",
    "for",
    "with",
    "to",
    "on",
    "in",
    "at",
    "my",
    "our",
    "how",
    "what",
    "why",
    "new",
    "notes",
    "note",
    "meeting",
    "meetings",
    "review",
    "plan",
    "setup",
    "project",
    "launch",
    "overview",
    "weekly",
    "daily",
    "guide",
    "ideas",
    "list",
    "log",
    "summary",
    "report",
    "design",
    "architecture",
    "roadmap",
    "status",
    "team",
    "home",
    "untitled",
    "draft",
    "todo",
    "readme",
    "index",
    "inbox",
    "template",
    "templates",
];

/// Common given names: enough to tell `Bob Martinez` from `Atlas Roadmap`.
/// Names that are also ordinary words or months (May, June, Will, Mark)
/// are left out.
const GIVEN_NAMES: &[&str] = &[
    "aaron",
    "abdul",
    "adam",
    "adrian",
    "ahmed",
    "aisha",
    "akira",
    "alan",
    "albert",
    "alex",
    "alexander",
    "alexandra",
    "alice",
    "alicia",
    "ali",
    "allison",
    "amanda",
    "amber",
    "amir",
    "amy",
    "ana",
    "andrea",
    "andrew",
    "andy",
    "angela",
    "anita",
    "ann",
    "anna",
    "anne",
    "anthony",
    "antonio",
    "arjun",
    "arthur",
    "ashley",
    "barbara",
    "ben",
    "benjamin",
    "beth",
    "betty",
    "bill",
    "bob",
    "brandon",
    "brian",
    "bruce",
    "carl",
    "carlos",
    "carol",
    "caroline",
    "catherine",
    "charles",
    "charlie",
    "charlotte",
    "chen",
    "chris",
    "christian",
    "christina",
    "christopher",
    "claire",
    "claudia",
    "daniel",
    "david",
    "deborah",
    "dennis",
    "diana",
    "diego",
    "dmitri",
    "donald",
    "dorothy",
    "douglas",
    "edward",
    "elena",
    "elizabeth",
    "ella",
    "ellen",
    "emily",
    "emma",
    "eric",
    "erik",
    "ethan",
    "eva",
    "fatima",
    "felix",
    "fernando",
    "francesca",
    "francisco",
    "frank",
    "gabriel",
    "gary",
    "george",
    "gloria",
    "grace",
    "greg",
    "gregory",
    "hannah",
    "hans",
    "harry",
    "heather",
    "helen",
    "henry",
    "hiro",
    "hiroshi",
    "ian",
    "ines",
    "isabel",
    "isabella",
    "ivan",
    "jack",
    "jacob",
    "james",
    "jamie",
    "jane",
    "janet",
    "jason",
    "javier",
    "jeff",
    "jennifer",
    "jenny",
    "jeremy",
    "jess",
    "jessica",
    "jim",
    "joan",
    "joe",
    "john",
    "jonas",
    "jonathan",
    "jorge",
    "jose",
    "joseph",
    "joshua",
    "juan",
    "judith",
    "julia",
    "julie",
    "justin",
    "karen",
    "karl",
    "kate",
    "katherine",
    "kathy",
    "keith",
    "kelly",
    "kenji",
    "kevin",
    "kim",
    "laura",
    "lauren",
    "lena",
    "leo",
    "li",
    "linda",
    "lisa",
    "liu",
    "lucas",
    "lucy",
    "luis",
    "maria",
    "marco",
    "margaret",
    "maria",
    "marie",
    "mario",
    "martin",
    "mary",
    "matt",
    "matthew",
    "maya",
    "mei",
    "mia",
    "michael",
    "michelle",
    "miguel",
    "mike",
    "ming",
    "mohammed",
    "muhammad",
    "nadia",
    "nancy",
    "natalie",
    "nathan",
    "nicholas",
    "nick",
    "nicole",
    "nina",
    "noah",
    "olga",
    "oliver",
    "olivia",
    "omar",
    "oscar",
    "pablo",
    "pamela",
    "patricia",
    "patrick",
    "paul",
    "pedro",
    "peter",
    "philip",
    "pierre",
    "priya",
    "rachel",
    "rahul",
    "raj",
    "ravi",
    "raymond",
    "rebecca",
    "richard",
    "rob",
    "robert",
    "roberto",
    "ruth",
    "ryan",
    "sam",
    "samantha",
    "samuel",
    "sandra",
    "sara",
    "sarah",
    "scott",
    "sean",
    "sergei",
    "sharon",
    "simon",
    "sofia",
    "sophie",
    "stephanie",
    "stephen",
    "steve",
    "steven",
    "susan",
    "sven",
    "takeshi",
    "thomas",
    "tim",
    "timothy",
    "tom",
    "tomasz",
    "tony",
    "victor",
    "victoria",
    "vincent",
    "wei",
    "william",
    "yuki",
    "yusuf",
    "zoe",
];

/// The hundred commonest Chinese surnames.
const CJK_SURNAMES: &str = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤";

const CJK_COMPOUND_SURNAMES: &[&str] = &["欧阳", "司马", "上官", "诸葛", "东方", "皇甫", "慕容"];

/// Whether the body is laid out like a project's page: headings or
/// labels for goals, team, milestones, status, roadmap or its repository.
fn outlines_a_project(body: &str) -> bool {
    body.lines().any(|line| {
        let line = line.trim();
        let label = if let Some(heading) = line.strip_prefix('#') {
            heading.trim_start_matches('#').trim()
        } else if let Some((label, _)) = line.trim_start_matches(['-', '*', ' ']).split_once(':') {
            label.trim()
        } else {
            return false;
        };
        matches!(
            label.to_lowercase().as_str(),
            "goals"
                | "goal"
                | "team"
                | "milestones"
                | "milestone"
                | "status"
                | "roadmap"
                | "timeline"
                | "scope"
                | "deliverables"
                | "stakeholders"
                | "repo"
                | "repository"
                | "owner"
                | "目标"
                | "里程碑"
                | "进度"
                | "团队"
                | "范围"
                | "时间线"
                | "仓库"
                | "负责人"
        )
    })
}

/// How many technical terms make a note a technical fact.
const TECHNICAL_TERMS: usize = 2;

/// Counts technical terms: acronyms (`TCP`, `BM25`), words mixing letters
/// and digits (`ext4`, `k1`), inner capitals (`PostgreSQL`), code
/// (`` `x` ``, `a::b`, `Arc<T>`, `snake_case`, `--flag`) and units
/// (`343 m/s`, `20°C`).
fn technical_terms(text: &str) -> usize {
    let text = truncate_at_char(text, 4096);
    let mut count = text.matches('`').count() / 2;
    for word in text.split(|c: char| {
        c.is_whitespace()
            || is_cjk(c)
            || matches!(c, ',' | ';' | '(' | ')' | '，' | '。' | '：' | '、')
    }) {
        let word = word.trim_matches(|c: char| matches!(c, '.' | ':' | '!' | '?' | '"' | '\''));
        let letters = word.chars().filter(|c| c.is_ascii_alphabetic()).count();
        let digits = word.chars().filter(char::is_ascii_digit).count();
        let upper = word.chars().filter(char::is_ascii_uppercase).count();
        let acronym = (2..=6).contains(&word.len())
            && upper >= 2
            && word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-');
        let mixed = letters > 0 && digits > 0 && word.len() <= 12 && !word.contains(':');
        let inner_capital = word.chars().skip(1).any(|c| c.is_ascii_uppercase())
            && word.chars().any(|c| c.is_ascii_lowercase())
            && !word.contains('-');
        let code = word.contains("::")
            || (word.contains('<') && word.contains('>'))
            || (word.contains('_') && letters > 0)
            || word.starts_with("--");
        let unit = word.starts_with(|c: char| c.is_ascii_digit())
            && (word.ends_with("°c") || word.ends_with("°C") || word.contains("m/s"));
        if acronym || mixed || inner_capital || code || unit {
            count += 1;
        }
    }
    count
}

/// Whether the body (normalized) opens with an instruction about how to
/// do things: `Use …`, `Keep …`, `Write …`, `Avoid …`. One that names a
/// time is a task ("Call mom next Tuesday").
fn opens_with_an_instruction(body: &str) -> bool {
    let first = body.split([' ', '\n']).next().unwrap_or_default();
    matches!(
        first,
        "use" | "keep" | "write" | "avoid" | "answer" | "reply" | "respond" | "format" | "call"
    ) && !body.starts_with("call the")
        && !super::reminders::names_a_time(body)
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
        assert_eq!(classify("A mistake", "decided", None, &[]), Some(Lessons));
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
            patterns: vec!["JIRA-####".into(), "ship*prod".into()],
        }];
        assert_eq!(
            classify("", "see jira-1234 now", None, &rules),
            Some(Project)
        );
        assert_eq!(classify("", "see JIRA-12x4", None, &rules), None);
        assert_eq!(classify("", "ship to prod", None, &rules), Some(Project));
        assert_eq!(classify("", "ship\nto prod", None, &rules), None);
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

    /// What the rules make of a note (without the learned head).
    fn note(path: &str, text: &str, linked_from: usize) -> Option<Category> {
        let stem = path.rsplit('/').next().unwrap_or_default();
        let memory = crate::memory::parse(stem.trim_end_matches(".md"), text);
        filing_with(&Note::of(&memory, text, path, linked_from), &[], None).map(|f| f.0)
    }

    #[test]
    fn the_head_of_letters_speaks_after_the_note_and_the_rules_and_before_the_words() {
        let filed = |text: &str, rules: &[Rule]| {
            let memory = crate::memory::parse("n", text);
            filing(&Note::of(&memory, text, "inbox/n.md", 0), rules)
        };
        // Its words alone placed nothing; the head reads what they are.
        for (text, category) in [
            (
                "Learned the hard way: never deploy on a Friday afternoon; the rollback took all weekend.",
                Lessons,
            ),
            (
                "踩坑记录：升级依赖前一定要先看变更日志，上次直接升级导致线上报错。",
                Lessons,
            ),
            (
                "I'm patient with beginners but blunt in code review.",
                Character,
            ),
            ("我喜欢用深色主题，字体要大一点。", Preferences),
        ] {
            let got = filed(text, &[]);
            assert!(
                matches!(got, Some((c, FiledBy::LearnedFromWords(_))) if c == category),
                "{text}: {got:?}"
            );
        }
        // What the note says about itself and the user's rules come first.
        let text = "---\ncategory: habits\n---\nLesson learned: never deploy on a Friday.\n";
        assert_eq!(filed(text, &[]).map(|f| f.1), Some(FiledBy::Named));
        let rules = [Rule::new(Project, &["deploy"])];
        let text = "Learned the hard way: never deploy on a Friday afternoon.";
        assert_eq!(filed(text, &rules), Some((Project, FiledBy::Rules)));
        // A label naming its category is the note's own word, as a type is.
        let text = "Lesson learned: never deploy on a Friday afternoon.";
        assert_eq!(filed(text, &rules), Some((Lessons, FiledBy::SaidByNote)));
        // A fragment stays where it is.
        assert_eq!(filed("asdf qwer", &[]), None);
    }

    #[test]
    fn what_a_note_says_about_itself_comes_before_its_words() {
        // Nested tag, aliases: a person, though the words say "decided".
        let alice = "---\ntags: [people/colleague]\naliases: [Alice]\n---\n# Alice Nguyen\n\nWe decided she leads design.\n";
        assert_eq!(note("inbox/alice-nguyen.md", alice, 0), Some(People));
        assert_eq!(
            note("inbox/x.md", "---\ntype: decision\n---\nI prefer tea\n", 0),
            Some(Decisions)
        );
        assert_eq!(
            note(
                "inbox/x.md",
                "---\nsource_path: Projects/Garden/x.md\n---\nsoil sensors\n",
                0
            ),
            Some(Project)
        );
        assert_eq!(
            note("obsidian/People/x.md", "plays chess\n", 0),
            Some(People)
        );
        // An explicit category still wins over everything.
        assert_eq!(
            note(
                "inbox/x.md",
                "---\ncategory: lessons\ntype: decision\n---\nx\n",
                0
            ),
            Some(Lessons)
        );
    }

    #[test]
    fn a_person_named_in_the_title_is_people_even_with_dates() {
        let bob = "# Bob Martinez\n\nJoined 2023-04-17. Birthday 1988-06-02.\n";
        assert_eq!(note("inbox/bob-martinez.md", bob, 2), Some(People));
        // A lone capitalized word is a name only when it is a known one
        // and something backs it.
        assert_eq!(
            note("inbox/atlas.md", "# Atlas\n\nLaunch on 2026-01-02.\n", 2),
            Some(Date)
        );
        assert_eq!(
            note("inbox/carol.md", "# Carol\n\nShe runs QA.\n", 0),
            Some(People)
        );
        assert_eq!(
            note(
                "inbox/x.md",
                "# 陈建国\n\n以前的领导，现在在杭州创业。\n",
                0
            ),
            Some(People)
        );
        // A heading that is also the file name still names the person.
        assert_eq!(
            note("inbox/赵磊.md", "# 赵磊\n\n大学室友。\n", 1),
            Some(People)
        );
    }

    #[test]
    fn a_hub_many_notes_link_to_is_its_project_whatever_decisions_it_lists() {
        let hub = "# Zephyr\n\n## Status\nWe decided to keep the navigation.\n\n## Decisions\n- [[Zephyr navigation]]\n";
        assert_eq!(note("inbox/zephyr.md", hub, 5), Some(Project));
        assert_eq!(note("inbox/zephyr.md", hub, 0), Some(Decisions));
    }

    #[test]
    fn a_task_is_never_a_date() {
        let task = "---\ntype: task\n---\nSend the budget by 2025-12-01.\n";
        assert_eq!(note("inbox/budget.md", task, 0), Some(Reminders));
        let tagged = "---\ntags: [todo]\n---\nTax return due by July 31.\n";
        assert_eq!(note("inbox/tax.md", tagged, 0), Some(Reminders));
    }

    #[test]
    fn a_file_name_made_from_the_first_words_is_no_title() {
        assert_eq!(file_name_title("i-prefer-tea", "I prefer tea, always."), "");
        assert_eq!(file_name_title("如何-重置", "如何 重置 SMC"), "");
        assert_eq!(file_name_title("dentist", "tomorrow 3pm"), "dentist");
    }

    #[test]
    fn an_instruction_that_names_a_time_is_a_task_not_a_preference() {
        let prefers = |text: &str| scores("", text, &[]).contains_key(&Preferences);
        assert!(prefers("Call functions with keyword arguments."));
        assert!(!prefers("Call mom next Tuesday."));
        assert!(!prefers("Call the dentist tomorrow at 3pm."));
    }

    #[test]
    fn type_tag_and_folder_names() {
        assert_eq!(named_category("People"), Some(People));
        assert_eq!(named_category("2. Decisions"), Some(Decisions));
        assert_eq!(named_category("人物"), Some(People));
        assert_eq!(named_category("atlas"), None);
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
