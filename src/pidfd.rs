//! Processes pinned by pidfds (`pidfd_open(2)`, `pidfd_send_signal(2)`): snug signals the
//! sandbox only through these, so a recycled pid can never make it hit a stranger (SPEC K4).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A pinned process.
#[derive(Debug)]
pub struct Pinned {
    fd: OwnedFd,
    /// Its pid in snug's pid namespace, read once from the pidfd's fdinfo (`proc(5)`).
    pub host_pid: i32,
}

fn last() -> io::Error {
    io::Error::last_os_error()
}

impl Pinned {
    /// Pin process `pid` of snug's namespace (`pidfd_open(2)`, close-on-exec by default).
    ///
    /// # Errors
    /// `ESRCH` when there is no such process.
    pub fn open(pid: i32) -> io::Result<Pinned> {
        // SAFETY: plain syscall; a returned descriptor is owned here only.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(last());
        }
        // SAFETY: the descriptor was just created.
        Ok(Pinned { fd: unsafe { OwnedFd::from_raw_fd(fd as RawFd) }, host_pid: pid })
    }

    /// Adopt a pidfd (one init passed over the channel, or one from `clone3(2)`) and learn
    /// the pid it stands for in snug's namespace.
    ///
    /// # Errors
    /// `EINVAL` when the fdinfo has no `Pid:` line (not a pidfd), `ESRCH` when the process
    /// is already gone (`Pid: -1`).
    pub fn adopt(fd: OwnedFd) -> io::Result<Pinned> {
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd()))?;
        let pid = info
            .lines()
            .find_map(|l| l.strip_prefix("Pid:"))
            .and_then(|v| v.trim().parse::<i32>().ok())
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        if pid <= 0 {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(Pinned { fd, host_pid: pid })
    }

    /// The descriptor, for `poll(2)`: readable once the process has exited.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Send `sig` to the process alone.
    ///
    /// # Errors
    /// `ESRCH` once it has exited (also when unreaped).
    pub fn signal(&self, sig: i32) -> io::Result<()> {
        // SAFETY: plain syscall with a null siginfo.
        let rc = unsafe { libc::syscall(libc::SYS_pidfd_send_signal, self.raw(), sig, std::ptr::null::<u8>(), 0) };
        if rc < 0 {
            return Err(last());
        }
        Ok(())
    }

    /// Whether the process has exited (the pidfd polls readable, `pidfd_open(2)`).
    pub fn exited(&self) -> bool {
        let mut p = libc::pollfd { fd: self.raw(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd that lives in this frame, zero timeout.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    /// Reap the process, which must be snug's child (`waitid(2)` with `P_PIDFD`), and give
    /// its raw wait status; `None` when it was reaped elsewhere (a caller that ignores
    /// SIGCHLD makes the kernel reap it, SPEC S3).
    pub fn reap(&self) -> Option<i32> {
        // SAFETY: siginfo is a plain struct the kernel fills.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            loop {
                let rc = libc::waitid(libc::P_PIDFD, self.raw() as libc::id_t, &mut info, libc::WEXITED);
                if rc == 0 {
                    break;
                }
                if last().kind() != io::ErrorKind::Interrupted {
                    return None;
                }
            }
            let status = info.si_status();
            Some(match info.si_code {
                libc::CLD_EXITED => (status & 0xff) << 8,
                _ => status & 0x7f,
            })
        }
    }

    /// The state letter of `/proc/PID/stat` (`proc(5)`), read through the pinned pid while the
    /// pidfd shows the process alive; `None` once it has exited.
    pub fn state(&self) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.host_pid)).ok()?;
        if self.exited() {
            return None;
        }
        stat.rsplit_once(')')?.1.trim_start().chars().next()
    }
}
