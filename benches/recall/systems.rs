//! The systems the recall benchmark asks: mnemofs through its operations
//! layer, and plain BM25 in tantivy as the baseline, over the same memories.
//!
//! mnemofs is measured the way an agent reaches it: the memories are
//! written as files into a store, the index is opened on a state dir as a
//! daemon opens it (start-up reconcile, batched commits), and the benchmark
//! waits until everything is committed before the first question. Each
//! question then goes through `Operations::handle(Request::Search)`, which
//! is what the MCP and socket `search` tool sends (`front::tools`: the
//! tool only adds a `scope` wrapper when the caller names one, and none is
//! named here). A hit's path maps back to the memory written there.
//!
//! Both systems take a store as a list of files, a relative path and its
//! text each: a memory's place in that list is what a hit maps back to.
//!
//! The baseline is what a plain full-text engine gives: tantivy's `en_stem`
//! analyzer (simple tokenizer, long tokens dropped, lowercased, English
//! stems) on the text it is given (a LoCoMo memory's body, an agent
//! store's whole file, frontmatter included), the question
//! parsed leniently by `QueryParser` in its default OR mode, BM25, top 10.
//! It shares nothing with mnemofs's query code, so a change there cannot
//! move the baseline.

use std::collections::HashMap;
use std::error::Error;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mnemofs::embed::Embedder;
use mnemofs::index::Index;
use mnemofs::ops::{DirectWriter, Operations, Request, Response, ServedBy};
use mnemofs::store::Store;
use mnemofs::views::Views;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{IndexReader, TantivyDocument, doc};

use super::locomo::Memory;

/// Memories a system returns for each question.
pub const TOP: usize = 10;

/// How long the index may take to take in a store (never a measurement).
const INDEX_WAIT: Duration = Duration::from_secs(600);

/// The LoCoMo memories as a store's files, each at a neutral name so that
/// its stem (the title) adds no words.
pub fn memory_files(memories: &[Memory]) -> Vec<(String, String)> {
    let width = memories.len().to_string().len().max(4);
    memories
        .iter()
        .enumerate()
        .map(|(i, memory)| (format!("m{:0width$}.md", i + 1), memory.file_text()))
        .collect()
}

/// The systems, in table order: mnemofs fused and the baseline, then,
/// with a model, each of mnemofs's rankings alone.
pub fn names(model: bool) -> &'static [&'static str] {
    let all = &[
        "mnemofs",
        "bm25 en_stem",
        "mnemofs words",
        "mnemofs meaning",
    ];
    if model { all } else { &all[..2] }
}

/// The systems of one store, in the order of [`names`].
pub fn in_order<'a>(
    mnemofs: &'a Mnemofs,
    bm25: &'a Bm25,
    model: bool,
) -> Vec<Box<dyn System + 'a>> {
    let mut systems: Vec<Box<dyn System + 'a>> = vec![Box::new(mnemofs), Box::new(bm25)];
    if model {
        systems.push(Box::new(Only(mnemofs, "words")));
        systems.push(Box::new(Only(mnemofs, "meaning")));
    }
    systems
}

/// One returned memory.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The memory's position in the store's list, if the path is one the
    /// benchmark wrote.
    pub memory: Option<usize>,
    /// The path the system returned.
    pub path: String,
    /// The system's score.
    pub score: f32,
}

/// A system that answers a question with its best memories.
pub trait System {
    /// At most [`TOP`] hits, best first.
    fn search(&self, question: &str) -> Result<Vec<Hit>, Box<dyn Error>>;
}

/// A borrowed system, so that [`in_order`] can list mnemofs beside the
/// views of it that borrow it.
impl<S: System + ?Sized> System for &S {
    fn search(&self, question: &str) -> Result<Vec<Hit>, Box<dyn Error>> {
        (**self).search(question)
    }
}

/// mnemofs on a temp store holding the memories.
pub struct Mnemofs {
    ops: Operations,
    index: Index,
    by_path: HashMap<String, usize>,
    /// Removed after the index stops (field order: dropped last).
    _dir: tempfile::TempDir,
}

impl Mnemofs {
    /// Writes `files` (a path relative to the store's root and the text
    /// each) into a new store and indexes it; returns once every file is
    /// searchable (and, with a `model`, embedded).
    pub fn build(
        files: &[(String, String)],
        model: Option<&Path>,
    ) -> Result<Mnemofs, Box<dyn Error>> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("store");
        let state = dir.path().join("state");
        std::fs::create_dir(&root)?;
        let mut by_path = HashMap::with_capacity(files.len());
        for (i, (path, text)) in files.iter().enumerate() {
            let to = root.join(path);
            if let Some(folder) = to.parent() {
                std::fs::create_dir_all(folder)?;
            }
            std::fs::write(to, text)?;
            by_path.insert(path.clone(), i);
        }
        let store = Arc::new(Store::open(&root)?);
        let index = Index::open(&state, Arc::clone(&store))?;
        if !index.wait_idle(INDEX_WAIT) {
            return Err("the index did not take in the store".into());
        }
        let indexed = index.status().documents;
        if indexed != files.len() as u64 {
            return Err(format!("indexed {indexed} of {} files", files.len()).into());
        }
        if let Some(model) = model {
            let mut embedder = Embedder::load(model)?;
            // As `search: {questions: fast}` in the config asks.
            if std::env::var("MNEMOFS_RECALL_QUESTIONS").as_deref() == Ok("fast") {
                embedder.use_questions(mnemofs::embed::Questions::Fast);
            }
            index.enable_semantic(embedder, None)?;
            if !index.wait_embedded(INDEX_WAIT) {
                return Err("the memories were not embedded in time".into());
            }
        }
        let views = Views::new(index.clone());
        let writer = Arc::new(DirectWriter::new(Arc::clone(&store)).with_index(index.clone()));
        let ops = Operations::new(store, index.clone(), views, writer, ServedBy::Daemon);
        Ok(Mnemofs {
            ops,
            index,
            by_path,
            _dir: dir,
        })
    }
}

/// mnemofs ranking one way only: `mode:words` or `mode:meaning`.
pub struct Only<'a>(pub &'a Mnemofs, pub &'static str);

impl System for Only<'_> {
    fn search(&self, question: &str) -> Result<Vec<Hit>, Box<dyn Error>> {
        self.0.search(&format!("{question} mode:{}", self.1))
    }
}

impl System for Mnemofs {
    fn search(&self, question: &str) -> Result<Vec<Hit>, Box<dyn Error>> {
        let request = Request::Search {
            query: question.to_owned(),
            limit: TOP,
        };
        let Response::Hits { hits, .. } = self.ops.handle(request)? else {
            return Err("search answered with something other than hits".into());
        };
        Ok(hits
            .into_iter()
            .take(TOP)
            .map(|h| Hit {
                memory: self.by_path.get(&h.path).copied(),
                path: h.path,
                score: h.score,
            })
            .collect())
    }
}

impl Drop for Mnemofs {
    fn drop(&mut self) {
        self.index.shutdown();
    }
}

/// tantivy's BM25 with English stems, in RAM.
pub struct Bm25 {
    reader: IndexReader,
    parser: QueryParser,
    memory: Field,
    /// The path of each memory, as a hit names it.
    paths: Vec<String>,
}

impl Bm25 {
    /// Indexes `files`, a path and the text to search each.
    pub fn build(files: &[(String, String)]) -> Result<Bm25, Box<dyn Error>> {
        let mut schema = Schema::builder();
        let body = schema.add_text_field(
            "body",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("en_stem")
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions),
            ),
        );
        let memory = schema.add_u64_field("memory", INDEXED | STORED);
        let index = tantivy::Index::create_in_ram(schema.build());
        // One thread: one segment, the same scores on every run.
        let mut writer = index.writer_with_num_threads(1, 50_000_000)?;
        for (i, (_, text)) in files.iter().enumerate() {
            writer.add_document(doc!(body => text.as_str(), memory => i as u64))?;
        }
        writer.commit()?;
        let reader = index.reader()?;
        reader.reload()?;
        let parser = QueryParser::for_index(&index, vec![body]);
        Ok(Bm25 {
            reader,
            parser,
            memory,
            paths: files.iter().map(|(path, _)| path.clone()).collect(),
        })
    }
}

impl System for Bm25 {
    fn search(&self, question: &str) -> Result<Vec<Hit>, Box<dyn Error>> {
        let (query, _errors) = self.parser.parse_query_lenient(question);
        let searcher = self.reader.searcher();
        let top = searcher.search(&query, &TopDocs::with_limit(TOP))?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address)?;
            let memory = doc
                .get_first(self.memory)
                .and_then(|v| v.as_u64())
                .map(|i| i as usize);
            hits.push(Hit {
                path: memory
                    .and_then(|i| self.paths.get(i))
                    .cloned()
                    .unwrap_or_default(),
                memory,
                score,
            });
        }
        Ok(hits)
    }
}
