//! The sandbox's own terminal (SPEC R2, T1, T7, T11, L3): no sandbox process ever holds the
//! caller's terminal, whatever it does. Driven through real pseudo-terminals (tests/pty) with
//! an interactive bash as the caller; every row as root and as the test user, in parallel.
//!
//! Positive controls: each row was run once against the build before the sandbox had a pty
//! of its own (`SNUG_UNDER_TEST=<that build> cargo test --test integration -- own_terminal::`),
//! which shared the caller's terminal with the sandbox; each comment says what it saw there.

use crate::{common, pty};

mod ioctls;
mod readers;
mod settings;

pub use pty::rows::{caller, parallel, snug_line};

use common::marker;
use pty::{Term, PROMPT};
use std::path::Path;
use std::time::Duration;

/// Wait until `file.armed` exists.
fn armed(t: &mut Term, file: &Path) {
    let flag = file.with_extension("armed");
    if !t.until(Duration::from_secs(15), || flag.exists()) {
        t.fail("the attacker never started");
    }
}

/// The caller's settings and size as the caller's shell sees them (`stty -g; stty size`).
fn caller_stty(t: &mut Term) -> String {
    let m = marker();
    t.line(&format!("echo st-$(stty -g)-$(stty size | tr ' ' x)-e''nd{m}"));
    let end = format!("-end{m}\n");
    if !t.wait_for(&end, Duration::from_secs(5)) {
        t.fail("stty did not answer");
    }
    let text = t.text();
    let at = text.rfind(&end).unwrap_or(0);
    let line = &text[..at];
    let start = line.rfind("st-").map_or(0, |i| i + 3);
    t.wait_for(PROMPT, Duration::from_secs(2));
    line[start..].to_string()
}

/// Type 20 lines for the caller's shell, each awaited; the numbers of those it did not run.
fn type_lines(t: &mut Term) -> Vec<u32> {
    let mut missed = Vec::new();
    for n in 1..=20 {
        t.line(&format!("echo sec''ret-{n}"));
        if !t.wait_for(&format!("secret-{n}\n"), Duration::from_secs(3)) {
            missed.push(n);
            if missed.len() >= 3 {
                break;
            }
        }
        t.wait_for(PROMPT, Duration::from_secs(2));
    }
    missed
}

/// Stop the attacker and read what it got.
fn collect(file: &Path) -> Vec<u8> {
    let _ = std::fs::write(file.with_extension("stop"), "");
    std::fs::read(file).unwrap_or_default()
}

/// One reader row: start `line` (which runs the reader on `file`), wait until it runs, then
/// [`nothing_read`].
fn reader_row(t: &mut Term, line: &str, file: &Path, before: &str) {
    t.line(line);
    armed(t, file);
    t.wait_for(PROMPT, Duration::from_secs(2));
    nothing_read(t, file, before);
}

/// Type 20 lines for the caller's shell while the reader on `file` runs: it read 0 bytes, the
/// shell ran every line, and the caller's settings are still `before`.
fn nothing_read(t: &mut Term, file: &Path, before: &str) {
    let missed = type_lines(t);
    let stolen = collect(file);
    let after = caller_stty(t);
    if !stolen.is_empty() || !missed.is_empty() || after != before {
        t.fail(&format!(
            "read {} bytes {:?}; lines the shell did not run {missed:?}; stty before {before} after {after}",
            stolen.len(),
            String::from_utf8_lossy(&stolen)
        ));
    }
}
