//! Job control (SPEC T5, T8, T12, G6's CONT) and the hand-over of the sandbox's pty (T1):
//! stopping the sandbox with snug, continuing both once, and who holds the pty's foreground.

use super::Supervisor;
use crate::channel::{Order, Resume};
use crate::log::log;
use crate::mode::Mode;
use crate::signals::signame;
use std::time::Instant;

impl Supervisor {
    /// snug received TSTP, TTIN or TTOU (^Z at the caller's terminal while the hand-over is
    /// deferred, or `kill` from a process): stop every sandbox process first, then snug itself
    /// once init says they are stopped, so a job the shell lists as stopped never runs on (T12).
    pub(super) fn halt(&mut self, sig: i32) {
        if self.halting.is_none() {
            self.halting = Some(sig);
            self.order(Order::Stop);
            log!("stopping every sandbox process before snug stops with {}", signame(sig));
        }
    }

    /// Init stopped every sandbox process: the caller's settings back, then stop snug alone
    /// with the signal it got; its group got the terminal's ^Z already, and a `kill` named
    /// snug alone.
    pub(super) fn on_halted(&mut self) {
        let Some(sig) = self.halting.take() else { return };
        self.set_input(false);
        self.stopped = Some(Resume::All);
        log!("sandbox stopped; stopping snug with {}", signame(sig));
        self.stop_self(sig, false);
    }

    /// Stop snug (and its group when `group`) until continued. The grace's clock does not
    /// run meanwhile: a stopped sandbox cannot clean up, and a grace that expired while the
    /// job sat stopped would tear down a payload that never had its second (G2).
    fn stop_self(&mut self, sig: i32, group: bool) {
        if let Some(b) = self.bridge.as_mut() {
            b.flush();
        }
        let since = Instant::now();
        crate::signals::stop_with(sig, group);
        let paused = since.elapsed();
        if let Some((deadline, first)) = self.grace {
            self.grace = Some((deadline + paused, first));
        }
        if let Some(b) = self.bridge.as_mut() {
            b.stopped();
        }
        log!("snug continued after {} ms", paused.as_millis());
    }

    /// Init saw the payload stop (terminal mode). A hint from inside: act only if the payload
    /// really is stopped.
    pub(super) fn on_stopped(&mut self, sig: i32) {
        let state = self.payload().and_then(|p| p.state());
        log!("payload stopped by {} (state {state:?})", signame(sig));
        if !matches!(self.mode, Mode::Terminal { .. }) || !matches!(state, Some('T') | Some('t')) {
            return;
        }
        // The payload read its terminal or changed its settings before the hand-over (T1,
        // T13): hand it over now if snug's job is in front, else stop as a background job.
        if matches!(sig, libc::SIGTTIN | libc::SIGTTOU) && !self.handed {
            if self.in_front() {
                return self.hand_over(true);
            }
            self.wants_terminal = true;
        }
        self.set_input(false);
        self.stopped = Some(Resume::Job);
        // Stop the whole job, as the terminal's ^Z would: a wrapper between the shell and
        // snug (`bash -c`, make) must stop too, or the shell never sees the job stopped.
        log!("stopping snug's process group with {}", signame(sig));
        self.stop_self(sig, true);
    }

    /// snug's job is in front: raw, the window size, the pty's foreground to the payload's
    /// side, and (after a deferred stop) the payload continued.
    fn hand_over(&mut self, cont: bool) {
        if !self.set_input(true) {
            return;
        }
        if let Some(b) = &self.bridge {
            b.resize();
        }
        if !self.handed {
            self.order(Order::Front(true));
            self.handed = true;
        }
        self.wants_terminal = false;
        log!("hand-over: the payload holds its terminal's foreground; snug copies the caller's keys");
        if cont {
            self.order(Order::Continue(Resume::Job));
        }
    }

    /// Whether snug's job is the caller's terminal's foreground (terminal mode).
    pub(super) fn in_front(&self) -> bool {
        self.bridge.as_ref().is_some_and(|b| b.tty.in_front())
    }

    /// Copy the caller's keys (raw) or leave the terminal unread in its own settings.
    pub(super) fn set_input(&mut self, on: bool) -> bool {
        self.bridge.as_mut().is_some_and(|b| b.set_input(on))
    }

    /// snug was continued (`fg`, `bg`, or a CONT from a process): in front, hand the pty
    /// over again if the payload had it or wants it; in the background, stay cooked and let
    /// init take the pty's foreground, so that a read stops the job (T5, T8). Then continue
    /// the sandbox once (G6): what a job stop stopped, or every process after a whole stop or
    /// when nothing was stopped.
    pub(super) fn resume(&mut self) {
        let how = self.stopped.take().unwrap_or(Resume::All);
        if self.bridge.is_some() {
            if self.in_front() {
                if self.handed || self.wants_terminal {
                    self.hand_over(false);
                }
            } else {
                self.set_input(false);
                if self.handed {
                    self.order(Order::Front(false));
                    self.handed = false;
                    log!("take-back: snug's job is in the background; init holds the pty's foreground");
                }
            }
        }
        // Wake init alone, should someone have stopped it: it relays the CONT exactly once.
        if let Some(init) = self.init() {
            let _ = init.signal(libc::SIGCONT);
        }
        self.order(Order::Continue(how));
        log!("continued the sandbox ({how:?})");
    }
}
