//! Placing an inbox note by meaning, with the model semantic search
//! already holds: a head learned from labeled notes
//! ([`crate::memory::head`]), then the note's embedding against each
//! category's prototype sentences (`memory::prototypes`).
//!
//! The organizer asks this only for a note that says nothing about itself
//! (no category, type, tag, folder, person's name or hub shape: see
//! [`classify::said_by_note`]); those decisions always win, and then the
//! user's own `classification.rules` (they said what those words mean).
//! Then the learned head places it (see [`classify::learned_or_words`]):
//! the head that reads the note's embedding and its letters when the
//! model is the one it was trained for, else the one that reads letters
//! alone (as without a model). Without a head (measuring what it adds),
//! the nearest prototypes' category is taken when it is near enough
//! ([`FLOOR`]) and clearly nearer than the next ([`MARGIN`]); otherwise
//! the note's words decide. Either one choosing the inbox (a bare link,
//! a fragment) means meaning cannot place the note.
//!
//! Subtleties:
//! - The prototypes are embedded once per organizer, when the first
//!   unsure note needs them (126 short sentences, a few seconds on the
//!   CPU); without a model nothing is embedded and the organizer behaves
//!   exactly as it does without this module.
//! - Each unsure note costs one pass of the encoder (about 30 ms here):
//!   notes the rules place never pay it.
//! - A note is embedded from its title and first [`NOTE_WORDS`] words
//!   (or [`NOTE_CHARS`] characters, for Chinese, which has no spaces):
//!   one window of the encoder, so each unsure note costs one short pass.

use crate::embed::cosine;
use crate::memory::Category;
use crate::memory::classify::{self, FiledBy, Note};
use crate::memory::head::Head;
pub use crate::memory::head::{NOTE_CHARS, NOTE_WORDS, note_text};
use crate::memory::prototypes::PROTOTYPES;

/// A category's similarity is the mean of its best this many sentences:
/// one lucky example does not carry it, and a note need not resemble all.
pub const TOP_K: usize = 2;

/// The nearest category's similarity must reach this, and beat the
/// second nearest by [`MARGIN`]. Chosen on the labeled set's tuning part
/// (BENCHMARKS.md, "Classification"): of the 214 notes there that say
/// nothing about themselves, meaning alone files 62.6% right; past these
/// two bars it takes 68 of them and files 61 right (90%). Lower bars take
/// more notes and file more of them wrongly (0.30 and 0.02: 95 of 129).
pub const FLOOR: f32 = 0.35;
/// See [`FLOOR`].
pub const MARGIN: f32 = 0.05;

/// Prototype sentences embedded at once.
const PROTOTYPE_BATCH: usize = 16;

/// The categories' prototype sentences, embedded, and the learned head:
/// the one trained for the model that embedded them, else the one that
/// reads letters alone.
#[derive(Debug, Clone)]
pub struct CategoryPrototypes {
    rows: Vec<(Category, Vec<f32>)>,
    head: Option<Head>,
}

impl CategoryPrototypes {
    /// Every prototype sentence, with its category, in the order
    /// [`CategoryPrototypes::new`] expects their vectors.
    pub fn sentences() -> Vec<(Category, &'static str)> {
        PROTOTYPES
            .iter()
            .flat_map(|p| {
                std::iter::once(p.description)
                    .chain(p.examples.iter().copied())
                    .map(move |s| (p.category, s))
            })
            .collect()
    }

    /// The prototypes from `embed`, which is given every sentence of
    /// [`CategoryPrototypes::sentences`] and returns their unit vectors in
    /// order. `None` if it cannot.
    pub fn new(embed: impl Fn(&[&str]) -> Option<Vec<Vec<f32>>>) -> Option<Self> {
        let sentences = Self::sentences();
        let texts: Vec<&str> = sentences.iter().map(|(_, s)| *s).collect();
        let mut vectors = Vec::with_capacity(texts.len());
        // In small batches: a batch is padded to its longest sentence.
        for batch in texts.chunks(PROTOTYPE_BATCH) {
            vectors.extend(embed(batch)?);
        }
        if vectors.len() != sentences.len() {
            return None;
        }
        // The first sentence's vector is the model's fingerprint.
        let head = Head::shipped()
            .filter(|h| h.fits(&vectors[0]))
            .or_else(|| Head::words().cloned());
        let rows = sentences.into_iter().map(|(c, _)| c).zip(vectors).collect();
        Some(CategoryPrototypes { rows, head })
    }

    /// The same prototypes without the learned head: for measuring what
    /// the head adds.
    pub fn without_head(self) -> Self {
        CategoryPrototypes { head: None, ..self }
    }

    /// The same prototypes with `head` instead of the shipped one, if it
    /// reads letters alone or fits their model: for measuring a head
    /// trained without some notes.
    pub fn with_head(self, head: Head) -> Self {
        let head = Some(head)
            .filter(|h| h.dim() == 0 || self.rows.first().is_some_and(|(_, v)| h.fits(v)));
        CategoryPrototypes { head, ..self }
    }

    /// Whether a learned head is used.
    pub fn has_head(&self) -> bool {
        self.head.is_some()
    }

    /// Whether the learned head reads the model's embeddings (it was
    /// trained for this model), not letters alone.
    pub fn has_model_head(&self) -> bool {
        self.head.as_ref().is_some_and(|h| h.dim() > 0)
    }

    /// Each category's similarity to `note` (a unit vector), nearest
    /// first.
    pub fn similarities(&self, note: &[f32]) -> Vec<(Category, f32)> {
        let mut out: Vec<(Category, f32)> = Category::ALL
            .into_iter()
            .filter_map(|category| {
                let mut sims: Vec<f32> = self
                    .rows
                    .iter()
                    .filter(|(c, _)| *c == category)
                    .map(|(_, v)| cosine(note, v))
                    .collect();
                if sims.is_empty() {
                    return None;
                }
                sims.sort_by(|a, b| b.total_cmp(a));
                let top = &sims[..TOP_K.min(sims.len())];
                Some((category, top.iter().sum::<f32>() / top.len() as f32))
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }

    /// The learned head's likeliest category for a note (its unit vector,
    /// read when the head was trained for this model, and its
    /// [`note_text`]) and its probability, and whether the head read the
    /// vector; `None` without a head.
    pub fn likeliest(&self, note: &[f32], text: &str) -> Option<((Category, f32), bool)> {
        let head = self.head.as_ref()?;
        let reads_vectors = head.dim() > 0;
        let likeliest = head.likeliest(reads_vectors.then_some(note), text)?;
        Some((likeliest, reads_vectors))
    }

    /// The category whose prototypes are nearest to `note` (a unit
    /// vector), if that passes [`FLOOR`] and beats the next by [`MARGIN`]:
    /// what places a note when there is no learned head. `Some(Inbox)`:
    /// it is most like a fragment.
    pub fn nearest(&self, note: &[f32]) -> Option<(Category, FiledBy)> {
        let sims = self.similarities(note);
        let (best, score) = *sims.first()?;
        let second = sims.get(1).map_or(f32::MIN, |s| s.1);
        (score >= FLOOR && score - second >= MARGIN).then_some((best, FiledBy::Examples))
    }
}

/// What placing a note by meaning needs: the prototypes, and a way to
/// embed one text (with the same model).
#[derive(Clone, Copy)]
pub struct Meaning<'a> {
    /// The categories' prototypes.
    pub prototypes: &'a CategoryPrototypes,
    /// A text's unit vector, `None` if it cannot be made.
    pub embed: &'a dyn Fn(&str) -> Option<Vec<f32>>,
}

/// Places a note: what it says about itself, else its meaning when
/// `meaning` is given (the prototypes, and a way to embed one text),
/// else its words. `None` means nothing placed it.
pub fn classify_note(
    note: &Note<'_>,
    rules: &[classify::Rule],
    meaning: Option<Meaning<'_>>,
) -> Option<Category> {
    filing(note, rules, meaning).map(|(category, _)| category)
}

/// [`classify_note`], with what decided it. Without `meaning`, or when
/// the note cannot be embedded, it is [`classify::filing`].
pub fn filing(
    note: &Note<'_>,
    rules: &[classify::Rule],
    meaning: Option<Meaning<'_>>,
) -> Option<(Category, FiledBy)> {
    let Some(meaning) = meaning else {
        return classify::filing(note, rules);
    };
    if let Some(filed) = classify::said_by_note_why(note) {
        return Some(filed);
    }
    if let Some(category) = classify::voted_by_rules(note, rules) {
        return Some((category, FiledBy::Rules));
    }
    // Embedded only when what the note says and the rules leave it open.
    let text = note_text(note);
    let Some(vector) = (meaning.embed)(&text) else {
        return classify::filing(note, rules);
    };
    if let Some((likeliest, reads_vectors)) = meaning.prototypes.likeliest(&vector, &text) {
        let by = if reads_vectors {
            FiledBy::Learned
        } else {
            FiledBy::LearnedFromWords
        };
        return classify::learned_or_words(note, rules, likeliest, by);
    }
    if let Some((category, by)) = meaning.prototypes.nearest(&vector) {
        return (category != Category::Inbox).then(|| (classify::as_filed(note, category), by));
    }
    classify::voted_by_words(note, rules).map(|c| (c, FiledBy::Words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory;
    use crate::memory::head::tests::axis;

    /// Prototypes whose sentences all lie on their category's axis.
    fn on_axes() -> CategoryPrototypes {
        CategoryPrototypes::new(|texts| {
            let sentences = CategoryPrototypes::sentences();
            Some(
                texts
                    .iter()
                    .map(|t| {
                        let (c, _) = sentences.iter().find(|(_, s)| s == t).expect("known");
                        let i = Category::ALL
                            .iter()
                            .position(|x| x == c)
                            .expect("a category");
                        axis(i, i, 0.0)
                    })
                    .collect(),
            )
        })
        .expect("embedded")
        .without_head()
    }

    #[test]
    fn the_nearest_category_is_taken_only_past_the_floor_and_the_margin() {
        let prototypes = on_axes();
        let (lessons, skills) = (9, 11);
        assert_eq!(
            prototypes.nearest(&axis(lessons, skills, 0.2)),
            Some((Category::Lessons, FiledBy::Examples))
        );
        // Almost as near to skills: too close to call.
        assert_eq!(prototypes.nearest(&axis(lessons, skills, 0.97)), None);
        // Near nothing at all.
        let mut flat = vec![1.0f32; Category::ALL.len()];
        let norm = (flat.len() as f32).sqrt();
        flat.iter_mut().for_each(|x| *x /= norm);
        assert_eq!(prototypes.nearest(&flat), None);
    }

    #[test]
    fn what_a_note_says_about_itself_wins_over_its_meaning() {
        let prototypes = on_axes();
        let text = "---\ncategory: decisions\n---\nRemember to water the plants.\n";
        let parsed = memory::parse("plants", text);
        let note = Note::of(&parsed, text, "inbox/plants.md", 0);
        let reminders = Category::ALL.len() - 1;
        let embed = |_: &str| Some(axis(reminders, reminders, 0.0));
        assert_eq!(
            classify_note(
                &note,
                &[],
                Some(Meaning {
                    prototypes: &prototypes,
                    embed: &embed
                })
            ),
            Some(Category::Decisions)
        );
    }

    #[test]
    fn the_users_own_rules_speak_before_meaning() {
        let prototypes = on_axes();
        let note = Note::text("", "Draft the roadmap for the next quarter.");
        let soul = 0;
        let embed = |_: &str| Some(axis(soul, soul, 0.0));
        let meaning = Some(Meaning {
            prototypes: &prototypes,
            embed: &embed,
        });
        assert_eq!(
            filing(&note, &[], meaning).map(|f| f.0),
            Some(Category::Soul)
        );
        let rules = [classify::Rule::new(Category::Project, &["roadmap"])];
        assert_eq!(
            filing(&note, &rules, meaning),
            Some((Category::Project, FiledBy::Rules))
        );
    }

    #[test]
    fn a_task_near_the_dates_is_a_reminder_and_a_fragment_stays_put() {
        let prototypes = on_axes();
        let text = "---\ntype: task\n---\nthe thing on the 3rd\n";
        let parsed = memory::parse("thing", text);
        let note = Note::of(&parsed, text, "inbox/thing.md", 0);
        let date = 4;
        let embed = |_: &str| Some(axis(date, date, 0.0));
        assert_eq!(
            classify_note(
                &note,
                &[],
                Some(Meaning {
                    prototypes: &prototypes,
                    embed: &embed
                })
            ),
            Some(Category::Reminders)
        );
        let note = Note::text("", "remind me to call the dentist tomorrow");
        let inbox = 12;
        let embed = |_: &str| Some(axis(inbox, inbox, 0.0));
        // Nearest to a fragment: meaning does not place it, nor its words.
        assert_eq!(
            classify_note(
                &note,
                &[],
                Some(Meaning {
                    prototypes: &prototypes,
                    embed: &embed
                })
            ),
            None
        );
        // Without a model, the words decide as before.
        assert_eq!(
            classify_note(&note, &[], None),
            classify::classify_note(&note, &[])
        );
    }
}
