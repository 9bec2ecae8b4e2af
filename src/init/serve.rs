//! Init's loop: snug's orders, the payload's stops and end, orphans to reap, and who holds
//! the sandbox pty's foreground (T1, T5), all in one `poll(2)`.

use super::held::Held;
use super::procfs;
use crate::channel::{Channel, Order, Received, Report, Resume};
use crate::signals::SignalFd;
use rustix::process::{wait, WaitOptions};
use std::os::fd::{AsRawFd, OwnedFd};

/// Send `sig` to every sandbox process but init (see [`Order::Signal`] for why `kill(-1)`).
fn relay(sig: i32) {
    let _ = crate::signals::kill(-1, sig);
}

/// Continue what a job stop at the terminal stopped (T5): the sandbox group and the
/// payload's group when it has its own (an interactive shell payload leads one), so that
/// jobs a shell inside stopped stay stopped (T6).
fn resume_job(payload: i32) {
    procfs::signal_group(1, libc::SIGCONT);
    if let Some(group) = procfs::pgrp(payload).filter(|g| *g > 1) {
        procfs::signal_group(group, libc::SIGCONT);
    }
}

/// A ^C reached no handler in `group` (all sandbox processes for `None`): T3's condition for
/// a force-quit on the next one.
fn int_unanswered(group: Option<i32>) -> bool {
    let pids: Vec<i32> = procfs::pids().into_iter().filter(|p| group.is_none() || procfs::pgrp(*p) == group).collect();
    procfs::int_unanswered(&pids)
}

/// The payload's exec error, if it wrote one (a non-blocking read of at most 4 bytes); the
/// pipe is dropped once it said something or reached EOF (the exec happened, or the process
/// died).
fn read_exec_error(pipe: &mut Option<OwnedFd>, chan: &Channel) {
    let Some(fd) = pipe else { return };
    let mut e = [0u8; 4];
    let n = rustix::io::read(&*fd, &mut e);
    if n == Ok(4) {
        let _ = chan.report(Report::ExecFailed(i32::from_le_bytes(e)), None);
    }
    if n.is_ok() {
        *pipe = None;
    }
}

/// The sandbox's pty as init holds it: init leads its session; the payload's side holds its
/// foreground while snug copies keys, init's own group otherwise (T1, T5, T8).
struct Pty {
    fd: OwnedFd,
    /// The group that held the foreground when init took it (an interactive shell payload
    /// may have given it to one of its jobs): `fg` gives it back.
    taken_from: Option<i32>,
}

impl Pty {
    fn front(&self) -> Option<i32> {
        rustix::termios::tcgetpgrp(&self.fd).ok().map(|p| p.as_raw_nonzero().get())
    }

    /// Give the foreground to the payload's side (`give`) or take it for init's group.
    fn set(&mut self, give: bool, payload: i32) {
        use rustix::process::{getpgrp, Pid};
        let mine = getpgrp().as_raw_nonzero().get();
        let target = if give {
            let back = self.taken_from.take().filter(|g| procfs::pids().iter().any(|p| procfs::pgrp(*p) == Some(*g)));
            back.or_else(|| procfs::pgrp(payload)).unwrap_or(mine)
        } else {
            if let Some(g) = self.front().filter(|g| *g != mine) {
                self.taken_from = Some(g);
            }
            mine
        };
        if let Some(p) = Pid::from_raw(target) {
            let _ = rustix::termios::tcsetpgrp(&self.fd, p);
        }
    }
}

/// Wait for the payload; report stops, continues and its end; reap orphans.
pub fn serve(
    chan: &Channel,
    signals: &SignalFd,
    held: Held,
    pty: Option<OwnedFd>,
    (mut execs, jobs): (super::exec::Execs, crate::live::Jobs),
) -> Result<i32, i32> {
    let payload = held.pid;
    let terminal = pty.is_some();
    let mut pty = pty.map(|fd| Pty { fd, taken_from: None });
    let mut go = Some(held.go);
    let mut exec_err = Some(held.err);
    // `--jobs wait` (L4): outlive the main process until the sandbox is empty, as in a grace.
    let mut grace = jobs == crate::live::Jobs::Wait;
    let mut ended: Option<i32> = None;
    // Every sandbox process was stopped on snug's order and not continued since.
    let mut halted = false;
    // The payload's job stopped at the terminal (T5) and not continued since.
    let mut job_stopped = false;
    let stops = if terminal { WaitOptions::UNTRACED | WaitOptions::CONTINUED } else { WaitOptions::empty() };
    if !terminal {
        // Detached, a stop or continue of a child is nobody's business: not even a SIGCHLD
        // for it (B5, a payload that stops and continues itself in a loop).
        crate::signals::default_with(libc::SIGCHLD, libc::SA_NOCLDSTOP);
    }
    loop {
        let mut fds = vec![
            libc::pollfd { fd: chan.raw(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: signals.raw(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: exec_err.as_ref().map_or(-1, |f| f.as_raw_fd()), events: libc::POLLIN, revents: 0 },
        ];
        execs.poll_fds(&mut fds);
        if crate::fdpoll::poll_raw(&mut fds, -1).is_err() {
            continue;
        }
        // Orders first: a Grace is sent before the signal that may end the payload.
        loop {
            match chan.recv_order(true) {
                Ok(Received::Packet(Some(Order::Go), _)) => {
                    if let Some(fd) = go.take() {
                        // One byte to the held payload; then our end is closed.
                        let _ = rustix::io::write(&fd, b"g");
                    }
                }
                Ok(Received::Packet(Some(Order::Grace), _)) => grace = true,
                Ok(Received::Packet(Some(Order::Signal(sig)), _)) => {
                    super::relay::relay_with_cont(sig, halted || job_stopped)
                }
                Ok(Received::Packet(Some(Order::Key(sig)), _)) => {
                    // As the caller's terminal would have sent it: to the payload's group.
                    let group = procfs::pgrp(payload).filter(|g| *g > 1);
                    match group {
                        Some(g) => procfs::signal_group(g, sig),
                        None => relay(sig),
                    }
                    if sig == libc::SIGINT {
                        let _ = chan.report(Report::Interrupt(int_unanswered(group)), None);
                    }
                }
                Ok(Received::Packet(Some(Order::Typed(sig)), _)) => {
                    // The pty signalled its foreground group; did anything there catch it (T3)?
                    if sig == libc::SIGINT {
                        let front = pty.as_ref().and_then(Pty::front);
                        let _ = chan.report(Report::Interrupt(int_unanswered(front)), None);
                    }
                }
                Ok(Received::Packet(Some(Order::Front(give)), _)) => {
                    if let Some(p) = pty.as_mut() {
                        p.set(give, payload);
                    }
                }
                Ok(Received::Packet(Some(Order::Stop), _)) => {
                    relay(libc::SIGSTOP);
                    halted = true;
                    let _ = chan.report(Report::Halted, None);
                }
                Ok(Received::Packet(Some(Order::Continue(how)), _)) => {
                    halted = false;
                    job_stopped = false;
                    match how {
                        Resume::Job => resume_job(payload),
                        Resume::All => relay(libc::SIGCONT),
                    }
                }
                Ok(Received::Packet(Some(Order::Exec), Some(fd))) => execs.add(fd),
                Ok(Received::Packet(..)) => {}
                Ok(Received::Empty) => break,
                Ok(Received::Closed) | Err(_) => return Ok(1), // snug is gone
            }
        }
        // Before the payload's exit is looked at: its exec error is written before it exits.
        read_exec_error(&mut exec_err, chan);
        // Drained only: init acts on no signal of its own (a namespace init gets only what it
        // handles; the pty's keys are snug's to report, T2).
        while signals.read().is_some() {}
        execs.on_ready(&fds[3..]);
        loop {
            let stops = if execs.stops { WaitOptions::UNTRACED | WaitOptions::CONTINUED } else { stops };
            let (pid, status) = match wait(WaitOptions::NOHANG | stops) {
                Ok(Some((pid, status))) => (pid.as_raw_nonzero().get(), status.as_raw()),
                Ok(None) => (0, 0),
                Err(_) => (-1, 0),
            };
            if pid <= 0 {
                if pid < 0 && ended.is_some() {
                    let _ = chan.report(Report::Empty, None);
                    return Ok(0); // nothing left: the grace ends early (SPEC G2)
                }
                break;
            }
            if pid != payload {
                execs.reaped(pid, status);
                continue;
            }
            if libc::WIFSTOPPED(status) {
                // Only a terminal job stops with its payload (T5); detached, nothing acts on
                // it, and a payload that stops and continues itself costs snug nothing (B5).
                // The stop of snug's own Order::Stop is no news: snug stops once, on Halted.
                if terminal && !halted {
                    let _ = chan.report(Report::Stopped(libc::WSTOPSIG(status)), None);
                    job_stopped = true;
                }
            } else if libc::WIFCONTINUED(status) {
                job_stopped = false;
                continue;
            } else {
                // Its exec error, written just before it exited, comes before its end (R4).
                read_exec_error(&mut exec_err, chan);
                let _ = chan.report(Report::Exited(status), None);
                if jobs == crate::live::Jobs::Grace && !grace {
                    // L4: what is left gets TERM; snug runs the 1.0 s grace from its report.
                    relay(libc::SIGTERM);
                    grace = true;
                }
                if !grace {
                    let left = crate::report::count_sandbox(std::path::Path::new("/proc"));
                    let _ = chan.report(Report::Leaving(left.map_or(-1, |n| n as i32)), None);
                    return Ok(0); // the kernel kills the rest of the sandbox (SPEC R5)
                }
                ended = Some(status);
            }
        }
    }
}
