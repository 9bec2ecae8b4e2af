//! The controlling terminal in terminal mode (SPEC T1, T5, T7): who holds the foreground.
//! Every `tcsetpgrp(3)` snug makes runs with SIGTTOU blocked, as a job-control shell's do.

use crate::init::with_ttou_blocked;
use crate::mode::Mode;

/// snug's view of the terminal on fd 0.
#[derive(Debug)]
pub struct Terminal {
    mode: Mode,
    /// snug's own process group (the caller's job).
    own: i32,
    /// The sandbox group's id in snug's namespace (init's host pid), once init is up.
    sandbox: Option<i32>,
}

fn foreground() -> i32 {
    // SAFETY: plain syscall on fd 0.
    unsafe { libc::tcgetpgrp(0) }
}

fn set_foreground(pgrp: i32) -> bool {
    // SAFETY: tcsetpgrp on fd 0, with SIGTTOU blocked so a background caller is not stopped.
    unsafe { with_ttou_blocked(|| libc::tcsetpgrp(0, pgrp) == 0) }
}

impl Terminal {
    /// The terminal as snug finds it at start.
    pub fn new(mode: Mode) -> Terminal {
        // SAFETY: plain syscall.
        Terminal { mode, own: unsafe { libc::getpgrp() }, sandbox: None }
    }

    fn active(&self) -> bool {
        matches!(self.mode, Mode::Terminal { .. })
    }

    /// Init is up and leads group `pgid`.
    pub fn sandbox_group(&mut self, pgid: i32) {
        self.sandbox = Some(pgid);
    }

    /// The payload stopped: if the sandbox holds the foreground, take it back for snug's
    /// group, so the caller's shell finds its job's group in front when snug stops (T5).
    pub fn take_back(&self) {
        if self.active() && self.sandbox.is_some() && foreground() == self.sandbox.unwrap_or(-1) {
            set_foreground(self.own);
        }
    }

    /// snug was continued: when its group is now the foreground (`fg`), hand it to the
    /// sandbox; after `bg` leave it (T5).
    pub fn resume(&self) {
        if let (true, Some(s)) = (self.active(), self.sandbox) {
            if foreground() == self.own {
                set_foreground(s);
            }
        }
    }

    /// On every way out: the group that held the foreground before snug gave it away gets it
    /// back, so the caller's next read is not stopped by SIGTTIN (T7).
    pub fn restore(&self) {
        if let (true, Some(s)) = (self.active(), self.sandbox) {
            if foreground() == s {
                set_foreground(self.own);
            }
        }
    }
}
