//! The process table as the test's pid namespace sees it (`/proc`, `proc_pid_stat(5)`):
//! processes found by a marker in their command line, by parentage, by state.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::kill;

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A number no other live process has in its command line: for `sleep <marker>`.
pub fn marker() -> String {
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("{}{:03}{:04}", 7, std::process::id() % 1000, n)
}

/// All pids in /proc.
pub fn procs() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
        .collect()
}

/// A process's command line, NULs as spaces (empty for a zombie); None once it is gone.
pub fn cmdline(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&raw).replace('\0', " "))
}

/// Pids whose command line (`/proc/PID/cmdline`, NULs as spaces) contains `needle`.
pub fn pids_with(needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    // A zombie holds no cmdline; a live one is a survivor.
    let matches = |p: &i32| *p != me && cmdline(*p).is_some_and(|l| l.contains(needle) && !l.contains("pgrep"));
    procs().into_iter().filter(matches).collect()
}

/// Live descendants of `root`, parents before children.
pub fn descendants(root: i32) -> Vec<i32> {
    let all: Vec<(i32, i32)> = procs().into_iter().filter_map(|p| stat(p).map(|s| (p, s.ppid))).collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    found.remove(0);
    found
}

/// Whether any process still has `needle` in its command line.
pub fn alive(needle: &str) -> bool {
    !pids_with(needle).is_empty()
}

/// SIGKILL whatever still has `needle` (clean-up after a failed assertion).
pub fn reap_leftovers(needle: &str) {
    for p in pids_with(needle) {
        kill(p as u32, libc::SIGKILL);
    }
}

/// A process's state letter from `/proc/PID/stat` (`T` stopped), None once it is gone.
pub fn proc_state(pid: i32) -> Option<char> {
    stat(pid).map(|s| s.state)
}

/// The fields of `/proc/PID/stat` the tests look at (`proc_pid_stat(5)`).
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    pub tty_nr: i32,
    pub tpgid: i32,
    /// Field 22, in clock ticks after boot: with the pid, an identity that survives pid reuse.
    pub start: u64,
}

/// `/proc/PID/stat` as this process's namespace sees it; None once the process is gone.
pub fn stat(pid: i32) -> Option<Stat> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&s)
}

/// Parse a stat line; the command name may hold spaces and parentheses, so split after the
/// last `)`.
pub fn parse_stat(s: &str) -> Option<Stat> {
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse().ok());
    Some(Stat {
        state: f.first()?.chars().next()?,
        ppid: n(1)?,
        pgrp: n(2)?,
        session: n(3)?,
        tty_nr: n(4)?,
        tpgid: n(5)?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// SPEC K1: how soon after snug's end nothing of its sandbox may be left.
pub const GONE: Duration = Duration::from_millis(100);

/// Wait until [`GONE`] after `since`, then list (pid and command line) what still carries
/// `needle`, and SIGKILL it so a failure leaves nothing behind. A process whose command line
/// is empty by the time it is listed has exited meanwhile (a zombie has none) and is not
/// counted.
pub fn survivors(needle: &str, since: Instant) -> Vec<String> {
    // Kept, a deadline and not a readiness wait: K1 is "nothing left at GONE", and a sandbox
    // process without the marker (bwrap, init) may still start one that carries it, so an
    // early empty listing proves nothing.
    std::thread::sleep((since + GONE).saturating_duration_since(Instant::now()));
    let left: Vec<String> = pids_with(needle)
        .into_iter()
        .filter_map(|p| {
            let cmd = cmdline(p).unwrap_or_default();
            (!cmd.trim().is_empty()).then(|| format!("{p} {}", cmd.trim()))
        })
        .collect();
    reap_leftovers(needle);
    left
}

/// Whether a process runs with exactly this command line (arguments joined by spaces), e.g.
/// `sleep <marker>` itself rather than a shell or a launcher that mentions it.
pub fn running(line: &str) -> bool {
    pids_with(line).into_iter().any(|p| cmdline(p).is_some_and(|l| l.trim_end_matches(' ') == line))
}
