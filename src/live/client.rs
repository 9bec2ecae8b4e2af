//! The client side of a run's control socket (SPEC L1, L2, L5), shared by `ps`, `stop`,
//! `signal` and `exec`, and `snug signal` itself.
//!
//! Identity is exact: the socket's peer is read with `SO_PEERCRED` (its pid as the kernel
//! recorded it at `listen(2)`), pinned with a pidfd before anything it says is trusted, and
//! the answer must name that same pid while the pidfd shows it alive. A pid that was reused
//! cannot show a stranger: a dead snug's socket refuses connections (and is removed here).
//! A run whose snug is stopped (^Z, TSTP) cannot accept nor answer: it is found and pinned
//! through its lock file instead ([`super::lockfile`]), never waited for.

use super::lockfile::{self, Holder};
use super::socket::{self, Got};
use crate::end::Outcome;
use crate::error::{failure, OS_ERROR, POLICY, USAGE};
use rustix::fd::{AsFd, OwnedFd};
use snug_core::wire::{Control, FRAME};
use std::path::{Path, PathBuf};

/// A verified connection to a live run's snug.
pub struct Conn {
    /// The connected socket.
    pub fd: OwnedFd,
    /// The run's snug, as `SO_PEERCRED` named it.
    pub pid: snug_core::Pid,
    /// A pidfd of that snug, taken before any reply was read.
    pub pidfd: OwnedFd,
}

/// Why a socket gave no connection.
pub enum Refused {
    /// Its snug is gone; the file was removed.
    Stale,
    /// Nothing is at the path (`ENOENT`).
    Missing,
    /// The path is no socket (or one nobody listens on that is not a socket file): not a run.
    NotARun,
    /// Not this user's (`EACCES` from the socket's mode, or the run's own peer check).
    Denied,
    /// Its backlog is full (`EAGAIN`): its snug accepts nothing now (stopped, most likely).
    Busy,
    /// Its snug runs in another pid namespace: one this process cannot see (`SO_PEERCRED` gives
    /// pid 0), so it cannot be pinned, or one below, whose snug sees this process as pid 0 and
    /// refuses it as it refuses a sandbox (X4).
    Unreachable,
    /// Anything else, in words.
    Other(String),
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Where a run's name leads: its socket and whose run it must be.
pub struct Found {
    /// The control socket.
    pub path: PathBuf,
    /// The uid the run's snug must run as: the caller's for a bare name, USER's for
    /// `USER/NAME`; `None` for a socket path (whoever it is, as the path said).
    pub owner: Option<u32>,
}

/// The uid of login name `user` ([`crate::passwd::by_name`]).
fn uid_of(user: &str) -> Option<u32> {
    crate::passwd::by_name(user).map(|u| u.uid)
}

/// The directories where `uid`'s sockets may be: as [`super::dirs_to_scan`] finds them.
fn dirs_of(uid: u32) -> Vec<PathBuf> {
    if uid == euid() {
        return vec![super::own_dir()];
    }
    super::dirs_to_scan().into_iter().filter(|(_, u)| *u == Some(uid)).map(|(d, _)| d).collect()
}

/// The socket of the run `name` addresses (SPEC L5): a bare NAME is one of the caller's own
/// runs (root's too: never another user's); `USER/NAME` is that user's run; a path (starting
/// with `/` or `.`) is that socket. A name no run has yet is waited for a while: the run may
/// be starting ([`super::appear`]).
///
/// # Errors
/// 64 when no live sandbox has the name, or USER is no user.
pub fn find(name: &str) -> anyhow::Result<Found> {
    if name.starts_with(['/', '.']) {
        return Ok(Found { path: PathBuf::from(name), owner: None });
    }
    let (owner, run) = match name.split_once('/') {
        Some((user, run)) => {
            let uid = uid_of(user).ok_or_else(|| failure(USAGE, format!("{name}: no user named {user:?}")))?;
            (uid, run)
        }
        None => (euid(), name),
    };
    super::check_name(run)?;
    let candidates: Vec<PathBuf> = dirs_of(owner).iter().map(|d| d.join(format!("{run}.sock"))).collect();
    match super::appear::first_of(&candidates, super::appear::WAIT) {
        Some(path) => Ok(Found { path, owner: Some(owner) }),
        None => Err(failure(USAGE, format!("no live sandbox named {name} (see snug ps)"))),
    }
}

/// Connect to `path` and check who answers (see the module doc); with `owner`, the run's
/// snug must run as that uid.
pub fn open(path: &Path, owner: Option<u32>) -> Result<Conn, Refused> {
    let fd = match socket::connect(path) {
        Ok(fd) => fd,
        // SPEC L5: a dead snug leaves nothing live; a file that is no socket is not ours.
        Err(rustix::io::Errno::CONNREFUSED) if socket::remove_stale(path) => {
            lockfile::remove_stale(&lockfile::path_for(path));
            return Err(Refused::Stale);
        }
        Err(rustix::io::Errno::CONNREFUSED) => return Err(Refused::NotARun),
        Err(rustix::io::Errno::NOENT) => return Err(Refused::Missing),
        Err(rustix::io::Errno::ACCESS | rustix::io::Errno::PERM) => return Err(Refused::Denied),
        Err(rustix::io::Errno::AGAIN) => return Err(Refused::Busy),
        Err(e) => return Err(Refused::Other(crate::error::strerror(e.raw_os_error()))),
    };
    let peer = socket::peer(fd.as_fd()).map_err(|e| Refused::Other(e.to_string()))?;
    // A socket of another user is not this user's run (a root run's own check refuses the
    // request with `err permission denied`; root's socket can be asked).
    if peer.uid != euid() && euid() != 0 && peer.uid != 0 {
        return Err(Refused::Denied);
    }
    if owner.is_some_and(|u| u != peer.uid) {
        return Err(Refused::Other(format!("the socket's snug runs as uid {}, not the run's user", peer.uid)));
    }
    let Some(pid) = peer.pid else { return Err(Refused::Unreachable) };
    let pidfd = crate::pidfd::open(pid).map_err(|_| Refused::Stale)?;
    if super::peer::below_own(pidfd.as_fd()) {
        return Err(Refused::Unreachable);
    }
    Ok(Conn { fd, pid, pidfd })
}

impl Conn {
    /// Whether the pinned snug is still alive (its pidfd is not readable).
    pub fn alive(&self) -> bool {
        !socket::readable(self.pidfd.as_fd(), 0)
    }

    /// Whether the pinned snug is stopped (it reads nothing until continued).
    pub fn stopped(&self) -> bool {
        lockfile::stopped(self.pid)
    }

    /// Send `req` and wait up to `ms` for one reply packet.
    pub fn ask(&self, req: &[u8], ms: i32) -> Got {
        // A refusal (`err permission denied`) may already wait, sent before the run closed
        // the connection: read it even when the send found the connection closed.
        let _ = socket::send(self.fd.as_fd(), req, &[]);
        socket::recv_within(self.fd.as_fd(), ms)
    }
}

/// A run as a command reaches it.
pub enum Reached {
    /// Connected (its snug may still stop before it answers: see [`Conn::stopped`]).
    Live(Conn),
    /// Its snug is stopped: pinned through its lock file, not connected.
    Stopped(Holder),
}

/// [`find`], then the run's snug: through its lock file when it is stopped, else [`open`];
/// a refusal is the matching error.
///
/// # Errors
/// 64 no such run, 77 not this user's (SPEC L5), 71 otherwise.
pub fn reach(name: &str) -> anyhow::Result<(PathBuf, Reached)> {
    let Found { path, owner } = find(name)?;
    let holder = lockfile::holder(&lockfile::path_for(&path)).filter(|h| owner.is_none_or(|u| u == h.uid));
    if let Some(h) = holder.filter(Holder::stopped) {
        if h.uid != euid() && euid() != 0 {
            return Err(failure(POLICY, format!("{name}: permission denied")));
        }
        return Ok((path, Reached::Stopped(h)));
    }
    let conn = open(&path, owner).map_err(|r| match r {
        Refused::Stale => failure(USAGE, format!("no live sandbox named {name} (its snug is gone)")),
        Refused::NotARun => failure(USAGE, format!("{name}: not a live sandbox's socket (see snug ps)")),
        Refused::Missing => failure(USAGE, format!("no live sandbox at {name} (see snug ps)")),
        Refused::Denied => failure(POLICY, format!("{name}: permission denied")),
        Refused::Busy => failure(OS_ERROR, format!("{name}: no answer from its snug (it accepts no connection now)")),
        Refused::Unreachable => {
            failure(POLICY, format!("{name}: its snug runs in another pid namespace; ask from the one it runs in"))
        }
        Refused::Other(why) => failure(OS_ERROR, format!("{name}: {why}")),
    })?;
    Ok((path, Reached::Live(conn)))
}

/// The error for a command that needs an answer from a stopped run.
pub fn stopped_error(name: &str) -> anyhow::Error {
    failure(OS_ERROR, format!("{name}: its snug is stopped (^Z); continue it first: fg, or snug signal {name} CONT"))
}

/// [`reach`] for a command that needs a connection: a stopped run is an error.
///
/// # Errors
/// As [`reach`]; 71 when the run is stopped.
pub fn connect_named(name: &str) -> anyhow::Result<Conn> {
    match reach(name)?.1 {
        Reached::Live(c) if c.stopped() => Err(stopped_error(name)),
        Reached::Live(c) => Ok(c),
        Reached::Stopped(_) => Err(stopped_error(name)),
    }
}

/// A run's reply as a result: `err permission denied` is 77 (L5), any other `err` 71.
///
/// # Errors
/// As said.
pub fn expect_ok(name: &str, got: Got) -> anyhow::Result<(Vec<u8>, Vec<OwnedFd>)> {
    match got {
        Got::Packet(b, f) if b.starts_with(b"ok") || b.starts_with(b"J") => Ok((b, f)),
        Got::Packet(b, _) if b == b"err permission denied" => {
            Err(failure(POLICY, format!("{name}: permission denied")))
        }
        Got::Packet(b, _) => {
            let text = String::from_utf8_lossy(b.strip_prefix(b"err ").unwrap_or(&b)).into_owned();
            Err(failure(OS_ERROR, format!("{name}: {text}")))
        }
        _ => Err(failure(OS_ERROR, format!("{name}: no answer from its snug"))),
    }
}

/// `snug signal NAME SIG`: as if SIG were sent to that snug by a process (G1–G6). A stopped
/// snug gets SIG as from `kill`, through its pidfd: it waits there until snug continues (CONT
/// itself continues it, and with it the sandbox).
///
/// # Errors
/// As [`reach`] and [`expect_ok`].
pub fn signal(name: &str, sig: snug_core::Signal) -> anyhow::Result<Outcome> {
    let pidfd = match reach(name)?.1 {
        Reached::Live(c) if !c.stopped() => {
            match c.ask(Control::Signal(sig).encode(&mut [0; FRAME]), 2000) {
                // It stopped before reading the request, which waits for it as a kill's
                // signal would.
                Got::Empty if c.alive() && c.stopped() => {}
                got => drop(expect_ok(name, got)?),
            }
            return Ok(Outcome::Status(snug_core::WaitStatus::Exited(0)));
        }
        Reached::Live(c) => c.pidfd,
        Reached::Stopped(h) => h.pidfd,
    };
    crate::signals::send_pidfd(pidfd.as_fd(), sig).map_err(|e| failure(OS_ERROR, format!("{name}: {e}")))?;
    Ok(Outcome::Status(snug_core::WaitStatus::Exited(0)))
}
