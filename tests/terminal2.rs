//! Terminal mode, second round (SPEC T3 revised, T4, T10–T13; issue 10): the terminal stays
//! the caller's. Driven through real pseudo-terminals (tests/pty) with an interactive bash as
//! the caller, or with snug itself as the session's leader (tests/pty/leader.rs); every row
//! as root and as the test user, in parallel threads.
//!
//! Positive controls: each test's comment says what it observed against today's build
//! (`main@76434d3`, before issue 10), which fails the rows this round adds; where a launcher
//! without the property shows the failure in-test (plain bwrap, no launcher), that control
//! runs next to the row, as root. Rows that already hold on main are marked as regression
//! guards.
//!
//! The rows: terminal2/steal.rs and terminal2/steal_tty.rs (T11), terminal2/hangup.rs (T10,
//! T4), terminal2/detached.rs (T12 at a terminal), terminal2/repl.rs (T3),
//! terminal2/pagers.rs (T13). This file holds what they share.

mod common;
#[path = "terminal2/detached.rs"]
mod detached;
#[path = "terminal2/hangup.rs"]
mod hangup;
#[path = "terminal2/pagers.rs"]
mod pagers;
mod pty;
#[path = "terminal2/repl.rs"]
mod repl;
#[path = "terminal2/review.rs"]
mod review;
#[path = "terminal2/steal.rs"]
mod steal;
#[path = "terminal2/steal_tty.rs"]
mod steal_tty;

use common::{everyone, is_root, snug, workdir, Who};
use pty::Term;
use std::path::Path;
use std::time::Duration;

/// Run `row` as everyone and each of `controls` (as root), all at once; a panic in any
/// fails the test once all have ended.
pub fn parallel(row: &(dyn Fn(Who) + Sync), controls: &[&(dyn Fn() + Sync)]) {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || row(who));
        }
        for c in controls {
            s.spawn(*c);
        }
    });
}

/// A caller at a fresh terminal in a fresh DIR owned by `who` (the Term is dropped, hung
/// up, before the directory goes).
pub fn caller(who: Who, label: &str) -> (Term, tempfile::TempDir) {
    let dir = workdir(who);
    (Term::start(who, dir.path(), label), dir)
}

/// `snug -- ARGS` as typed at the caller's prompt.
pub fn snug_line(args: &str) -> String {
    format!("{} -- {args}", snug().display())
}

/// The control launcher of tests/terminal.rs: plain bwrap over the host's root, DIR
/// writable and current; `extra` adds flags.
pub fn bwrap_line(dir: &Path, extra: &str, args: &str) -> String {
    let d = dir.display();
    let user = if is_root() { "" } else { "--unshare-user " };
    format!(
        "bwrap {user}--unshare-pid --die-with-parent --ro-bind / / --dev /dev --proc /proc --bind {d} {d} --chdir {d} {extra} -- {args}"
    )
}

/// Pids whose command line (NULs as spaces) starts with `prefix`: the payload itself, not
/// snug, bwrap or init.
pub fn pids_starting(prefix: &str) -> Vec<i32> {
    let line =
        |p: i32| std::fs::read(format!("/proc/{p}/cmdline")).map(|b| String::from_utf8_lossy(&b).replace('\0', " "));
    pty::procs().into_iter().filter(|p| line(*p).is_ok_and(|l| l.starts_with(prefix))).collect()
}

/// The host pid of the one process whose command line starts with `prefix`, waiting for it.
pub fn the_pid(t: &mut Term, prefix: &str) -> i32 {
    if !t.until(Duration::from_secs(10), || pids_starting(prefix).len() == 1) {
        t.fail(&format!("not exactly one process starting {prefix:?}: {:?}", pids_starting(prefix)));
    }
    pids_starting(prefix)[0]
}
