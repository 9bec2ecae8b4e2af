//! The controlling terminal in terminal mode (SPEC T1, T5, T7): who holds the foreground.
//! Every `tcsetpgrp(3)` snug makes runs with SIGTTOU blocked, as a job-control shell's do.

use crate::mode::Mode;

/// snug's view of the terminal on fd 0.
#[derive(Debug)]
pub struct Terminal {
    mode: Mode,
    /// snug's own process group (the caller's job).
    own: i32,
    /// The sandbox group's id in snug's namespace (init's host pid), once init is up.
    sandbox: Option<i32>,
    /// The sandbox holds the foreground because snug gave it.
    handed: bool,
    /// The sandbox group that held the foreground when the payload stopped: an interactive
    /// shell payload leads a group of its own, and `fg` must give the terminal back to it.
    stopped_in_front: Option<i32>,
    /// The hand-over waits until the payload needs the terminal (T13): snug's stdout is not
    /// the terminal, so snug is likely a pipeline's writer (`snug -- make | less`) whose
    /// reader, in snug's own group, needs the foreground.
    deferred: bool,
}

use rustix::process::{getpgrp, test_kill_process_group, Pid};
use rustix::stdio::{stdin, stdout};
use rustix::termios::{isatty, tcgetpgrp, tcsetpgrp};

/// The terminal's foreground group (`tcgetpgrp(3)` on fd 0), -1 when there is none.
fn foreground() -> i32 {
    tcgetpgrp(stdin()).map_or(-1, |p| p.as_raw_nonzero().get())
}

/// `tcsetpgrp(3)` on fd 0, with SIGTTOU blocked so a background caller is not stopped.
fn set_foreground(pgrp: i32) -> bool {
    let Some(pgrp) = Pid::from_raw(pgrp) else { return false };
    crate::signals::with_blocked(libc::SIGTTOU, || tcsetpgrp(stdin(), pgrp).is_ok())
}

/// Whether process group `pgrp` has no process left (`kill(2)` with signal 0 says ESRCH).
fn empty(pgrp: i32) -> bool {
    Pid::from_raw(pgrp).is_some_and(|g| test_kill_process_group(g) == Err(rustix::io::Errno::SRCH))
}

impl Terminal {
    /// The terminal as snug finds it at start.
    pub fn new(mode: Mode) -> Terminal {
        let own = getpgrp().as_raw_nonzero().get();
        let deferred = !isatty(stdout());
        Terminal { mode, own, sandbox: None, handed: false, stopped_in_front: None, deferred }
    }

    /// Whether the sandbox holds the foreground because snug gave it (T11: init carries out
    /// the sandbox's terminal changes only then).
    pub fn handed(&self) -> bool {
        self.handed
    }

    /// snug handed the sandbox the terminal and snug's own group does not hold it now: a key
    /// typed now went to a sandbox group (T2).
    pub fn sandbox_in_front(&self) -> bool {
        self.active() && self.handed && foreground() != self.own
    }

    fn active(&self) -> bool {
        matches!(self.mode, Mode::Terminal { .. })
    }

    /// Init is up and leads group `pgid`; before the payload starts, give that group the
    /// foreground if snug's own group holds it right now (T1), unless the hand-over waits
    /// (T13). Decided now rather than at start: a snug stopped during start-up must not let
    /// the sandbox take the caller's terminal. True when handed.
    pub fn hand_over(&mut self, pgid: i32) -> bool {
        self.sandbox = Some(pgid);
        if self.active() && !self.deferred && foreground() == self.own && set_foreground(pgid) {
            self.handed = true;
        }
        self.handed
    }

    /// The payload needs the terminal (it read it, or changed its settings) while the sandbox
    /// does not hold it: hand it over now if snug's group holds the foreground. That is the
    /// waiting hand-over of a pipeline (T13), and a job the caller's shell moved to the
    /// foreground while it ran (`snug … &`, then `fg`: bash gives the terminal to a running
    /// job without a SIGCONT, so snug learns of it only now). True when handed.
    pub fn hand_over_late(&mut self) -> bool {
        let Some(sandbox) = self.sandbox else { return false };
        if !self.active() || self.handed || foreground() != self.own || !set_foreground(sandbox) {
            return false;
        }
        self.deferred = false;
        self.handed = true;
        true
    }

    /// The payload stopped: if snug gave the sandbox the foreground, remember which sandbox
    /// group holds it and take it back for snug's group, so the caller's shell finds its
    /// job's group in front when snug stops (T5).
    pub fn take_back(&mut self) {
        if !self.active() || !self.handed {
            return;
        }
        let fg = foreground();
        if fg != self.own {
            self.stopped_in_front = Some(fg);
            set_foreground(self.own);
        }
        self.handed = false;
    }

    /// snug was continued: when its group is now the foreground (`fg`), hand it to the
    /// sandbox group that had it at the stop (else the sandbox group); after `bg` leave it
    /// (T5). True when the sandbox holds the foreground from snug's hand.
    pub fn resume(&mut self) -> bool {
        let Some(sandbox) = self.sandbox else { return false };
        if !self.active() || self.deferred || foreground() != self.own {
            return self.handed;
        }
        let target = self.stopped_in_front.take().filter(|g| !empty(*g)).unwrap_or(sandbox);
        self.handed = set_foreground(target);
        self.handed
    }

    /// On every way out, after the sandbox is gone: if the foreground is a group with no
    /// process left (the sandbox's, or one the payload made), snug's group takes it back, so
    /// the caller's next read is not stopped by SIGTTIN or failed with EIO (T7). A live group
    /// (the caller's shell took the terminal back) is left alone.
    pub fn restore(&self) {
        if !self.active() {
            return;
        }
        let fg = foreground();
        if fg != self.own && empty(fg) {
            set_foreground(self.own);
        }
    }
}
