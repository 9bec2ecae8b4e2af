//! Live sandboxes (SPEC L1–L5): names, `snug ps`, `stop`, `signal`, `exec`,
//! `--jobs`, and who may reach a run. Real runs of snug as root and as the unprivileged user,
//! each row with a positive control (named in its comment).
//!
//! Split by concern: live/runs.rs (L1, L5), live/stop.rs (L2, L4), live/stopped.rs (runs whose
//! snug is stopped), live/exec.rs (L3), live/tty.rs (L3 at a terminal). This file holds what
//! they share.

use crate::common;

mod exec;
mod others;
mod runs;
mod sandboxes;
mod stop;
mod stopped;
mod tty;
mod tty_exec_io;

use common::{marker, snug_cmd, spawn_own_group, until, Who};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a run may take to show up in `ps` (2 cores, tests in parallel).
pub const READY: Duration = Duration::from_secs(15);

/// `snug ARGS` as `who` in `dir`, without an inherited `XDG_RUNTIME_DIR` (root's would not
/// be the test user's).
pub fn cmd(who: Who, dir: &Path, args: &[&str]) -> Command {
    let mut c = snug_cmd(who, dir, args);
    c.env_remove("XDG_RUNTIME_DIR");
    c
}

/// A unique run name.
pub fn name() -> String {
    format!("t{}", marker())
}

/// One background run: `snug --name NAME EXTRA… -- PAYLOAD…` in its own process group,
/// stdout and stderr to files in `dir`.
pub struct Live {
    pub name: String,
    pub child: Child,
    pub who: Who,
    pub out: PathBuf,
    pub err: PathBuf,
}

impl Live {
    pub fn start(who: Who, dir: &Path, extra: &[&str], payload: &[&str]) -> Live {
        Live::start_with(who, dir, name(), extra, payload)
    }

    /// [`Live::start`] with the name given.
    pub fn start_named(who: Who, dir: &Path, name: &str, payload: &[&str]) -> Live {
        Live::start_with(who, dir, name.to_string(), &[], payload)
    }

    fn start_with(who: Who, dir: &Path, name: String, extra: &[&str], payload: &[&str]) -> Live {
        let mut args = vec!["--name", name.as_str()];
        args.extend(extra);
        args.push("--");
        args.extend(payload);
        let out = dir.join(format!("{name}.out"));
        let err = dir.join(format!("{name}.err"));
        let mut c = cmd(who, dir, &args);
        c.stdout(std::fs::File::create(&out).expect("out")).stderr(std::fs::File::create(&err).expect("err"));
        let child = spawn_own_group(&mut c);
        Live { name, child, who, out, err }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Wait until `ps` lists this run in `state`.
    pub fn ready(&self, dir: &Path, state: &str) {
        let ok =
            until(READY, || ps(self.who, dir).iter().any(|r| r["name"] == self.name.as_str() && r["state"] == state));
        assert!(ok, "{} never listed as {state}; ps: {:?}; stderr: {}", self.name, ps(self.who, dir), self.stderr());
    }

    /// Wait until the payload wrote `text` to stdout: `running` says it exists, not that
    /// its shell has set its traps, so a test that signals it waits for its own line.
    pub fn said(&self, text: &str) {
        assert!(
            until(READY, || self.stdout() == text),
            "{}: never said {text:?}; stdout {:?}",
            self.name,
            self.stdout()
        );
    }

    pub fn stdout(&self) -> String {
        common::read_text(&self.out)
    }

    pub fn stderr(&self) -> String {
        common::read_text(&self.err)
    }

    /// Wait for the run's end (bounded).
    pub fn end(&mut self, limit: Duration) -> std::process::ExitStatus {
        common::wait_bounded(&mut self.child, limit).unwrap_or_else(|| panic!("{} did not end", self.name))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        common::kill_if_running(&mut self.child);
    }
}

/// `snug ps --json` as `who`.
pub fn ps(who: Who, dir: &Path) -> Vec<serde_json::Value> {
    let out = cmd(who, dir, &["ps", "--json"]).stderr(Stdio::inherit()).output().expect("snug ps");
    serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap_or_default()
}

/// Whether `ps` as `who` lists `name`.
pub fn listed(who: Who, dir: &Path, name: &str) -> bool {
    ps(who, dir).iter().any(|r| r["name"] == name)
}

/// Run `snug ARGS` as `who` to its end (bounded); (status, stdout, stderr, wall time).
pub fn run(who: Who, dir: &Path, args: &[&str]) -> (std::process::ExitStatus, String, String, Duration) {
    let t0 = Instant::now();
    let o = common::run_bounded(&mut cmd(who, dir, args), Duration::from_secs(20));
    (o.status, o.out, o.err, t0.elapsed())
}

/// Milliseconds, for messages.
pub fn ms(d: Duration) -> u128 {
    d.as_millis()
}
