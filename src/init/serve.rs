//! Init's loop: one `poll(2)` on snug's channel, init's signalfd, the payload's exec-error
//! pipe and the `snug exec` sockets; each ready descriptor is decoded into events, then
//! `waitpid(2)` gives the children's. Every event goes to [`snug_core::init::Init::on`];
//! the effects it returns are carried out in `carry.rs` ([`snug_core::carry`]). Nothing is
//! decided here.

use super::exec::{self, ExecSockets};
use super::held::Held;
use crate::channel::{Channel, FromInit, Received, ToInit};
use crate::signals::SignalFd;
use crate::sys::poll::PollSet;
use rustix::process::{wait, WaitOptions};
use snug_core::carry;
use snug_core::init::{self, Config, Event, ExecId, Init};
use snug_core::{Pid, WaitStatus};
use std::ops::ControlFlow;
use std::os::fd::{AsFd, OwnedFd};

/// Init's descriptors and its state: the one value that decides ([`Init`]), and what its
/// effects act on.
pub struct Serve<'a> {
    pub(super) chan: &'a Channel,
    signals: &'a SignalFd,
    pub(super) init: Init,
    /// The sandbox's pty, in terminal mode.
    pub(super) pty: Option<OwnedFd>,
    /// The held payload's go pipe, until it was let go.
    pub(super) go: Option<OwnedFd>,
    /// The payload's exec-error pipe, until it said something or reached EOF.
    pub(super) exec_err: Option<OwnedFd>,
    pub(super) execs: ExecSockets,
    /// Reports to send together, before the next effect of another kind.
    pub(super) reports: Vec<FromInit>,
}

/// One descriptor of the poll set, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Channel,
    ExecError,
    Signals,
    Exec(ExecId, exec::Fd),
}

/// What init says first: its own pidfd (hello) and the payload's (started).
pub struct Hello {
    /// init's pidfd.
    pub init: OwnedFd,
    /// The payload's pidfd, when it could be opened.
    pub payload: Option<OwnedFd>,
}

/// Serve until init exits; the exit code.
pub fn serve(
    chan: &Channel,
    signals: &SignalFd,
    held: Held,
    pty: Option<OwnedFd>,
    cfg: Config,
    execs: ExecSockets,
    hello: Hello,
) -> i32 {
    let payload = cfg.payload;
    let mut s = Serve {
        chan,
        signals,
        init: Init::new(cfg),
        pty,
        go: Some(held.go),
        exec_err: Some(held.err),
        execs,
        reports: Vec::new(),
    };
    match s.run(payload, hello) {
        ControlFlow::Break(code) => code,
        ControlFlow::Continue(()) => 1,
    }
}

impl Serve<'_> {
    fn run(&mut self, payload: Pid, hello: Hello) -> ControlFlow<i32> {
        // The payload goes first (without the network, at once), then hello: snug's work on
        // it overlaps the payload's exec instead of delaying it (SPEC B1). snug needs init's
        // root only until init exits, which waits for snug's go.
        self.handle(Event::Start)?;
        let said = [
            (FromInit::Hello, Some(hello.init.as_fd())),
            (FromInit::Started(payload), hello.payload.as_ref().map(|p| p.as_fd())),
        ];
        if self.chan.reports(&said).is_err() {
            return ControlFlow::Break(1); // snug is gone
        }
        loop {
            for slot in self.ready() {
                self.on_ready(slot)?;
            }
            self.reap()?;
        }
    }

    /// Hand `ev` to the core and carry out its effects, in order; reports in a row go out
    /// together ([`Channel::reports`]), before the next effect of another kind.
    pub(super) fn handle(&mut self, ev: Event) -> ControlFlow<i32> {
        let r = carry::on(self, ev);
        self.send_reports();
        r
    }

    /// Send the reports [`carry::Carry::carry`] queued.
    pub(super) fn send_reports(&mut self) {
        if !self.reports.is_empty() {
            let batch: Vec<_> = std::mem::take(&mut self.reports).into_iter().map(|r| (r, None)).collect();
            let _ = self.chan.reports(&batch);
        }
    }

    /// Wait for descriptors; the ready ones, in the poll set's order: orders first (a Grace
    /// is sent before the signal that may end the payload, G2), the payload's exec error
    /// before anything of its end (R4), each exec's error pipe before its socket.
    fn ready(&self) -> Vec<Slot> {
        let mut set = PollSet::default();
        set.watch(Slot::Channel, Some(self.chan.as_fd()), libc::POLLIN);
        set.watch(Slot::ExecError, self.exec_err.as_ref().map(|f| f.as_fd()), libc::POLLIN);
        set.watch(Slot::Signals, Some(self.signals.as_fd()), libc::POLLIN);
        for (id, fd, b) in self.execs.fds() {
            set.watch(Slot::Exec(id, fd), Some(b), libc::POLLIN);
        }
        match set.poll(None) {
            Ok(()) => set.ready(),
            Err(_) => Vec::new(), // EINTR: look again
        }
    }

    fn on_ready(&mut self, slot: Slot) -> ControlFlow<i32> {
        match slot {
            Slot::Channel => self.orders(),
            Slot::ExecError => match self.read_exec_error() {
                Some(ev) => self.handle(ev),
                None => ControlFlow::Continue(()),
            },
            Slot::Signals => {
                while let Some(d) = self.signals.read() {
                    let ev = if d.by_terminal() { Event::TerminalSignal(d.sig) } else { Event::Signal(d.sig) };
                    self.handle(ev)?;
                }
                ControlFlow::Continue(())
            }
            Slot::Exec(id, exec::Fd::Err) => match self.execs.read_err(id) {
                Some(errno) => self.handle(Event::CmdExecFailed(id, init::Errno(errno))),
                None => ControlFlow::Continue(()),
            },
            Slot::Exec(id, exec::Fd::Sock) => {
                while let Some(msg) = self.execs.recv(id) {
                    let r = self.handle(Event::Client(id, msg));
                    self.execs.settle(id);
                    r?;
                }
                ControlFlow::Continue(())
            }
        }
    }

    /// Every order waiting on the channel.
    fn orders(&mut self) -> ControlFlow<i32> {
        loop {
            let ev = match self.chan.recv_message(true) {
                Ok(Received::Packet(Some(ToInit::Exec), Some(fd))) => Event::ExecOpened(self.execs.add(fd)),
                Ok(Received::Packet(Some(ToInit::Order(o)), _)) => Event::Order(o),
                // An exec without its socket, or a packet that is no message: nothing to do.
                Ok(Received::Packet(Some(ToInit::Exec), None) | Received::Packet(None, _)) => continue,
                Ok(Received::Empty) => return ControlFlow::Continue(()),
                Ok(Received::Closed) | Err(_) => Event::SnugGone,
            };
            self.handle(ev)?;
        }
    }

    /// What the payload's exec-error pipe says, as an event, if it said anything or reached
    /// EOF (the exec happened, or the process died); the pipe is closed then.
    pub(super) fn read_exec_error(&mut self) -> Option<Event> {
        let fd = self.exec_err.as_ref()?;
        let mut e = [0u8; 4];
        let said = match rustix::io::read(fd, &mut e) {
            Ok(4) => Some(init::Errno(i32::from_le_bytes(e))),
            Ok(_) => None,
            Err(_) => return None,
        };
        self.exec_err = None;
        Some(Event::ExecError(said))
    }

    /// Every child status `waitpid(2)` has now.
    fn reap(&mut self) -> ControlFlow<i32> {
        loop {
            let stops = match self.init.stop_news() {
                true => WaitOptions::UNTRACED | WaitOptions::CONTINUED,
                false => WaitOptions::empty(),
            };
            match wait(WaitOptions::NOHANG | stops) {
                Ok(Some((pid, status))) => {
                    let ev = Event::Child(crate::sys::process::from_rustix(pid), WaitStatus::from_raw(status.as_raw()));
                    self.handle(ev)?;
                }
                Ok(None) => return ControlFlow::Continue(()),
                Err(rustix::io::Errno::CHILD) => return self.handle(Event::NoChildren),
                Err(_) => return ControlFlow::Continue(()),
            }
        }
    }
}
