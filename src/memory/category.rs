//! The closed vocabularies of the frontmatter: `category` and `phase`.
//!
//! Both are matched case-insensitively and with surrounding whitespace
//! ignored, because people type `Category: Preferences` by hand; they are
//! always written back in lowercase, which is the spelling the directory
//! layout (`by-category/<category>/`) and memory-cli use.

use std::fmt;
use std::str::FromStr;

/// Where a memory belongs: one of the fourteen memory-cli categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Core identity, values, mission.
    Soul,
    /// Personality traits, communication style.
    Character,
    /// People and relationships.
    People,
    /// Project context, repositories, deployments.
    Project,
    /// Time expressions, deadlines, schedules.
    Date,
    /// Technical knowledge, facts, patterns.
    Knowledge,
    /// Feedback, suggestions, improvements.
    Feedback,
    /// User or agent preferences.
    Preferences,
    /// Design decisions, choices made.
    Decisions,
    /// Lessons learned, gotchas.
    Lessons,
    /// Behavioral patterns, routines.
    Habits,
    /// Skills, capabilities.
    Skills,
    /// Not yet classified (the initial landing place).
    Inbox,
    /// Time-based reminders.
    Reminders,
}

impl Category {
    /// Every category, in the order memory-cli documents them.
    pub const ALL: [Category; 14] = [
        Category::Soul,
        Category::Character,
        Category::People,
        Category::Project,
        Category::Date,
        Category::Knowledge,
        Category::Feedback,
        Category::Preferences,
        Category::Decisions,
        Category::Lessons,
        Category::Habits,
        Category::Skills,
        Category::Inbox,
        Category::Reminders,
    ];

    /// The category of the folder a memory at `path` (relative to the
    /// store) is in, if its first folder is named after one: what a memory
    /// without a `category:` of its own is filed under.
    pub fn of_folder(path: &std::path::Path) -> Option<Category> {
        let mut parts = path.components();
        let first = parts.next()?.as_os_str().to_str()?;
        parts.next()?;
        first.parse().ok()
    }

    /// The lowercase name used in frontmatter and directory names.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Soul => "soul",
            Category::Character => "character",
            Category::People => "people",
            Category::Project => "project",
            Category::Date => "date",
            Category::Knowledge => "knowledge",
            Category::Feedback => "feedback",
            Category::Preferences => "preferences",
            Category::Decisions => "decisions",
            Category::Lessons => "lessons",
            Category::Habits => "habits",
            Category::Skills => "skills",
            Category::Inbox => "inbox",
            Category::Reminders => "reminders",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Category {
    type Err = UnknownName;

    /// A category's name, its singular or plural (`habit`, `decision`,
    /// `projects`) or its Chinese name (`人物`, `习惯`): what people write
    /// by hand. It is written back under its own name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        use Category::*;
        let wanted = s.trim();
        if let Some(c) = Category::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(wanted))
        {
            return Ok(c);
        }
        Ok(match wanted.to_lowercase().as_str() {
            "灵魂" => Soul,
            "性格" => Character,
            "person" | "人物" => People,
            "projects" | "项目" => Project,
            "dates" | "日期" | "日程" => Date,
            "知识" => Knowledge,
            "反馈" => Feedback,
            "preference" | "偏好" => Preferences,
            "decision" | "决策" | "决定" => Decisions,
            "lesson" | "教训" | "经验" => Lessons,
            "habit" | "习惯" => Habits,
            "skill" | "技能" => Skills,
            "收件箱" => Inbox,
            "reminder" | "提醒" => Reminders,
            _ => return Err(UnknownName::new("category", wanted)),
        })
    }
}

impl serde::Serialize for Category {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// How far along its life a memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Newly written, waiting for the organizer.
    Inbox,
    /// Classified into a category.
    Organized,
    /// Moved to `archive/` (expired, decayed or merged).
    Archived,
}

impl Phase {
    /// Every phase, in lifecycle order.
    pub const ALL: [Phase; 3] = [Phase::Inbox, Phase::Organized, Phase::Archived];

    /// The lowercase name used in frontmatter.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Inbox => "inbox",
            Phase::Organized => "organized",
            Phase::Archived => "archived",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Phase {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        Phase::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| UnknownName::new("phase", wanted))
    }
}

impl serde::Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A name that is not in the vocabulary it was parsed against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {vocabulary} `{name}`")]
pub struct UnknownName {
    /// Which vocabulary was searched (`category` or `phase`).
    pub vocabulary: &'static str,
    /// The name as given, trimmed.
    pub name: String,
}

impl UnknownName {
    fn new(vocabulary: &'static str, name: &str) -> Self {
        UnknownName {
            vocabulary,
            name: name.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_round_trips_through_its_name() {
        for c in Category::ALL {
            assert_eq!(c.as_str().parse::<Category>(), Ok(c));
            assert_eq!(c.to_string(), c.as_str());
        }
        let mut names: Vec<_> = Category::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 14);
    }

    #[test]
    fn names_match_case_insensitively_and_trimmed() {
        assert_eq!(
            " Preferences ".parse::<Category>(),
            Ok(Category::Preferences)
        );
        assert_eq!("ORGANIZED".parse::<Phase>(), Ok(Phase::Organized));
    }

    #[test]
    fn singulars_plurals_and_chinese_names_are_their_category() {
        assert_eq!("habit".parse::<Category>(), Ok(Category::Habits));
        assert_eq!(" Decision ".parse::<Category>(), Ok(Category::Decisions));
        assert_eq!("人物".parse::<Category>(), Ok(Category::People));
        assert_eq!("习惯".parse::<Category>(), Ok(Category::Habits));
        assert_eq!("projects".parse::<Category>(), Ok(Category::Project));
    }

    #[test]
    fn unknown_names_are_errors_with_a_lowercase_message() {
        let err = "work".parse::<Category>().unwrap_err();
        assert_eq!(err.to_string(), "unknown category `work`");
        assert!("".parse::<Phase>().is_err());
    }

    #[test]
    fn every_phase_round_trips_through_its_name() {
        for p in Phase::ALL {
            assert_eq!(p.as_str().parse::<Phase>(), Ok(p));
        }
    }
}
