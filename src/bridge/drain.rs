//! Copying what the pty holds to the caller's terminal to the last byte: before snug's job
//! stops, and when the sandbox has ended (SPEC T5, T14).

use super::Bridge;
use std::time::{Duration, Instant};

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
                self.read_master();
                if self.to_tty.is_empty() {
                    return;
                }
            }
            self.write_tty(&mut events);
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
            let [mut tty, mut master] = self.poll_fds();
            tty.events &= libc::POLLOUT;
            if self.to_tty.is_empty() {
                tty.fd = -1;
            }
            master.events &= libc::POLLIN;
            let mut fds = vec![tty, master];
            fds.extend(watch.fds());
            if crate::sys::poll::poll_raw(&mut fds, -1).is_err() {
                continue; // EINTR
            }
            if watch.ends(&fds[2..]) {
                crate::log::log!("drain ended before the last byte: {} left", self.to_tty.len());
                break;
            }
            if fds[1].revents != 0 && self.to_tty.len() < super::CHUNK {
                self.read_master();
            }
            if fds[0].revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                self.hang_up(&mut events);
            } else if !self.to_tty.is_empty() {
                self.write_tty(&mut events);
            }
        }
        self.set_input(false);
    }
}
