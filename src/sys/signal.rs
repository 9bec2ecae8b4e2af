//! The raw signal calls (`signal(7)`). Raw rather than through rustix or the C library: its
//! wrappers drop its reserved signals (32 and 33 in glibc, 32–34 in musl), which a process
//! may still send (G6), and
//! rustix's `Signal` may not name them for sending or blocking; rustix offers `signalfd4(2)`
//! and `rt_sigprocmask(2)` only in its libc-less `runtime` API.

use snug_core::types::Signal;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// A non-blocking, close-on-exec signalfd for `mask`, a kernel sigset (bit `n-1` for signal
/// `n`) that the caller has blocked (`signalfd(2)`).
///
/// # Errors
/// The `signalfd4(2)` error.
pub fn signalfd(mask: u64) -> io::Result<OwnedFd> {
    // SAFETY: `mask` is a kernel sigset (64 bits) in this frame, its size passed with it; a
    // new descriptor is owned by the caller only.
    unsafe {
        let fd = libc::syscall(libc::SYS_signalfd4, -1, &mask, 8usize, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd as RawFd))
    }
}

/// `rt_sigaction(2)` on `sig` ([`sigseal::disposition`], raw: the C library's reserved
/// signals included): install `SIG_DFL` with flags `dfl_flags` when given; the handler
/// before, or `None` when the kernel refuses `sig`.
pub fn sigaction_dfl(sig: Signal, dfl_flags: Option<i32>) -> Option<libc::sighandler_t> {
    sigseal::disposition(sig.raw(), dfl_flags).ok()
}

/// `kill(2)`: send `sig` (any number, 32 and 33 included) to `target` (a pid, 0 for the own
/// group, `-pgid` for a group, -1 for every process the caller may signal).
///
/// # Errors
/// The `kill(2)` error (`ESRCH`, `EPERM`).
pub fn kill(target: i32, sig: Signal) -> io::Result<()> {
    // SAFETY: integers only; no memory is passed.
    if unsafe { libc::kill(target, sig.raw()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `pidfd_send_signal(2)`: send `sig` (any number, 32 and 33 included; 0 only checks) to the
/// process `pidfd` pins, as `kill(2)` would (no siginfo), with `flags`
/// (`PIDFD_SIGNAL_PROCESS_GROUP` and the like, Linux 6.9+). Async-signal-safe.
///
/// # Errors
/// The call's error (`ESRCH` once the process has exited, `EINVAL` for unknown flags).
pub fn pidfd_send(pidfd: BorrowedFd<'_>, sig: Signal, flags: u32) -> io::Result<()> {
    let none = std::ptr::null::<libc::siginfo_t>();
    // SAFETY: a descriptor that lives for the call, integers, and a null siginfo, which the
    // kernel reads as "fill it in as kill(2) does"; no memory of ours is written.
    if unsafe { libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), sig.raw(), none, flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
