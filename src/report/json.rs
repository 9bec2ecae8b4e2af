//! The report's JSON (README.md, "Reports"): field by field, in the documented order.

use std::time::{Duration, Instant};

use serde::Serialize;
use snug_core::{Signal, WaitStatus};

use super::{EndedBy, Origin, Outcome, RunRecord, SignalEvent, SCHEMA};
use crate::quote::text::{Text, Texts};

impl RunRecord {
    /// The report: one JSON object (README.md, "Reports") on one line, keys in the
    /// documented order, with a final newline.
    pub fn to_json(&self, ended_by: EndedBy, outcome: &Outcome) -> String {
        let ms = |d: Duration| d.as_millis() as u64;
        let end = self.end.unwrap_or_else(Instant::now);
        let signals = self.signals.iter().map(signal_out).collect();
        let payload_end = self.payload.map(|(t, _)| t).unwrap_or(end);
        let out = ReportOut {
            schema: SCHEMA,
            version: env!("CARGO_PKG_VERSION"),
            name: self.name.as_deref(),
            ended_by: ended_by.name(),
            snug_exit: match outcome {
                Outcome::Status(status) => Status::of(*status),
                Outcome::Signal(sig) => Status::signal(*sig),
                Outcome::Fail(e) => Status::Code { code: crate::error::code_of(e) },
            },
            payload: self.payload.map(|(_, status)| Status::of(status)),
            error: self.error.as_deref(),
            signals,
            signals_omitted: self.omitted,
            killed_at_end: self.killed,
            bounds_hit: BoundsHit { oom_kills: self.hits.oom_kills, forks_refused: self.hits.forks_refused },
            timeout_ms: self.timeout.map(ms),
            command: Texts(&self.context.command),
            argv: Texts(&self.context.argv),
            dir: self.context.dir.as_deref().map(|d| Text::os(d.as_os_str())),
            started_at: super::context::rfc3339(self.wall_start),
            bounds: self.context.bounds.map(|(max_procs, memory)| {
                let u = self.context.usage.as_ref();
                let mut hit = Vec::new();
                if u.and_then(|u| u.oom_kills).is_some_and(|n| n > 0) {
                    hit.push("oom");
                }
                if u.and_then(|u| u.refused_forks).is_some_and(|n| n > 0) {
                    hit.push("procs");
                }
                BoundsOut {
                    max_procs,
                    memory,
                    procs_by: u.map(|u| u.procs_by),
                    memory_by: u.map(|u| u.memory_by),
                    hit,
                    oom_kills: u.and_then(|u| u.oom_kills),
                    refused_forks: u.and_then(|u| u.refused_forks),
                }
            }),
            usage: self.context.usage.as_ref().map(|u| UsageOut {
                peak_memory_bytes: u.peak_memory_bytes,
                peak_memory_of: u.peak_memory_of,
                cpu_ms: u.cpu_ms,
                cpu_of: u.cpu_of,
            }),
            reason: self.reason(ended_by, outcome),
            durations_ms: Durations {
                startup: self.started.map(|s| ms(s - self.start)),
                run: self.started.map(|s| ms(payload_end.saturating_duration_since(s))),
                grace: self.grace.map(|g| ms(end.saturating_duration_since(g))),
                total: ms(end - self.start),
            },
            discarded: self.discarded.as_ref(),
            changes: self.changes.as_ref(),
            network: self.network.as_ref().map(super::network::section),
        };
        // Strings, numbers and options only: serialising cannot fail.
        let mut text = serde_json::to_string(&out).unwrap_or_default();
        text.push('\n');
        text
    }
}

impl RunRecord {
    /// The first record (SPEC O10), which stands at a `--report` path from the start until
    /// the report replaces it: `ended_by` null says the run started and never finished (snug
    /// was killed by SIGKILL, or the machine stopped).
    pub fn first_json(&self) -> String {
        let first = FirstOut {
            schema: SCHEMA,
            version: env!("CARGO_PKG_VERSION"),
            ended_by: None,
            argv: Texts(&self.context.argv),
            dir: self.context.dir.as_deref().map(|d| Text::os(d.as_os_str())),
            started_at: super::context::rfc3339(self.wall_start),
        };
        let mut text = serde_json::to_string(&first).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// The first record's JSON: the report's fields known at the start.
#[derive(Serialize)]
struct FirstOut<'a> {
    schema: u32,
    version: &'static str,
    ended_by: Option<&'static str>,
    argv: Texts<'a>,
    dir: Option<Text<'a>>,
    started_at: String,
}

/// One entry of the report's `signals`, also the fields of a `signal` event (SPEC O9).
pub(super) fn signal_out(s: &SignalEvent) -> SignalOut {
    let (origin, pid) = match s.origin {
        Origin::Terminal => ("terminal", None),
        Origin::Process(p) => ("process", p.map(snug_core::Pid::raw)),
        Origin::Timeout => ("timeout", None),
    };
    let relayed = matches!(s.action, "relay" | "relay_with_grace" | "key");
    let name = short_name(s.sig);
    SignalOut { name, number: s.sig.raw(), origin, pid, ms: s.at.as_millis() as u64, relayed, action: s.action }
}

/// The report's JSON, field by field (README.md, "Reports").
#[derive(Serialize)]
struct ReportOut<'a> {
    schema: u32,
    version: &'static str,
    name: Option<&'a str>,
    ended_by: &'static str,
    snug_exit: Status,
    payload: Option<Status>,
    error: Option<&'a str>,
    signals: Vec<SignalOut>,
    signals_omitted: u32,
    killed_at_end: Option<u32>,
    bounds_hit: BoundsHit,
    timeout_ms: Option<u64>,
    durations_ms: Durations,
    /// SPEC O8: what the payload wrote where the sandbox discards it; null when nothing.
    discarded: Option<&'a crate::discarded::Summary>,
    /// SPEC W2: what a `--cow` run kept aside; null when nothing or no `--cow`.
    changes: Option<&'a serde_json::Value>,
    /// SPEC N7: the decisions of a network of snug's own; null without `--net-allow`.
    network: Option<super::network::NetworkOut>,
    command: Texts<'a>,
    argv: Texts<'a>,
    dir: Option<Text<'a>>,
    started_at: String,
    bounds: Option<BoundsOut>,
    usage: Option<UsageOut>,
    reason: String,
}

/// The bounds in force and which were hit (`oom`, `procs`).
#[derive(Serialize)]
struct BoundsOut {
    max_procs: u64,
    memory: Option<u64>,
    procs_by: Option<&'static str>,
    memory_by: Option<&'static str>,
    hit: Vec<&'static str>,
    oom_kills: Option<u64>,
    refused_forks: Option<u64>,
}

#[derive(Serialize)]
struct UsageOut {
    peak_memory_bytes: Option<u64>,
    peak_memory_of: &'static str,
    cpu_ms: Option<u64>,
    cpu_of: &'static str,
}

/// Which bounds the sandbox hit: `null` where no cgroup counted (K5, O5).
#[derive(Serialize)]
struct BoundsHit {
    oom_kills: Option<u64>,
    forks_refused: Option<u64>,
}

#[derive(Serialize)]
pub(super) struct SignalOut {
    name: String,
    number: i32,
    origin: &'static str,
    pid: Option<i32>,
    ms: u64,
    relayed: bool,
    action: &'static str,
}

#[derive(Serialize)]
struct Durations {
    startup: Option<u64>,
    run: Option<u64>,
    grace: Option<u64>,
    total: u64,
}

/// `{"code": N}` or `{"signal": "TERM", "number": 15}`.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Status {
    Code { code: i32 },
    Signal { signal: String, number: i32 },
}

impl Status {
    /// From a wait status.
    pub(super) fn of(status: WaitStatus) -> Status {
        match status {
            WaitStatus::Signaled { sig, .. } => Status::signal(sig),
            _ => Status::Code { code: status.shell_code().unwrap_or(0) },
        }
    }

    fn signal(sig: Signal) -> Status {
        Status::Signal { signal: short_name(sig), number: sig.raw() }
    }
}

/// `TERM`, `RTMIN+3` (37: bash's numbering, as `-v` logs it), `SIG32` for the two glibc
/// keeps nameless, or the number as text.
pub(super) fn short_name(sig: Signal) -> String {
    let long = crate::signals::signame(sig);
    match long.strip_prefix("SIG") {
        Some(short) if !short.starts_with(|c: char| c.is_ascii_digit()) => short.to_string(),
        Some(_) => long,
        None => sig.raw().to_string(),
    }
}
