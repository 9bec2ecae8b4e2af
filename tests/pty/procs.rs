//! The process table as the caller's namespace sees it (`/proc`), for finding snug, bwrap
//! and payloads under the caller's shell, and their groups and states.

use std::path::Path;

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

/// Among `pids`, the one running `exe` whose parent does not (a process cloned from it, such
/// as snug's nest before its exec, or snug's init, has the same binary).
pub fn outermost(pids: &[i32], exe: &Path) -> Option<i32> {
    let runs = |p: i32| std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e == exe);
    pids.iter().copied().find(|p| runs(*p) && stat(*p).is_some_and(|s| !runs(s.ppid)))
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

/// The fields of `/proc/PID/stat` the terminal tests look at (`proc_pid_stat(5)`).
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    pub tty_nr: i32,
    pub tpgid: i32,
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
    })
}
