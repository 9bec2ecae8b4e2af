//! Init's loop: snug's orders, the payload's stops and end, orphans to reap, and the
//! terminal guard's requests (T11), all in one `poll(2)`.

use super::guard::Guard;
use super::held::Held;
use super::procfs;
use crate::channel::{Channel, Order, Received, Report, Resume};
use crate::signals::SignalFd;
use rustix::process::{wait, WaitOptions};
use std::os::fd::AsRawFd;

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

/// Wait for the payload; report stops, continues and its end; reap orphans.
pub fn serve(
    chan: &Channel,
    signals: &SignalFd,
    held: Held,
    mut guard: Option<Guard>,
    terminal: bool,
    (mut execs, jobs): (super::exec::Execs, crate::live::Jobs),
) -> Result<i32, i32> {
    let payload = held.pid;
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
            libc::pollfd { fd: guard.as_ref().map_or(-1, Guard::raw), events: libc::POLLIN, revents: 0 },
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
                    relay(sig);
                    if sig == libc::SIGINT {
                        let _ = chan.report(Report::Interrupt(int_unanswered(None)), None);
                    }
                }
                Ok(Received::Packet(Some(Order::Stop), _)) => {
                    // No terminal change from here on: snug takes the terminal back on Halted.
                    if let Some(g) = guard.as_mut() {
                        g.handed = false;
                    }
                    execs.set_handed(false);
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
                Ok(Received::Packet(Some(Order::Handed(h)), _)) => {
                    if let Some(g) = guard.as_mut() {
                        g.handed = h;
                    }
                    execs.set_handed(h);
                }
                Ok(Received::Packet(Some(Order::Exec), Some(fd))) => execs.add(fd),
                Ok(Received::Packet(..)) => {}
                Ok(Received::Empty) => break,
                Ok(Received::Closed) | Err(_) => return Ok(1), // snug is gone
            }
        }
        // Before the payload's exit is looked at: its exec error is written before it exits.
        if let Some(fd) = &exec_err {
            let mut e = [0u8; 4];
            // A non-blocking read of at most 4 bytes.
            let n = rustix::io::read(fd, &mut e);
            if n == Ok(4) {
                let _ = chan.report(Report::ExecFailed(i32::from_le_bytes(e)), None);
            }
            if n.is_ok() {
                // Our read end; EOF means the exec happened (or the process died).
                exec_err = None;
            }
        }
        while let Some(got) = signals.read() {
            // A ^C or ^\: the terminal sent it to its foreground group, which init belongs to.
            let front = super::guard::foreground();
            if matches!(got.sig, libc::SIGINT | libc::SIGQUIT) && got.by_terminal() && front > 0 {
                let _ = chan.report(Report::Typed(got.sig), None);
                if got.sig == libc::SIGINT {
                    let _ = chan.report(Report::Interrupt(int_unanswered(Some(front))), None);
                }
            }
        }
        if fds[3].revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            guard = None; // no process under the payload's filter is left (`--jobs`, exec)
        } else if fds[3].revents != 0 {
            if let Some(g) = &guard {
                g.serve(chan);
            }
        }
        execs.on_ready(&fds[4..], chan);
        loop {
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
                    // No terminal change from here on: snug takes the terminal back on this report.
                    if let Some(g) = guard.as_mut() {
                        g.handed = false;
                    }
                    let _ = chan.report(Report::Stopped(libc::WSTOPSIG(status)), None);
                    job_stopped = true;
                }
            } else if libc::WIFCONTINUED(status) {
                job_stopped = false;
                continue;
            } else {
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
