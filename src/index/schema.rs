//! The tantivy schema: which fields a document has and how each is indexed.
//!
//! Bump [`SCHEMA_VERSION`] whenever a field or its options change: the
//! index lives in a directory named after the version, so a new version
//! starts from an empty directory and is rebuilt from the store.
//!
//! Subtleties:
//! - `path` is a bytes field, not text: store paths may hold bytes that are
//!   not UTF-8, and the path is the unique key of a document. It is a fast
//!   field too, so the start-up reconcile and the views map documents to
//!   paths without touching the document store.
//! - Filter fields (`tag`, `category`, `type`, ...) use a whole-value,
//!   lowercasing tokenizer, so `type:Decision` and `type:decision` agree.
//! - `tag` keeps frequencies (always 1: a memory's tags have no
//!   duplicates) because it is a default field of plain queries: tantivy
//!   prunes a union of term queries by block maxima only when every term
//!   has frequencies, so without them a word that is also a tag scored
//!   every note with the word.
//! - `key` holds every name a document answers to in a link and `link`
//!   every name its links point at, both normalized by
//!   [`normalize_key`](super::document::normalize_key); backlinks are a term
//!   query of one against the other.
//! - `title_stem` (title and aliases) and `body_stem` hold the same text as
//!   `title`, `alias` and `body` through the stemming analyzer, with
//!   frequencies but no positions: phrases run on the plain fields.
//! - Binary files get a `kind = skipped` document with only path, size,
//!   mtime, inode and ctime, so the reconcile does not re-read them on
//!   every start.
//! - `inode` and `ctime` tell a file from one put in its place with the
//!   same size and mtime (`mv` over it after `cp -p`, `rsync --inplace`):
//!   size and mtime alone would keep the old file's document.

use tantivy::schema::{
    BytesOptions, DateOptions, Field, INDEXED, IndexRecordOption, NumericOptions, STORED, Schema,
    TextFieldIndexing, TextOptions,
};

use super::tokenizer::{KEYWORD_TOKENIZER, STEM_TOKENIZER, TEXT_TOKENIZER};

/// Version of the schema and of the way documents are built from files.
pub const SCHEMA_VERSION: u32 = 11;

/// `kind` of a markdown memory.
pub(crate) const KIND_MEMORY: &str = "memory";
/// `kind` of another text file, indexed as full text.
pub(crate) const KIND_TEXT: &str = "text";
/// `kind` of a binary file: present only to remember its size and mtime.
pub(crate) const KIND_SKIPPED: &str = "skipped";
/// `flag` of a document whose parse reported problems.
pub(crate) const FLAG_LINT: &str = "lint";

/// Handles of every field of the schema.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields {
    pub(crate) path: Field,
    pub(crate) kind: Field,
    pub(crate) title: Field,
    pub(crate) body: Field,
    /// Title and aliases, stemmed.
    pub(crate) title_stem: Field,
    /// Body, stemmed.
    pub(crate) body_stem: Field,
    pub(crate) tag: Field,
    pub(crate) category: Field,
    pub(crate) kind_type: Field,
    pub(crate) status: Field,
    pub(crate) scope: Field,
    pub(crate) source: Field,
    pub(crate) phase: Field,
    pub(crate) id: Field,
    pub(crate) alias: Field,
    pub(crate) key: Field,
    pub(crate) link: Field,
    pub(crate) created: Field,
    pub(crate) updated: Field,
    /// The day it was written, as its `created_at` says it in its own
    /// zone (else its file's time, local), at 00:00 UTC.
    pub(crate) day: Field,
    /// The days its text names ahead of when it was written ("the dentist
    /// on Friday"), as the reminders read them, at 00:00 UTC.
    pub(crate) mentioned: Field,
    pub(crate) changed: Field,
    pub(crate) size: Field,
    pub(crate) mtime: Field,
    pub(crate) inode: Field,
    pub(crate) ctime: Field,
    pub(crate) flag: Field,
    pub(crate) lint: Field,
}

impl Fields {
    /// The fields a plain word is looked up in.
    pub(crate) fn ranked(&self) -> [Field; 6] {
        [
            self.title,
            self.body,
            self.tag,
            self.alias,
            self.title_stem,
            self.body_stem,
        ]
    }
}

/// Field names as a query writes them.
pub(crate) mod names {
    pub(crate) const PATH: &str = "path";
    pub(crate) const KIND: &str = "kind";
    pub(crate) const TITLE: &str = "title";
    pub(crate) const BODY: &str = "body";
    pub(crate) const TITLE_STEM: &str = "title_stem";
    pub(crate) const BODY_STEM: &str = "body_stem";
    pub(crate) const TAG: &str = "tag";
    pub(crate) const CATEGORY: &str = "category";
    pub(crate) const TYPE: &str = "type";
    pub(crate) const STATUS: &str = "status";
    pub(crate) const SCOPE: &str = "scope";
    pub(crate) const SOURCE: &str = "source";
    pub(crate) const PHASE: &str = "phase";
    pub(crate) const ID: &str = "id";
    pub(crate) const ALIAS: &str = "alias";
    pub(crate) const KEY: &str = "key";
    pub(crate) const LINK: &str = "link";
    pub(crate) const CREATED: &str = "created";
    pub(crate) const UPDATED: &str = "updated";
    pub(crate) const DAY: &str = "day";
    pub(crate) const MENTIONED: &str = "mentioned";
    pub(crate) const CHANGED: &str = "changed";
    pub(crate) const SIZE: &str = "size";
    pub(crate) const MTIME: &str = "mtime";
    pub(crate) const INODE: &str = "inode";
    pub(crate) const CTIME: &str = "ctime";
    pub(crate) const FLAG: &str = "flag";
    pub(crate) const LINT: &str = "lint";
}

fn text(stored: bool) -> TextOptions {
    let options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TEXT_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    if stored {
        options.set_stored()
    } else {
        options
    }
}

/// A stemmed copy of text: words counted, no positions, not stored.
fn stemmed() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(STEM_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    )
}

fn keyword(stored: bool) -> TextOptions {
    keyword_with(stored, IndexRecordOption::Basic)
}

fn keyword_with(stored: bool, record: IndexRecordOption) -> TextOptions {
    let options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(KEYWORD_TOKENIZER)
            .set_index_option(record),
    );
    if stored {
        options.set_stored()
    } else {
        options
    }
}

/// Builds the schema and its field handles.
pub(crate) fn build() -> (Schema, Fields) {
    use names::*;
    let mut b = Schema::builder();
    let date = DateOptions::from(INDEXED).set_fast();
    let fields = Fields {
        path: b.add_bytes_field(
            PATH,
            BytesOptions::default()
                .set_indexed()
                .set_stored()
                .set_fast(),
        ),
        kind: b.add_text_field(KIND, keyword(false)),
        title: b.add_text_field(TITLE, text(true)),
        // Not stored: a hit's snippet is cut from its file, so the index
        // does not hold a second copy of every note.
        body: b.add_text_field(BODY, text(false)),
        title_stem: b.add_text_field(TITLE_STEM, stemmed()),
        body_stem: b.add_text_field(BODY_STEM, stemmed()),
        tag: b.add_text_field(TAG, keyword_with(false, IndexRecordOption::WithFreqs)),
        category: b.add_text_field(CATEGORY, keyword(false)),
        kind_type: b.add_text_field(TYPE, keyword(false)),
        status: b.add_text_field(STATUS, keyword(false)),
        scope: b.add_text_field(SCOPE, keyword(false)),
        source: b.add_text_field(SOURCE, keyword(false)),
        phase: b.add_text_field(PHASE, keyword(false)),
        id: b.add_text_field(ID, keyword(true)),
        alias: b.add_text_field(ALIAS, text(false)),
        key: b.add_text_field(KEY, keyword(true)),
        link: b.add_text_field(LINK, keyword(false)),
        created: b.add_date_field(CREATED, date.clone()),
        updated: b.add_date_field(UPDATED, date.clone()),
        day: b.add_date_field(DAY, date.clone()),
        mentioned: b.add_date_field(MENTIONED, date.clone()),
        changed: b.add_i64_field(CHANGED, NumericOptions::default().set_fast()),
        size: b.add_u64_field(SIZE, NumericOptions::default().set_fast()),
        mtime: b.add_i64_field(MTIME, NumericOptions::default().set_fast()),
        inode: b.add_u64_field(INODE, NumericOptions::default().set_fast()),
        ctime: b.add_i64_field(CTIME, NumericOptions::default().set_fast()),
        flag: b.add_text_field(FLAG, keyword(false)),
        lint: b.add_text_field(LINT, STORED),
    };
    (b.build(), fields)
}

/// Field handles of an existing schema (an index opened read-only).
pub(crate) fn fields_of(schema: &Schema) -> tantivy::Result<Fields> {
    use names::*;
    let f = |name: &str| schema.get_field(name);
    Ok(Fields {
        path: f(PATH)?,
        kind: f(KIND)?,
        title: f(TITLE)?,
        body: f(BODY)?,
        title_stem: f(TITLE_STEM)?,
        body_stem: f(BODY_STEM)?,
        tag: f(TAG)?,
        category: f(CATEGORY)?,
        kind_type: f(TYPE)?,
        status: f(STATUS)?,
        scope: f(SCOPE)?,
        source: f(SOURCE)?,
        phase: f(PHASE)?,
        id: f(ID)?,
        alias: f(ALIAS)?,
        key: f(KEY)?,
        link: f(LINK)?,
        created: f(CREATED)?,
        updated: f(UPDATED)?,
        day: f(DAY)?,
        mentioned: f(MENTIONED)?,
        changed: f(CHANGED)?,
        size: f(SIZE)?,
        mtime: f(MTIME)?,
        inode: f(INODE)?,
        ctime: f(CTIME)?,
        flag: f(FLAG)?,
        lint: f(LINT)?,
    })
}
