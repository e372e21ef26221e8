//! Semantic search with the real all-MiniLM-L6-v2 (from PyPI, see
//! `common::minilm`): the embedding is the model's, a question finds a
//! memory that says the same thing in other words, filters and scopes
//! still hold, and a model that is not there is one clear sentence.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mnemofs::embed::{Embedder, Kernel, cosine};
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
fn a_question_is_embedded_as_a_memory_is_to_a_millionth() {
    let mut model = Embedder::load(&common::minilm()).expect("the model loads");
    // In floats by default, on the questions' own kernels where the CPU has
    // them; and back to floats after 8 bits.
    assert_eq!(model.kernel(), None);
    let questions = [
        "A man is eating food.",
        "What did the user say about how they prefer their code to be formatted before a pull request is merged, and did the reviewers agree with that choice in the end?",
        "deploy",
        "用户喜欢喝咖啡还是茶？",
    ];
    let memories = model.embed(&questions).expect("embed");
    for round in 0..2 {
        for (question, memory) in questions.iter().zip(&memories) {
            let v = model.embed_query(question).expect("embed");
            let c = cosine(&v, memory);
            assert!(c > 0.99999, "cosine {c} for {question:?} (round {round})");
        }
        if Kernel::best() != Kernel::Portable {
            assert!(model.set_kernel(Some(Kernel::best())));
            assert_eq!(model.kernel(), Some(Kernel::best()));
        }
        assert!(model.set_kernel(None));
        assert_eq!(model.kernel(), None);
    }
}

#[test]
fn a_question_embedded_in_eight_bits_is_near_its_float_embedding_on_every_kernel() {
    let mut model = Embedder::load(&common::minilm()).expect("the model loads");
    let questions = [
        "A man is eating food.",
        "What did the user say about how they prefer their code to be formatted before a pull request is merged?",
        "when is the dentist appointment",
        "Which editor theme does Caroline use, dark mode or light?",
        "What did Melanie paint after the camping trip to the lake in July 2023?",
        "deploy freeze",
        "Why did the database migration to the new cluster fail last Friday?",
        "How many pottery classes has she taken, and does she still enjoy them?",
        "rust vs go for a CLI?",
        "用户喜欢喝咖啡还是茶？",
        "上周五的数据库迁移为什么失败了",
        "我的经理对代码审查说了什么",
    ];
    let kernels: Vec<Kernel> = [Kernel::Vnni, Kernel::Avx2, Kernel::Portable]
        .into_iter()
        .filter(|&k| model.set_kernel(Some(k)))
        .collect();
    let floats = model.embed(&questions).expect("embed");
    let mut first: Vec<Vec<f32>> = Vec::new();
    for kernel in kernels {
        assert!(model.set_kernel(Some(kernel)));
        for (i, (question, float)) in questions.iter().zip(&floats).enumerate() {
            let v = model.embed_query(question).expect("embed");
            let c = cosine(&v, float);
            println!("{kernel:?} {c:.5} {question}");
            assert!(
                c >= 0.99,
                "{kernel:?}: cosine {c} to the floats for {question:?}"
            );
            // Every kernel computes the same integers.
            match first.get(i) {
                Some(before) => assert!(cosine(before, &v) > 0.99999, "{kernel:?}: {question:?}"),
                None => first.push(v),
            }
        }
    }
    // The known pair, a question against a memory.
    let question = model.embed_query("A man is eating food.").expect("embed");
    let memory = model
        .embed(&["A man is eating a piece of bread."])
        .expect("embed");
    let c = cosine(&question, &memory[0]);
    println!("the known pair, the question in eight bits: {c:.4}");
    assert!((c - 0.755).abs() <= 0.005, "cosine {c}");
}

/// The store at `dir` indexed in memory, every memory embedded.
fn embedded_index(dir: &Path) -> Index {
    let store = Arc::new(Store::open(dir).expect("store"));
    let index = Index::in_memory(store).expect("index");
    assert!(index.wait_idle(WAIT));
    index
        .enable_semantic(Embedder::load(&common::minilm()).expect("model"), None)
        .expect("semantic on");
    assert!(index.wait_embedded(WAIT), "the memories were not embedded");
    index
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
    let index = embedded_index(dir.path());
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
    // Filters restrict both sides: the question is still asked by its
    // meaning among what they leave, and what only a filter matches is
    // no answer.
    for filtered in [
        format!("{question} tag:food"),
        format!("({question}) tag:\"food\" created:[2020-01-01 TO *]"),
    ] {
        let hits = index.search(&filtered, 5).expect("search");
        assert_eq!(hits.len(), 1, "{filtered}: {hits:?}");
        assert_eq!(hits[0].path.to_string(), "prefs/drinks.md");
        assert_eq!(hits[0].matched, Side::Meaning);
    }
    let elsewhere = index
        .search(&format!("{question} created:<2020-01-01"), 5)
        .expect("search");
    assert!(elsewhere.is_empty(), "{elsewhere:?}");
    let filtered = index.search("tag:food editor", 5).expect("search");
    assert!(filtered.is_empty(), "{filtered:?}");
    // Other syntax asks for exactly what it says: by words.
    let phrase = index.search("\"dark colour\" editor", 5).expect("search");
    assert!(
        !phrase.is_empty() && phrase.iter().all(|h| h.matched == Side::Words),
        "{phrase:?}"
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

/// To an English model, Chinese texts are all alike: a Chinese question
/// is then searched by its words, and a Chinese memory has no vectors, so
/// neither brings in the rest of the store by "meaning".
#[test]
fn chinese_is_searched_by_its_words_with_a_model_that_cannot_read_it() {
    let model = Embedder::load(&common::minilm()).expect("the model loads");
    assert!(!model.reads_chinese());
    let dir = tempfile::tempdir().expect("tempdir");
    for (rel, text) in [
        (
            "zh/tea.md",
            "喝茶偏好：用户喜欢龙井和普洱，下午不喝咖啡以免失眠。\n",
        ),
        ("zh/db.md", "数据库迁移方案需要在周五前评审。\n"),
        ("zh/cat.md", "我的猫叫团子，是一只橘猫。\n"),
        ("zh/trip.md", "下个月去北京出差三天。\n"),
        (
            "en/drinks.md",
            "# Mornings\nPrefers coffee over tea, black, no sugar.\n",
        ),
    ] {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let index = embedded_index(dir.path());
    let paths = |query: &str| -> Vec<(String, Side)> {
        index
            .search(query, 10)
            .expect("search")
            .into_iter()
            .map(|h| (h.path.to_string(), h.matched))
            .collect()
    };
    assert_eq!(paths("咖啡"), [("zh/tea.md".to_string(), Side::Words)]);
    assert_eq!(
        paths("用户喝什么"),
        [("zh/tea.md".to_string(), Side::Words)]
    );
    assert_eq!(paths("数据库迁移"), [("zh/db.md".to_string(), Side::Words)]);
    // An English question finds no Chinese memory by meaning.
    let drink = paths("what does the user like to drink?");
    assert_eq!(drink, [("en/drinks.md".to_string(), Side::Meaning)]);
    // Status says the four are found by their words alone.
    let status = index.status();
    assert_eq!((status.embedded, status.embed_unread), (5, 4), "{status:?}");
    index.shutdown();
}

/// An empty memory, or one of a letter, means nothing: a question of one
/// word it does not hold does not find it by meaning.
#[test]
fn a_memory_of_next_to_nothing_is_not_found_by_meaning() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (rel, text) in [
        ("empty.md", ""),
        ("x.md", "x\n"),
        ("drinks.md", "# Mornings\nPrefers coffee over tea.\n"),
    ] {
        std::fs::write(dir.path().join(rel), text).expect("write");
    }
    let index = embedded_index(dir.path());
    for query in ["zebra", "xylophone", "armadillo"] {
        let hits = index.search(query, 10).expect("search");
        assert!(hits.is_empty(), "{query}: {hits:?}");
    }
    let hits = index.search("coffee", 10).expect("search");
    assert_eq!(hits.len(), 1, "{hits:?}");
    index.shutdown();
}

/// A question that names a day asks first about what was written that
/// day, by words and by meaning, and scopes still hold there.
#[test]
fn a_question_that_names_a_day_ranks_what_was_written_then_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |rel: &str, created: &str, body: &str| {
        std::fs::write(
            dir.path().join(rel),
            format!("---\ncreated_at: {created}\n---\n{body}\n"),
        )
        .expect("write");
    };
    write(
        "a.md",
        "2023-05-01T09:00:00Z",
        "The user loves coffee, black, two cups a day.",
    );
    write(
        "b.md",
        "2023-06-03T19:00:00Z",
        "Tried a matcha latte at the new cafe and liked it.",
    );
    write(
        "c.md",
        "2023-06-03T20:00:00+00:00",
        "Ordered green tea with Alice.",
    );
    write("d.md", "2023-07-09", "Fixed the flaky CI job in the build.");
    std::fs::write(
        dir.path().join("e.md"),
        "---\ncreated_at: 2023-06-03T08:00:00Z\nscope: agent:alice\n---\nAlice drank hot chocolate.\n",
    )
    .expect("write");
    let index = embedded_index(dir.path());
    let paths = |q: &str| -> Vec<String> {
        index
            .search_hiding(q, 5, &["agent:alice".to_string()])
            .expect("search")
            .into_iter()
            .map(|h| h.path.to_string())
            .collect()
    };
    let plain = paths("what did the user like to drink?");
    assert_eq!(plain[0], "a.md", "{plain:?}");
    let dated = paths("what did the user like to drink on 3 June 2023?");
    assert_eq!(dated[0], "b.md", "{dated:?}");
    assert!(dated[..2].contains(&"c.md".to_string()), "{dated:?}");
    assert!(!dated.contains(&"e.md".to_string()), "{dated:?}");
    assert!(dated.contains(&"a.md".to_string()), "{dated:?}");
    // Asked of the day alone: what was written then, the latest first.
    assert_eq!(
        paths("what did we do on 3 June 2023?")[..2],
        ["c.md", "b.md"]
    );
    let hits = index.search("3 June 2023", 5).expect("search");
    assert_eq!(hits[0].matched, Side::Period, "{hits:?}");
    index.shutdown();
}

/// An agent's memory keeps what was true then: asked what holds, the
/// newer memory on the same subject comes first, and only on the same
/// subject.
#[test]
fn a_newer_memory_on_the_same_subject_comes_before_the_older() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A memory without `category:` is of the category folder it is in.
    let write = |rel: &str, created: &str, category: &str, body: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let category = if category.is_empty() {
            String::new()
        } else {
            format!("category: {category}\n")
        };
        std::fs::write(
            path,
            format!("---\ncreated_at: {created}\n{category}---\n{body}\n"),
        )
        .expect("write");
    };
    write(
        "decisions/sqlite.md",
        "2026-02-10T10:00:00Z",
        "decisions",
        "# Database: SQLite\n\nWe decided to use SQLite as the app's database: one file, no server to run.",
    );
    write(
        "decisions/postgres.md",
        "2026-10-02T15:00:00Z",
        "",
        "# Moving to Postgres\n\nDecision: we move from SQLite to Postgres, because several workers now write at once.",
    );
    write(
        "decisions/hosting.md",
        "2026-11-05T10:00:00Z",
        "decisions",
        "# Hosting\n\nWe host on Hetzner, not AWS, to keep costs down.",
    );
    write(
        "decisions/frontend.md",
        "2026-05-01T10:00:00Z",
        "decisions",
        "# Frontend framework\n\nWe picked Svelte for the dashboard over React.",
    );
    // Events: a newer one supersedes nothing.
    write(
        "date/release.md",
        "2026-03-01T10:00:00Z",
        "date",
        "# Release of the database migration\n\nThe database migration ships on 20 March.",
    );
    write(
        "date/retro.md",
        "2026-04-01T10:00:00Z",
        "date",
        "# Retro on the database migration\n\nThe retro on the database migration is on 2 April.",
    );
    // Notes each about its own person or project: a newer one that names
    // another is not its newer version.
    write(
        "people/alice.md",
        "2026-03-01T10:00:00Z",
        "people",
        "# Alice Chen

Alice Chen is the staff engineer who leads the storage team.",
    );
    write(
        "people/hannah.md",
        "2026-09-01T10:00:00Z",
        "people",
        "# Hannah Ortiz

Hannah is VP of Engineering and Alice's manager.",
    );
    write(
        "project/atlas.md",
        "2026-01-15T10:00:00Z",
        "project",
        "# Atlas

Atlas is the event pipeline; v2 launches on 1 December.",
    );
    write(
        "project/atlas-sync.md",
        "2026-11-09T10:00:00Z",
        "project",
        "# Atlas weekly sync

Discussed Atlas dashboards and on-call for the pipeline.",
    );
    let index = embedded_index(dir.path());
    let first = |q: &str| -> String {
        let hits = index.search(q, 5).expect("search");
        assert!(
            hits.windows(2).all(|w| w[0].score >= w[1].score),
            "{hits:?}"
        );
        hits[0].path.to_string()
    };
    assert_eq!(first("who is Alice?"), "people/alice.md");
    assert_eq!(first("what is Atlas?"), "project/atlas.md");
    assert_eq!(
        first("which database did we decide on?"),
        "decisions/postgres.md"
    );
    assert_eq!(first("what database do we use?"), "decisions/postgres.md");
    // A question that holds the older one's whole title names it, unless
    // it asks what holds now.
    assert_eq!(
        first("what did we write about the SQLite database?"),
        "decisions/sqlite.md"
    );
    assert_eq!(
        first("is the SQLite database what we use now?"),
        "decisions/postgres.md"
    );
    // Asked about a time, the memories of that time.
    assert_eq!(
        first("which database did we decide on in February 2026?"),
        "decisions/sqlite.md"
    );
    // A newer decision on another subject stays where its words put it.
    assert_eq!(
        first("what did we decide about hosting?"),
        "decisions/hosting.md"
    );
    assert_eq!(
        first("what frontend framework did we pick?"),
        "decisions/frontend.md"
    );
    // By words alone, the question's best match first, as before.
    let words = index
        .search("mode:words which database did we decide on?", 5)
        .expect("search");
    assert_eq!(
        words[0].path.to_string(),
        "decisions/sqlite.md",
        "{words:?}"
    );
    assert_eq!(
        first("when does the database migration ship?"),
        "date/release.md"
    );
    index.shutdown();
}

/// A newer memory that tells of a change ("moved to", "dropped") goes
/// above the one it replaces though it names nothing of its title, and
/// leaves a memory on another subject be.
#[test]
fn a_change_of_tool_goes_above_the_setup_it_replaces() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (rel, created, body) in [
        (
            "preferences/editor.md",
            "2026-02-01T10:00:00Z",
            "# Editor setup\n\nUses VS Code with Vim keybindings for all projects.",
        ),
        (
            "preferences/theme.md",
            "2026-03-01T10:00:00Z",
            "# Theme\n\nPrefers dark mode in VS Code.",
        ),
        (
            "preferences/neovim.md",
            "2026-10-01T10:00:00Z",
            "# Neovim\n\nMoved to Neovim this month and dropped VS Code entirely.",
        ),
    ] {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, format!("---\ncreated_at: {created}\n---\n{body}\n")).expect("write");
    }
    let index = embedded_index(dir.path());
    let first = |q: &str| index.search(q, 5).expect("search")[0].path.to_string();
    assert_eq!(first("what editor do I code in?"), "preferences/neovim.md");
    assert_eq!(first("does the user use VS Code?"), "preferences/neovim.md");
    assert_eq!(
        first("which theme does the user like?"),
        "preferences/theme.md"
    );
    assert_eq!(first("dark or light mode?"), "preferences/theme.md");
    index.shutdown();
}

/// Whatever the limit, the first hits are the same: a newer memory that
/// goes above an older one does so at every limit.
#[test]
fn the_first_hits_do_not_depend_on_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (rel, created, body) in [
        (
            "people/lily.md",
            "2026-09-02T10:00:00Z",
            "# Lily\n\nLily is the user's daughter, 9 years old. Plays piano, lessons with Mrs. Okafor on Tuesdays after school. Loves dragons.",
        ),
        (
            "people/lily-piano.md",
            "2026-11-04T10:00:00Z",
            "Lily's piano lessons moved from Tuesdays to Thursdays starting November because Mrs. Okafor's schedule changed.",
        ),
        (
            "decisions/atlas-database.md",
            "2026-09-03T10:00:00Z",
            "# Atlas database\n\nDecided: Atlas stores its data in SQLite for now.",
        ),
        (
            "decisions/atlas-postgres.md",
            "2026-10-23T10:00:00Z",
            "Decision: Atlas moves from SQLite to Postgres, because the new sync service writes concurrently and we hit database-is-locked errors.",
        ),
        (
            "decisions/atlas-ci.md",
            "2026-11-16T10:00:00Z",
            "Decision: Atlas CI moves from Jenkins to GitHub Actions. Jenkins gets shut down by the end of January.",
        ),
    ] {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, format!("---\ncreated_at: {created}\n---\n{body}\n")).expect("write");
    }
    let index = embedded_index(dir.path());
    let paths = |q: &str, limit: usize| -> Vec<String> {
        let hits = index.search(q, limit).expect("search");
        hits.iter().map(|h| h.path.to_string()).collect()
    };
    for q in [
        "how old is Lily?",
        "what did we decide about the database?",
        "which database does Atlas use?",
    ] {
        let ten = paths(q, 10);
        for limit in [1, 2, 3] {
            let prefix = &ten[..limit.min(ten.len())];
            assert_eq!(paths(q, limit), prefix, "{q} at limit {limit}");
        }
    }
    index.shutdown();
}

/// A question that names the older of two memories on one subject asks
/// about it: the newer one stays below.
#[test]
fn a_question_that_names_the_older_memory_keeps_it_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |rel: &str, created: &str, body: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            path,
            format!("---\ncreated_at: {created}\ncategory: project\n---\n{body}\n"),
        )
        .expect("write");
    };
    write(
        "project/sprint-14-retro.md",
        "2026-11-01T16:00:00Z",
        "# Sprint 14 retro\n\nSprint 14 retro: the team agreed to pair on every code review and to stop merging on Fridays.",
    );
    write(
        "project/sprint-15-retro.md",
        "2026-11-15T16:00:00Z",
        "# Sprint 15 retro\n\nSprint 15 retro: the team agreed to cap work in progress at two tickets per person.",
    );
    let index = embedded_index(dir.path());
    let first = |q: &str| index.search(q, 5).expect("search")[0].path.to_string();
    for question in [
        "what did we agree in the sprint 14 retro?",
        "sprint 14 retro",
    ] {
        assert_eq!(first(question), "project/sprint-14-retro.md", "{question}");
    }
    assert_eq!(
        first("what did we agree in the sprint 15 retro?"),
        "project/sprint-15-retro.md"
    );
    index.shutdown();
}

/// What an agent has just written it can ask about at once in other
/// words: the search embeds the few memories still waiting for their
/// vectors instead of ranking them by their words alone. None of these
/// questions shares a word with its answer but "user".
#[test]
fn a_memory_just_written_is_found_by_its_meaning_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("format.md"),
        "The user wants code formatted with black.\n",
    )
    .expect("write");
    let index = embedded_index(dir.path());
    // A busy machine (an agent's build, say): the embedding worker, at
    // background priority, falls behind.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy: Vec<_> = (0..4)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    for (rel, text, question) in [
        (
            "pet.md",
            "Has a golden retriever named Biscuit.",
            "what kind of dog does the user own?",
        ),
        (
            "car.md",
            "Drives a 2019 Subaru Outback, dark green.",
            "what vehicle does the user have?",
        ),
        (
            "job.md",
            "Works as a nurse on night shifts at the county hospital.",
            "what is the user's occupation?",
        ),
    ] {
        std::fs::write(dir.path().join(rel), format!("{text}\n")).expect("write");
        index.notify_path(&StorePath::new(rel).expect("path"));
        // Searchable by its words: the vectors need not be there yet.
        assert!(index.wait_committed(WAIT));
        let hits = index.search(question, 5).expect("search");
        assert_eq!(hits[0].path.to_string(), rel, "{question}: {hits:?}");
        assert_eq!(hits[0].matched, Side::Meaning, "{question}: {hits:?}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for thread in busy {
        thread.join().expect("busy thread");
    }
    index.shutdown();
}

/// A memory that shares only a common word with a question ("user") is
/// the words' best hit; it must not outrank the one that answers it.
#[test]
fn a_weak_word_match_does_not_outrank_the_answer_by_meaning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let notes = [
        (
            "notes/format.md",
            "The user wants code formatted with black and a line length of 100.",
        ),
        (
            "notes/drinks.md",
            "Prefers coffee over tea, black, no sugar.",
        ),
        ("notes/pets.md", "Has a golden retriever named Max."),
        (
            "notes/deploy.md",
            "The user's deployment target is Fly.io in the Amsterdam region.",
        ),
        (
            "notes/meeting.md",
            "Meeting notes: the team agreed to ship the beta on Friday.",
        ),
        (
            "notes/allergy.md",
            "Allergic to peanuts; carries an epipen.",
        ),
        ("notes/car.md", "Drives a 2019 Subaru Outback, dark green."),
        (
            "notes/languages.md",
            "Speaks Portuguese at home with family in Lisbon.",
        ),
        (
            "notes/music.md",
            "Plays the cello in a community orchestra on Thursdays.",
        ),
        (
            "notes/work.md",
            "Works as a nurse on night shifts at the county hospital.",
        ),
        (
            "notes/diet.md",
            "Vegetarian since 2015, eats fish occasionally.",
        ),
        ("notes/editor.md", "Uses Neovim with the LazyVim setup."),
    ];
    for (rel, text) in notes {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, format!("{text}\n")).expect("write");
    }
    let index = embedded_index(dir.path());
    for (question, answer) in [
        ("what does the user like to drink?", "notes/drinks.md"),
        ("what kind of dog does the user own?", "notes/pets.md"),
        (
            "what does the user prefer for formatting?",
            "notes/format.md",
        ),
        ("where does the user deploy?", "notes/deploy.md"),
        ("when will the beta ship?", "notes/meeting.md"),
        ("does the user have any allergies?", "notes/allergy.md"),
        ("what vehicle does the user have?", "notes/car.md"),
        ("which languages does the user know?", "notes/languages.md"),
        ("what instrument does the user play?", "notes/music.md"),
        ("what is the user's job?", "notes/work.md"),
        ("does the user eat meat?", "notes/diet.md"),
        ("what editor does the user prefer?", "notes/editor.md"),
    ] {
        let hits = index.search(question, 5).expect("search");
        assert_eq!(hits[0].path.to_string(), answer, "{question}: {hits:?}");
    }
    index.shutdown();
}

#[test]
fn a_model_that_is_not_there_is_one_sentence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = Embedder::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("config.json") && !e.contains('\n'), "{e}");
}

/// A config file in `dir` naming the test model, no notifications, and
/// `more`; its path.
fn config_with_model(dir: &Path, more: &str) -> std::path::PathBuf {
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "search:\n  model: {}\nnotifications: {{ method: none }}\n{more}",
            common::minilm().display()
        ),
    )
    .expect("config");
    config
}

/// Through a daemon configured with a model, as an agent's tools reach
/// it: status says how search ranks, and a question finds its paraphrase
/// by meaning, the result saying so.
#[test]
fn a_daemon_with_a_model_answers_a_question_by_meaning() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = (dir.path().join("store"), dir.path().join("state"));
    std::fs::create_dir_all(store.join("prefs")).expect("store");
    std::fs::write(
        store.join("prefs/drinks.md"),
        "# Mornings\nPrefers coffee over tea, black, no sugar.\n",
    )
    .expect("seed");
    std::fs::write(store.join("prefs/editor.md"), "# Editor\nUses vim.\n").expect("seed");
    let config = config_with_model(dir.path(), "");
    let mut daemon = Command::new(common::bin())
        .args(["serve", "--store"])
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .arg("--config")
        .arg(&config)
        .env("XDG_RUNTIME_DIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mnemofs serve");
    let cli = |args: &[&str]| {
        common::run_with_timeout(
            Command::new(common::bin())
                .args(args)
                .arg("--store")
                .arg(&store)
                .env("XDG_RUNTIME_DIR", dir.path()),
            common::COMMAND_TIMEOUT,
        )
        .expect("mnemofs timed out")
    };
    // Serving once its registry entry is there.
    let registered = common::poll_until(WAIT, || {
        std::fs::read_dir(dir.path().join("mnemofs")).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "json"))
        })
    });
    assert!(registered, "mnemofs serve did not come up");
    let mut status = String::new();
    let embedded = common::poll_until(WAIT, || {
        status = String::from_utf8_lossy(&cli(&["status", "--json"]).stdout).into_owned();
        serde_json::from_str::<serde_json::Value>(&status)
            .is_ok_and(|s| s["meaning"]["embedded"] == 2 && s["meaning"]["backlog"] == 0)
    });
    let out = cli(&["search", "what does the user like to drink?", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let human = String::from_utf8_lossy(&cli(&["status"]).stdout).into_owned();
    common::signal(daemon.id(), libc::SIGTERM);
    let _ = common::wait_timeout(&mut daemon, Duration::from_secs(30));
    assert!(embedded, "{status}");
    assert!(
        human.contains("by words and meaning (all-MiniLM-L6-v2"),
        "{human}"
    );
    common::assert_first_hit(text.as_bytes(), "prefs/drinks.md", "meaning");

    // With the daemon gone, a command run on its own ranks by meaning too,
    // with the vectors the daemon kept and the model the config names.
    let home = dir.path().join("config-home");
    std::fs::create_dir_all(home.join("mnemofs")).expect("config home");
    std::fs::copy(&config, home.join("mnemofs/config.yaml")).expect("config");
    let out = common::run_with_timeout(
        Command::new(common::bin())
            .args([
                "search",
                "what does the user like to drink?",
                "--json",
                "--store",
            ])
            .arg(&store)
            .arg("--state-dir")
            .arg(&state)
            .env("XDG_CONFIG_HOME", &home)
            .env("XDG_RUNTIME_DIR", dir.path()),
        common::COMMAND_TIMEOUT,
    )
    .expect("mnemofs timed out");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::assert_first_hit(&out.stdout, "prefs/drinks.md", "meaning");

    // A memory written with no daemon waits for one to embed it, and
    // status says so.
    let offline = |args: &[&str]| {
        common::run_with_timeout(
            Command::new(common::bin())
                .args(args)
                .arg("--store")
                .arg(&store)
                .arg("--state-dir")
                .arg(&state)
                .env("XDG_CONFIG_HOME", &home)
                .env("XDG_RUNTIME_DIR", dir.path()),
            common::COMMAND_TIMEOUT,
        )
        .expect("mnemofs timed out")
    };
    assert!(
        offline(&["write", "Works on a MacBook Pro M3."])
            .status
            .success()
    );
    let status: serde_json::Value =
        serde_json::from_slice(&offline(&["status", "--json"]).stdout).expect("status JSON");
    assert_eq!(status["meaning"]["embedded"], 2, "{status}");
    assert_eq!(status["meaning"]["backlog"], 1, "{status}");
}

/// The vectors are kept in the state dir when the index shuts down, and
/// taken in at the next start for every memory unchanged since: only what
/// changed meanwhile is embedded again.
#[test]
fn vectors_are_kept_between_runs_for_the_memories_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, state) = (dir.path().join("store"), dir.path().join("state"));
    std::fs::create_dir_all(&root).expect("store");
    std::fs::write(root.join("a.md"), "# A\nPrefers coffee over tea.\n").expect("a");
    std::fs::write(root.join("b.md"), "# B\nFlew to Lisbon in May.\n").expect("b");
    let kept = state.join("vectors.bin");
    // The index on the state dir, taken in, with semantic search on.
    let open = || {
        let store = Arc::new(Store::open(&root).expect("store"));
        let index = Index::open(&state, store).expect("index");
        assert!(index.wait_idle(WAIT));
        let model = Embedder::load(&common::minilm()).expect("model");
        index
            .enable_semantic(model, Some(kept.clone()))
            .expect("semantic on");
        index
    };
    let index = open();
    assert!(index.wait_embedded(WAIT));
    // Saved once the backlog is done, before any stop: a process killed
    // now would not embed them again.
    assert!(
        common::poll_until(WAIT, || kept.is_file()),
        "the vectors were not saved when the backlog was done"
    );
    index.shutdown();
    drop(index);
    assert!(kept.is_file(), "no vectors kept");

    // b changes while nothing runs; a does not.
    std::fs::write(root.join("b.md"), "# B\nFlew to Lisbon in June, twice.\n").expect("b");
    let index = open();
    // Taken in at once: a's vectors, not b's stale ones.
    assert_eq!(index.status().embedded, 1);
    assert!(index.wait_embedded(WAIT));
    assert_eq!(index.status().embedded, 2);
    let hits = index
        .search("what does the user like to drink?", 1)
        .expect("search");
    assert_eq!(hits[0].path.to_string(), "a.md");
    index.shutdown();
    // A damaged file is nothing to load, never an error.
    std::fs::write(&kept, b"MNVEC02\n\xff\xff").expect("damage");
    let index = open();
    assert!(index.wait_embedded(WAIT));
    assert_eq!(index.status().embedded, 2);
    index.shutdown();
}

/// A `dream` run on its own, on a store no daemon ever served (so with no
/// vectors kept), files a note by meaning as a daemon would, with the
/// model its config names.
#[test]
fn a_dream_without_a_daemon_files_by_meaning_with_the_configured_model() {
    use std::process::Command;
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = (dir.path().join("store"), dir.path().join("state"));
    std::fs::create_dir_all(store.join("inbox")).expect("store");
    let note = "To profile a Rust binary, run perf record -g, then perf report.\n";
    std::fs::write(store.join("inbox/p.md"), note).expect("seed");
    let config = config_with_model(dir.path(), "organizer: { quiet_period: 0s }\n");
    let out = common::run_with_timeout(
        Command::new(common::bin())
            .arg("dream")
            .arg("--store")
            .arg(&store)
            .arg("--state-dir")
            .arg(&state)
            .arg("--config")
            .arg(&config)
            .env("XDG_RUNTIME_DIR", dir.path()),
        common::COMMAND_TIMEOUT,
    )
    .expect("mnemofs timed out");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("its meaning"), "{text}");
    assert!(!store.join("inbox/p.md").exists(), "{text}");
}

/// A `.md` file the index takes for binary (a NUL byte near its start,
/// put there behind mnemofs's back) is not a memory for meaning either: no
/// hit without a title or an id.
#[test]
fn a_binary_markdown_file_is_no_hit_by_meaning() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("nul.md"), "zebrafish tank a\0b\n").expect("write");
    std::fs::write(dir.path().join("ok.md"), "zebrafish tank ok\n").expect("write");
    let index = embedded_index(dir.path());
    let hits = index.search("zebrafish aquarium", 10).expect("search");
    let paths: Vec<String> = hits.iter().map(|h| h.path.to_string()).collect();
    assert_eq!(paths, ["ok.md"], "{hits:?}");
}

/// A command run without a daemon embeds a few short memories that have
/// no vectors yet (its own `write` on a new store, say) when it searches,
/// so an agent of the command line finds what it just wrote by other
/// words.
#[test]
fn a_command_without_a_daemon_finds_its_own_fresh_write_by_meaning() {
    use std::process::Command;
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = (dir.path().join("store"), dir.path().join("state"));
    std::fs::create_dir_all(store.join("prefs")).expect("store");
    // Written first, so the oldest: no daemon ever embeds this store.
    std::fs::write(
        store.join("prefs/drinks.md"),
        "# Mornings\nPrefers coffee over tea, black, no sugar.\n",
    )
    .expect("seed");
    std::fs::write(store.join("prefs/editor.md"), "# Editor\nUses vim.\n").expect("seed");
    let plants = [
        "tomatoes", "basil", "peppers", "squash", "beans", "kale", "leeks", "garlic", "onions",
    ];
    for (i, plant) in plants.iter().enumerate() {
        std::fs::write(
            store.join(format!("prefs/garden-{i}.md")),
            format!("# Garden {i}\nPlanted {plant} along the south fence this spring.\n"),
        )
        .expect("seed");
    }
    // The configuration every command reads.
    let configs = dir.path().join("config");
    std::fs::create_dir_all(configs.join("mnemofs")).expect("config dir");
    let config = config_with_model(dir.path(), "");
    std::fs::rename(config, configs.join("mnemofs/config.yaml")).expect("config");
    let cli = |args: &[&str]| {
        let out = common::run_with_timeout(
            Command::new(common::bin())
                .args(args)
                .arg("--store")
                .arg(&store)
                .arg("--state-dir")
                .arg(&state)
                .env("XDG_CONFIG_HOME", &configs)
                .env("XDG_RUNTIME_DIR", dir.path()),
            common::COMMAND_TIMEOUT,
        )
        .expect("mnemofs timed out");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    cli(&[
        "write",
        "The user's dog is a golden retriever named Biscuit.",
        "--path",
        "people/dog.md",
    ]);
    // No word in common with the memory, and more memories without
    // vectors than a search embeds: it takes the newest.
    let first_hit = |question: &str| -> serde_json::Value {
        let found = cli(&["search", question, "--json"]);
        serde_json::from_str(found.lines().next().expect("a hit")).expect("json")
    };
    let first = first_hit("which animal lives with me?");
    assert_eq!(first["path"], "people/dog.md", "{first}");
    assert_eq!(first["matched"], "meaning", "{first}");
    // What it embedded is kept, and the next search takes the rest.
    assert!(state.join("vectors.bin").is_file());
    let first = first_hit("what does the user like to drink?");
    assert_eq!(first["path"], "prefs/drinks.md", "{first}");
    assert_eq!(first["matched"], "meaning", "{first}");
    let status = cli(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&status).expect("status json");
    assert_eq!(status["meaning"]["embedded"], 12, "{status}");
    assert_eq!(status["meaning"]["backlog"], 0, "{status}");
}

#[test]
fn while_memories_are_embedded_status_counts_every_one_as_embedded_or_waiting() {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..48 {
        let text = format!(
            "# Note {i}\nOn day {i} the team talked about release {i}, the build, and the weather.\n"
        );
        std::fs::write(dir.path().join(format!("note-{i}.md")), text).expect("write");
    }
    let store = Arc::new(Store::open(dir.path()).expect("store"));
    let index = Index::in_memory(store).expect("index");
    assert!(index.wait_idle(WAIT));
    index
        .enable_semantic(Embedder::load(&common::minilm()).expect("model"), None)
        .expect("semantic on");
    // From the moment the model is on, each memory is either embedded or
    // waiting: the batch being embedded is still waiting.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let status = index.status();
        assert!(
            status.embedded + status.embed_backlog >= 48,
            "a memory is neither embedded nor waiting: {status:?}"
        );
        if status.embedded >= 48 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{status:?}");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(index.wait_embedded(WAIT));
    assert_eq!(index.status().embed_backlog, 0);
}

/// The notes of `tests/data/agent-store` at `paths`, in a store of their
/// own, indexed and embedded.
fn agent_store_index(dir: &Path, paths: &[&str]) -> Index {
    let notes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/agent-store/notes");
    for rel in paths {
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(notes.join(rel), to).expect("copy a note of the agent store");
    }
    embedded_index(dir)
}

/// The decisions of one project are all alike: the newest of them, which
/// a question about another one finds far below it, does not go above it
/// as its newer version. A newer version found close below still does.
#[test]
fn a_newer_memory_found_far_below_does_not_go_above_the_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let index = agent_store_index(
        dir.path(),
        &[
            "decisions/queue-nats.md",
            "decisions/analytics-clickhouse.md",
            "decisions/ci-buildkite.md",
            "decisions/event-store-mongodb.md",
            "decisions/event-store-postgres.md",
            "decisions/stop-mongodb-docs-service.md",
            "knowledge/oncall-runbook.md",
            "knowledge/retro-q3.md",
            "knowledge/mongodb-notes.md",
            "feedback/stop-suggesting-mongodb.md",
            "project/ledger-sync.md",
            "project/ledger-sync-design-doc.md",
            "people/tomas-berg.md",
            "habits/weekly-review.md",
            "habits/japanese-practice.md",
            "feedback/perf-review-h1.md",
            "feedback/weekly-plan-format.md",
            "feedback/code-review-tone.md",
        ],
    );
    let first = |q: &str| index.search(q, 10).expect("search")[0].path.to_string();
    assert_eq!(
        first("which queue did we choose for ledger-sync instead of Kafka?"),
        "decisions/queue-nats.md"
    );
    assert_eq!(first("weekly review"), "habits/weekly-review.md");
    assert_eq!(
        first("which database is the ledger-sync event store on now?"),
        "decisions/event-store-postgres.md"
    );
    index.shutdown();
}

/// A question that names a month and a topic asks about the topic in that
/// month: the topic's note, written the month before, comes before the
/// month's notes on other things.
#[test]
fn a_topic_named_with_a_month_comes_before_that_months_other_notes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let index = agent_store_index(
        dir.path(),
        &[
            "project/book-club-2026.md",
            "skills/japanese.md",
            "reminders/meera-recital.md",
            "reminders/oncall-week.md",
            "reminders/arjun-birthday.md",
            "date/2026-11-10.md",
            "date/2026-11-26.md",
            "feedback/good-brief.md",
            "project/ledger-sync-cutover-log.md",
            "preferences/gifts.md",
            "inbox/swim-class-change.md",
            "inbox/call-plumber.md",
        ],
    );
    let hits = index
        .search("what is the book club reading in November 2026?", 5)
        .expect("search");
    assert_eq!(
        hits[0].path.to_string(),
        "project/book-club-2026.md",
        "{hits:?}"
    );
    // Asked of the month alone, its notes come first, the latest first.
    let hits = index
        .search("what happened in November 2026?", 3)
        .expect("search");
    assert!(
        hits.iter()
            .all(|h| h.path.to_string() != "project/book-club-2026.md"),
        "{hits:?}"
    );
    index.shutdown();
}

/// Asked who holds a role now, of two people whose notes' titles both
/// name it, the newer comes first; asked of one of them, that one.
#[test]
fn asked_who_holds_a_role_now_the_newer_holder_comes_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let index = agent_store_index(
        dir.path(),
        &[
            "people/marcus-oyelaran.md",
            "people/elena-vasquez.md",
            "people/tomas-berg.md",
            "people/hana-sato.md",
            "knowledge/job-title.md",
            "project/one-on-one-elena-2026-09.md",
        ],
    );
    let first = |q: &str| index.search(q, 10).expect("search")[0].path.to_string();
    assert_eq!(
        first("who is Priya's manager now?"),
        "people/elena-vasquez.md"
    );
    assert_eq!(first("who is Marcus?"), "people/marcus-oyelaran.md");
    assert_eq!(first("who is Tomas now?"), "people/tomas-berg.md");
    index.shutdown();
}

/// A misspelt word of a question is searched as the word the memories
/// hold, by words and by meaning, and the search says so; a word the
/// model knows, one some memory holds, a short word, one with digits or
/// one no word is near are left as they are; and a search some memories
/// are hidden from respells nothing.
#[test]
fn a_misspelt_word_is_searched_as_the_word_the_memories_hold() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::seed_files(
        dir.path(),
        &[
            (
                "project/sourdough.md",
                b"# Weekend sourdough schedule\n\nFeed the starter on Friday night, bake on Sunday morning.\n",
            ),
            (
                "reminders/dentist.md",
                b"# Dentist appointment\n\nCleaning on December 4 at 9:00.\n",
            ),
            (
                "knowledge/db.md",
                b"# Database\n\nThe ledger runs on postgres 16; the k8s_nodes pool has three nodes.\n",
            ),
            (
                "knowledge/art.md",
                b"# The statue\n\nA bronze statue stands in the square.\n",
            ),
        ],
    );
    let index = embedded_index(dir.path());
    let noting = |q: &str, hidden: &[String]| {
        let (hits, warnings) = index.search_noting(q, 10, hidden).expect("search");
        let paths: Vec<String> = hits.iter().map(|h| h.path.to_string()).collect();
        (paths, warnings)
    };
    // A letter dropped, two swapped, one added.
    let (hits, warnings) = noting("sourdogh schedule", &[]);
    assert_eq!(hits[0], "project/sourdough.md");
    assert_eq!(
        warnings,
        ["no memory holds \"sourdogh\": searched for \"sourdough\" instead"]
    );
    let (hits, warnings) = noting("when is the dentist apointment?", &[]);
    assert_eq!(hits[0], "reminders/dentist.md");
    assert!(
        warnings[0].contains("searched for \"appointment\" instead"),
        "{warnings:?}"
    );
    let (hits, warnings) = noting("which postgers version", &[]);
    assert_eq!(hits[0], "knowledge/db.md", "{warnings:?}");
    // "status" is a word the model knows, not a misspelt "statue"; the
    // others are held, short, with digits, or near no word.
    for q in [
        "what is the status?",
        "sourdough",
        "postgres",
        "bakes",
        "k8s_node",
        "xyzzyqq",
    ] {
        let (_, warnings) = noting(q, &[]);
        assert!(
            !warnings.iter().any(|w| w.contains("instead")),
            "{q}: {warnings:?}"
        );
    }
    // A search some memories are hidden from says nothing of their words.
    let (_, warnings) = noting("sourdogh schedule", &["work".to_owned()]);
    assert!(warnings.is_empty(), "{warnings:?}");
    index.shutdown();
}
