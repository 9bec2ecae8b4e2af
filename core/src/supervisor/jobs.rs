//! Job control and the sandbox's pty (SPEC T1–T3, T5, T8, T10, T12, G6's CONT): the keys
//! that need snug, stopping the sandbox with snug, continuing both once, and who holds the
//! pty's foreground.

use super::{Effect, Note, Order, Origin, Resume, Supervisor, Tty};
use crate::types::Signal;
use std::time::{Duration, Instant};

/// Who holds what, and what is stopped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Job {
    /// The payload's side holds the pty's foreground (by snug's decision): the hand-over
    /// happened, immediately or deferred (T1).
    pub handed: bool,
    /// The payload stopped reading or setting its terminal while snug's job was in the
    /// background: `fg` hands it over (T1, T8).
    pub wants_terminal: bool,
    /// How the sandbox was stopped by snug, for the next continue (T5, T12).
    pub stopped: Option<Resume>,
    /// A job-control signal snug received and waits for [`super::Event::Halted`] to stop itself
    /// with (T12).
    pub halting: Option<Signal>,
}

/// What waits for the caller's terminal's answer to [`Effect::Raw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterRaw {
    /// The immediate hand-over at the start (T1).
    Start,
    /// A hand-over; `cont`: continue the payload's job after it (a deferred stop, T1);
    /// `resume`: then continue the sandbox so (T5).
    HandOver { cont: bool, resume: Option<Resume> },
}

impl<E> Supervisor<E> {
    /// A signal key of the caller's terminal (^C, ^\\, ^Z) while snug copies keys: the pty
    /// gets the key, so the payload's foreground group gets its signal, once (T2). A ^C also
    /// asks init whether anything caught it (T3). True when decided here.
    pub(super) fn terminal_key(&mut self, sig: Signal, origin: Origin, tty: Tty, fx: &mut Vec<Effect>) -> bool {
        // One hangup, however many SIGHUPs tell of it (the kernel's to a session leader, the
        // caller's shell's to its jobs, the bridge's EIO): it starts one grace, never the
        // second signal's teardown (T10).
        if sig == Signal::HUP
            && tty.hung_up
            && (self.grace.is_some_and(|g| g.first == Signal::HUP) || self.hangup_relayed)
        {
            fx.push(Effect::Note(Note::SameHangup));
            return true;
        }
        let key = matches!(sig, Signal::INT | Signal::QUIT | Signal::TSTP) && origin == Origin::Terminal;
        // Before the payload holds the pty's foreground, a key there would reach nobody: it
        // waits with the other signals and goes to the payload's group (or stops the job).
        if !(self.started() && self.cfg.terminal && key && tty.copying && tty.has_key) {
            return false;
        }
        // Not a relay: the pty's line discipline makes the signal.
        fx.extend([Effect::PtyKey(sig), Effect::Note(Note::KeyTyped(sig))]);
        if sig == Signal::INT {
            fx.push(Effect::Order(Order::Typed(sig)));
        }
        true
    }

    /// A key the pty turns into `sig` for its foreground group. Without snug the caller's job
    /// would have got it too, so it goes to snug's own process group (R3, T2); snug drops its
    /// own copy on receipt. A ^C also asks init whether anything caught it (T3).
    pub(super) fn typed(&mut self, sig: Signal, fx: &mut Vec<Effect>) {
        fx.push(Effect::SignalOwnGroup(sig));
        if sig == Signal::INT {
            fx.push(Effect::Order(Order::Typed(sig)));
        }
    }

    /// The caller's terminal went away: SIGHUP and the grace, once, unless ignored at start;
    /// the pty hangs up too (T10, S2).
    pub(super) fn hung_up(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        if self.grace.is_some_and(|g| g.first == Signal::HUP) || self.hangup_relayed {
            return fx.push(Effect::Note(Note::SameHangup));
        }
        if self.cfg.hup_ignored {
            return fx.push(Effect::Note(Note::HangupIgnored));
        }
        self.close_pty(fx);
        // During another signal's grace the terminal's going away, seen by snug alone, is no
        // second request, and without snug no one would tell a job of it but a SIGHUP (which,
        // when it comes, is relayed): after `exit` with a stopped job, bash's TERM, then the
        // window closes, and the payload's TERM handler runs to its end. The grace goes on.
        if self.grace.is_some() {
            return fx.push(Effect::Note(Note::UnderGrace(Signal::HUP)));
        }
        // As the kernel's SIGHUP to a session leader; no grace of a hangup runs (above), so
        // the terminal's state does not matter to this signal.
        self.signal(now, (Signal::HUP, Origin::Terminal, false), Tty::default(), fx);
    }

    /// Hang the sandbox's pty up, once (T10).
    pub(super) fn close_pty(&mut self, fx: &mut Vec<Effect>) {
        if !std::mem::replace(&mut self.pty_closed, true) {
            fx.push(Effect::ClosePty);
        }
    }

    /// snug received TSTP, TTIN or TTOU (or output waits under `tostop`): stop every sandbox
    /// process first, then snug itself once init says they are stopped, so a job the shell
    /// lists as stopped never runs on (T8, T12).
    pub(super) fn halt(&mut self, sig: Signal, fx: &mut Vec<Effect>) {
        if self.job.halting.is_none() {
            self.job.halting = Some(sig);
            fx.push(Effect::Order(Order::Stop));
        }
    }

    /// Init stopped every sandbox process: the caller's settings back, then stop snug alone
    /// with the signal it got; its group got the terminal's ^Z already, and a `kill` named
    /// snug alone (T12).
    pub(super) fn halted(&mut self, fx: &mut Vec<Effect>) {
        let Some(sig) = self.job.halting.take() else { return };
        self.job.stopped = Some(Resume::All);
        self.cooked(fx);
        fx.push(Effect::StopSelf { sig, group: false });
    }

    /// Init saw the payload stop (terminal mode; a hint, acted on only when `really`).
    pub(super) fn payload_stopped(&mut self, sig: Signal, really: bool, tty: Tty, fx: &mut Vec<Effect>) {
        if !self.cfg.terminal || !really {
            return;
        }
        // The payload read its terminal or changed its settings before the hand-over (T1,
        // T13): hand it over now if snug's job is in front, else stop as a background job.
        if matches!(sig, Signal::TTIN | Signal::TTOU) && !self.job.handed {
            if tty.in_front {
                return self.hand_over(true, None, fx);
            }
            self.job.wants_terminal = true;
        }
        self.job.stopped = Some(Resume::Job);
        self.cooked(fx);
        // Stop the whole job, as the terminal's ^Z would: a wrapper between the shell and
        // snug (`bash -c`, make) must stop too, or the shell never sees the job stopped (T5).
        fx.push(Effect::StopSelf { sig, group: true });
    }

    /// A payload process waits for its terminal in `poll`/`select` while init holds the pty's
    /// foreground, and a line waits at the caller's terminal: hand the pty over, as the
    /// payload's read would have made snug do (T13, T15). Nothing while snug's job is in the
    /// background (a read would stop it there, T8), stopped, or already handed over.
    pub(super) fn payload_waits(&mut self, tty: Tty, fx: &mut Vec<Effect>) {
        let deferred = self.cfg.terminal && !self.job.handed && self.job.stopped.is_none();
        if deferred && tty.in_front && self.after_raw.is_none() && self.started() {
            self.hand_over(false, None, fx);
        }
    }

    /// snug was continued after a stop that lasted `paused`. The grace's clock did not run
    /// meanwhile: a stopped sandbox cannot clean up (G2).
    pub(super) fn woke(&mut self, paused: Duration) {
        if let Some(g) = &mut self.grace {
            g.until += paused;
        }
    }

    /// snug was continued (`fg`, `bg`, or a CONT from a process): in front, hand the pty
    /// over again if the payload had it or wants it; in the background, stay cooked and let
    /// init take the pty's foreground, so that a read stops the job (T5, T8). Then continue
    /// the sandbox once (G6): what a job stop stopped, or every process after a whole stop or
    /// when nothing was stopped.
    pub(super) fn resume(&mut self, tty: Tty, fx: &mut Vec<Effect>) {
        let how = self.job.stopped.take().unwrap_or(Resume::All);
        if self.cfg.terminal {
            if tty.in_front {
                if self.job.handed || self.job.wants_terminal {
                    return self.hand_over(false, Some(how), fx);
                }
            } else {
                self.cooked(fx);
                if self.job.handed {
                    self.job.handed = false;
                    fx.push(Effect::Order(Order::Front(false)));
                }
            }
            // Not handed over: the size as it is now, and the payload's group told (T17).
            fx.push(Effect::Resize);
            self.winch_deferred(fx);
        }
        continue_sandbox(how, fx);
    }

    /// While init holds the pty's foreground (deferred), the kernel's SIGWINCH for a new size
    /// reaches init's group, not the payload's: init sends it on to the payload's group (T17).
    pub(super) fn winch_deferred(&self, fx: &mut Vec<Effect>) {
        if !self.job.handed && self.started() {
            fx.push(Effect::Order(Order::Key(Signal::WINCH)));
        }
    }

    /// snug's job is in front: raw first; the rest once the terminal answered ([`Self::raw`]).
    fn hand_over(&mut self, cont: bool, resume: Option<Resume>, fx: &mut Vec<Effect>) {
        self.after_raw = Some(AfterRaw::HandOver { cont, resume });
        fx.push(Effect::Raw);
    }

    /// The caller's terminal answered [`Effect::Raw`].
    pub(super) fn raw(&mut self, ok: bool, fx: &mut Vec<Effect>) {
        match self.after_raw.take() {
            // The job left the front during start-up: defer (the payload's first read stops it).
            Some(AfterRaw::Start) if !ok => {
                self.job.handed = false;
                fx.push(Effect::Order(Order::Front(false)));
            }
            Some(AfterRaw::Start) => fx.push(Effect::Note(Note::HandedAtStart)),
            None => {}
            Some(AfterRaw::HandOver { cont, resume }) => {
                if ok {
                    // The window size, the pty's foreground to the payload's side, and (after
                    // a deferred stop) the payload continued (T1, T5).
                    fx.push(Effect::Resize);
                    if !self.job.handed {
                        self.job.handed = true;
                        fx.push(Effect::Order(Order::Front(true)));
                    }
                    self.job.wants_terminal = false;
                    if cont {
                        fx.push(Effect::Order(Order::Continue(Resume::Job)));
                    }
                }
                if let Some(how) = resume {
                    continue_sandbox(how, fx);
                }
            }
        }
    }

    /// Leave the caller's terminal unread in its own settings (terminal mode).
    fn cooked(&self, fx: &mut Vec<Effect>) {
        if self.cfg.terminal {
            fx.push(Effect::Cooked);
        }
    }
}

/// Wake init alone, should someone have stopped it (it relays the CONT exactly once), then
/// continue the sandbox `how` (G6, T5, T12).
fn continue_sandbox(how: Resume, fx: &mut Vec<Effect>) {
    fx.extend([Effect::ContinueInit, Effect::Order(Order::Continue(how))]);
}
