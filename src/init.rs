//! The sandbox init: pid 1 of the sandbox's pid namespace, run by bwrap with `--as-pid-1`
//! (DESIGN.md, "Why snug's own init"). It leads the sandbox process group, execs the payload,
//! reaps orphans and reports to snug over the channel. As a namespace init it receives only
//! signals it handles (`pid_namespaces(7)`), so the payload cannot kill it; when it exits the
//! kernel kills the rest of the sandbox (SPEC R5).

use crate::channel::{Channel, Order, Received, Report, INIT_FD, STDERR_FD};
use crate::signals::SignalFd;
use std::ffi::CString;
use std::os::fd::RawFd;

/// The first argument that selects init mode in snug's own binary.
pub const FLAG: &str = "--snug-init";

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Run as init with `args` = `[MODE, "--", CMD, ARG...]` (what follows [`FLAG`]); never returns.
pub fn main(args: &[String]) -> ! {
    // SAFETY: fd INIT_FD was set up by snug's nest for exactly this process.
    let chan = unsafe { Channel::from_fd(INIT_FD) };
    let code = match run(&chan, args) {
        Ok(code) => code,
        Err(e) => {
            let _ = chan.report(Report::InitFailed(e), None);
            1
        }
    };
    // SAFETY: _exit ends init at once; the kernel then empties the namespace.
    unsafe { libc::_exit(code) }
}

fn run(chan: &Channel, args: &[String]) -> Result<i32, i32> {
    let mode = args.first().map(String::as_str).unwrap_or("detached");
    let cmd: Vec<String> = args.iter().skip_while(|a| *a != "--").skip(1).cloned().collect();
    // SAFETY: prctl, fcntl, dup2, close, setsid/setpgid: plain syscalls on our own state.
    unsafe {
        // The payload runs as the same uid: keep it from opening our descriptors via /proc.
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::fcntl(INIT_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        // fd 2 is bwrap's error pipe to snug: put the caller's stderr back (SPEC R2).
        if libc::dup2(STDERR_FD, 2) < 0 {
            return Err(errno());
        }
        libc::close(STDERR_FD);
        if mode == "detached" {
            // Own session, led by init: no terminal can signal the sandbox (SPEC D1).
            if libc::setsid() < 0 {
                return Err(errno());
            }
        } else {
            // Own group in the caller's session, keeping the controlling terminal (SPEC T1).
            // snug, not init, hands this group the foreground: only snug knows whether it is
            // still in the foreground itself (a ^Z during start-up must not let the sandbox
            // take the caller's terminal).
            if libc::setpgid(0, 0) < 0 {
                return Err(errno());
            }
        }
    }
    let signals = SignalFd::new(&[libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let program = match cmd.first().map_or(Err(libc::ENOENT), |c| resolve(c)) {
        Ok(p) => p,
        Err(e) => {
            let _ = chan.report(Report::ExecFailed(e), None);
            return Ok(127); // snug exits 126 or 127
        }
    };
    // The payload's process exists from here on, held before its exec until snug says go
    // (the network is up, SPEC N3). Being in the sandbox group already, it takes a ^C or ^Z
    // typed once snug has handed the sandbox the terminal, as the payload would.
    let held = spawn_held(&program, &cmd)?;
    let me = pidfd_self()?;
    chan.report(Report::Hello, Some(me)).map_err(|_| libc::EPIPE)?;
    // SAFETY: our own pidfd, passed and no longer needed here.
    unsafe { libc::close(me) };
    // SAFETY: plain syscall; the pidfd is passed to snug and closed here.
    let pfd = unsafe { libc::syscall(libc::SYS_pidfd_open, held.pid, 0) };
    let _ = chan.report(Report::Started(held.pid), if pfd >= 0 { Some(pfd as RawFd) } else { None });
    if pfd >= 0 {
        // SAFETY: our copy of the pidfd.
        unsafe { libc::close(pfd as RawFd) };
    }
    supervise(chan, &signals, held)
}

fn pidfd_self() -> Result<RawFd, i32> {
    // SAFETY: plain syscall.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
    if fd < 0 {
        return Err(errno());
    }
    Ok(fd as RawFd)
}

/// The payload's program: CMD itself when it has a slash, else the first match on `$PATH`,
/// as `execvp(3)` searches; the error is the `errno` snug turns into 126 or 127 (SPEC R4).
fn resolve(cmd: &str) -> Result<CString, i32> {
    let c = |p: &str| CString::new(p).map_err(|_| libc::EINVAL);
    if cmd.contains('/') {
        return c(cmd);
    }
    if cmd.is_empty() {
        return Err(libc::ENOENT);
    }
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let mut seen_eacces = false;
    for dir in path.split(':').filter(|d| !d.is_empty()) {
        let cand = c(&format!("{dir}/{cmd}"))?;
        // SAFETY: `cand` is NUL-terminated.
        if unsafe { libc::access(cand.as_ptr(), libc::X_OK) } == 0 {
            let meta = std::fs::metadata(format!("{dir}/{cmd}"));
            if meta.map(|m| m.is_file()).unwrap_or(false) {
                return Ok(cand);
            }
        } else if errno() == libc::EACCES {
            seen_eacces = true;
        }
    }
    Err(if seen_eacces { libc::EACCES } else { libc::ENOENT })
}

/// The payload's process between fork and exec: its pid, the pipe whose byte lets it exec,
/// and the pipe it reports an exec failure on (EOF there means the exec happened).
struct Held {
    pid: i32,
    go: RawFd,
    err: RawFd,
}

fn pipe(flags: libc::c_int) -> Result<[RawFd; 2], i32> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is filled by the kernel.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), flags) } != 0 {
        return Err(errno());
    }
    Ok(fds)
}

/// Fork the payload's process in the sandbox group, sealed (SPEC S1), waiting for a byte on
/// the go pipe before it execs `program`. Init never blocks on it: a stop or a ^C that hits
/// it before its exec is seen by `waitpid` like any other, and an exec failure arrives on
/// the error pipe, which init polls.
fn spawn_held(program: &CString, cmd: &[String]) -> Result<Held, i32> {
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

/// Send `sig` to every process of the sandbox: from the namespace's pid 1, `kill(-1)` reaches
/// each one but init itself, in whatever group or session it put itself (a payload that ran
/// `setsid`, an interactive shell that leads its own group), and no process outside the
/// namespace can be named (`kill(2)`, `pid_namespaces(7)`). Simpler than tracking groups,
/// and it never names a pid.
fn relay(sig: i32) {
    // SAFETY: plain syscall.
    unsafe { libc::kill(-1, sig) };
}

/// Continue what a stop stopped: the sandbox group (init's, addressed as our own group: its
/// id is 1, and `kill(-1)` would mean everyone) and the payload's group when it has its own.
fn resume(payload: i32) {
    // SAFETY: plain syscalls on our own group and the payload's group.
    unsafe {
        libc::kill(0, libc::SIGCONT);
        let group = libc::getpgid(payload);
        if group > 1 {
            libc::kill(-group, libc::SIGCONT);
        }
    }
}

/// Wait for the payload; report stops, continues and its end; reap orphans.
fn supervise(chan: &Channel, signals: &SignalFd, held: Held) -> Result<i32, i32> {
    let payload = held.pid;
    let mut go = Some(held.go);
    let mut exec_err = Some(held.err);
    let mut grace = false;
    let mut ended: Option<i32> = None;
    loop {
        let mut fds = [
            libc::pollfd { fd: chan.raw(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: signals.raw(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: exec_err.unwrap_or(-1), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: three pollfds in this frame; poll(2) skips a negative fd.
        if unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) } < 0 {
            continue;
        }
        // Orders first: a Grace is sent before the signal that may end the payload.
        loop {
            match chan.recv_order(true) {
                Ok(Received::Packet(Some(Order::Go), _)) => {
                    if let Some(fd) = go.take() {
                        // SAFETY: one byte from this frame to the held payload; then our end
                        // is closed.
                        unsafe {
                            libc::write(fd, b"g".as_ptr().cast(), 1);
                            libc::close(fd);
                        }
                    }
                }
                Ok(Received::Packet(Some(Order::Grace), _)) => grace = true,
                Ok(Received::Packet(Some(Order::Signal(sig)), _)) => relay(sig),
                Ok(Received::Packet(Some(Order::Continue), _)) => resume(payload),
                Ok(Received::Packet(..)) => {}
                Ok(Received::Empty) => break,
                Ok(Received::Closed) | Err(_) => return Ok(1), // snug is gone
            }
        }
        // Before the payload's exit is looked at: its exec error is written before it exits.
        if let Some(fd) = exec_err {
            let mut e = [0u8; 4];
            // SAFETY: a non-blocking read of at most 4 bytes into `e`.
            let n = unsafe { libc::read(fd, e.as_mut_ptr().cast(), 4) };
            if n == 4 {
                let _ = chan.report(Report::ExecFailed(i32::from_le_bytes(e)), None);
            }
            if n >= 0 {
                // SAFETY: our read end; EOF means the exec happened (or the process died).
                unsafe { libc::close(fd) };
                exec_err = None;
            }
        }
        while let Some(got) = signals.read() {
            if got.sig == libc::SIGINT && got.by_terminal() {
                let _ = chan.report(Report::TerminalInt, None);
            }
        }
        loop {
            let mut status = 0;
            // SAFETY: `status` is written by the kernel.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG | libc::WUNTRACED | libc::WCONTINUED) };
            if pid <= 0 {
                if pid < 0 && ended.is_some() {
                    let _ = chan.report(Report::Empty, None);
                    return Ok(0); // nothing left: the grace ends early (SPEC G2)
                }
                break;
            }
            if pid != payload {
                continue;
            }
            if libc::WIFSTOPPED(status) {
                let _ = chan.report(Report::Stopped(libc::WSTOPSIG(status)), None);
            } else if libc::WIFCONTINUED(status) {
                let _ = chan.report(Report::Continued, None);
            } else {
                let _ = chan.report(Report::Exited(status), None);
                if !grace {
                    let left = crate::report::count_sandbox(std::path::Path::new("/proc"));
                    let _ = chan.report(Report::Leaving(left.map_or(-1, |n| n as i32)), None);
                    return Ok(0); // the kernel kills the rest of the sandbox (SPEC R5)
                }
                ended = Some(status);
            }
        }
    }
}
