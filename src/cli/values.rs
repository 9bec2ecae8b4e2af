//! Values of snug's options that clap does not parse itself (`--report`, `--timeout`), and
//! clap's error as snug's one line (SPEC R4, O5, O6).

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{failure, USAGE};

use super::ReportTo;

/// `--report`'s value: `fd:N` names a descriptor, anything else a path.
pub(super) fn report_to(v: &str) -> anyhow::Result<ReportTo> {
    destination("--report", v)
}

/// `--events`' value (SPEC O9), read as `--report`'s.
pub(super) fn events_to(v: &str) -> anyhow::Result<ReportTo> {
    destination("--events", v)
}

fn destination(flag: &str, v: &str) -> anyhow::Result<ReportTo> {
    match v.strip_prefix("fd:") {
        Some(n) => n
            .parse::<i32>()
            .ok()
            .filter(|n| *n >= 0)
            .map(ReportTo::Fd)
            .ok_or_else(|| failure(USAGE, format!("{flag} {v:?}: fd: needs a descriptor number, e.g. fd:3"))),
        None if v.is_empty() => Err(failure(USAGE, format!("{flag} needs a path or fd:N"))),
        None => Ok(ReportTo::Path(PathBuf::from(v))),
    }
}

/// A `--timeout` duration: numbers with units `h`, `m`, `s`, `ms`, summed (`1h30m`,
/// `0.5s`); a bare number is seconds, as for timeout(1).
pub(super) fn duration(v: &str) -> anyhow::Result<Duration> {
    let bad = || failure(USAGE, format!("--timeout {v:?}: not a duration (e.g. 90s, 10m, 1h30m, 0.5s)"));
    if let Ok(secs) = v.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|_| bad());
    }
    let mut total = 0f64;
    let mut rest = v;
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return Err(bad()),
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    if v.is_empty() {
        return Err(bad());
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

/// clap's error text up to its first blank line, as one line without the `error: ` prefix,
/// with clap's first tip after it (`a similar argument exists: '--dry-run'`), pointing at
/// `--help` for the rest.
pub(super) fn usage_line(rendered: &str) -> String {
    let one = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let head = one(rendered.split("\n\n").next().unwrap_or(rendered));
    let mut text = head.strip_prefix("error: ").unwrap_or(&head).to_string();
    if let Some(tip) = rendered.lines().find_map(|l| l.trim_start().strip_prefix("tip: ")) {
        text = format!("{text}; {}", one(tip));
    }
    format!("{text} (see snug --help)")
}

/// `snug signal NAME SIG`: SIG by name or number, one a run can relay.
pub(super) fn signal(name: String, sig: &str) -> anyhow::Result<super::Command> {
    let Some(n) = crate::signals::parse(sig) else {
        return Err(failure(USAGE, format!("unknown signal {sig:?} (examples: TERM, SIGUSR1, 15, RTMIN+2)")));
    };
    // L2: a run relays what G6 relays; KILL and STOP cannot be caught, so its snug
    // never receives them as a signal to pass on (it would drop them and say ok).
    if n == libc::SIGKILL {
        return Err(failure(USAGE, format!("KILL cannot be relayed: use snug stop --now {name}")));
    }
    if n == libc::SIGSTOP {
        let hint = "use TSTP, which stops the sandbox with its snug";
        return Err(failure(USAGE, format!("STOP cannot be relayed: {hint} (snug signal {name} TSTP)")));
    }
    // G6: a run drops these, so saying ok would be a lie.
    if [libc::SIGCHLD, libc::SIGPIPE, libc::SIGURG].contains(&n) {
        let word = crate::signals::signame(snug_core::Signal(n));
        let word = word.strip_prefix("SIG").unwrap_or(&word);
        return Err(failure(
            USAGE,
            format!("{word} is never relayed to a sandbox (SIGCHLD, SIGPIPE and SIGURG are snug's own)"),
        ));
    }
    Ok(super::Command::Signal { name, sig: snug_core::Signal(n) })
}
