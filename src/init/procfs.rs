//! What init reads of sandbox processes from its own `/proc` (`proc(5)`) and its pty:
//! groups, sessions, the pty's foreground and the signal state of a group (T3). As the
//! namespace's pid 1, init sees exactly the sandbox's processes, under the numbers they see
//! themselves.

use snug_core::init::Procs;
use snug_core::{Pid, Signal};
use std::os::fd::BorrowedFd;

/// The fields of `/proc/PID/stat` after the command name: state, ppid, pgrp, session, tty_nr.
fn stat_fields(pid: Pid) -> Option<Vec<i64>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().skip(1).take(4).filter_map(|f| f.parse().ok()).collect())
}

/// The process group of `pid`, from its stat line.
pub fn pgrp(pid: Pid) -> Option<Pid> {
    stat_fields(pid)?.get(1).map(|v| Pid(*v as i32))
}

/// The session of `pid`, from its stat line.
pub fn session(pid: Pid) -> Option<Pid> {
    stat_fields(pid)?.get(2).map(|v| Pid(*v as i32))
}

/// Every pid in this namespace but init's own.
pub fn pids() -> Vec<Pid> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()).filter(|p| *p != 1).map(Pid).collect()
}

/// Whether SIGINT reached no handler in process group `among` (every sandbox process for
/// `None`): each ignored or blocked it (SPEC T3). A process with a handler answered; one
/// with the default action died of it.
pub fn int_unanswered(among: Option<Pid>) -> bool {
    const INT: i32 = Signal::INT.0;
    let off = |s: &sigseal::SigState| sigseal::SigState::has(s.ignored, INT) || sigseal::SigState::has(s.blocked, INT);
    pids()
        .into_iter()
        .filter(|p| among.is_none() || pgrp(*p) == among)
        .filter_map(|p| sigseal::SigState::of(p.raw()).ok())
        .all(|s| off(&s))
}

/// The sandbox as init's decisions read it ([`Procs`]): `/proc`, and the pty when init has one.
pub struct Sandbox<'a> {
    /// The sandbox's pty (terminal mode).
    pub pty: Option<BorrowedFd<'a>>,
}

impl Procs for Sandbox<'_> {
    fn pgrp(&self, pid: Pid) -> Option<Pid> {
        pgrp(pid)
    }

    fn front(&self) -> Option<Pid> {
        let g = rustix::termios::tcgetpgrp(self.pty?).ok()?;
        Some(crate::sys::process::from_rustix(g))
    }

    fn group_alive(&self, group: Pid) -> bool {
        pids().into_iter().any(|p| pgrp(p) == Some(group))
    }
}
