//! What the terminal-mode test files share: a caller at a fresh pty, rows run as root and as
//! the test user in parallel, the line typed for snug or for a plain-bwrap control, and
//! finding the payload's process.

use super::{procs, Term};
use crate::common::{everyone, is_root, snug, workdir, Who};
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

/// A caller at a fresh terminal in a fresh DIR owned by `who`. The Term comes first so it
/// is dropped (hung up) before the directory goes.
pub fn caller(who: Who, label: &str) -> (Term, tempfile::TempDir) {
    let dir = workdir(who);
    (Term::start(who, dir.path(), label), dir)
}

/// `snug -- ARGS` as typed at the caller's prompt.
pub fn snug_line(args: &str) -> String {
    format!("{} -- {args}", snug().display())
}

/// The control launcher: plain bwrap over the host's root, DIR writable and current, dying
/// with its parent; `extra` adds e.g. `--new-session`. Runs as root (see the module doc), or
/// when the tests do not run as root, as the current user in a user namespace.
pub fn bwrap_line(dir: &Path, extra: &str, args: &str) -> String {
    let d = dir.display();
    let user = if is_root() { "" } else { "--unshare-user " };
    format!(
        "bwrap {user}--unshare-pid --die-with-parent --ro-bind / / --dev /dev --proc /proc --bind {d} {d} --chdir {d} {extra} -- {args}"
    )
}

/// Pids whose command line (NULs as spaces) starts with `prefix`: the payload itself, not
/// snug, bwrap or init, whose command lines end with the payload's.
pub fn pids_starting(prefix: &str) -> Vec<i32> {
    let line =
        |p: i32| std::fs::read(format!("/proc/{p}/cmdline")).map(|b| String::from_utf8_lossy(&b).replace('\0', " "));
    procs().into_iter().filter(|p| line(*p).is_ok_and(|l| l.starts_with(prefix))).collect()
}

/// The host pid of the one process whose command line starts with `prefix`, waiting for it.
pub fn the_pid(t: &mut Term, prefix: &str) -> i32 {
    if !t.until(Duration::from_secs(10), || pids_starting(prefix).len() == 1) {
        t.fail(&format!("not exactly one process starting {prefix:?}: {:?}", pids_starting(prefix)));
    }
    pids_starting(prefix)[0]
}
