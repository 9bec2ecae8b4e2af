//! The final drain while the supervisor still listens (SPEC T14): the pty's last bytes reach
//! the caller's terminal however long it is paused, and a hangup, an INT, TERM or HUP (G4:
//! the first ended the sandbox already, or the payload ended on its own and this one says
//! "enough") or `snug stop --now` ends the wait.

use super::SupervisorLoop;
use crate::bridge::Watch;
use crate::log::log;
use snug_core::Signal;

/// What the drain listens to: every round of it, the state asked of it.
#[derive(Default)]
pub(super) struct Draining {
    /// The drain runs: signals and control requests end it instead of entering the core.
    pub on: bool,
    /// Something said to end it.
    pub ended: bool,
}

impl SupervisorLoop {
    /// Copy the pty's last bytes to the caller's terminal, then its own settings back (T7).
    pub(super) fn drain(&mut self) {
        let Some(mut b) = self.bridge.take() else { return };
        self.draining.on = true;
        b.drain(self);
        self.draining.on = false;
        self.bridge = Some(b);
    }

    /// A signal or a control request during the drain (see [`Draining`]).
    pub(super) fn drain_signal(&mut self, sig: Signal) {
        log!("received {} while draining", crate::signals::signame(sig));
        if matches!(sig, Signal::INT | Signal::TERM | Signal::HUP) {
            self.draining.ended = true;
        }
    }
}

impl Watch for SupervisorLoop {
    fn fds(&self) -> Vec<libc::pollfd> {
        let mut fds = vec![libc::pollfd { fd: self.signals.raw(), events: libc::POLLIN, revents: 0 }];
        fds.extend(self.control.iter().flat_map(|c| c.poll_fds()));
        fds
    }

    fn ends(&mut self, ready: &[libc::pollfd]) -> bool {
        if ready[0].revents != 0 {
            while let Some(got) = self.signals.read() {
                self.drain_signal(got.sig);
            }
        }
        self.on_control(&ready[1..], ready[0].revents != 0);
        self.draining.ended
    }
}
