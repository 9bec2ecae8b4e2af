//! Init's children between `fork(2)` and `execve(2)`: the payload's held process (SPEC N3)
//! and each `snug exec` CMD (SPEC L3). One child body for both, raw libc on purpose: after
//! the fork only async-signal-safe calls (`signal-safety(7)`), on memory built before it.

use crate::sys::process::Cloned;
use rustix::io::Errno;
use snug_core::Pid;
use std::ffi::CStr;
use std::os::fd::RawFd;

/// The shell a script without `#!` runs in (`_PATH_BSHELL`).
const SH: &CStr = c"/bin/sh";

/// What the child does before its exec, in this order; all of it built before the fork.
pub struct Plan<'a> {
    /// The program to exec.
    pub program: &'a CStr,
    /// NULL-terminated argv.
    pub argv: &'a [*const libc::c_char],
    /// NULL-terminated environment.
    pub envp: &'a [*const libc::c_char],
    /// Closed first: init's end of the go pipe, so that init's death shows as EOF.
    pub close: Option<RawFd>,
    /// A new session (`setsid(2)`) with these as fds 0, 1 and 2, and the second as its
    /// controlling terminal (`TIOCSCTTY`, `ioctl_tty(2)`) when given: `snug exec`.
    pub session: Option<([RawFd; 3], Option<RawFd>)>,
    /// A process group of its own (`setpgid(2)`) in init's session, and the foreground of
    /// init's controlling terminal, this descriptor, when true (`tcsetpgrp(3)`, with SIGTTOU
    /// still blocked from init): the payload in terminal mode (SPEC T1).
    pub group: Option<(RawFd, bool)>,
    /// Wait for one byte here before the exec (SPEC N3); EOF means init is gone.
    pub go: Option<RawFd>,
    /// Bit n: close fd n of 0–2 right before the exec, as the caller had it (SPEC R2).
    pub closed: u32,
    /// The exec error pipe's write end: 4 bytes of `errno` (little-endian) when the exec fails.
    pub err: RawFd,
}

/// Fork a child that carries out `plan`, signal state sealed (SPEC S1), and execs; the
/// child's pid. A step that fails before the exec ends the child with 127.
///
/// # Errors
/// The `fork(2)` error.
pub fn fork_exec(plan: &Plan<'_>) -> Result<Pid, Errno> {
    // A file the kernel cannot execute (ENOEXEC: a script without `#!`) runs through
    // /bin/sh with its path as the first argument, as `execvp(3)`, `env` and bwrap itself do.
    let mut sh_argv: Vec<*const libc::c_char> = vec![SH.as_ptr(), plan.program.as_ptr()];
    sh_argv.extend(plan.argv.iter().skip(1)); // the rest of argv and its NULL

    // SAFETY: init is single-threaded; the child runs only `child`, below, which keeps to
    // async-signal-safe calls and ends in execve or _exit.
    match unsafe { crate::sys::process::clone3(0) } {
        // SAFETY: this is the child of a fork of a single-threaded process, which `child`
        // requires; it never returns.
        Ok(Cloned::Child) => unsafe { child(plan, &sh_argv) },
        // init waits by pid (it reaps every child of the sandbox alike); the pidfd is not needed.
        Ok(Cloned::Parent { pid, .. }) => Ok(pid),
        Err(e) => Err(Errno::from_io_error(&e).unwrap_or(Errno::AGAIN)),
    }
}

/// The child's side of [`fork_exec`]: `plan`'s steps, then the exec; never returns.
///
/// # Safety
/// Only in the child of `fork(2)` of a single-threaded process: it makes only
/// async-signal-safe calls (close, setsid, dup2, ioctl, setpgid, tcsetpgrp, getpid, read,
/// the seal's rt_sigaction/rt_sigprocmask, setgroups, setresgid, setresuid, execve, access,
/// write, _exit) on integers and on memory `plan` and `sh_argv` point at, built before the fork.
unsafe fn child(plan: &Plan<'_>, sh_argv: &[*const libc::c_char]) -> ! {
    // SAFETY: see the function's contract: async-signal-safe calls only, on memory built
    // before the fork.
    unsafe {
        if let Some(fd) = plan.close {
            libc::close(fd);
        }
        if let Some((stdio, ctty)) = plan.session {
            libc::setsid();
            for (fd, to) in stdio.iter().zip(0..) {
                if libc::dup2(*fd, to) < 0 {
                    libc::_exit(127);
                }
            }
            if let Some(tty) = ctty {
                libc::ioctl(tty, libc::TIOCSCTTY, 0);
            }
        }
        if let Some((tty, front)) = plan.group {
            libc::setpgid(0, 0);
            if front {
                libc::tcsetpgrp(tty, libc::getpid());
            }
        }
        if sigseal::seal().is_err() {
            libc::_exit(127);
        }
        if let Some(go) = plan.go {
            let mut byte = 0u8;
            loop {
                let n = libc::read(go, (&mut byte as *mut u8).cast(), 1);
                if n == 1 {
                    break;
                }
                if n == 0 || nestproc::errno() != libc::EINTR {
                    libc::_exit(127); // init is gone
                }
            }
        }
        for fd in 0..3 {
            if plan.closed & (1 << fd) != 0 {
                libc::close(fd); // after the last read of the go pipe
            }
        }
        // SPEC P11: `--user`'s uid and gid, last, so that every step above ran as init.
        let switched = crate::identity::become_payload_user();
        if switched != 0 {
            let bytes = switched.to_le_bytes();
            libc::write(plan.err, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127);
        }
        libc::execve(plan.program.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
        let errno = nestproc::errno();
        if errno == libc::ENOEXEC && sh_argv.len() > 2 {
            libc::execve(SH.as_ptr(), sh_argv.as_ptr(), plan.envp.as_ptr());
        }
        // ENOENT for a file that is there: its ELF interpreter (the dynamic loader) is not in
        // the sandbox (`execve(2)`); say so rather than "not found".
        let errno = if errno == libc::ENOENT && libc::access(plan.program.as_ptr(), libc::F_OK) == 0 {
            libc::ELIBACC
        } else {
            errno
        };
        let e = errno.to_le_bytes();
        libc::write(plan.err, e.as_ptr().cast(), 4);
        libc::_exit(127)
    }
}
