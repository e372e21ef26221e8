//! Crash consistency: the daemon is killed with SIGKILL in the middle of
//! writes, the store is mounted again, and every write that was
//! acknowledged (its fsync returned) is there intact; the one in flight is
//! its old content, its new content, or empty (its `O_TRUNC` open went
//! through, as on any filesystem), never a mix.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Mount, signal, wait_timeout};

const ROUNDS: usize = 3;
const FILES: usize = 40;

/// What a file may hold after the crash: the last acknowledged content,
/// and the content being written when the daemon died, if any.
#[derive(Clone, Default)]
struct Expect {
    acked: Option<Vec<u8>>,
    in_flight: Option<Vec<u8>>,
}

#[test]
fn acknowledged_writes_survive_kill_9_and_in_flight_ones_are_old_or_new() {
    let mut m = Mount::start();
    let expect: Arc<Mutex<BTreeMap<PathBuf, Expect>>> = Arc::default();
    for round in 0..ROUNDS {
        let writer = {
            let (mnt, expect) = (m.mnt.clone(), Arc::clone(&expect));
            std::thread::spawn(move || {
                for i in 0.. {
                    let rel = PathBuf::from(format!("f{}.md", i % FILES));
                    let content =
                        format!("round {round} write {i}\n{}\n", "x".repeat(i % 3000)).into_bytes();
                    expect
                        .lock()
                        .unwrap()
                        .entry(rel.clone())
                        .or_default()
                        .in_flight = Some(content.clone());
                    let written = fs::File::create(mnt.join(&rel))
                        .and_then(|mut f| f.write_all(&content).and_then(|()| f.sync_all()));
                    let mut e = expect.lock().unwrap();
                    let entry = e.get_mut(&rel).unwrap();
                    if written.is_err() {
                        return; // the daemon is gone
                    }
                    entry.acked = entry.in_flight.take();
                }
            })
        };
        std::thread::sleep(Duration::from_millis(300 + 200 * round as u64));
        signal(m.pid(), libc::SIGKILL);
        wait_timeout(m.child_mut(), Duration::from_secs(30)).expect("killed daemon reaped");
        m.clear_child();
        writer.join().unwrap();
        m.spawn(&[]);
        for (rel, e) in expect.lock().unwrap().iter_mut() {
            let now = match fs::read(m.m(rel)) {
                Ok(now) => now,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => panic!("round {round}: read {}: {e}", rel.display()),
            };
            let ok = e.acked.as_ref() == Some(&now)
                || e.in_flight.as_ref() == Some(&now)
                // In flight: truncated by its O_TRUNC open before the
                // write, as on any filesystem.
                || (e.in_flight.is_some() && now.is_empty());
            assert!(
                ok,
                "round {round}: {} holds {} bytes, neither its acknowledged nor its in-flight content",
                rel.display(),
                now.len()
            );
            // What is there now is the acknowledged state for the next round.
            e.acked = Some(now).filter(|n| !n.is_empty()).or(e.acked.take());
            e.in_flight = None;
        }
    }
    m.stop();
}
