//! Reports, timeouts and command-line grants for CI harnesses (SPEC O5, O6, P5,
//! R4's 74 and 124). Real bwrap, real processes, each row as root and as the unprivileged
//! user (in parallel threads), the report parsed with serde_json.
//!
//! Positive controls: each `ended_by` row runs, in the same test, the nearest run that must
//! be reported differently (the same payload without the signal, with one signal instead of
//! two, exiting by itself with the same code), so a report that cannot tell them apart
//! fails. Where a test names a one-time mutation of snug, that mutation was tried and made
//! the test fail.
//!
//! Split by concern: `report/endings.rs` (one test per `ended_by`, O6), `report/sinks.rs`
//! (where the report goes and what happens when it cannot be written), `report/grants.rs`
//! (P5), `report/force_quit.rs` (through a pty, T3).

use crate::common;

mod endings;
mod events;
mod force_quit;
mod forged;
mod grants;
mod planted;
mod sinks;

use common::{everyone, snug_cmd, start, workdir, Out, Running, Who};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Generous bound for one run that should end on its own (2 cores, tests in parallel).
pub const LIMIT: Duration = Duration::from_secs(20);

/// Run `row` as everyone at once; a panic in any fails the test once all have ended.
pub fn each(row: &(dyn Fn(Who) + Sync)) {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || row(who));
        }
    });
}

/// One snug run with `--report DIR/NAME.json` in front of `args`, in `dir`.
pub struct Reported {
    pub run: Running,
    pub report: PathBuf,
    pub since: Instant,
}

impl Reported {
    /// Start `snug --report DIR/NAME.json ARGS…` as `who` in `dir`.
    pub fn start(who: Who, dir: &Path, name: &str, args: &[&str]) -> Reported {
        let report = dir.join(format!("{name}.json"));
        let mut all = vec!["--report", report.to_str().expect("utf-8 path")];
        all.extend(args);
        let since = Instant::now();
        Reported { run: start(&mut snug_cmd(who, dir, &all)), report, since }
    }

    /// Wait until `file` exists in `dir` (the payload says it is ready), bounded.
    pub fn wait_ready(&self, file: &Path) {
        assert!(common::until(LIMIT, || file.exists()), "payload never wrote {}", file.display());
    }

    /// Send `sig` to snug.
    pub fn signal(&self, sig: i32) {
        common::kill(self.run.pid, sig);
    }

    /// Wait for the end; the output, the time since start and the parsed report.
    pub fn finish(self) -> (Out, Duration, Value) {
        let out = self.run.finish(LIMIT);
        let took = self.since.elapsed();
        let text = std::fs::read_to_string(&self.report).unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("report {} is not JSON ({e}): {text:?}; stderr {}", self.report.display(), out.err)
        });
        (out, took, v)
    }
}

/// `snug --report … ARGS` as `who` in a fresh directory, to its end.
pub fn reported(who: Who, args: &[&str]) -> (Out, Value) {
    let dir = workdir(who);
    let (out, _, v) = Reported::start(who, dir.path(), "r", args).finish();
    (out, v)
}

/// The fields every report has, with the types the README documents.
pub fn check_shape(v: &Value) {
    assert_eq!(v["schema"], 1, "{v}");
    assert!(v["version"].is_string(), "{v}");
    assert!(v["name"].as_str().is_some_and(|n| !n.is_empty()), "every run has a name (L1): {v}");
    assert!(v["ended_by"].is_string(), "{v}");
    assert!(v["snug_exit"].is_object(), "{v}");
    assert!(v["signals"].is_array(), "{v}");
    assert!(v["durations_ms"]["total"].is_u64(), "{v}");
}

/// The run's `ended_by`, after checking the report's shape.
pub fn ended_by(v: &Value) -> &str {
    check_shape(v);
    v["ended_by"].as_str().unwrap_or_default()
}
