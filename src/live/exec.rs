//! `snug exec NAME [--] CMD…` (SPEC L3), the client side: ask the run for a socket to its
//! init, send CMD (in a memfd, as the payload's argv travels, R7) with this process's stdin,
//! stdout and stderr (or a pty's slave at a terminal, see [`super::pty`]), relay the
//! signals this process gets to CMD's group, and end as CMD ended (R3).
//!
//! The socket goes from the run's snug straight to init, so snug's loop carries no bytes of
//! it and needs no state per exec; snug checked the caller's credentials (L5) before handing
//! it out, and init trusts only its shape.

use super::socket::{self, Got};
use super::{client, wire};
use crate::end::Outcome;
use crate::error::{failure, INTERNAL, NOT_EXECUTABLE, NOT_FOUND, OS_ERROR};
use crate::signals::SignalFd;
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::OsString;

/// How long `exec` waits for a run that is still starting.
const STARTING: std::time::Duration = std::time::Duration::from_secs(10);
/// The run's answer while it starts (see `Host::exec` in src/supervise/live.rs).
const STILL_STARTING: &[u8] = b"err the sandbox is still starting";

/// Signals relayed to CMD's group (its process group, which it leads).
const RELAYED: [i32; 6] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

/// Run CMD in the live sandbox `name`; the outcome is CMD's (R3).
///
/// # Errors
/// As [`client::connect_named`]; 126/127 when CMD cannot be run; 71 for OS errors.
pub fn run(name: &str, cmd: &[OsString]) -> anyhow::Result<Outcome> {
    let c = client::connect_named(name)?;
    // A run that is still starting (bwrap, init, the network) has no init to ask yet: wait
    // for it, bounded, rather than fail a `snug … & snug exec …` that raced it.
    let until = std::time::Instant::now() + STARTING;
    let (_, mut fds) = loop {
        match c.ask(&[wire::EXEC], 5000) {
            Got::Packet(b, _) if b == STILL_STARTING && std::time::Instant::now() < until => {
                socket::readable(c.pidfd.as_fd(), 10); // 10 ms, or at once if the run ended
            }
            got => break client::expect_ok(name, got)?,
        }
    };
    let sock = fds.pop().ok_or_else(|| failure(INTERNAL, format!("{name}: no exec socket in the answer")))?;
    let args = crate::payload_args::memfd(cmd, &[])?;
    let mut sigs: Vec<i32> = RELAYED.to_vec();
    let pty = super::pty::open().map_err(|e| failure(OS_ERROR, format!("pty: {e}")))?;
    if pty.is_some() {
        sigs.push(libc::SIGWINCH);
    }
    let signals = SignalFd::new(&sigs).map_err(|e| failure(OS_ERROR, format!("signalfd: {e}")))?;
    let stdio: [BorrowedFd<'_>; 3] = match pty.as_ref().and_then(|p| p.slave.as_ref()) {
        Some(s) => [s.as_fd(), s.as_fd(), s.as_fd()],
        None => [rustix::stdio::stdin(), rustix::stdio::stdout(), rustix::stdio::stderr()],
    };
    let flags = if pty.is_some() { wire::FLAG_TTY } else { 0 };
    socket::send(sock.as_fd(), &[wire::RUN, flags], &[stdio[0], stdio[1], stdio[2], args.as_fd()])
        .map_err(|e| failure(OS_ERROR, format!("{name}: cannot hand CMD to the sandbox: {e}")))?;
    let mut pty = pty;
    if let Some(p) = pty.as_mut() {
        p.slave = None; // CMD holds it now; the master reads EIO once CMD's side is all closed
    }
    let outcome = relay(&sock, &signals, pty.as_ref(), cmd);
    drop(pty); // the caller's terminal settings back before anything is printed (T7)
    outcome
}

/// Copy bytes, relay signals, until init reports CMD's end.
fn relay(
    sock: &OwnedFd,
    signals: &SignalFd,
    pty: Option<&super::pty::Pty>,
    cmd: &[OsString],
) -> anyhow::Result<Outcome> {
    let sigfd = signals.as_fd();
    let stdin = std::io::stdin();
    let mut stdin_open = pty.is_some();
    let mut master_open = pty.is_some();
    let mut buf = [0u8; 8192];
    loop {
        let master = pty.map(|p| p.master.as_fd());
        let mut fds = vec![PollFd::new(sock, PollFlags::IN), PollFd::from_borrowed_fd(sigfd, PollFlags::IN)];
        if let (Some(m), true) = (master, master_open) {
            fds.push(PollFd::from_borrowed_fd(m, PollFlags::IN));
        }
        if stdin_open {
            fds.push(PollFd::from_borrowed_fd(stdin.as_fd(), PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, None) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(failure(OS_ERROR, format!("poll: {e}"))),
            Ok(_) => {}
        }
        let ready: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
        drop(fds);
        let mut at = 2;
        if let (Some(m), true) = (master, master_open) {
            if ready[at] {
                master_open = copy(m, std::io::stdout().as_fd(), &mut buf);
            }
            at += 1;
        }
        if stdin_open && ready[at] {
            if let Some(m) = master {
                stdin_open = copy(stdin.as_fd(), m, &mut buf);
            }
        }
        if ready[1] {
            while let Some(got) = signals.read() {
                if got.sig == libc::SIGWINCH {
                    pty.inspect(|p| p.resize());
                } else {
                    let _ = socket::send(sock.as_fd(), &wire::tagged(wire::KILL, got.sig), &[]);
                }
            }
        }
        if ready[0] {
            match socket::recv(sock.as_fd()) {
                Got::Packet(b, _) => {
                    if let Some(status) = wire::value(&b, wire::EXITED) {
                        if let (Some(m), true) = (master, master_open) {
                            drain(m, &mut buf);
                        }
                        return Ok(Outcome::Status(status));
                    }
                    if let Some(e) = wire::value(&b, wire::FAILED) {
                        return Err(exec_failed(e, cmd));
                    }
                }
                Got::Empty | Got::TooLong => {}
                // Init is gone: the sandbox ended and took CMD with it (its namespace's SIGKILL).
                Got::Closed => return Ok(Outcome::Signal(libc::SIGKILL)),
            }
        }
    }
}

fn exec_failed(e: i32, cmd: &[OsString]) -> anyhow::Error {
    let what = cmd.first().map_or("the shell".into(), |c| c.to_string_lossy().into_owned());
    match e {
        libc::ENOENT => failure(NOT_FOUND, format!("{what}: not found in the sandbox")),
        libc::EINVAL => failure(INTERNAL, format!("{what}: the sandbox refused the request")),
        _ => failure(NOT_EXECUTABLE, format!("{what}: {}", crate::error::strerror(e))),
    }
}

/// Copy one read's worth from `from` to `to`; false at end of file or on an error (a pty
/// master reads EIO once no slave is open).
fn copy(from: BorrowedFd<'_>, to: BorrowedFd<'_>, buf: &mut [u8]) -> bool {
    let n = match rustix::io::read(from, &mut *buf) {
        Ok(0) | Err(_) => return false,
        Ok(n) => n,
    };
    let mut rest = &buf[..n];
    while !rest.is_empty() {
        match rustix::io::write(to, rest) {
            Ok(w) => rest = &rest[w..],
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    true
}

/// What CMD wrote just before it ended, still in the pty (bounded: 100 ms of quiet).
fn drain(master: BorrowedFd<'_>, buf: &mut [u8]) {
    while socket::readable(master, 100) && copy(master, std::io::stdout().as_fd(), buf) {}
}
