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
    /// Block `sigs` and open a signalfd for them. The mask is set with the raw
    /// `rt_sigprocmask(2)`, as glibc's wrapper silently drops its reserved signals 32 and 33,
    /// which a process may still send (G6).
    ///
    /// # Errors
    /// The `signalfd(2)` error.
    pub fn new(sigs: &[i32]) -> io::Result<SignalFd> {
        let mask = mask_of(sigs);
        set_mask(libc::SIG_BLOCK, mask)?;
        // SAFETY: `mask` is a kernel sigset (64 bits) in this frame; the descriptor is owned
        // by the struct.
        let fd =
            unsafe { libc::syscall(libc::SYS_signalfd4, -1, &mask, 8usize, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: just created, owned by nobody else.
        Ok(SignalFd { fd: unsafe { OwnedFd::from_raw_fd(fd as RawFd) } })
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

/// The kernel sigset (bit `n-1` for signal `n`) of `sigs`.
fn mask_of(sigs: &[i32]) -> u64 {
    sigs.iter().filter(|s| (1..=64).contains(*s)).fold(0, |m, s| m | 1u64 << (s - 1))
}

/// `rt_sigprocmask(2)` on this thread with a 64-bit kernel sigset.
fn set_mask(how: i32, mask: u64) -> io::Result<()> {
    // SAFETY: `mask` lives in this frame; no old set is read back.
    let rc = unsafe { libc::syscall(libc::SYS_rt_sigprocmask, how, &mask, std::ptr::null_mut::<u64>(), 8usize) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Stop this process with job-control signal `sig`, as the terminal's ^Z would, so the
/// caller's shell reports the job stopped with the right word ("Stopped", "Stopped (tty
/// input)"); `group` stops snug's whole process group (`kill(0, sig)`), so a wrapper between
/// the shell and snug (`bash -c`, make) stops too. Returns once continued.
///
/// `sig` is blocked for the signalfd: it is unblocked around the `kill(2)` so its default
/// action (stop) applies instead of queueing it. The kernel discards TSTP, TTIN and TTOU for
/// an orphaned process group (`kernel/signal.c`, `do_signal_stop` callers), and snug ignores
/// `sig` when its caller did (S2): then SIGSTOP, which always stops, stops snug alone.
pub fn stop_with(sig: i32, group: bool) {
    let job = matches!(sig, libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU) && !ignored(sig) && !orphaned();
    // SAFETY: plain syscalls on this process and its own group; execution continues after
    // SIGCONT.
    unsafe {
        if !job {
            libc::kill(libc::getpid(), libc::SIGSTOP);
            return;
        }
        let _ = set_mask(libc::SIG_UNBLOCK, mask_of(&[sig]));
        libc::kill(if group { 0 } else { libc::getpid() }, sig);
        let _ = set_mask(libc::SIG_BLOCK, mask_of(&[sig]));
    }
}

/// Whether snug's process group is orphaned as far as snug can tell (`credentials(7)`): its
/// parent is not in the same session in another group, so the kernel would discard a
/// job-control stop. (Another member of the group could make it not orphaned; SIGSTOP is
/// then still a correct stop, with the shell's "Stopped (signal)" wording.)
fn orphaned() -> bool {
    // SAFETY: plain syscalls reading ids.
    unsafe {
        let parent = libc::getppid();
        !(libc::getsid(parent) == libc::getsid(0) && libc::getpgid(parent) != libc::getpgrp())
    }
}
