//! From what the kernel, init and the bridge said to the core's events: a signal with its
//! origin and the caller's terminal as it is now, a report checked before it is believed
//! (DESIGN.md, "Channel"). Nothing here decides what to do.

use super::SupervisorLoop;
use crate::bridge;
use crate::channel::{FromInit, Received};
use crate::error::{failure, INTERNAL};
use crate::log::log;
use crate::pidfd::Pinned;
use crate::signals::{signame, Delivered};
use snug_core::supervisor::{Event, Origin, Tty};
use snug_core::{Pid, Signal, WaitStatus};
use std::os::fd::OwnedFd;

impl SupervisorLoop {
    /// Everything init sent, until its socket is empty or closed.
    pub(super) fn read_reports(&mut self) {
        loop {
            match self.chan.recv_report(true) {
                Ok(Received::Packet(Some(r), fd)) => self.on_report(r, fd),
                Ok(Received::Packet(None, _)) => {}
                Ok(Received::Empty) => return,
                // Init is gone: a hung-up socket polls readable forever, so stop watching it
                // (otherwise the loop spins until bwrap is reaped, B5).
                Ok(Received::Closed) | Err(_) => {
                    self.chan_open = false;
                    return;
                }
            }
        }
    }

    fn on_report(&mut self, r: FromInit, fd: Option<OwnedFd>) {
        self.record.report(r);
        let event = match r {
            FromInit::Hello => match fd.and_then(|fd| Pinned::adopt(fd).ok()) {
                Some(init) => {
                    log!(
                        "tree: bwrap pid {} (pid 1 of the outer namespace), init pid {} (pid 1 of the sandbox, leads its group)",
                        self.bwrap.host_pid,
                        init.host_pid
                    );
                    self.init = Some(init);
                    Event::Hello
                }
                None => Event::Failed(failure(INTERNAL, "sandbox init sent no usable pidfd")),
            },
            FromInit::Started(sandbox_pid) => {
                self.payload = fd.and_then(|fd| Pinned::adopt(fd).ok());
                let host = self.payload.as_ref().map_or(0, |p| p.host_pid.raw());
                log!("payload started: pid {host} (pid {sandbox_pid} in the sandbox)");
                Event::Started { tty: self.tty(None) }
            }
            FromInit::Stopped(sig) => {
                // A hint from inside: believed only if the payload really is stopped.
                let state = self.payload.as_ref().and_then(Pinned::state);
                log!("payload stopped by {} (state {state:?})", signame(sig));
                let really = matches!(state, Some('T') | Some('t'));
                Event::Stopped { sig, really, tty: self.tty(None) }
            }
            FromInit::Halted => Event::Halted,
            FromInit::Interrupt(unanswered) => Event::Interrupt { unanswered },
            FromInit::Exited(status) => {
                log!("payload ended: {}", describe(status));
                Event::Exited(status)
            }
            FromInit::Empty => return log!("sandbox empty"),
            FromInit::Leaving(_) => return,
            FromInit::ExecFailed(e) => Event::ExecFailed(e),
            FromInit::InitFailed(e) if e.0 == libc::ESTALE => Event::InitFailed(failure(
                crate::error::POLICY,
                "a mount inside DIR is not where snug placed it: a path inside DIR changed while the sandbox \
                 was set up, and nothing ran",
            )),
            FromInit::InitFailed(e) => {
                let code = crate::error::errno_code(e.0, INTERNAL);
                let hint = if e.0 == libc::EAGAIN { crate::bounds::cap_hint() } else { String::new() };
                Event::InitFailed(failure(code, format!("sandbox init failed: {}{hint}", crate::error::strerror(e.0))))
            }
        };
        self.on(event);
    }

    /// A signal from snug's signalfd, or one a control client asked for (L2); `together`:
    /// read in the same read as the one before it, with a SIGCONT, while snug was stopped
    /// ([`crate::signals::SignalFd::read_pending`]).
    pub(super) fn on_delivered(&mut self, got: Delivered, together: bool) {
        if self.draining.on {
            return self.drain_signal(got.sig);
        }
        let origin = if got.by_terminal() {
            Origin::Terminal
        } else if got.pid == Some(crate::sys::process::own()) {
            Origin::Own
        } else {
            Origin::Process(got.pid)
        };
        let from =
            if got.by_terminal() { "terminal".to_string() } else { format!("process {}", got.pid.map_or(0, Pid::raw)) };
        log!("received {} from {from} (si_code {})", signame(got.sig), got.code);
        let sig = got.sig;
        self.on(Event::Signal { sig, origin, together, tty: self.tty(Some(sig)) });
    }

    /// What the bridge saw.
    pub(super) fn on_bridge(&mut self, e: bridge::Event) {
        let event = match e {
            bridge::Event::Typed(sig) => Event::Typed(sig),
            bridge::Event::HungUp => {
                log!("the caller's terminal went away");
                Event::HungUp
            }
            bridge::Event::Tostop => {
                log!("output waits: snug's job is in the background and the caller set tostop (T8)");
                Event::Tostop
            }
            bridge::Event::PayloadWaits => {
                log!("a line waits and the payload waits for its terminal in poll/select: hand-over");
                Event::PayloadWaits { tty: self.tty(None) }
            }
        };
        self.on(event);
    }

    /// The caller's terminal now, for a decision that depends on it; `key`: whether the pty
    /// makes that signal from a key of its own.
    fn tty(&self, key: Option<Signal>) -> Tty {
        let Some(b) = &self.bridge else { return Tty::default() };
        Tty {
            in_front: b.tty.in_front(),
            copying: b.input(),
            hung_up: b.hung_up(),
            has_key: key.is_some_and(|s| b.has_key(s)),
        }
    }

    /// Init, from its hello on.
    pub(super) fn init(&self) -> Option<&Pinned> {
        self.init.as_ref()
    }
}

/// A wait status in words, for `-v`.
fn describe(status: WaitStatus) -> String {
    match status {
        WaitStatus::Signaled { sig, .. } => format!("killed by {}", signame(sig)),
        WaitStatus::Exited(code) => format!("exit {code}"),
        other => format!("{other:?}"),
    }
}
