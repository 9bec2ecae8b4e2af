//! The sandbox as the supervisor knows it: init from its hello on, the payload from init's
//! report that it forked it, and the signals that wait for that report (SPEC G1).

use super::Supervisor;
use crate::pidfd::Pinned;
use crate::relay::Action;

/// The sandbox from init's hello on.
pub(super) struct Sandbox {
    /// Init: pid 1 of the sandbox, leader of its group.
    pub init: Pinned,
    /// The payload's main process, once init reported it forked and its pidfd came through.
    pub payload: Option<Pinned>,
}

/// Whether signals can be relayed yet.
///
/// Not one queue with [`crate::channel::Outbox`]: these wait for the payload's fork, the
/// outbox's orders for room in init's socket. `Handed` and `Go` at hello, and `Stop`, go out
/// ahead of the signals waiting here but never ahead of orders waiting for room; one FIFO
/// would hold them behind the signals (or let them pass the orders) and change the order
/// init gets them in. And a waiting CONT is decided only at the fork: whether snug's group
/// holds the terminal then (T1).
pub(super) enum Start {
    /// Init has not reported the payload forked: the sandbox holds only init. Signals wait
    /// here in order of receipt, relayed once it has (G1).
    Pending(Vec<(Action, i32)>),
    /// The payload was forked: signals are relayed at once.
    Started,
}

impl Supervisor {
    /// Init, from its hello on.
    pub(super) fn init(&self) -> Option<&Pinned> {
        self.sandbox.as_ref().map(|s| &s.init)
    }

    /// The payload's main process, once started (and pinned).
    pub(super) fn payload(&self) -> Option<&Pinned> {
        self.sandbox.as_ref().and_then(|s| s.payload.as_ref())
    }

    /// Init reported the payload forked.
    pub(super) fn started(&self) -> bool {
        matches!(self.start, Start::Started)
    }

    /// Init reported the payload forked: keep its pidfd and relay what waited, in order.
    pub(super) fn on_started(&mut self, payload: Option<Pinned>) {
        if let Some(sandbox) = &mut self.sandbox {
            sandbox.payload = payload;
        }
        // Held back until now: before the fork the sandbox held only init.
        if let Start::Pending(pending) = std::mem::replace(&mut self.start, Start::Started) {
            for (action, sig) in pending {
                self.apply(action, sig);
            }
        }
    }
}

impl Supervisor {
    /// bwrap's stderr: its error line before init's hello (the sandbox never started), else
    /// each line as a `snug: bwrap:` line.
    pub(super) fn read_bwrap_err(&mut self) {
        let Some(fd) = &self.bwrap_err else { return };
        let mut buf = [0u8; 4096];
        // Poll said readable, or the writer is gone (EOF).
        let n = match rustix::io::read(fd, &mut buf) {
            Ok(n) if n > 0 => n,
            _ => {
                self.bwrap_err = None;
                return;
            }
        };
        let text = &buf[..n];
        if self.sandbox.is_some() {
            for line in String::from_utf8_lossy(text).lines() {
                crate::log::say!("snug: bwrap: {line}");
            }
        } else {
            self.bwrap_said.extend_from_slice(text);
        }
    }
}
