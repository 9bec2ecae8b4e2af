//! The control socket's plumbing (SPEC L5), through rustix: a `SOCK_SEQPACKET` Unix socket
//! at a path (never an abstract name, which any user could see and connect to, `unix(7)`)
//! and its peer's credentials (`SO_PEERCRED`, `socket(7)`). Its packets with descriptors
//! are [`crate::sys::packet`]'s.

pub use crate::sys::packet::{readable, recv, recv_within, send, Got};

use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{self, AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use std::path::Path;

/// The peer of a connected socket, as the kernel recorded it at `connect(2)`/`listen(2)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    /// Its pid in our pid namespace (`None` when it is not visible here).
    pub pid: Option<snug_core::Pid>,
    /// Its effective uid.
    pub uid: u32,
}

/// `SO_PEERCRED` of `fd`. The kernel gives pid 0 for a peer in a pid namespace this one cannot
/// see (`socket(7)`); nix's credentials keep that 0 as a plain `pid_t`, where rustix's
/// `UCred` holds a non-zero `Pid` that 0 does not fit (it came back as "error 0").
///
/// # Errors
/// The `getsockopt(2)` error.
pub fn peer(fd: BorrowedFd<'_>) -> std::io::Result<Peer> {
    let c = nix::sys::socket::getsockopt(&fd, nix::sys::socket::sockopt::PeerCredentials)?;
    Ok(Peer { pid: snug_core::Pid::new(c.pid()), uid: c.uid() })
}

fn seqpacket(flags: SocketFlags) -> std::io::Result<OwnedFd> {
    Ok(net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC | flags, None)?)
}

/// A listening, non-blocking socket bound at `path`. `bind(2)` fails with `EADDRINUSE` when
/// the path exists: a name is taken atomically.
///
/// # Errors
/// The failing call's error.
pub fn listen(path: &Path) -> std::io::Result<OwnedFd> {
    let fd = seqpacket(SocketFlags::NONBLOCK)?;
    net::bind(&fd, &SocketAddrUnix::new(path)?)?;
    net::listen(&fd, 16)?;
    Ok(fd)
}

/// A connection to the socket at `path`. The `connect(2)` itself is non-blocking: a listener
/// whose backlog is full (a stopped snug, which accepts nothing) gives `EAGAIN` at once
/// instead of a wait without end (every run's start-up sweep connects to every socket); the
/// connection is then blocking, as the callers use it. `ECONNREFUSED` means nobody listens:
/// the snug that made it is gone.
///
/// # Errors
/// The failing call's error.
pub fn connect(path: &Path) -> Result<OwnedFd, Errno> {
    let fd = seqpacket(SocketFlags::NONBLOCK).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    net::connect(&fd, &SocketAddrUnix::new(path)?)?;
    rustix::fs::fcntl_setfl(&fd, rustix::fs::OFlags::empty())?;
    Ok(fd)
}

/// What a connection holds, looked at without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queued {
    /// Its peer closed it with nothing left to read (an empty packet reads as a close too, as
    /// [`recv`] takes it), or it failed.
    Closed,
    /// A request waits to be read.
    Request,
    /// Nothing waits.
    Nothing,
}

/// What connection `fd` holds: `recv(2)` with `MSG_PEEK | MSG_DONTWAIT`.
pub fn queued(fd: BorrowedFd<'_>) -> Queued {
    let mut byte = [0u8; 1];
    match net::recv(fd, &mut byte, net::RecvFlags::PEEK | net::RecvFlags::DONTWAIT) {
        Ok((0, _)) => Queued::Closed,
        Ok(_) => Queued::Request,
        Err(Errno::AGAIN) | Err(Errno::INTR) => Queued::Nothing,
        Err(_) => Queued::Closed,
    }
}

/// Remove the control socket at `path` if its snug is gone: only a socket (`lstat(2)` says
/// so) that nobody listens on (`connect(2)` refused). A path a user typed can name any file,
/// and `connect(2)` to a file that is not a socket is refused too: never remove one.
pub fn remove_stale(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let is_socket = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
    is_socket && matches!(connect(path), Err(Errno::CONNREFUSED)) && std::fs::remove_file(path).is_ok()
}

/// Accept one pending connection, close-on-exec and non-blocking; `None` when none waits.
pub fn accept(listener: BorrowedFd<'_>) -> Option<OwnedFd> {
    net::accept_with(listener, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// L5, B1: connecting to a listener that accepts nothing (a stopped snug) never waits:
    /// once its backlog is full, `connect` says `EAGAIN` at once, so a run's start-up sweep
    /// cannot hang behind it. Positive control: with the old blocking `connect(2)` the 18th
    /// connection here waited without end and this test failed at its 5 s bound.
    #[test]
    fn l5_connect_to_a_full_backlog_does_not_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.sock");
        let _listener = listen(&path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            for _ in 0..64 {
                match connect(&path) {
                    Ok(fd) => kept.push(fd),
                    Err(e) => return tx.send((kept.len(), Some(e))),
                }
            }
            tx.send((kept.len(), None))
        });
        let (queued, err) = rx.recv_timeout(Duration::from_secs(5)).expect("connect waited on a full backlog");
        assert_eq!(err, Some(Errno::AGAIN), "after {queued} queued connections");
        assert!((1..64).contains(&queued), "{queued}");
    }
}
