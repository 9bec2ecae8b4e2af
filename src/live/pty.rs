//! `snug exec` at a terminal (SPEC L3): a pseudo-terminal of its own for CMD, as
//! `docker exec -t` and `ssh` make one. CMD is another session's process and cannot take the
//! caller's terminal as its controlling terminal, so it gets the pty's slave (it calls
//! `setsid` and `TIOCSCTTY` on it, in init's child) and job control inside works; `snug exec`
//! puts the caller's terminal in raw mode (restored on every way out, [`Drop`]) and copies
//! bytes between it and the master, and the window size on SIGWINCH (`pty(7)`,
//! `termios(3)`).

use rustix::fd::{AsFd, OwnedFd};
use rustix::pty::OpenptFlags;
use rustix::termios::{self, OptionalActions, Termios};

/// The pty pair and the caller's terminal settings to restore.
pub struct Pty {
    /// The master side, which `snug exec` reads and writes.
    pub master: OwnedFd,
    /// The slave side, for CMD (closed here once sent).
    pub slave: Option<OwnedFd>,
    saved: Termios,
}

/// A pty when fd 0 and fd 1 are both terminals, with the caller's settings and size
/// copied to it and the caller's terminal in raw mode; `None` otherwise.
///
/// # Errors
/// A failing `posix_openpt(3)` step or `tcsetattr(3)`.
pub fn open() -> std::io::Result<Option<Pty>> {
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    if !termios::isatty(stdin.as_fd()) || !termios::isatty(stdout.as_fd()) {
        return Ok(None);
    }
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    let slave =
        rustix::pty::ioctl_tiocgptpeer(&master, OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    let saved = termios::tcgetattr(stdin.as_fd())?;
    termios::tcsetattr(&slave, OptionalActions::Now, &saved)?;
    let pty = Pty { master, slave: Some(slave), saved };
    pty.resize();
    let mut raw = pty.saved.clone();
    raw.make_raw();
    termios::tcsetattr(stdin.as_fd(), OptionalActions::Now, &raw)?;
    Ok(Some(pty))
}

impl Pty {
    /// Give the pty the caller's window size (on SIGWINCH); the kernel then signals the
    /// pty's foreground group with SIGWINCH itself.
    pub fn resize(&self) {
        if let Ok(ws) = termios::tcgetwinsize(std::io::stdin().as_fd()) {
            let _ = termios::tcsetwinsize(&self.master, ws);
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(std::io::stdin().as_fd(), OptionalActions::Now, &self.saved);
    }
}
