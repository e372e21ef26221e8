//! Which reads are recall and which are a walk of the tree.
//!
//! `access_count` should rise when an agent reads a memory, not when
//! `grep -r`, tar, rsync, git or `find -exec cat` pass over it; decay and
//! upgrade act on it. The rule (SEMANTICS.md, "Extended attributes"):
//!
//! > An open for reading is part of a walk when the process that opens the
//! > file, its parent or its grandparent opened the file's folder for
//! > listing less than two seconds before; each such open restarts those
//! > two seconds for that lister and folder. It is also part of a walk
//! > when the same thread has opened eight other files of that folder,
//! > each less than two seconds after the one before.
//!
//! A walker lists a folder and then opens what it found, at once; the
//! parent covers `find -exec cat` (find lists, each cat it starts opens
//! one file), the grandparent `find -exec sh -c 'cat ...'`. A memory opened
//! by path, through `by-id/` or a search result (whose folder is a view,
//! never the file's real folder) counts, and so does a `cat` after an `ls`
//! in a shell (siblings, not ancestors).
//!
//! The second clause is a backstop for walkers whose list of files was
//! made elsewhere or long before (`find | xargs cat`, a large rsync or a
//! backup that scans first and reads later): the first eight files count,
//! the rest do not. It goes by thread, which the request names for free;
//! the walkers it is for read one file after another on one thread.
//!
//! The kernel names the calling *thread* in each request, so listers are
//! compared by thread group (process), read from `/proc/<tid>/status` (on
//! macOS, where macFUSE names the process, from `proc_pidinfo`). That
//! costs a few microseconds, so it is done only for an open in a folder
//! listed within the window, never on opendir; a lister that has exited by
//! then counts as the process of its own id (true of a single-threaded
//! one).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long after a listing (or the walk's last open) an open in that
/// folder by the lister's family is taken as part of the walk.
pub(crate) const WALK_WINDOW: Duration = Duration::from_secs(2);

/// An open by a thread that has opened this many other files of the same
/// folder, each within [`WALK_WINDOW`] of the one before, is part of a walk.
pub(crate) const WALK_FILES: usize = 8;

/// Folders beyond this many recently listed (or read) are pruned of stale
/// entries.
const PRUNE_AT: usize = 1024;

/// The files of one folder one thread opened in a row.
#[derive(Debug)]
struct Streak {
    /// Distinct files, at most one more than [`WALK_FILES`].
    files: Vec<u64>,
    /// The latest open.
    at: Instant,
}

/// Who listed a folder, and when.
#[derive(Debug, Clone, Copy)]
struct Listing {
    /// The requesting thread.
    tid: u32,
    /// Its process, once looked up.
    tgid: Option<u32>,
    /// The listing, or the walk's latest open since.
    at: Instant,
}

/// Recent listings of real folders, by folder inode.
#[derive(Debug, Default)]
pub(crate) struct Walkers {
    listed: Mutex<HashMap<u64, Vec<Listing>>>,
    /// Opens in a row, by folder and thread.
    streaks: Mutex<HashMap<(u64, u32), Streak>>,
    /// Families read from `/proc` lately, by thread: a walk opens many
    /// files in a row, and reading two status files for each open cost
    /// more than the open itself.
    families: Mutex<HashMap<u32, (Vec<u32>, Instant)>>,
}

impl Walkers {
    /// Thread `tid` opened folder `dir` for listing.
    pub(crate) fn listed(&self, dir: u64, tid: u32) {
        let now = Instant::now();
        let mut listed = self.listed.lock();
        if listed.len() >= PRUNE_AT {
            listed.retain(|_, v| {
                v.retain(|l| now.duration_since(l.at) < WALK_WINDOW);
                !v.is_empty()
            });
        }
        let listings = listed.entry(dir).or_default();
        listings.retain(|l| l.tid != tid && now.duration_since(l.at) < WALK_WINDOW);
        listings.push(Listing {
            tid,
            tgid: None,
            at: now,
        });
    }

    /// Whether thread `tid` opening `file` in folder `dir` is walking it.
    pub(crate) fn is_walk(&self, dir: u64, file: u64, tid: u32) -> bool {
        // Both are asked, so a walk's streak is known when its listing
        // goes stale.
        let streak = self.in_streak(dir, file, tid);
        self.after_listing(dir, tid) || streak
    }

    /// Whether thread `tid` has opened [`WALK_FILES`] other files of `dir`
    /// in a row before `file`.
    fn in_streak(&self, dir: u64, file: u64, tid: u32) -> bool {
        let now = Instant::now();
        let mut streaks = self.streaks.lock();
        if streaks.len() >= PRUNE_AT {
            streaks.retain(|_, s| now.duration_since(s.at) < WALK_WINDOW);
        }
        let streak = streaks.entry((dir, tid)).or_insert_with(|| Streak {
            files: Vec::new(),
            at: now,
        });
        if now.duration_since(streak.at) >= WALK_WINDOW {
            streak.files.clear();
        }
        streak.at = now;
        if !streak.files.contains(&file) && streak.files.len() <= WALK_FILES {
            streak.files.push(file);
        }
        streak.files.len() > WALK_FILES
    }

    /// Whether thread `tid`'s process, its parent or its grandparent listed
    /// `dir` within the window.
    fn after_listing(&self, dir: u64, tid: u32) -> bool {
        let now = Instant::now();
        let unresolved: Vec<u32> = {
            let listed = self.listed.lock();
            let Some(listings) = listed.get(&dir) else {
                return false;
            };
            let recent: Vec<&Listing> = listings
                .iter()
                .filter(|l| now.duration_since(l.at) < WALK_WINDOW)
                .collect();
            if recent.is_empty() {
                return false;
            }
            recent
                .iter()
                .filter(|l| l.tgid.is_none())
                .map(|l| l.tid)
                .collect()
        };
        // /proc is read without the lock held.
        let resolved: Vec<(u32, u32)> = unresolved
            .into_iter()
            .map(|t| (t, process_of(t).map_or(t, |p| p.tgid)))
            .collect();
        let family = self.family(tid, now);
        let mut listed = self.listed.lock();
        let Some(listings) = listed.get_mut(&dir) else {
            return false;
        };
        let mut walk = false;
        for listing in listings.iter_mut() {
            if listing.tgid.is_none() {
                listing.tgid = resolved
                    .iter()
                    .find(|(t, _)| *t == listing.tid)
                    .map(|(_, g)| *g);
            }
            let lister = listing.tgid.unwrap_or(listing.tid);
            if now.duration_since(listing.at) < WALK_WINDOW && family.contains(&lister) {
                listing.at = now;
                walk = true;
            }
        }
        walk
    }

    /// [`family_of`] `tid`, as read at most [`WALK_WINDOW`] ago. A thread
    /// id reused that soon by an unrelated process could be taken for the
    /// old one's family; ids are handed out in turn up to `pid_max`, so
    /// that takes more than `pid_max` new threads within the window.
    fn family(&self, tid: u32, now: Instant) -> Vec<u32> {
        let mut families = self.families.lock();
        if let Some((family, at)) = families.get(&tid)
            && now.duration_since(*at) < WALK_WINDOW
        {
            return family.clone();
        }
        if families.len() >= PRUNE_AT {
            families.retain(|_, (_, at)| now.duration_since(*at) < WALK_WINDOW);
        }
        drop(families);
        let family = family_of(tid);
        self.families.lock().insert(tid, (family.clone(), now));
        family
    }
}

/// A process as `/proc/<tid>/status` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Process {
    tgid: u32,
    ppid: u32,
}

#[cfg(target_os = "linux")]
fn process_of(tid: u32) -> Option<Process> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let field = |name: &str| -> Option<u32> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .parse()
            .ok()
    };
    Some(Process {
        tgid: field("Tgid:")?,
        ppid: field("PPid:")?,
    })
}

/// A process and its parent from `proc_pidinfo`: macOS has no `/proc`,
/// and macFUSE names the calling process, not the thread, so the id is
/// the process's own.
#[cfg(target_os = "macos")]
fn process_of(pid: u32) -> Option<Process> {
    // SAFETY: proc_bsdinfo is plain data; zeroed is a valid initial value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: a buffer of `size` bytes for the PROC_PIDTBSDINFO flavour.
    let n = unsafe {
        libc::proc_pidinfo(
            libc::c_int::try_from(pid).ok()?,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    (n == size).then_some(Process {
        tgid: pid,
        ppid: info.pbi_ppid,
    })
}

/// The process of thread `tid`, its parent and its grandparent (as far
/// as they are known; init and the kernel's threads are left out).
fn family_of(tid: u32) -> Vec<u32> {
    let mut family = Vec::with_capacity(3);
    let Some(me) = process_of(tid) else {
        family.push(tid);
        return family;
    };
    family.push(me.tgid);
    if me.ppid > 1 {
        family.push(me.ppid);
        if let Some(parent) = process_of(me.ppid)
            && parent.ppid > 1
        {
            family.push(parent.ppid);
        }
    }
    family
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    fn this_thread() -> u32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() as u32 }
    }

    /// macFUSE names processes: the process stands for the thread.
    #[cfg(target_os = "macos")]
    fn this_thread() -> u32 {
        std::process::id()
    }

    #[test]
    fn a_thread_opening_many_files_of_a_folder_in_a_row_is_walking() {
        let w = Walkers::default();
        let me = this_thread();
        for file in 0..WALK_FILES as u64 {
            assert!(!w.is_walk(7, file, me), "file {file} of a short run");
            // Opening one again does not lengthen the run.
            assert!(!w.is_walk(7, file, me));
        }
        assert!(w.is_walk(7, 1000, me), "one more is a walk");
        assert!(w.is_walk(7, 0, me), "and so is the rest of it");
        assert!(!w.is_walk(8, 0, me), "another folder");
        assert!(!w.is_walk(7, 0, me + 1), "another thread");
    }

    #[test]
    fn a_listing_by_the_same_process_makes_a_walk() {
        let w = Walkers::default();
        assert!(!w.is_walk(7, 100, this_thread()), "nothing listed yet");
        w.listed(7, this_thread());
        assert!(w.is_walk(7, 100, this_thread()));
        assert!(!w.is_walk(8, 100, this_thread()), "another folder");
    }

    #[test]
    fn another_thread_of_the_process_is_the_same_walker() {
        let w = Walkers::default();
        let lister = std::thread::spawn(this_thread).join().unwrap();
        // The lister has exited: it counts as the process of its own id,
        // which is not ours.
        w.listed(7, lister);
        assert!(!w.is_walk(7, 100, this_thread()));
        let w = Walkers::default();
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(this_thread()).unwrap();
            done_rx.recv().unwrap();
        });
        w.listed(7, rx.recv().unwrap());
        assert!(w.is_walk(7, 100, this_thread()), "a live thread of ours");
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn a_child_of_the_lister_is_walking_but_a_sibling_is_not() {
        let w = Walkers::default();
        w.listed(7, std::process::id());
        let family = |pid: u32| family_of(pid);
        // A child process of ours (sleep) has us as its parent.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(family(child.id()).contains(&std::process::id()));
        assert!(w.is_walk(7, 100, child.id()));
        let _ = child.kill();
        let _ = child.wait();
        // A process with no relation to us is not.
        assert!(!w.is_walk(7, 100, 1));
    }
}
