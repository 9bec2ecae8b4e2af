//! The payload's process, forked before init's hello and held before its exec until snug
//! says go (the network is up, SPEC N3).

use rustix::io::Errno;
use rustix::pipe::{pipe_with, PipeFlags};
use snug_core::Pid;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// The payload's process between fork and exec: its pid, the pipe whose byte lets it exec,
/// and the pipe it reports an exec failure on (EOF there means the exec happened).
pub struct Held {
    /// Its pid.
    pub pid: Pid,
    /// Write one byte here to let it exec.
    pub go: OwnedFd,
    /// Its exec error (4 bytes of errno), or EOF once it exec'd; non-blocking.
    pub err: OwnedFd,
}

/// Fork the payload's process, sealed (SPEC S1), in a process group of its own on the
/// sandbox's pty when `pty` is given (its descriptor, and whether the payload takes the pty's
/// foreground at once, T1), waiting for a byte on the go pipe before it execs `program` with `spec`'s argv and
/// environment. Init never blocks on it: a stop or a ^C that hits
/// it before its exec is seen by `waitpid` like any other, and an exec failure arrives on
/// the error pipe, which init polls.
pub fn spawn_held(
    program: &CString,
    spec: &crate::payload_args::Spec,
    pty: Option<(RawFd, bool)>,
) -> Result<Held, Errno> {
    let (ptrs, envp) = spec.pointers();
    let (go_r, go_w) = pipe_with(PipeFlags::CLOEXEC)?;
    let (err_r, err_w) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    let pid = super::spawn::fork_exec(&super::spawn::Plan {
        program,
        argv: &ptrs,
        envp: &envp,
        close: Some(go_w.as_raw_fd()),
        session: None,
        group: pty,
        go: Some(go_r.as_raw_fd()),
        closed: spec.closed,
        err: err_w.as_raw_fd(),
    });
    drop((go_r, err_w)); // the child's ends
    let pid = pid?;
    if pty.is_some() {
        // Also here, so the group exists whichever of the two runs first (`setpgid(2)`).
        let own = crate::sys::process::to_rustix(pid);
        let _ = rustix::process::setpgid(own, own);
    }
    Ok(Held { pid, go: go_w, err: err_r })
}
