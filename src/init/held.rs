//! The payload's process, forked before init's hello and held before its exec until snug
//! says go (the network is up, SPEC N3).

use super::errno;
use std::ffi::CString;
use std::os::fd::RawFd;

/// The payload's process between fork and exec: its pid, the pipe whose byte lets it exec,
/// and the pipe it reports an exec failure on (EOF there means the exec happened).
pub struct Held {
    /// Its pid.
    pub pid: i32,
    /// Write one byte here to let it exec.
    pub go: RawFd,
    /// Its exec error (4 bytes of errno), or EOF once it exec'd.
    pub err: RawFd,
}

fn pipe(flags: libc::c_int) -> Result<[RawFd; 2], i32> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is filled by the kernel.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), flags) } != 0 {
        return Err(errno());
    }
    Ok(fds)
}

/// Fork the payload's process in the sandbox group, sealed (SPEC S1), under the terminal
/// guard's filter when `guard` is given (its program and the socket for the listener, T11),
/// waiting for a byte on
/// the go pipe before it execs `program`. Init never blocks on it: a stop or a ^C that hits
/// it before its exec is seen by `waitpid` like any other, and an exec failure arrives on
/// the error pipe, which init polls.
pub fn spawn_held(
    program: &CString,
    cmd: &[String],
    guard: Option<(&[libc::sock_filter], RawFd)>,
) -> Result<Held, i32> {
    let argv: Vec<CString> =
        cmd.iter().map(|a| CString::new(a.as_str()).map_err(|_| libc::EINVAL)).collect::<Result<_, _>>()?;
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let [go_r, go_w] = pipe(libc::O_CLOEXEC)?;
    let [err_r, err_w] = pipe(libc::O_CLOEXEC | libc::O_NONBLOCK)?;
    extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: fork in a single-threaded process; the child makes only async-signal-safe
    // calls (seal, close, read, write, execve, _exit) before exec.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: child side, see above.
        unsafe {
            libc::close(go_w);
            if sigseal::seal().is_err() {
                libc::_exit(127);
            }
            if let Some((prog, sock)) = guard {
                super::guard::install(prog, sock);
                libc::close(sock);
            }
            let mut byte = 0u8;
            loop {
                let n = libc::read(go_r, (&mut byte as *mut u8).cast(), 1);
                if n == 1 {
                    break;
                }
                if n == 0 || errno() != libc::EINTR {
                    libc::_exit(127); // init is gone
                }
            }
            libc::execve(program.as_ptr(), ptrs.as_ptr(), environ);
            let e = errno().to_le_bytes();
            libc::write(err_w, e.as_ptr().cast(), 4);
            libc::_exit(127);
        }
    }
    // SAFETY: closing our copies of the child's ends.
    unsafe {
        libc::close(go_r);
        libc::close(err_w);
    }
    if pid < 0 {
        return Err(errno());
    }
    Ok(Held { pid, go: go_w, err: err_r })
}
