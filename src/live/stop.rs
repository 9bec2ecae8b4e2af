//! `snug stop NAME [--now]` (SPEC L2): TERM as `kill -TERM` of that run's snug would be
//! (relay and grace, G1–G4), or a teardown; waits until that snug is gone and prints how it
//! ended. A run whose snug is stopped (^Z, TSTP: T5, T12) gets what bash's `kill %1` gives a
//! stopped job: TERM, then CONT.

use super::client::{self, Reached};
use super::lockfile::{self, Holder};
use super::socket::{self, Got};
use super::wire;
use crate::end::Outcome;
use crate::error::{failure, OS_ERROR, USAGE};
use crate::sys::poll::PollSet;
use rustix::fd::{AsFd, BorrowedFd};
use snug_core::wire::{Control, FRAME};
use snug_core::Signal;
use std::path::Path;

/// `snug stop NAME [--now]`.
///
/// # Errors
/// As [`client::reach`] and [`client::expect_ok`]; 71 when snug cannot be signalled.
pub fn stop(name: &str, now: bool) -> anyhow::Result<Outcome> {
    let end = match client::reach(name)? {
        (path, Reached::Stopped(h)) => stop_stopped(name, &path, &h, now)?,
        (path, Reached::Live(c)) if c.stopped() => {
            // It stopped after `reach` looked: through its lock file too, if it has one.
            match lockfile::holder(&lockfile::path_for(&path)).filter(|h| h.pid == c.pid) {
                Some(h) => stop_stopped(name, &path, &h, now)?,
                None => {
                    term_cont(name, c.pidfd.as_fd())?;
                    wait_end(name, None, c.pidfd.as_fd())?
                }
            }
        }
        (_, Reached::Live(c)) => {
            match c.ask(Control::Stop { now }.encode(&mut [0; FRAME]), 2000) {
                // It stopped before reading the request, which waits in its queue: continue
                // it, and the request's TERM follows (a stop never waits for a `fg`).
                Got::Empty if c.alive() && c.stopped() => send(name, c.pidfd.as_fd(), Signal::CONT)?,
                // Closed unanswered by a run that is ending: it passed its last look at the
                // socket as this stop connected. Its snug is gone, as after any stop.
                Got::Empty | Got::Closed if socket::readable(c.pidfd.as_fd(), 2000) => {
                    return Err(failure(USAGE, format!("no live sandbox named {name} (it ended as the stop came)")));
                }
                got => drop(client::expect_ok(name, got)?),
            }
            wait_end(name, Some(c.fd.as_fd()), c.pidfd.as_fd())?
        }
    };
    let words = end.as_deref().map_or("ended".to_string(), wire::end_words);
    crate::log::print(&crate::quote::controls_escaped(&format!("{name}: {words}")))
        .map_err(|e| failure(OS_ERROR, format!("stdout: {e}")))?;
    Ok(Outcome::Status(snug_core::WaitStatus::Exited(0)))
}

/// The stop of a run whose snug is stopped: it can neither accept nor answer, so the request
/// goes into its lock file (`stop PID NOW`: the run ends by a stop, O5, and `--now` gets its
/// second TERM), then TERM and CONT to snug through its pidfd. snug reads the TERM first
/// (the lower number, `signal(7)`) and relays it with the grace, as any TERM from a process
/// (G1, G2), continues the sandbox, which handles it (the payload never runs on without
/// it), and reads the request in the same round. The end's text comes from the lock file,
/// which snug completes just before it exits.
fn stop_stopped(name: &str, path: &Path, h: &Holder, now: bool) -> anyhow::Result<Option<String>> {
    if !h.ask_stop(&lockfile::path_for(path), now) {
        return Err(failure(OS_ERROR, format!("{name}: cannot write to its lock file")));
    }
    term_cont(name, h.pidfd.as_fd())?;
    Ok(wait_end(name, None, h.pidfd.as_fd())?.or_else(|| h.end()))
}

/// TERM, then CONT, to a stopped snug, as bash's `kill %1` sends them to a stopped job; a snug
/// that ended meanwhile is no error.
fn term_cont(name: &str, pidfd: BorrowedFd<'_>) -> anyhow::Result<()> {
    for sig in [Signal::TERM, Signal::CONT] {
        match crate::signals::send_pidfd(pidfd, sig) {
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(()),
            r => r.map_err(|e| failure(OS_ERROR, format!("{name}: {e}")))?,
        }
    }
    Ok(())
}

fn send(name: &str, pidfd: BorrowedFd<'_>, sig: Signal) -> anyhow::Result<()> {
    crate::signals::send_pidfd(pidfd, sig).map_err(|e| failure(OS_ERROR, format!("{name}: {e}")))
}

/// How long a stop waits for the run's snug to be gone once asked: its end takes the 1.0 s
/// grace and a teardown (G3); a snug past this bound does not end (or is no snug), and the
/// stop says so rather than wait without end (SPEC L5).
const END_MS: u64 = 10_000;

/// Wait until the run's snug is gone, at most [`END_MS`]; the end's text (`exit 7`) when
/// `sock` brought it.
///
/// # Errors
/// 71 when it is still there past the bound.
/// What `wait_end` polls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// The control socket, for the run's `end …` line.
    Sock,
    /// The run's pidfd: readable once it is gone.
    Gone,
}

fn wait_end(name: &str, sock: Option<BorrowedFd<'_>>, pidfd: BorrowedFd<'_>) -> anyhow::Result<Option<String>> {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(END_MS);
    let left = || until.saturating_duration_since(std::time::Instant::now()).as_millis() as i32;
    let alive = || !socket::readable(pidfd, 0);
    let mut end = None;
    // The run writes `end …` just before it exits; its pidfd says when it is gone.
    while let Some(sock) = sock {
        let mut set = PollSet::default();
        set.watch(End::Sock, Some(sock), libc::POLLIN);
        set.watch(End::Gone, Some(pidfd), libc::POLLIN);
        match set.poll(Some(std::time::Duration::from_millis(left().max(0) as u64))) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(failure(OS_ERROR, format!("poll: {e}"))),
            Ok(()) if set.ready().is_empty() => break,
            Ok(()) => {}
        }
        match socket::recv(sock) {
            Got::Packet(b, _) if b.starts_with(b"end ") => {
                end = Some(String::from_utf8_lossy(&b[4..]).into_owned());
                break;
            }
            Got::Packet(..) | Got::TooLong | Got::Empty if alive() && left() > 0 => continue,
            _ => break,
        }
    }
    // Its pid must be gone before stop returns: wait on the pidfd.
    if !socket::readable(pidfd, left()) {
        return Err(failure(OS_ERROR, format!("{name}: its snug is still there {} s after the stop", END_MS / 1000)));
    }
    Ok(end)
}
