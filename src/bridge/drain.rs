//! Copying what the pty holds to the caller's terminal to the last byte: before snug's job
//! stops, and when the sandbox has ended (SPEC T5, T14).

use super::Bridge;
use crate::sys::poll::PollSet;
use std::time::{Duration, Instant};

/// What each entry of the drain's poll set is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The caller's terminal, while something waits for it.
    Tty,
    /// The pty's master.
    Master,
    /// What [`Watch::fds`] gave.
    Watch,
}

/// What else the final drain listens to: it has no time limit while the caller's terminal
/// merely does not read (^S, a slow terminal), so the person must be able to end it (T14).
pub trait Watch {
    /// Descriptors to poll along with the bridge's.
    fn fds(&self) -> Vec<libc::pollfd>;
    /// What `ready` (the same descriptors, polled) said ends the drain: a hangup, an INT,
    /// TERM or HUP, `snug stop --now`.
    fn ends(&mut self, ready: &[libc::pollfd]) -> bool;
}

impl Bridge {
    /// Copy what the pty holds now to the caller's terminal (bounded), before snug's job
    /// stops: output written just before the stop is shown before the shell's "Stopped", as
    /// without snug (T5, T14).
    pub fn flush(&mut self) {
        let until = Instant::now() + Duration::from_millis(100);
        let mut events = Vec::new();
        while Instant::now() < until && !self.hung_up {
            if self.to_tty.is_empty() {
                if !self.read_master(&mut events) {
                    return;
                }
            } else {
                self.write_tty(&mut events);
            }
            if self.tostop || !self.to_tty.is_empty() {
                return;
            }
        }
    }

    /// The sandbox is gone: copy what is left in the pty to the last byte (T14), for as long
    /// as that takes, until the caller's terminal hangs up or `watch` says to end; then the
    /// caller's own settings back. A background job whose terminal has `tostop` set never
    /// writes (T8): what is left then is dropped.
    pub fn drain(&mut self, watch: &mut dyn Watch) {
        let mut events = Vec::new();
        self.tostop = false;
        while !self.hung_up && !self.tostop && (self.master.is_some() || !self.to_tty.is_empty()) {
            let [tty, master] = self.poll_fds();
            let mut set = PollSet::default();
            if !self.to_tty.is_empty() {
                set.add(Slot::Tty, [libc::pollfd { events: tty.events & libc::POLLOUT, ..tty }]);
            }
            set.add(Slot::Master, [libc::pollfd { events: master.events & libc::POLLIN, ..master }]);
            set.add(Slot::Watch, watch.fds());
            if set.poll(None).is_err() {
                continue; // EINTR
            }
            if watch.ends(set.entries(Slot::Watch)) {
                crate::log::log!("drain ended before the last byte: {} left", self.to_tty.len());
                break;
            }
            if set.got(Slot::Master) != 0 && self.to_tty.len() < super::CHUNK {
                let _ = self.read_master(&mut events);
            }
            if set.got(Slot::Tty) & (libc::POLLHUP | libc::POLLERR) != 0 {
                self.hang_up(&mut events);
            } else if !self.to_tty.is_empty() {
                self.write_tty(&mut events);
            }
        }
        self.set_input(false);
    }
}
