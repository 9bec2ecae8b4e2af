//! Copying what the pty holds to the caller's terminal to the last byte: before snug's job
//! stops, and when the sandbox has ended (SPEC T5, T14).

use super::{Bridge, DRAIN};
use rustix::fd::AsRawFd;
use std::time::{Duration, Instant};

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

    /// The sandbox is gone: copy what is left in the pty to the last byte (T14), bounded by
    /// [`DRAIN`]; then the caller's own settings back.
    pub fn drain(&mut self) {
        let until = Instant::now() + DRAIN;
        let mut events = Vec::new();
        while !self.hung_up && (self.master.is_some() || !self.to_tty.is_empty()) && Instant::now() < until {
            if self.to_tty.is_empty() {
                self.read_master();
                if self.to_tty.is_empty() && self.master.is_some() {
                    // Nothing yet but the pty still open: wait a little for the last writer.
                    let fds = self.poll_fds();
                    let mut one = [fds[1]];
                    let _ = crate::fdpoll::poll_raw(&mut one, 10);
                }
                continue;
            }
            self.tostop = false;
            self.write_tty(&mut events);
            if self.tostop || !self.to_tty.is_empty() {
                let mut one = [libc::pollfd { fd: self.tty.fd().as_raw_fd(), events: libc::POLLOUT, revents: 0 }];
                let _ = crate::fdpoll::poll_raw(&mut one, 10);
                if self.tostop {
                    break; // a background job with tostop never writes (T8)
                }
            }
        }
        self.set_input(false);
    }
}
