//! The run's record and `--report` (SPEC O5): the supervisor writes down what happened as
//! it happens (signals received and what was done with them, the grace, the payload's end,
//! why the sandbox was torn down, how many processes that killed), [`RunRecord::close`]
//! names who ended the run as an [`EndedBy`], and [`RunRecord::to_json`] gives the one JSON
//! object `--report` writes. The schema is documented in README.md ("Reports"); field names
//! are stable, a change that breaks a reader bumps [`SCHEMA`].
//!
//! Also the `--timeout` deadline (SPEC O6), which the supervisor's poll loop waits on.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::channel::FromInit;
use crate::pidfd::Pinned;
use crate::signals::Delivered;
use snug_core::supervisor::Action;
use snug_core::{Signal, WaitStatus};

pub use crate::report_sink::Sink;

/// Version of the report's schema (`schema` in the JSON).
pub const SCHEMA: u32 = 1;

/// At most this many signals are listed; the rest are counted in `signals_omitted`, so a
/// signal storm cannot make the report unbounded (its space is reserved up front).
pub const MAX_SIGNALS: usize = 256;

pub use crate::end::Outcome;
/// Who ended the run: the core's vocabulary for it (SPEC O5).
pub use snug_core::supervisor::EndedBy;

/// Where a signal came from, as `signalfd(2)`'s `ssi_code` tells.
#[derive(Clone, Copy, Debug)]
enum Origin {
    Terminal,
    Process(Option<snug_core::Pid>),
    Timeout,
}

#[derive(Clone, Debug)]
struct SignalEvent {
    sig: Signal,
    origin: Origin,
    at: Duration,
    action: &'static str,
}

/// What happened during one run, from snug's start. Times are monotonic (`CLOCK_MONOTONIC`).
#[derive(Debug)]
pub struct RunRecord {
    start: Instant,
    timeout: Option<Duration>,
    timed_out: Option<Instant>,
    next_is_timeout: bool,
    /// When `snug stop` asked the run to end (L2).
    stop: Option<Instant>,
    /// The run's name (L1), once known.
    name: Option<String>,
    /// `--report` was given.
    wanted: bool,
    started: Option<Instant>,
    grace: Option<Instant>,
    payload: Option<(Instant, WaitStatus)>,
    exec_failed: bool,
    teardown: Option<EndedBy>,
    killed: Option<u32>,
    signals: Vec<SignalEvent>,
    omitted: u32,
    /// INTs relayed as keys whose Interrupt report from init has not come yet.
    keys: u32,
    end: Option<Instant>,
    error: Option<String>,
    /// What the payload wrote where the sandbox discards it (SPEC O8), when anything.
    discarded: Option<crate::discarded::Summary>,
    /// What a `--cow` run kept aside (SPEC W2), when anything.
    changes: Option<serde_json::Value>,
    /// Wall-clock time of [`RunRecord::new`], for `started_at`.
    wall_start: std::time::SystemTime,
    /// The command, DIR, bounds and usage (O5).
    context: Context,
    hits: crate::bounds::Hits,
    /// The decisions of a network of snug's own (SPEC N7), with `--net-allow`.
    network: Option<snug_core::net_allow::Tally>,
}

impl Default for RunRecord {
    fn default() -> RunRecord {
        RunRecord::new()
    }
}

impl RunRecord {
    /// A record whose time zero is now (call it first thing in `main`).
    pub fn new() -> RunRecord {
        RunRecord {
            start: Instant::now(),
            timeout: None,
            timed_out: None,
            next_is_timeout: false,
            stop: None,
            name: None,
            wanted: false,
            started: None,
            grace: None,
            payload: None,
            exec_failed: false,
            teardown: None,
            killed: None,
            signals: Vec::new(),
            omitted: 0,
            keys: 0,
            end: None,
            error: None,
            discarded: None,
            changes: None,
            wall_start: std::time::SystemTime::now(),
            context: Context::default(),
            hits: crate::bounds::Hits::default(),
            network: None,
        }
    }

    /// `--timeout`: the deadline is `timeout` after snug's start (so a stuck start-up counts).
    pub fn arm(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// The timeout's deadline: the supervisor's core acts on it (O6).
    pub fn deadline(&self) -> Option<Instant> {
        self.timeout.map(|t| self.start + t)
    }

    /// The supervisor acts on the timeout: the run ends by it unless the payload ends first,
    /// and the next [`RunRecord::signal`] is the TERM it acts as, listed with the origin
    /// `timeout`.
    pub fn timing_out(&mut self) {
        self.timed_out = Some(Instant::now());
        self.next_is_timeout = true;
        live::timeout(self.timeout.map(|t| t.as_millis() as u64));
    }

    /// The run's name (L1), for the report's `name`.
    pub fn name(&mut self, name: &str) {
        self.name = Some(name.to_string());
    }

    /// `snug stop` asked this run to end (L2): its TERM (and `--now`'s second) follow as
    /// signals from the stop caller; the run ends by the stop unless the payload ended first.
    pub fn stopping(&mut self) {
        if self.stop.is_none() {
            live::stop_requested();
        }
        self.stop.get_or_insert_with(Instant::now);
    }

    /// A signal snug received (or the timeout's TERM) and what [`snug_core::supervisor::relay::decide`] made
    /// of it. A relay with grace starts the grace.
    pub fn signal(&mut self, got: &Delivered, action: Action) {
        let now = Instant::now();
        let origin = if std::mem::take(&mut self.next_is_timeout) {
            Origin::Timeout
        } else if got.by_terminal() {
            Origin::Terminal
        } else {
            Origin::Process(got.pid)
        };
        if action == Action::Key && got.sig == Signal::INT {
            self.keys += 1; // init reports it as an Interrupt too
        }
        let grace = action == Action::RelayWithGrace && self.grace.is_none();
        let e = SignalEvent { sig: got.sig, origin, at: now - self.start, action: action.name() };
        live::signal(&e);
        if grace {
            self.grace = Some(now);
            live::grace(got.sig);
        }
        self.push(e);
    }

    fn push(&mut self, e: SignalEvent) {
        if self.signals.len() < MAX_SIGNALS {
            self.signals.push(e);
        } else {
            self.omitted += 1;
        }
    }

    /// What init reported: the payload's start (it has been told to exec), its exec failure
    /// (it never ran: `payload` stays null), its end (raw wait status), a ^C that reached the
    /// sandbox straight from the terminal (T2: origin `terminal`, not relayed by snug; one snug
    /// relayed as a key is already listed), and how many processes the end kills (R5: init counts them before its exit;
    /// 0 when the sandbox emptied by itself during a grace).
    pub fn report(&mut self, r: FromInit) {
        let now = Instant::now();
        match r {
            FromInit::Started(_) => {
                self.started.get_or_insert(now);
                live::payload("payload_started", None);
            }
            FromInit::ExecFailed(_) => self.exec_failed = true,
            FromInit::Exited(st) if !self.exec_failed && self.payload.is_none() => {
                self.payload = Some((now, st));
                live::payload("payload_exited", Some(st));
            }
            FromInit::Stopped(sig) => live::stopped(sig),
            FromInit::Interrupt(_) if self.keys > 0 => self.keys -= 1,
            FromInit::Interrupt(_) => {
                let at = now - self.start;
                let e = SignalEvent { sig: Signal::INT, origin: Origin::Terminal, at, action: "delivered_by_terminal" };
                live::signal(&e);
                self.push(e);
            }
            FromInit::Empty => {
                self.killed = Some(0);
                live::killed(Some(0));
            }
            FromInit::Leaving(n) => {
                self.killed = n;
                live::killed(n);
            }
            _ => {}
        }
    }

    /// A report will be written: only then does [`RunRecord::teardown`] count the sandbox,
    /// a read of its whole procfs that would otherwise delay every teardown (G3; 15 ms for a
    /// 4000-process tree).
    pub fn wanted(&mut self) {
        self.wanted = true;
    }

    /// snug tears the sandbox down, `why`; counts what is in it first when a report is
    /// wanted (see [`count_sandbox`]). The first reason stays.
    pub fn teardown(&mut self, why: EndedBy, init: Option<&Pinned>) {
        self.teardown.get_or_insert(why);
        if let Some(n) = init.filter(|_| self.wanted || crate::events::on()).and_then(count_pinned) {
            self.killed = Some(n);
        }
        live::teardown(why.name(), self.killed);
    }

    /// Time zero of the run (the report's and the events' `ms`).
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Close the record: who ended the run, given how snug ends.
    pub fn close(&mut self, outcome: &Outcome) -> EndedBy {
        self.end.get_or_insert_with(Instant::now);
        if let Outcome::Fail(_) = outcome {
            return EndedBy::SnugError;
        }
        // Only what happened before the payload's main process ended can have ended it.
        let ended = self.payload.map(|(t, _)| t);
        let before_end = |t: Instant| !matches!(ended, Some(e) if t > e);
        if self.stop.is_some_and(before_end) {
            return EndedBy::Stop;
        }
        if let Some(why @ (EndedBy::SecondSignal | EndedBy::ForceQuit | EndedBy::Stop)) = self.teardown {
            return why;
        }
        if self.timed_out.is_some_and(before_end) {
            return EndedBy::Timeout;
        }
        if self.grace.is_some_and(before_end) {
            return if ended.is_some() { EndedBy::RelayedHandled } else { EndedBy::GraceExpired };
        }
        match self.payload {
            Some((_, WaitStatus::Signaled { sig: Signal::KILL, .. })) if self.hits.oom_kills > Some(0) => EndedBy::Oom,
            Some((_, WaitStatus::Signaled { .. })) => EndedBy::PayloadSignal,
            Some(_) => EndedBy::Payload,
            None if self.teardown.is_none() && self.hits.oom_kills > Some(0) => EndedBy::Oom,
            None => self.teardown.unwrap_or(EndedBy::SnugError),
        }
    }

    /// The payload's main process ran and ended (its status is known): not snug's own failure
    /// before or around it.
    pub fn payload_ended(&self) -> bool {
        self.payload.is_some()
    }

    /// What the payload left where the sandbox discards it (the report's `discarded`, O8).
    pub fn discarded(&mut self, summary: crate::discarded::Summary) {
        self.discarded = Some(summary);
    }

    /// What a `--cow` run kept aside (the report's `changes`, W2).
    pub fn changes(&mut self, changes: serde_json::Value) {
        self.changes = Some(changes);
    }

    /// The network's decisions, counted (the report's `network`, N7).
    pub fn network(&mut self, tally: snug_core::net_allow::Tally) {
        self.network = Some(tally);
    }

    /// The stderr line naming each refusal once (N7), when anything was refused.
    pub fn network_line(&self) -> Option<String> {
        self.network.as_ref().and_then(|t| t.line())
    }

    /// When snug started, on the wall clock (`started_at`; `--cow`'s start, W4).
    pub fn wall_start(&self) -> std::time::SystemTime {
        self.wall_start
    }

    /// The report's context to fill in: command, DIR, bounds, usage (O5).
    pub fn context(&mut self) -> &mut Context {
        &mut self.context
    }

    /// `--timeout`'s duration for people (`0.5 s`), when one is set (O6).
    pub fn timeout_text(&self) -> Option<String> {
        self.timeout.map(reason::seconds)
    }

    /// The bounds the sandbox hit, read at its end (O5).
    pub fn hits(&mut self, hits: crate::bounds::Hits) {
        self.hits = hits;
    }

    /// snug's own failure, as its one-line message (the report's `error`).
    pub fn error(&mut self, line: String) {
        self.error = Some(line);
    }
}

/// How many processes a sandbox pid namespace holds besides its init (pid 1): the numeric
/// entries of that namespace's procfs (`proc(5)`; one per process, threads are not listed),
/// zombies not yet reaped included. `None` when it cannot be read.
pub fn count_sandbox(procfs: &Path) -> Option<u32> {
    let n = std::fs::read_dir(procfs)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n != "1" && n.bytes().all(|b| b.is_ascii_digit())))
        .count();
    u32::try_from(n).ok()
}

/// [`count_sandbox`] from outside: the sandbox's procfs seen through init's root
/// (`/proc/PID/root/proc`), which snug may read as the owner of the sandbox's user
/// namespace (or as root). Discarded if init has exited meanwhile (its pid may be reused).
fn count_pinned(init: &Pinned) -> Option<u32> {
    let n = count_sandbox(&Path::new("/proc").join(init.host_pid.to_string()).join("root/proc"))?;
    (!init.exited()).then_some(n)
}

mod context;
mod json;
mod live;
mod network;
mod reason;
pub use context::{rfc3339, Context};
#[cfg(test)]
mod tests;
