//! Carrying out init's effects ([`snug_core::init::Effect`]): each is one system call, or a
//! measurement the effect names, or a report; none decides anything. Reports in a row are
//! queued and go out together, before the next effect of another kind.

use super::procfs;
use super::serve::Serve;
use snug_core::carry::{Carried, Carry};
use snug_core::init::{self, Effect, Event, Report, Target};
use snug_core::wire::FromInit;
use snug_core::Signal;
use std::os::fd::AsFd;

impl Carry for Serve<'_> {
    type Event = Event;
    type Effect = Effect;
    /// [`Effect::Exit`]'s code.
    type End = i32;

    fn decide(&mut self, ev: Event) -> Vec<Effect> {
        let procs = procfs::Sandbox { pty: self.pty.as_ref().map(|p| p.as_fd()) };
        self.init.on(ev, &procs)
    }

    fn carry(&mut self, effect: Effect) -> Carried<Event, i32> {
        if !matches!(effect, Effect::Report(_)) {
            self.send_reports();
        }
        match effect {
            Effect::Go => {
                if let Some(fd) = self.go.take() {
                    // One byte to the held payload; then our end is closed.
                    let _ = rustix::io::write(&fd, b"g");
                }
            }
            Effect::Signal(to, sig) => signal(to, sig),
            Effect::Report(r) => self.reports.push(wire(r)),
            Effect::Foreground(group) => {
                if let (Some(pty), Some(g)) = (&self.pty, crate::sys::process::to_rustix(group)) {
                    let _ = rustix::termios::tcsetpgrp(pty, g);
                }
            }
            Effect::ReadExecError => return self.read_exec_error().map_or(Carried::Done, Carried::Answer),
            Effect::StopNews(news) => {
                crate::signals::default_with(Signal::CHLD, if news { 0 } else { libc::SA_NOCLDSTOP })
            }
            Effect::Exit(code) => return Carried::End(code),
            Effect::Spawn(id) => {
                let started = self.execs.spawn(id).map_err(|e| init::Errno(e.raw_os_error()));
                return Carried::Answer(Event::Spawned(id, started));
            }
            Effect::OpenPty(id) => self.execs.open_pty(id),
            Effect::ToClient(id, m) => self.execs.send(id, m),
            Effect::Forget(id) => self.execs.forget(id),
        }
        Carried::Done
    }
}

/// Send `sig` to `to` (`kill(2)`); a target that is gone is not an error.
fn signal(to: Target, sig: Signal) {
    let kill = |target: i32| {
        let _ = crate::signals::kill(target, sig);
    };
    match to {
        // From the namespace's pid 1, -1 is every sandbox process but init (`kill(2)`).
        Target::All => kill(-1),
        Target::OwnGroup => kill(0),
        Target::Group(g) => kill(-g.raw()),
        Target::Session(sid) => {
            for p in procfs::pids().into_iter().filter(|p| procfs::session(*p) == Some(sid)) {
                kill(p.raw());
            }
        }
    }
}

/// A report as the channel carries it, with what it asks to be measured.
fn wire(r: Report) -> FromInit {
    match r {
        Report::Stopped(sig) => FromInit::Stopped(sig),
        Report::Interrupt { among } => FromInit::Interrupt(procfs::int_unanswered(among)),
        Report::Halted => FromInit::Halted,
        Report::Exited(status) => FromInit::Exited(status),
        Report::Empty => FromInit::Empty,
        Report::ExecFailed(errno) => FromInit::ExecFailed(errno),
        Report::Leaving => FromInit::Leaving(left()),
    }
}

/// How many sandbox processes init leaves behind. Every one of them is init's descendant
/// (orphans are reparented to the namespace's pid 1), so with no child left, `waitid(2)`'s
/// ECHILD says none without reading `/proc`.
fn left() -> Option<u32> {
    use rustix::process::{waitid, WaitId, WaitIdOptions};
    match waitid(WaitId::All, WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT) {
        Err(rustix::io::Errno::CHILD) => Some(0),
        _ => crate::report::count_sandbox(std::path::Path::new("/proc")),
    }
}
