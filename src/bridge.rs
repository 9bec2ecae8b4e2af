//! The bridge between the caller's terminal and the sandbox's pty (SPEC T2, T8, T10, T14):
//! output copied as it comes, keys copied while snug's job is in front and the payload holds
//! the pty, back-pressure by not reading (never by dropping), and the typed ^C and ^\ seen on
//! the way for the rows that need snug (T2, T3). Used by a run's supervisor and by
//! `snug exec` alike (L3).

use crate::sys::poll::PollSet;
use crate::tty::CallerTty;
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::io::Errno;
use rustix::termios::{self, LocalModes};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

mod drain;
pub use drain::Watch;
mod keys;
mod waiting;

/// How often snug looks again whether keys that are pending are taken now (see `keys`).
const RECHECK: Duration = Duration::from_millis(10);

/// A read of the master shorter than this ends a round of reads (see `read_master`).
const SHORT: usize = 512;

/// Bytes read at once, each way: 64 KiB (docs/design.md, "The pty model").
const CHUNK: usize = 64 << 10;

/// What the bridge saw that the supervisor acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A key the pty turns into this signal for its foreground group (^C: SIGINT, ^\:
    /// SIGQUIT), under the payload's own settings.
    Typed(snug_core::Signal),
    /// The caller's terminal went away (EIO or a hangup on it, T10).
    HungUp,
    /// Output waits while snug's job is in the background and the caller set `tostop`: the
    /// job must stop as a background writer does (T8).
    Tostop,
    /// A line waits at the caller's terminal while init holds the pty's foreground, and a
    /// payload process waits for its terminal in `poll`/`select` (T13, T15).
    PayloadWaits,
}

/// Both ends and what waits to be written to each.
pub struct Bridge {
    /// The caller's terminal.
    pub tty: CallerTty,
    master: Option<OwnedFd>,
    /// The master once it read EIO (no descriptor of the slave is open), no longer read but
    /// kept open: closing it hangs the slave up (`pty(7)`), and the kernel would send SIGHUP
    /// to a session leader that closed its terminal and still runs, such as `snug exec`'s CMD
    /// between its last `close(2)` and its exit (L3, R3). Closed with the bridge.
    spent: Option<OwnedFd>,
    /// Output read from the master and not yet written: at most [`CHUNK`], read on while
    /// there is room, so the payload's writes and the caller's terminal's reads overlap
    /// instead of taking turns (B8: taking turns left a core idle, 1.5× `cat` alone).
    to_tty: VecDeque<u8>,
    to_master: Vec<u8>,
    /// Keys are copied (raw mode, the payload holds the pty's foreground).
    input: bool,
    /// Init holds the pty's foreground (the hand-over is deferred): a line typed at the
    /// caller's terminal is a reason to look whether the payload waits for its terminal in
    /// `poll`/`select`, which, unlike a read, stops no background process ([`Event::PayloadWaits`]).
    deferred: bool,
    /// The pty's session is led by the sandbox's init, which reads no key (a run's pty; a
    /// `snug exec` CMD leads its own pty's session and reads keys).
    init_leads: bool,
    /// The leader of the pty's session, once it has one ([`Bridge::pty_session`]).
    session: Option<snug_core::Pid>,
    /// The previous key was VLNEXT in canonical mode: the next one is literal.
    lnext: bool,
    hung_up: bool,
    /// [`Event::Tostop`] was given and not yet answered by a stop.
    tostop: bool,
    /// The settings the pty got at its start: a payload that never changed them gets the
    /// caller's at a deferred hand-over (T1).
    initial: Option<termios::Termios>,
    /// Keys are pending at the caller's terminal but nothing in the sandbox waits for them:
    /// left there, looked at again at this time (T14).
    held: Option<Instant>,
    /// One [`CHUNK`] every read goes through, allocated once: a fresh 64 KiB buffer per read
    /// cost each keystroke its zeroing and, with musl's allocator, which hands such blocks
    /// back to the kernel at once, an munmap, a TLB shootdown and 16 page faults (B8).
    scratch: Box<[u8]>,
    /// The pty's foreground group's leader, kept open for the key rule (see `keys`).
    leader: waiting::Leader,
}

impl Bridge {
    /// A bridge for `tty` and the pty's `master`.
    pub fn new(tty: CallerTty, master: OwnedFd) -> Bridge {
        let initial = termios::tcgetattr(&master).ok();
        Bridge {
            initial,
            tty,
            master: Some(master),
            spent: None,
            to_tty: VecDeque::with_capacity(CHUNK),
            to_master: Vec::new(),
            input: false,
            deferred: false,
            init_leads: false,
            session: None,
            lnext: false,
            hung_up: false,
            tostop: false,
            held: None,
            scratch: vec![0u8; CHUNK].into_boxed_slice(),
            leader: waiting::Leader::default(),
        }
    }

    /// The sandbox terminal's settings now (`tcgetattr` on the master reads the slave's).
    fn pty_settings(&self) -> Option<termios::Termios> {
        self.master.as_ref().and_then(|m| termios::tcgetattr(m).ok())
    }

    /// When the supervisor's poll should wake to look at held keys again.
    pub fn deadline(&self) -> Option<Instant> {
        self.held
    }

    /// A run's pty, whose session the sandbox's init leads (not `snug exec`'s).
    pub fn led_by_init(&mut self) {
        self.init_leads = true;
    }

    /// Whether init holds the pty's foreground (the hand-over deferred, or taken back): then
    /// a line typed at the caller's terminal is looked at ([`Event::PayloadWaits`]).
    pub fn set_deferred(&mut self, on: bool) {
        self.deferred = on;
        if !on && !self.input {
            self.held = None;
        }
    }

    /// Copy keys from now on (true) or leave the caller's terminal unread (false). The
    /// caller's settings are switched with it: raw while keys are copied (T1, T5).
    pub fn set_input(&mut self, on: bool) -> bool {
        if on && !self.hung_up {
            let was_raw = self.input;
            let pty = self.pty_settings();
            self.input = self.tty.go_raw(pty.as_ref());
            if self.input && !was_raw {
                self.caller_settings_to_pty(pty.as_ref());
            }
        } else {
            self.held = None;
            self.input = false;
            self.tty.cooked();
        }
        self.input
    }

    /// At a hand-over: a pty whose settings nobody changed since its start gets the caller's
    /// settings as they are now (a job started with `&` found the caller's shell's line
    /// editor's settings then; `fg` gave the terminal its cooked ones back).
    fn caller_settings_to_pty(&mut self, pty: Option<&termios::Termios>) {
        let (Some(m), Some(now), Some(initial)) = (&self.master, pty, &self.initial) else { return };
        let Some(saved) = self.tty.saved() else { return };
        if crate::tty::same(now, initial) && !crate::tty::same(now, saved) {
            let _ = termios::tcsetattr(m, termios::OptionalActions::Now, saved);
            self.initial = Some(saved.clone());
            if let Some(t) = self.pty_settings() {
                self.tty.mirror(&t);
            }
        }
    }

    /// Whether the caller's terminal has gone away (seen already, or a hangup pending on it).
    pub fn hung_up(&self) -> bool {
        let mut set = PollSet::default();
        set.watch((), Some(self.tty.fd()), 0);
        self.hung_up || (set.poll(Some(Duration::ZERO)).is_ok() && set.got(()) & (libc::POLLHUP | libc::POLLERR) != 0)
    }

    /// Whether the pty's foreground is its session leader's own group. For `snug exec` that
    /// group is orphaned (its leader's parent, init, is in another session), so the kernel
    /// drops the pty's SIGTSTP for it (`kernel/signal.c`): the client stops it itself (T5).
    pub fn front_is_leader(&self) -> bool {
        let Some(m) = &self.master else { return false };
        let front = termios::tcgetpgrp(m).ok().map(crate::sys::process::from_rustix);
        let sid = crate::sys::fd::tty_session(m);
        front.is_some() && sid.ok().flatten() == front
    }

    /// Copy no more keys, leaving the caller's terminal's settings as they are (the payload
    /// ended; [`Bridge::drain`] gives the settings back).
    pub fn keys_off(&mut self) {
        self.input = false;
        self.held = None;
    }

    /// Whether keys are being copied.
    pub fn input(&self) -> bool {
        self.input
    }

    /// The caller's window size to the pty; the kernel signals the pty's foreground group
    /// with SIGWINCH when it changed (`tty_ioctl(4)`, TIOCSWINSZ).
    pub fn resize(&self) {
        if let (Some(ws), Some(m)) = (self.tty.size(), &self.master) {
            let _ = termios::tcsetwinsize(m, ws);
        }
    }

    /// The job was stopped (or continued): a pending [`Event::Tostop`] may be given again.
    pub fn stopped(&mut self) {
        self.tostop = false;
    }

    /// Two pollfds: the caller's terminal (keys; room for output; a hangup is always
    /// reported) and the master (output; room for keys).
    pub fn poll_fds(&self) -> [libc::pollfd; 2] {
        let mut tty = 0;
        if (self.input || self.deferred) && self.to_master.is_empty() && self.held.is_none() {
            tty |= libc::POLLIN;
        }
        if !self.to_tty.is_empty() && !self.tostop {
            tty |= libc::POLLOUT;
        }
        let mut master = 0;
        if self.to_tty.len() < CHUNK {
            master |= libc::POLLIN;
        }
        if !self.to_master.is_empty() {
            master |= libc::POLLOUT;
        }
        let tty_fd = if self.hung_up { -1 } else { self.tty.fd().as_raw_fd() };
        let master_fd = self.master.as_ref().map_or(-1, |m| m.as_raw_fd());
        [
            libc::pollfd { fd: tty_fd, events: tty, revents: 0 },
            libc::pollfd { fd: master_fd, events: master, revents: 0 },
        ]
    }

    /// Act on [`Bridge::poll_fds`]' results.
    pub fn on_ready(&mut self, ready: &[libc::pollfd], events: &mut Vec<Event>) {
        let got = |i: usize| ready.get(i).map_or(0, |p| p.revents);
        let (tty, master) = (got(0), got(1));
        if master & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 && self.to_tty.len() < CHUNK {
            let _ = self.read_master(events);
        }
        if !self.to_tty.is_empty() {
            self.write_tty(events);
        }
        let due = self.held.is_some_and(|t| Instant::now() >= t);
        if due || (tty & libc::POLLIN != 0 && self.to_master.is_empty() && self.held.is_none()) {
            self.held = None;
            if self.input {
                self.offer_keys(events);
            } else if self.deferred {
                self.look_deferred(events);
            }
        }
        if tty & (libc::POLLHUP | libc::POLLERR) != 0 && !self.hung_up {
            self.hang_up(events);
        }
        if !self.to_master.is_empty() {
            self.write_master();
        }
    }

    /// Copy what the pty has to the caller's terminal: each read of the master is written on
    /// at once, and reads go on while they come full, up to [`CHUNK`] read in one call (so
    /// the supervisor's loop comes back to its signals and its timers however fast the
    /// payload writes and the caller's terminal reads) and to [`CHUNK`] waiting. The master
    /// hands out at most its line discipline's 4 KiB ring a read (`N_TTY_BUF_SIZE`,
    /// `drivers/tty/n_tty.c`), refilled by a kernel worker: writing each read on before the
    /// next lets the caller's terminal take it while that worker refills the ring, rather
    /// than the two sides taking turns as they do when several reads go out in one write
    /// (B8, `snug -- cat` of 64 MiB: 1.35× and 1.15× `cat` alone, in one run of 11 rounds).
    ///
    /// True when anything was read.
    fn read_master(&mut self, events: &mut Vec<Event>) -> bool {
        let mut closed = false;
        let mut read_any = false;
        let mut budget = CHUNK;
        while let Some(m) = &self.master {
            let room = CHUNK.saturating_sub(self.to_tty.len()).min(budget);
            if room == 0 {
                break;
            }
            let n = match rustix::io::read(m, &mut self.scratch[..room]) {
                Ok(n) if n > 0 => n,
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => break,
                // EIO: no sandbox process holds the slave any more.
                _ => {
                    closed = true;
                    break;
                }
            };
            budget -= n;
            self.to_tty.extend(&self.scratch[..n]);
            if !read_any && self.input {
                // The payload may have changed its signal keys (went raw) before this
                // output: follow them first.
                if let Some(t) = self.pty_settings() {
                    self.tty.mirror(&t);
                }
            }
            read_any = true;
            self.write_tty(events);
            // A short read (an echo, a line) most likely took all there was: back to poll,
            // which says so if not, rather than a read that fails with EAGAIN on every
            // keystroke's way back (B8). Output in bulk comes in full reads.
            if n < SHORT {
                break;
            }
        }
        if closed {
            self.spent = self.master.take();
        }
        read_any
    }

    fn write_tty(&mut self, events: &mut Vec<Event>) {
        if self.hung_up {
            self.to_tty.clear();
            return;
        }
        if !self.tty.in_front() && self.tty.settings().is_some_and(|t| t.local_modes.contains(LocalModes::TOSTOP)) {
            if !self.tostop {
                self.tostop = true;
                events.push(Event::Tostop);
            }
            return;
        }
        match rustix::io::write(self.tty.fd(), self.to_tty.as_slices().0) {
            Ok(n) => {
                self.to_tty.drain(..n);
            }
            Err(Errno::AGAIN | Errno::INTR) => {}
            Err(_) => self.hang_up(events),
        }
    }

    /// The caller's terminal is gone: stop copying (the supervisor decides about the pty).
    fn hang_up(&mut self, events: &mut Vec<Event>) {
        self.hung_up = true;
        self.input = false;
        self.to_tty.clear();
        events.push(Event::HungUp);
    }

    /// Hang the pty up (closing the master hangs up the slave, `pty(7)`): nothing in the
    /// sandbox reads on from a terminal that is gone (T10).
    pub fn close_pty(&mut self) {
        self.master = None;
        self.spent = None;
    }
}
