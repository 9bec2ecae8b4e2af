//! Signal delivery as file descriptors (`signalfd(2)`), for snug's and init's poll loops.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `si_code` of a signal the kernel generated, such as a terminal's ^C (`include/uapi/asm-generic/siginfo.h`).
pub const SI_KERNEL: i32 = 0x80;

/// One received signal.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// Signal number.
    pub sig: i32,
    /// `si_code`: [`SI_KERNEL`] for a terminal, `SI_USER` (0) for `kill(2)`, …
    pub code: i32,
    /// Sender's pid in the receiver's namespace (0 when not visible there).
    pub pid: u32,
}

impl Received {
    /// Whether the terminal (the kernel) generated it rather than a process.
    pub fn by_terminal(&self) -> bool {
        self.code == SI_KERNEL
    }
}

/// A non-blocking signalfd for a set of signals, which are blocked so that they queue: a
/// blocked signal is never discarded, even for a namespace init (`kernel/signal.c`,
/// `sig_ignored`).
#[derive(Debug)]
pub struct SignalFd {
    fd: OwnedFd,
}

impl SignalFd {
    /// Block `sigs` and open a signalfd for them.
    ///
    /// # Errors
    /// The `signalfd(2)` error.
    pub fn new(sigs: &[i32]) -> io::Result<SignalFd> {
        // SAFETY: sigset built in this frame; the descriptor is owned by the struct.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in sigs {
                libc::sigaddset(&mut set, *s);
            }
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(SignalFd { fd: OwnedFd::from_raw_fd(fd) })
        }
    }

    /// The descriptor, for `poll(2)`.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The next queued signal, if any.
    pub fn read(&self) -> Option<Received> {
        // SAFETY: reads one signalfd_siginfo, a plain struct, into this frame.
        unsafe {
            let mut info: libc::signalfd_siginfo = std::mem::zeroed();
            let size = std::mem::size_of_val(&info);
            let n = libc::read(self.raw(), (&mut info as *mut libc::signalfd_siginfo).cast(), size);
            (n == size as isize).then_some(Received {
                sig: info.ssi_signo as i32,
                code: info.ssi_code,
                pid: info.ssi_pid,
            })
        }
    }
}

/// Whether `sig` was ignored (`SIG_IGN`) in this process, read with `sigaction(2)`.
pub fn ignored(sig: i32) -> bool {
    // SAFETY: a null new action only reads the disposition into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Set `sig` to `SIG_DFL` in this process.
pub fn default(sig: i32) {
    // SAFETY: SIG_DFL runs no code of ours.
    unsafe { libc::signal(sig, libc::SIG_DFL) };
}
