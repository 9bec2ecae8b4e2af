//! `snug stop NAME [--now]` (SPEC L2): TERM as `kill -TERM` of that run's snug would be
//! (relay and grace, G1–G4), or a teardown; waits until that snug is gone and prints how it
//! ended. A run whose snug is stopped (^Z, TSTP: T5, T12) gets what bash's `kill %1` gives a
//! stopped job: TERM, then CONT.

use super::client::{self, Reached};
use super::lockfile::{self, Holder};
use super::socket::{self, Got};
use super::wire;
use crate::end::Outcome;
use crate::error::{failure, OS_ERROR};
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, BorrowedFd};
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
                    wait_end(None, c.pidfd.as_fd())?
                }
            }
        }
        (_, Reached::Live(c)) => {
            match c.ask(&[wire::STOP, u8::from(now)], 2000) {
                // It stopped before reading the request, which waits in its queue: continue
                // it, and the request's TERM follows (a stop never waits for a `fg`).
                Got::Empty if c.alive() && c.stopped() => send(name, c.pidfd.as_fd(), libc::SIGCONT)?,
                got => drop(client::expect_ok(name, got)?),
            }
            wait_end(Some(c.fd.as_fd()), c.pidfd.as_fd())?
        }
    };
    let words = end.as_deref().map_or("ended".to_string(), wire::end_words);
    crate::log::print(&format!("{name}: {words}")).map_err(|e| failure(OS_ERROR, format!("stdout: {e}")))?;
    Ok(Outcome::Status(0))
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
    Ok(wait_end(None, h.pidfd.as_fd())?.or_else(|| h.end()))
}

/// TERM, then CONT, to a stopped snug, as bash's `kill %1` sends them to a stopped job; a snug
/// that ended meanwhile is no error.
fn term_cont(name: &str, pidfd: BorrowedFd<'_>) -> anyhow::Result<()> {
    for sig in [libc::SIGTERM, libc::SIGCONT] {
        match crate::signals::send_pidfd(pidfd, sig) {
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(()),
            r => r.map_err(|e| failure(OS_ERROR, format!("{name}: {e}")))?,
        }
    }
    Ok(())
}

fn send(name: &str, pidfd: BorrowedFd<'_>, sig: i32) -> anyhow::Result<()> {
    crate::signals::send_pidfd(pidfd, sig).map_err(|e| failure(OS_ERROR, format!("{name}: {e}")))
}

/// Wait until the run's snug is gone; the end's text (`exit 7`) when `sock` brought it.
fn wait_end(sock: Option<BorrowedFd<'_>>, pidfd: BorrowedFd<'_>) -> anyhow::Result<Option<String>> {
    let alive = || !socket::readable(pidfd, 0);
    let mut end = None;
    // The run writes `end …` just before it exits; its pidfd says when it is gone.
    while let Some(sock) = sock {
        let mut p = [PollFd::new(&sock, PollFlags::IN), PollFd::new(&pidfd, PollFlags::IN)];
        match rustix::event::poll(&mut p, None) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(failure(OS_ERROR, format!("poll: {e}"))),
            Ok(_) => {}
        }
        match socket::recv(sock) {
            Got::Packet(b, _) if b.starts_with(b"end ") => {
                end = Some(String::from_utf8_lossy(&b[4..]).into_owned());
                break;
            }
            Got::Packet(..) | Got::TooLong | Got::Empty if alive() => continue,
            _ => break,
        }
    }
    // Its pid must be gone before stop returns: wait on the pidfd (bounded by the run's own
    // bounds, G3: at most the grace and a teardown).
    socket::readable(pidfd, -1);
    Ok(end)
}
