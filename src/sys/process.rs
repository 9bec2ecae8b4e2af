//! The one way snug starts a process whose child side must stay async-signal-safe:
//! `clone3(2)` with `CLONE_PIDFD` (namespace flags as the caller needs), so every child is
//! pinned by a pidfd from birth. The child side of the call runs only bare system calls
//! until it execs or [`exit_now`]s (`signal-safety(7)`): snug's process may have other
//! threads, and only the calling one exists in the child.

use snug_core::types::{Pid, WaitStatus};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// `struct clone_args` of `clone3(2)` (`include/uapi/linux/sched.h`, first version).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
}

/// Which side of [`clone3`] this is.
#[derive(Debug)]
pub enum Cloned {
    /// The new process.
    Child,
    /// The caller: the child's pidfd (close-on-exec) and its pid in the caller's namespace.
    Parent {
        /// Pins the child (`pidfd_open(2)`); readable once it exits.
        pidfd: OwnedFd,
        /// Its pid, for `waitpid(2)` and logs.
        pid: Pid,
    },
}

/// `clone3(2)` without `CLONE_VM` and without a stack, so it behaves as `fork(2)`, with
/// `flags` (`CLONE_NEWPID`, `CLONE_NEWNS`, `CLONE_NEWUSER`, …) and `CLONE_PIDFD` added; the
/// child's exit signal is SIGCHLD.
///
/// # Safety
/// On [`Cloned::Child`] the caller makes only async-signal-safe calls (no allocation, no
/// lock, no unwinding) and ends with `execve(2)` or [`exit_now`]; it never returns into
/// code that could touch state other threads held at the clone.
///
/// # Errors
/// The `clone3(2)` error (`EAGAIN`, `ENOMEM`, `EPERM`/`EINVAL`/`ENOSPC` for namespaces).
pub unsafe fn clone3(flags: u64) -> io::Result<Cloned> {
    let mut pidfd: RawFd = -1;
    let args = CloneArgs {
        flags: flags | libc::CLONE_PIDFD as u64,
        pidfd: &mut pidfd as *mut RawFd as u64,
        exit_signal: libc::SIGCHLD as u64,
        ..Default::default()
    };
    // SAFETY: `args` is a valid first-version clone_args of the size passed, living for the
    // call; without CLONE_VM or a stack the child gets a copy of this process (the caller's
    // contract covers what it does then). In the parent CLONE_PIDFD stored a new descriptor
    // in `pidfd`, owned here only.
    unsafe {
        let mut ret = libc::syscall(libc::SYS_clone3, &args as *const CloneArgs, std::mem::size_of::<CloneArgs>());
        if ret < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            ret = clone_fallback(args.flags, &mut pidfd);
        }
        match ret {
            0 => Ok(Cloned::Child),
            pid if pid < 0 => Err(io::Error::last_os_error()),
            pid => Ok(Cloned::Parent { pidfd: OwnedFd::from_raw_fd(pidfd), pid: Pid(pid as i32) }),
        }
    }
}

/// `clone(2)` with `flags` and SIGCHLD, for where `clone3(2)` answers `ENOSYS`: inside the
/// sandbox, whose seccomp filter cannot read clone3's flags and refuses the call that way
/// (src/seccomp/cgroupns.rs), init starts the payload through this. `CLONE_PIDFD` stores the
/// descriptor at the parent-tid pointer, the third argument on x86-64 and arm64 alike.
/// Async-signal-safe: one bare system call.
///
/// # Safety
/// As [`clone3`]'s: without `CLONE_VM` and a stack the child is a copy of this process.
unsafe fn clone_fallback(flags: u64, pidfd: &mut RawFd) -> libc::c_long {
    // SAFETY: the caller's contract; `pidfd` is a live int for CLONE_PIDFD to write.
    unsafe { libc::syscall(libc::SYS_clone, flags | libc::SIGCHLD as u64, 0usize, pidfd as *mut RawFd, 0usize, 0usize) }
}

/// `_exit(2)`: end this process now, running no exit handler and flushing nothing; what a
/// fork child does instead of returning. Async-signal-safe.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes an integer and never returns; it touches no memory of this process.
    unsafe { libc::_exit(code) }
}

/// This process's pid (`getpid(2)`).
pub fn own() -> Pid {
    Pid(std::process::id() as i32)
}

/// Whether `/proc` is this process's pid namespace's: its `self` names this process by the pid
/// `getpid(2)` gives. It is not after `unshare --pid --fork` without `--mount-proc`, where
/// `/proc/PID` paths name other processes (`pid_namespaces(7)`, "/proc and PID namespaces").
pub fn proc_is_own() -> bool {
    let status = super::fd::read_proc("/proc/self/status").unwrap_or_default();
    let pid = status.lines().find_map(|l| l.strip_prefix("Pid:")).and_then(|v| v.trim().parse::<i32>().ok());
    pid == Some(own().raw())
}

/// `pid` as rustix takes it; `None` for a pid <= 0, which no process has.
pub fn to_rustix(pid: Pid) -> Option<rustix::process::Pid> {
    rustix::process::Pid::from_raw(pid.raw())
}

/// A pid rustix gave.
pub fn from_rustix(pid: rustix::process::Pid) -> Pid {
    Pid(pid.as_raw_nonzero().get())
}

/// `getpgid(2)` of `pid` (`None`: the caller); `Ok(None)` when the group's leader is
/// outside the caller's pid namespace (the kernel answers 0, which rustix's `Pid` cannot hold).
///
/// # Errors
/// `ESRCH` when there is no such process.
pub fn group_of(pid: Option<Pid>) -> io::Result<Option<Pid>> {
    // SAFETY: integers only.
    match unsafe { libc::getpgid(pid.map_or(0, Pid::raw)) } {
        n if n < 0 => Err(io::Error::last_os_error()),
        n => Ok(Pid::new(n)),
    }
}

/// `getsid(2)` of `pid` (`None`: the caller), `Ok(None)` for the reason [`group_of`] gives.
///
/// # Errors
/// `ESRCH` when there is no such process, `EPERM` for one in another session (some systems).
pub fn session_of(pid: Option<Pid>) -> io::Result<Option<Pid>> {
    // SAFETY: integers only.
    match unsafe { libc::getsid(pid.map_or(0, Pid::raw)) } {
        n if n < 0 => Err(io::Error::last_os_error()),
        n => Ok(Pid::new(n)),
    }
}

/// `waitpid(2)` for child `pid` until it has ended (restarted on `EINTR`): its status.
///
/// # Errors
/// `ECHILD` when it is not the caller's unreaped child.
pub fn wait_ended(pid: Pid) -> io::Result<WaitStatus> {
    use rustix::process::{waitpid, WaitOptions};
    let p = to_rustix(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::ECHILD))?;
    loop {
        match waitpid(Some(p), WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(WaitStatus::from_raw(status.as_raw())),
            Ok(None) | Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}
