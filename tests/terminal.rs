//! Terminal mode (SPEC T1–T9, X2; issue 5), driven through a real pseudo-terminal with an
//! interactive bash as the caller (tests/pty). Every row runs as root and as the test user,
//! the caller bash itself being that user; root and user runs go in parallel threads, with
//! the row's positive control next to them.
//!
//! Positive controls run in-test, as root, against a launcher known to lack the property:
//! plain `bwrap` (same flags as far as they matter, no snug in between: the wrapper dies of
//! ^C and the payload with it, no seccomp), `bwrap --new-session` (the payload cut off from
//! the terminal's job control), a naive signal-forwarding wrapper, or the payload without
//! any launcher. Each asserts that the failure the row's assertion looks for is observed.
//! Where no launcher lacks just that property, the comment names the one-time mutation of
//! snug that made the row fail.
//!
//! The rows: terminal/tty.rs (T1, SIGWINCH, T9), terminal/signals.rs (T2–T4),
//! terminal/jobs.rs (T5–T8), terminal/old_kernel.rs (T5 under an emulated pre-6.9 kernel,
//! R6). This file holds what they share.

mod common;
#[path = "terminal/jobs.rs"]
mod jobs;
#[path = "terminal/old_kernel.rs"]
mod old_kernel;
mod pty;
#[path = "terminal/signals.rs"]
mod signals;
#[path = "terminal/tty.rs"]
mod tty;

pub use common::is_root;
pub use pty::rows::{bwrap_line, caller, parallel, pids_starting, snug_line, the_pid};
use pty::Term;
use std::path::Path;
use std::time::Duration;

/// Where `bwrap` is on `$PATH` (the control launcher's binary, to find its process).
pub fn bwrap_path() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path.split(':').map(|d| Path::new(d).join("bwrap")).find(|p| p.is_file()).expect("bwrap on PATH");
    found.canonicalize().unwrap_or(found).display().to_string()
}

/// The one process under the caller's shell at `t` whose command line starts with `prefix`
/// (root and user rows run the same payload at once), waiting up to 10 s for it.
pub fn own_pid(t: &mut Term, prefix: &str) -> i32 {
    let shell = t.shell_pid();
    let line =
        |p: &i32| std::fs::read(format!("/proc/{p}/cmdline")).map(|b| String::from_utf8_lossy(&b).replace('\0', " "));
    let mine = || -> Vec<i32> {
        pty::descendants(shell).into_iter().filter(|p| line(p).is_ok_and(|l| l.starts_with(prefix))).collect()
    };
    if !t.until(Duration::from_secs(10), || mine().len() == 1) {
        t.fail(&format!("not exactly one process under the caller starting {prefix:?}: {:?}", mine()));
    }
    mine()[0]
}

/// Wait until the one process under the caller's shell whose command line starts with
/// `prefix` is in the terminal's foreground group, so a key typed now (^C, ^Z) or a line
/// reaches it; its pid. Call after the payload's `ready` line where it has one: that is
/// printed once its handlers are set.
pub fn in_front(t: &mut Term, prefix: &str) -> i32 {
    let pid = own_pid(t, prefix);
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let fg = t.foreground();
        if pty::stat(pid).is_some_and(|s| s.pgrp == fg) {
            return pid;
        }
        if std::time::Instant::now() >= end {
            t.fail(&format!("{prefix:?} (pid {pid}) not in the terminal's foreground ({fg}) within 10 s"));
        }
        t.pump(Duration::from_millis(10));
    }
}

/// Whether `pid` is blocked in `read(2)` of its fd 0 (`/proc/PID/syscall`, `proc_pid_syscall(5)`).
pub fn reading_stdin(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/syscall"))
        .is_ok_and(|s| s.starts_with(&format!("{} 0x0 ", libc::SYS_read)))
}
