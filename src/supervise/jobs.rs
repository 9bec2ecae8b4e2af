//! Job control and the terminal keys that need snug (SPEC T3, T5, T8, T12, T13, G6's CONT):
//! stopping the sandbox with snug, continuing both once, the lazy hand-over of the terminal,
//! and the double-^C force-quit.

use super::{Supervisor, FORCE_QUIT};
use crate::channel::{Order, Resume};
use crate::log::log;
use crate::mode::Mode;
use crate::signals::signame;
use std::time::Instant;

impl Supervisor {
    /// snug received TSTP, TTIN or TTOU (^Z at a terminal its group holds, or `kill` from a
    /// process): stop every sandbox process first, then snug itself once init says they are
    /// stopped, so a job the shell lists as stopped never runs on (T12).
    pub(super) fn halt(&mut self, sig: i32) {
        if self.halting.is_none() {
            self.halting = Some(sig);
            self.order(Order::Stop);
            log!("stopping every sandbox process before snug stops with {}", signame(sig));
        }
    }

    /// Init stopped every sandbox process: take the terminal back if the sandbox had it (init
    /// refuses terminal changes since the order, T11), then stop snug alone with the signal
    /// it got; its group got the terminal's ^Z already, and a `kill` named snug alone.
    pub(super) fn on_halted(&mut self) {
        let Some(sig) = self.halting.take() else { return };
        self.terminal.take_back();
        self.stopped = Some(Resume::All);
        log!("sandbox stopped; stopping snug with {}", signame(sig));
        self.stop_self(sig, false);
    }

    /// Stop snug (and its group when `group`) until continued. The grace's clock does not
    /// run meanwhile: a stopped sandbox cannot clean up, and a grace that expired while the
    /// job sat stopped would tear down a payload that never had its second (G2).
    fn stop_self(&mut self, sig: i32, group: bool) {
        let since = Instant::now();
        crate::signals::stop_with(sig, group);
        let paused = since.elapsed();
        if let Some((deadline, first)) = self.grace {
            self.grace = Some((deadline + paused, first));
        }
        log!("snug continued after {} ms", paused.as_millis());
    }

    /// Init saw the payload stop (terminal mode). A hint from inside: act only if the payload
    /// really is stopped.
    pub(super) fn on_stopped(&mut self, sig: i32) {
        let state = self.payload().and_then(|p| p.state());
        log!("payload stopped by {} (state {state:?})", signame(sig));
        if !matches!(self.mode, Mode::Terminal { .. }) || !matches!(state, Some('T') | Some('t')) {
            // Init stopped carrying out terminal changes on its report: tell it they stand.
            return self.order(Order::Handed(self.terminal.handed()));
        }
        // T13: the payload needs the terminal (it read it, or changed its settings) while
        // snug held it back for a pipeline's pager: hand it over now instead of stopping.
        if matches!(sig, libc::SIGTTIN | libc::SIGTTOU) && self.terminal.hand_over_late() {
            log!("the payload needs the terminal: handed it the foreground");
            self.order(Order::Handed(true));
            return self.order(Order::Continue(Resume::Job));
        }
        self.terminal.take_back();
        self.stopped = Some(Resume::Job);
        // Stop the whole job, as the terminal's ^Z would: a wrapper between the shell and
        // snug (`bash -c`, make) must stop too, or the shell never sees the job stopped.
        log!("stopping snug's process group with {}", signame(sig));
        self.stop_self(sig, true);
    }

    /// Init refused a sandbox process a change of the caller's terminal because the sandbox
    /// did not hold it. If snug's own group holds the foreground now (the caller's shell moved
    /// this job to the front while it ran), the refusal was wrong from then on: hand the
    /// terminal over so the next change goes through (T1, T11).
    pub(super) fn on_refused(&mut self, req: i32) {
        if self.terminal.hand_over_late() {
            log!("the job is in the foreground: handed the sandbox the terminal (after refusing ioctl {req:#x})");
            return self.order(Order::Handed(true));
        }
        log!("refused a sandbox process's change of the caller's terminal (ioctl {req:#x}): the caller holds the foreground");
    }

    /// snug was continued (`fg`, `bg`, or a CONT from a process): give the terminal back to
    /// the sandbox if snug's group now holds it, and continue the sandbox once (G6): what a
    /// job stop stopped, or every process after a whole stop or when nothing was stopped.
    pub(super) fn resume(&mut self) {
        let how = self.stopped.take().unwrap_or(Resume::All);
        let handed = self.terminal.resume();
        // Wake init alone, should someone have stopped it: it relays the CONT exactly once.
        if let Some(init) = self.init() {
            let _ = init.signal(libc::SIGCONT);
        }
        self.order(Order::Handed(handed));
        self.order(Order::Continue(how));
        log!("continued the sandbox ({how:?})");
    }

    /// The terminal sent a key (^C, ^\) to the sandbox, which holds the foreground from
    /// snug's hand: without snug it would have reached the caller's job too, snug's process
    /// group (a script's loop, `make` and its other jobs, a `bash -c` wrapper). Send it there
    /// as well, so that a non-interactive shell sees its own SIGINT and ends its loop when the
    /// payload dies of it, as it would without snug (R3, T2). snug's own copy is dropped on
    /// receipt. Checked first: only while snug handed the sandbox the terminal and its own
    /// group is not in front, as a ^C typed then must be.
    pub(super) fn on_typed(&mut self, sig: i32) {
        if !matches!(sig, libc::SIGINT | libc::SIGQUIT) || !self.terminal.sandbox_in_front() {
            return log!("ignored a key report for {} (the sandbox does not hold the terminal)", signame(sig));
        }
        let own = rustix::process::getpgrp().as_raw_nonzero().get();
        let _ = crate::signals::kill(-own, sig);
        log!("sent the terminal's {} to snug's own process group {own} too (R3)", signame(sig));
    }

    /// A ^C reached the sandbox. One that reached no handler followed by another within
    /// [`FORCE_QUIT`] tears down (T3); a payload that answers ^C (a REPL, an editor) is never
    /// ended by keys alone.
    pub(super) fn on_interrupt(&mut self, unanswered: bool) {
        if !unanswered {
            self.last_unanswered = None;
            return log!("^C caught by the foreground: no force-quit");
        }
        let now = Instant::now();
        match self.last_unanswered {
            Some(t) if now.duration_since(t) <= FORCE_QUIT => {
                log!("second unanswered ^C within {} ms: force-quit", FORCE_QUIT.as_millis());
                self.teardown(libc::SIGINT, crate::report::EndedBy::ForceQuit);
            }
            _ => {
                log!("^C reached no handler (the foreground ignores or blocks SIGINT)");
                self.last_unanswered = Some(now);
            }
        }
    }
}
