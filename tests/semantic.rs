//! Semantic search with the real all-MiniLM-L6-v2 (from PyPI, see
//! `common::minilm`): the embedding is the model's, a question finds a
//! memory that says the same thing in other words, filters and scopes
//! still hold, and a model that is not there is one clear sentence.

mod common;

use std::sync::Arc;
use std::time::Duration;

use mnemofs::embed::{Embedder, cosine};
use mnemofs::index::{Index, Side};
use mnemofs::store::{Store, StorePath};

const WAIT: Duration = Duration::from_secs(120);

#[test]
fn the_embedding_of_a_known_pair_has_the_models_cosine() {
    let model = Embedder::load(&common::minilm()).expect("the model loads");
    assert_eq!(model.dims(), 384);
    let v = model
        .embed(&["A man is eating food.", "A man is eating a piece of bread."])
        .expect("embed");
    let c = cosine(&v[0], &v[1]);
    assert!((c - 0.755).abs() <= 0.001, "cosine {c}");
    // Unit length, and a batch gives what one at a time gives.
    assert!((cosine(&v[0], &v[0]) - 1.0).abs() < 1e-4);
    let alone = model.embed(&["A man is eating food."]).expect("embed");
    assert!(cosine(&alone[0], &v[0]) > 0.9999);
}

#[test]
fn a_question_finds_a_paraphrase_by_meaning_and_filters_and_scopes_hold() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "prefs/drinks.md",
        "---\ntags: [food]\n---\n# Mornings\nPrefers coffee over tea, black, no sugar.\n",
    );
    write(
        "prefs/editor.md",
        "# Editor\nUses vim with a dark colour scheme.\n",
    );
    write(
        "notes/trip.md",
        "# Trip\nFlew to Lisbon in May for a conference.\n",
    );
    write(
        "notes/secret.md",
        "---\nscope: agent:alice\n---\n# Secret\nLoves green tea and espresso.\n",
    );
    let store = Arc::new(Store::open(dir.path()).expect("store"));
    let index = Index::in_memory(Arc::clone(&store)).expect("index");
    assert!(index.wait_idle(WAIT));
    index
        .enable_semantic(Embedder::load(&common::minilm()).expect("model"))
        .expect("semantic on");
    assert!(index.wait_embedded(WAIT), "the memories were not embedded");
    let status = index.status();
    assert_eq!(status.embedded, 4, "{status:?}");
    assert_eq!(status.model.as_deref(), Some("all-MiniLM-L6-v2"));

    let question = "what does the user like to drink?";
    // No word of the question is in the memory: words alone find nothing.
    let words = index
        .search(&format!("{question} mode:words"), 5)
        .expect("search");
    assert!(words.is_empty(), "{words:?}");
    let hidden = ["agent:alice".to_string()];
    let hits = index.search_hiding(question, 5, &hidden).expect("search");
    assert_eq!(hits[0].path.to_string(), "prefs/drinks.md", "{hits:?}");
    assert_eq!(hits[0].matched, Side::Meaning);
    assert!(
        hits.iter().all(|h| h.path.to_string() != "notes/secret.md"),
        "{hits:?}"
    );
    // Words and meaning together.
    let both = index.search("coffee drinks", 5).expect("search");
    assert_eq!(both[0].path.to_string(), "prefs/drinks.md");
    assert_eq!(both[0].matched, Side::Both);
    // A query with syntax asks for exactly what it says: by words.
    let filtered = index.search("tag:food editor", 5).expect("search");
    assert!(
        filtered.iter().all(|h| h.matched == Side::Words),
        "{filtered:?}"
    );

    // A memory removed leaves the vectors too.
    std::fs::remove_file(dir.path().join("prefs/drinks.md")).expect("rm");
    index.notify_path(&StorePath::new("prefs/drinks.md").expect("path"));
    assert!(index.wait_idle(WAIT));
    let hits = index.search(question, 5).expect("search");
    assert!(
        hits.iter().all(|h| h.path.to_string() != "prefs/drinks.md"),
        "{hits:?}"
    );
    index.shutdown();
}

#[test]
fn a_model_that_is_not_there_is_one_sentence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = Embedder::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("config.json") && !e.contains('\n'), "{e}");
}
