//! Terminal mode (SPEC T1–T9, T14, X2), driven through a real pseudo-terminal with an
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
//! terminal/jobs.rs (T5–T8), terminal/output.rs (T14), terminal/old_kernel.rs (T5 under an
//! emulated pre-6.9 kernel, R6). This file holds what they share.

use crate::common;
use crate::pty;

mod handback;
mod jobs;
mod keys;
mod old_kernel;
mod output;
mod shared;
mod signals;
mod tty;
mod winch;

pub use common::is_root;
pub use pty::rows::{bwrap_line, caller, in_front, own_pid, parallel, sleep_in_front, snug_line, the_pid};
use std::path::Path;

/// Where `bwrap` is on `$PATH` (the control launcher's binary, to find its process).
pub fn bwrap_path() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path.split(':').map(|d| Path::new(d).join("bwrap")).find(|p| p.is_file()).expect("bwrap on PATH");
    found.canonicalize().unwrap_or(found).display().to_string()
}

/// Whether `pid` is blocked in the system call whose line in `/proc/PID/syscall` starts with
/// `head` (the number, then its arguments in hex; `proc_pid_syscall(5)`).
fn in_syscall(pid: i32, head: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/syscall")).is_ok_and(|s| s.starts_with(head))
}

/// Whether `pid` is blocked in `read(2)` of its fd 0.
pub fn reading_stdin(pid: i32) -> bool {
    in_syscall(pid, &format!("{} 0x0 ", libc::SYS_read))
}

/// Whether `pid` is blocked in `write(2)`.
pub fn writing(pid: i32) -> bool {
    in_syscall(pid, &format!("{} ", libc::SYS_write))
}
