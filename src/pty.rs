//! The sandbox's own terminal (SPEC T1): a pseudo-terminal pair opened by snug before the fork
//! (`pty(7)`), with the caller's settings (every flag and control character) and window size.
//! The slave becomes the payload's controlling terminal and each of fds 0–2 that was the
//! caller's terminal; snug keeps the master. Why a pty at all: see [`crate::tty`].

use crate::tty::CallerTty;
use rustix::fd::OwnedFd;
use rustix::pty::OpenptFlags;
use rustix::termios::{self, OptionalActions};

/// A pty pair.
pub struct Pty {
    /// snug's side: non-blocking, read and written by the bridge.
    pub master: OwnedFd,
    /// The sandbox's side; snug closes its copy once the sandbox holds it, so that the
    /// master reads EIO once no sandbox process has it open (T14's drain ends there).
    pub slave: OwnedFd,
}

/// A new pty with `like`'s settings and size.
///
/// # Errors
/// A failing `posix_openpt(3)`, `grantpt(3)`, `unlockpt(3)` or `TIOCGPTPEER` step.
pub fn open(like: &CallerTty) -> std::io::Result<Pty> {
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    adopt(master, like)
}

/// The pair of an unlocked `master` opened elsewhere (a sandbox's `/dev/ptmx`, for `snug
/// exec`), with `like`'s settings and size. `TIOCGPTPEER` opens the slave in the master's own
/// devpts instance, whatever the caller's mount namespace (`ioctl_tty(2)`, Linux 4.13).
///
/// # Errors
/// A failing `TIOCGPTPEER` (`master` is no pty master) or `fcntl(2)`.
pub fn adopt(master: OwnedFd, like: &CallerTty) -> std::io::Result<Pty> {
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let slave = rustix::pty::ioctl_tiocgptpeer(&master, flags)?;
    if let Some(t) = like.settings() {
        let _ = termios::tcsetattr(&slave, OptionalActions::Now, &t);
    }
    if let Some(ws) = like.size() {
        let _ = termios::tcsetwinsize(&master, ws);
    }
    let fl = rustix::fs::fcntl_getfl(&master)?;
    rustix::fs::fcntl_setfl(&master, fl | rustix::fs::OFlags::NONBLOCK)?;
    Ok(Pty { master, slave })
}
