//! The supervisor's side of the sandbox's pty (SPEC T1–T3, T8, T10): the start in raw mode,
//! the keys that need snug, and the caller's terminal going away.

use super::{Supervisor, FORCE_QUIT};
use crate::bridge::{Bridge, Event};
use crate::channel::Order;
use crate::log::log;
use crate::signals::{signame, Delivered, SI_KERNEL};
use std::time::Instant;

impl Supervisor {
    /// Attach the bridge (terminal mode). An immediate hand-over goes raw now, before the
    /// payload starts, so that typeahead reaches it (T1, T14).
    pub fn terminal(mut self, bridge: Option<Bridge>) -> Supervisor {
        self.bridge = bridge;
        if self.handed && !self.set_input(true) {
            // The job left the front during start-up: defer (the payload's first read stops it).
            self.order(Order::Front(false));
            self.handed = false;
        }
        if self.handed {
            log!("hand-over at start: the payload holds its terminal's foreground");
        }
        self
    }

    /// A signal key of the caller's terminal (^C, ^\\, ^Z) while snug copies keys: the
    /// caller's terminal signalled snug's job with it (its signal keys are the pty's, see
    /// [`crate::tty::CallerTty::mirror`]), as it would without snug; the pty gets the key, so
    /// the payload's foreground group gets its signal too, once (T2). A ^C also asks init
    /// whether anything caught it (T3). True when handled here.
    pub(super) fn on_terminal_key(&mut self, got: &Delivered) -> bool {
        // One hangup, however many SIGHUPs tell of it (the kernel's to a session leader, the
        // caller's shell's to its jobs, the bridge's EIO): it starts one grace, never the
        // second signal's teardown (T10).
        let hung_up = self.bridge.as_ref().is_some_and(Bridge::hung_up);
        if got.sig == libc::SIGHUP && hung_up && self.grace.is_some_and(|(_, s)| s == libc::SIGHUP) {
            log!("SIGHUP of the same hangup: it counts once (T10)");
            return true;
        }
        let key = matches!(got.sig, libc::SIGINT | libc::SIGQUIT | libc::SIGTSTP) && got.by_terminal();
        // Before the payload holds the pty's foreground, a key there would reach nobody: it
        // waits with the other signals and goes to the payload's group (or stops the job).
        if !self.started() {
            return false;
        }
        let Some(b) = self.bridge.as_mut().filter(|b| key && b.input()) else { return false };
        if !b.send_key(got.sig) {
            return false;
        }
        // Not a relay: the pty's line discipline makes the signal (the report lists a ^C as
        // delivered by the terminal, from init's answer to Typed, O5).
        log!("typed {}: passed to the sandbox's terminal as its key", signame(got.sig));
        if got.sig == libc::SIGINT {
            self.order(Order::Typed(got.sig));
        }
        true
    }

    /// What the bridge saw.
    pub(super) fn on_bridge(&mut self, e: Event) {
        match e {
            Event::Typed(sig) => self.on_typed(sig),
            Event::HungUp => {
                log!("the caller's terminal went away");
                if self.grace.is_some_and(|(_, s)| s == libc::SIGHUP) {
                    return log!("its hangup was relayed already: it counts once (T10)");
                }
                if crate::signals::ignored(libc::SIGHUP) {
                    return log!(
                        "SIGHUP ignored at start (nohup): the run goes on, the sandbox keeps its terminal (S2)"
                    );
                }
                if let Some(b) = self.bridge.as_mut() {
                    b.close_pty(); // the sandbox's terminal hangs up too (T10)
                }
                self.on_signal(Delivered { sig: libc::SIGHUP, code: SI_KERNEL, pid: 0 });
            }
            Event::Tostop => {
                log!("output waits: snug's job is in the background and the caller set tostop (T8)");
                self.halt(libc::SIGTTOU);
            }
        }
    }

    /// A key the pty turns into `sig` for its foreground group. Without snug the caller's job
    /// would have got it too, so it goes to snug's own process group (a script's loop,
    /// `make` and its other jobs, a `bash -c` wrapper, R3, T2); snug drops its own copy on
    /// receipt. A ^C also asks init whether anything caught it (T3).
    fn on_typed(&mut self, sig: i32) {
        let own = rustix::process::getpgrp().as_raw_nonzero().get();
        let _ = crate::signals::kill(-own, sig);
        log!(
            "typed {}: the sandbox's terminal signals its foreground; sent to snug's own process group {own} too",
            signame(sig)
        );
        if sig == libc::SIGINT {
            self.order(Order::Typed(sig));
        }
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
