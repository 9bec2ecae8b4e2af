//! Processes pinned by pidfds (`pidfd_open(2)`, `pidfd_send_signal(2)`): snug signals the
//! sandbox only through these, so a recycled pid can never make it hit a stranger (SPEC K4).

use rustix::process::{pidfd_open, pidfd_send_signal, waitid, PidfdFlags, Signal, WaitId, WaitIdOptions};
use snug_core::{Pid, WaitStatus};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// A pidfd of process `pid` of the caller's pid namespace (`pidfd_open(2)`, close-on-exec).
///
/// # Errors
/// `ESRCH` when there is no such process, `EINVAL` for a pid <= 0.
pub fn open(pid: Pid) -> io::Result<OwnedFd> {
    let p = crate::sys::process::to_rustix(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(pidfd_open(p, PidfdFlags::empty())?)
}

/// A pinned process.
#[derive(Debug)]
pub struct Pinned {
    fd: OwnedFd,
    /// Its pid in snug's pid namespace, read once from the pidfd's fdinfo (`proc(5)`).
    pub host_pid: Pid,
}

impl Pinned {
    /// Pin process `pid` of snug's namespace (`pidfd_open(2)`, close-on-exec by default).
    ///
    /// # Errors
    /// `ESRCH` when there is no such process, `EINVAL` for a pid <= 0.
    pub fn open(pid: Pid) -> io::Result<Pinned> {
        Ok(Pinned { fd: open(pid)?, host_pid: pid })
    }

    /// Pin a child snug just made with `clone3(2)`: its `CLONE_PIDFD` descriptor and the pid
    /// `clone3` returned (snug's namespace; no fdinfo to read).
    pub fn cloned(fd: OwnedFd, pid: Pid) -> Pinned {
        Pinned { fd, host_pid: pid }
    }

    /// Adopt a pidfd (one init passed over the channel) and learn the pid it stands for in
    /// snug's namespace.
    ///
    /// # Errors
    /// `EINVAL` when the fdinfo has no `Pid:` line (not a pidfd), `ESRCH` when the process
    /// is already gone (`Pid: -1`).
    pub fn adopt(fd: OwnedFd) -> io::Result<Pinned> {
        let info = crate::sys::fd::read_proc(&format!("/proc/self/fdinfo/{}", fd.as_raw_fd()))?;
        let pid = info
            .lines()
            .find_map(|l| l.strip_prefix("Pid:"))
            .and_then(|v| v.trim().parse::<i32>().ok())
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        let host_pid = Pid::new(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
        Ok(Pinned { fd, host_pid })
    }

    /// The descriptor, for `poll(2)`: readable once the process has exited.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Send `sig`, a named signal (snug sends only KILL, TERM and CONT this way), to the
    /// process alone; never with flags (no `PIDFD_SIGNAL_PROCESS_GROUP`, R6).
    ///
    /// # Errors
    /// `ESRCH` once it has exited (also when unreaped); `EINVAL` for a signal without a name.
    pub fn signal(&self, sig: snug_core::Signal) -> io::Result<()> {
        let sig = Signal::from_named_raw(sig.raw()).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        Ok(pidfd_send_signal(&self.fd, sig)?)
    }

    /// Whether the process has exited (the pidfd polls readable, `pidfd_open(2)`).
    pub fn exited(&self) -> bool {
        crate::sys::poll::readable(&self.fd, Some(std::time::Duration::ZERO))
    }

    /// Reap the process, which must be snug's child (`waitid(2)` with `P_PIDFD`), and give
    /// how it ended; `None` when it was reaped elsewhere (a caller that ignores SIGCHLD makes
    /// the kernel reap it, SPEC S3).
    pub fn reap(&self) -> Option<WaitStatus> {
        let status = loop {
            match waitid(WaitId::PidFd(self.fd.as_fd()), WaitIdOptions::EXITED) {
                Ok(Some(s)) => break s,
                Err(rustix::io::Errno::INTR) => continue,
                _ => return None,
            }
        };
        Some(match (status.exit_status(), status.terminating_signal()) {
            (Some(code), _) => WaitStatus::Exited(code & 0xff),
            (None, Some(sig)) => WaitStatus::Signaled { sig: snug_core::Signal(sig & 0x7f), core: false },
            (None, None) => return None,
        })
    }

    /// The state letter of `/proc/PID/stat` (`proc(5)`), read through the pinned pid while the
    /// pidfd shows the process alive; `None` once it has exited.
    pub fn state(&self) -> Option<char> {
        let stat = crate::sys::fd::read_proc(&format!("/proc/{}/stat", self.host_pid)).ok()?;
        if self.exited() {
            return None;
        }
        stat.rsplit_once(')')?.1.trim_start().chars().next()
    }
}

impl AsFd for Pinned {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
