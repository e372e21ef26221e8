//! Every change to the store goes through a [`Writer`].
//!
//! There are two, and which one is used depends only on whether a daemon
//! serves the store:
//! - through the mount (`fs::MountWriter`), so inotify watchers on the
//!   mount (editors, `inotifywait -m -r`) see every change, and the
//!   mount's own bookkeeping (open writers, redirects of moved inbox
//!   items) stays right;
//! - straight on the store ([`DirectWriter`]), when no daemon runs and the
//!   caller holds the store lock: sandboxed like every store access, and
//!   atomic (temp file, fsync, rename).
//!
//! Both make background rewrites compare-and-swap against the exact bytes
//! read ([`Writer::replace`]), and both never overwrite on a move.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::index::Index;
use crate::store::history::{History, Keep, Why};
use crate::store::{Store, StorePath};

/// What happened to a change that may have to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done.
    Done,
    /// The file changed since it was read, or is open for writing: retry later.
    Busy,
}

/// Something background tasks want to hear about from a writer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteEvent {
    /// The last handle open for writing on this file was closed.
    Closed(StorePath),
}

/// Makes changes to the store.
pub trait Writer: Send + Sync + std::fmt::Debug {
    /// Replaces the file's content with `new` if it still holds `expected`
    /// and nobody has it open for writing.
    fn replace(&self, path: &StorePath, expected: &[u8], new: &[u8]) -> io::Result<Outcome>;

    /// Writes a whole file, replacing whatever it held, atomically; makes
    /// missing folders above it.
    fn write(&self, path: &StorePath, content: &[u8]) -> io::Result<()>;

    /// Creates a new file atomically; fails with `EEXIST` if the name is
    /// taken. Makes missing folders above it.
    fn create(&self, path: &StorePath, content: &[u8]) -> io::Result<()>;

    /// Creates many new files, as [`create`](Writer::create) does each;
    /// one result per file, in order. By default a few threads create
    /// them, so their fsyncs overlap; a writer that can make a batch
    /// durable at once (rather than file by file) does that instead.
    fn create_many(&self, files: &[(StorePath, &[u8])]) -> Vec<io::Result<()>> {
        const WORKERS: usize = 4;
        let workers = WORKERS.min(files.len().div_ceil(16)).max(1);
        let work = |w: usize| -> Vec<(usize, io::Result<()>)> {
            files
                .iter()
                .enumerate()
                .skip(w)
                .step_by(workers)
                .map(|(i, (path, content))| (i, self.create(path, content)))
                .collect()
        };
        let mut done: Vec<(usize, io::Result<()>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (1..workers).map(|w| scope.spawn(move || work(w))).collect();
            let mut all = work(0);
            for handle in handles {
                // A thread that panicked leaves its files failed below.
                if let Ok(part) = handle.join() {
                    all.extend(part);
                }
            }
            all
        });
        done.sort_by_key(|(i, _)| *i);
        let mut done = done.into_iter().peekable();
        (0..files.len())
            .map(|i| match done.peek() {
                Some((j, _)) if *j == i => done.next().map_or(Ok(()), |(_, r)| r),
                _ => Err(io::Error::other("a writer thread failed")),
            })
            .collect()
    }

    /// Moves `from` to `to`, making `to`'s folder, never replacing
    /// anything. `Busy` if `from` is open for writing.
    fn move_to(&self, from: &StorePath, to: &StorePath) -> io::Result<Outcome>;

    /// Removes a file (or symlink).
    fn remove_file(&self, path: &StorePath) -> io::Result<()>;

    /// Removes an empty folder.
    fn remove_folder(&self, path: &StorePath) -> io::Result<()>;

    /// True while something may be writing the file.
    fn is_busy(&self, path: &StorePath) -> bool;

    /// Keeps `old` resolving to `new` for `grace` after a move, where the
    /// writer serves paths (the mount); elsewhere nothing to do.
    fn redirect(&self, old: &StorePath, new: &StorePath, grace: Duration) {
        let _ = (old, new, grace);
    }

    /// Says where changes go, for `status`.
    fn describe(&self) -> String;

    /// Before a request is answered: tells the index of changes made beside
    /// this writer that it may not have heard of yet (a mount's own
    /// writes), and waits until it has them. Nothing to do by default.
    fn catch_up(&self) {}
}

/// Mode of the files and folders the writers make: private, as the store.
pub const NEW_FILE_MODE: u32 = 0o600;
/// Mode of new folders.
pub const NEW_FOLDER_MODE: u32 = 0o700;

/// Writes straight on the store. Only for a caller that holds the store
/// lock (no daemon serves it), so no mount handle can be writing. With no
/// store watcher running, it tells the index what it changed itself, and
/// keeps what a delete or an overwrite takes away in the history, as the
/// mount does.
#[derive(Debug, Clone)]
pub struct DirectWriter {
    store: Arc<Store>,
    index: Option<Index>,
    history: Option<Arc<History>>,
}

impl DirectWriter {
    /// Writes into `store`.
    pub fn new(store: Arc<Store>) -> DirectWriter {
        DirectWriter {
            store,
            index: None,
            history: None,
        }
    }

    /// Keeps what deletes and overwrites take away in `history`.
    pub fn with_history(mut self, history: Arc<History>) -> DirectWriter {
        self.history = Some(history);
        self
    }

    /// Keeps the file at `path` before it loses its content; a failure is
    /// logged and the change goes ahead.
    fn keep_previous(&self, path: &StorePath, why: Why) {
        if let Some(history) = &self.history
            && let Err(e) = history.keep(&self.store, path, why, Keep::LinkOrCopy)
        {
            tracing::warn!("cannot keep the previous version of {path}: {e}");
        }
    }

    /// Tells `index` about every change.
    pub fn with_index(mut self, index: Index) -> DirectWriter {
        self.index = Some(index);
        self
    }

    fn changed(&self, paths: &[&StorePath]) {
        if let Some(index) = &self.index {
            let paths: Vec<StorePath> = paths.iter().map(|p| (*p).clone()).collect();
            index.notify_paths(&paths);
        }
    }

    fn make_parent(&self, path: &StorePath) -> io::Result<()> {
        match path.parent() {
            Some(parent) if !parent.is_root() => self.store.create_dirs(&parent, NEW_FOLDER_MODE),
            _ => Ok(()),
        }
    }
}

impl Writer for DirectWriter {
    fn replace(&self, path: &StorePath, expected: &[u8], new: &[u8]) -> io::Result<Outcome> {
        if self.store.replace_if_unchanged(path, expected, new)? {
            if let Some(history) = &self.history
                && let Err(e) = history.keep_bytes(path, expected, Why::Overwritten)
            {
                tracing::warn!("cannot keep the previous version of {path}: {e}");
            }
            self.changed(&[path]);
            Ok(Outcome::Done)
        } else {
            Ok(Outcome::Busy)
        }
    }

    fn write(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        self.make_parent(path)?;
        // A file replaced keeps its mode; anything else (a symlink: 0777)
        // is replaced by a private file.
        let mode = match self.store.stat(path) {
            Ok(st) if st.kind == crate::store::FileKind::File => {
                self.keep_previous(path, Why::Overwritten);
                st.mode & 0o7777
            }
            _ => NEW_FILE_MODE,
        };
        self.store.write_atomic(path, content, mode)?;
        self.changed(&[path]);
        Ok(())
    }

    fn create(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        self.make_parent(path)?;
        self.store.create_atomic(path, content, NEW_FILE_MODE)?;
        self.changed(&[path]);
        Ok(())
    }

    fn create_many(&self, files: &[(StorePath, &[u8])]) -> Vec<io::Result<()>> {
        let mut parents: Vec<io::Result<()>> = files
            .iter()
            .map(|(path, _)| self.make_parent(path))
            .collect();
        let ready: Vec<(StorePath, &[u8])> = files
            .iter()
            .zip(&parents)
            .filter(|(_, made)| made.is_ok())
            .map(|((path, content), _)| (path.clone(), *content))
            .collect();
        let mut created = self
            .store
            .create_many_atomic(&ready, NEW_FILE_MODE)
            .into_iter();
        let changed: Vec<&StorePath> = files
            .iter()
            .zip(parents.iter_mut())
            .filter_map(|((path, _), made)| {
                if made.is_ok() {
                    *made = created
                        .next()
                        .unwrap_or_else(|| Err(io::Error::other("not written")));
                }
                made.is_ok().then_some(path)
            })
            .collect();
        self.changed(&changed);
        parents
    }

    fn move_to(&self, from: &StorePath, to: &StorePath) -> io::Result<Outcome> {
        self.make_parent(to)?;
        self.store
            .rename(from, to, crate::store::RENAME_NOREPLACE)?;
        self.changed(&[from, to]);
        Ok(Outcome::Done)
    }

    fn remove_file(&self, path: &StorePath) -> io::Result<()> {
        self.keep_previous(path, Why::Deleted);
        self.store.unlink(path)?;
        self.changed(&[path]);
        Ok(())
    }

    fn remove_folder(&self, path: &StorePath) -> io::Result<()> {
        self.store.rmdir(path)?;
        self.changed(&[path]);
        Ok(())
    }

    fn is_busy(&self, _path: &StorePath) -> bool {
        // No mount serves the store while the lock is held.
        false
    }

    fn describe(&self) -> String {
        format!("directly on {}", self.store.root_path().display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> (tempfile::TempDir, DirectWriter) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        (dir, DirectWriter::new(store))
    }

    fn p(s: &str) -> StorePath {
        StorePath::new(s).unwrap()
    }

    fn temp_files(dir: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        for entry in walk(dir) {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with(crate::store::TEMP_PREFIX) {
                out.push(name);
            }
        }
        out
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                out.extend(walk(&path));
            }
            out.push(path);
        }
        out
    }

    #[test]
    fn replace_is_compare_and_swap_on_the_exact_bytes() {
        let (dir, w) = writer();
        w.create(&p("a/b.md"), b"one").unwrap();
        assert_eq!(
            w.replace(&p("a/b.md"), b"one", b"two").unwrap(),
            Outcome::Done
        );
        assert_eq!(std::fs::read(dir.path().join("a/b.md")).unwrap(), b"two");
        // Someone else wrote since "one" was read: nothing changes.
        assert_eq!(
            w.replace(&p("a/b.md"), b"one", b"three").unwrap(),
            Outcome::Busy
        );
        assert_eq!(std::fs::read(dir.path().join("a/b.md")).unwrap(), b"two");
        assert!(temp_files(dir.path()).is_empty());
    }

    #[test]
    fn replace_never_creates_a_path() {
        let (dir, w) = writer();
        assert_eq!(w.replace(&p("gone.md"), b"x", b"y").unwrap(), Outcome::Busy);
        assert!(!dir.path().join("gone.md").exists());
        assert!(temp_files(dir.path()).is_empty());
    }

    #[test]
    fn replace_sees_a_save_by_rename_with_the_same_bytes() {
        let (dir, w) = writer();
        w.create(&p("n.md"), b"same").unwrap();
        // An editor saves the same bytes by writing a new file and renaming it.
        std::fs::write(dir.path().join("n.tmp"), b"same").unwrap();
        std::fs::rename(dir.path().join("n.tmp"), dir.path().join("n.md")).unwrap();
        let ino = |path: &std::path::Path| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(path).unwrap().ino()
        };
        let before = ino(&dir.path().join("n.md"));
        assert_eq!(
            w.replace(&p("n.md"), b"same", b"new").unwrap(),
            Outcome::Done
        );
        assert_ne!(ino(&dir.path().join("n.md")), before);
    }

    #[test]
    fn replace_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, w) = writer();
        let path = dir.path().join("m.md");
        std::fs::write(&path, b"x").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        w.replace(&p("m.md"), b"x", b"y").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
    }

    #[test]
    fn create_and_move_never_replace() {
        let (dir, w) = writer();
        w.create(&p("a.md"), b"a").unwrap();
        w.create(&p("b.md"), b"b").unwrap();
        let e = w.create(&p("a.md"), b"again").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        let e = w.move_to(&p("a.md"), &p("b.md")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        assert_eq!(std::fs::read(dir.path().join("b.md")).unwrap(), b"b");
        assert_eq!(
            w.move_to(&p("a.md"), &p("deep/er/a.md")).unwrap(),
            Outcome::Done
        );
        assert_eq!(
            std::fs::read(dir.path().join("deep/er/a.md")).unwrap(),
            b"a"
        );
        assert!(temp_files(dir.path()).is_empty());
    }

    /// A writer with only the required methods (its `create_many` is the
    /// default one), over a direct writer.
    #[derive(Debug)]
    struct OneByOne(DirectWriter);

    impl Writer for OneByOne {
        fn replace(&self, path: &StorePath, expected: &[u8], new: &[u8]) -> io::Result<Outcome> {
            self.0.replace(path, expected, new)
        }
        fn write(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
            self.0.write(path, content)
        }
        fn create(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
            self.0.create(path, content)
        }
        fn move_to(&self, from: &StorePath, to: &StorePath) -> io::Result<Outcome> {
            self.0.move_to(from, to)
        }
        fn remove_file(&self, path: &StorePath) -> io::Result<()> {
            self.0.remove_file(path)
        }
        fn remove_folder(&self, path: &StorePath) -> io::Result<()> {
            self.0.remove_folder(path)
        }
        fn is_busy(&self, path: &StorePath) -> bool {
            self.0.is_busy(path)
        }
        fn describe(&self) -> String {
            self.0.describe()
        }
    }

    #[test]
    fn create_many_answers_each_file_in_order_by_default_and_directly() {
        let (dir, direct) = writer();
        let names: Vec<String> = (0..100).map(|i| format!("d{}/n{i}.md", i % 7)).collect();
        std::fs::create_dir_all(dir.path().join("d3")).unwrap();
        std::fs::write(dir.path().join("d3/n3.md"), b"taken").unwrap();
        let one_by_one = OneByOne(direct);
        for (round, w) in [(0, &one_by_one as &dyn Writer), (1, &one_by_one.0)] {
            let files: Vec<(StorePath, Vec<u8>)> = names
                .iter()
                .map(|n| (p(&format!("r{round}/{n}")), n.clone().into_bytes()))
                .chain([(p("d3/n3.md"), b"again".to_vec())])
                .collect();
            let borrowed: Vec<(StorePath, &[u8])> = files
                .iter()
                .map(|(p, c)| (p.clone(), c.as_slice()))
                .collect();
            let results = w.create_many(&borrowed);
            assert_eq!(results.len(), files.len());
            for ((path, content), result) in files.iter().zip(&results).take(names.len()) {
                assert!(result.is_ok(), "{path}: {result:?}");
                assert_eq!(
                    &std::fs::read(dir.path().join(path.as_path())).unwrap(),
                    content
                );
            }
            let taken = results.last().unwrap().as_ref().unwrap_err();
            assert_eq!(taken.raw_os_error(), Some(libc::EEXIST));
            assert!(temp_files(dir.path()).is_empty());
        }
        assert_eq!(
            std::fs::read(dir.path().join("d3/n3.md")).unwrap(),
            b"taken"
        );
    }

    #[test]
    fn writes_stay_inside_the_store() {
        let (dir, w) = writer();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        assert!(w.write(&p("out/x.md"), b"x").is_err());
        assert!(w.create(&p("out/y.md"), b"y").is_err());
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    }
}
