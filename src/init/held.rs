//! The payload's process, forked before init's hello and held before its exec until snug
//! says go (the network is up, SPEC N3).

use rustix::pipe::{pipe_with, PipeFlags};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// The payload's process between fork and exec: its pid, the pipe whose byte lets it exec,
/// and the pipe it reports an exec failure on (EOF there means the exec happened).
pub struct Held {
    /// Its pid.
    pub pid: i32,
    /// Write one byte here to let it exec.
    pub go: OwnedFd,
    /// Its exec error (4 bytes of errno), or EOF once it exec'd; non-blocking.
    pub err: OwnedFd,
}

/// Fork the payload's process in the sandbox group, sealed (SPEC S1), under the terminal
/// guard's filter when `guard` is given (its program and the socket for the listener, T11),
/// waiting for a byte on the go pipe before it execs `program` with `spec`'s argv and
/// environment. Init never blocks on it: a stop or a ^C that hits
/// it before its exec is seen by `waitpid` like any other, and an exec failure arrives on
/// the error pipe, which init polls.
pub fn spawn_held(
    program: &CString,
    spec: &crate::payload_args::Spec,
    guard: Option<(&[libc::sock_filter], RawFd)>,
) -> Result<Held, i32> {
    let (ptrs, envp) = spec.pointers();
    let (go_r, go_w) = pipe_with(PipeFlags::CLOEXEC).map_err(|e| e.raw_os_error())?;
    let (err_r, err_w) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK).map_err(|e| e.raw_os_error())?;
    let pid = super::spawn::fork_exec(&super::spawn::Plan {
        program,
        argv: &ptrs,
        envp: &envp,
        close: Some(go_w.as_raw_fd()),
        session: None,
        guard,
        go: Some(go_r.as_raw_fd()),
        closed: spec.closed,
        err: err_w.as_raw_fd(),
    });
    drop((go_r, err_w)); // the child's ends
    Ok(Held { pid: pid?, go: go_w, err: err_r })
}
