//! Start: clone `nest`, pid 1 of a new pid + mount namespace (+ user namespace when not
//! root), which prepares that namespace and execs bwrap (DESIGN.md, "Why N1"). bwrap is
//! then pid 1 of the namespace, so whenever it dies the kernel kills everything below it
//! (`pid_namespaces(7)`): no window before `--die-with-parent` is armed, no escaped daemon.

use crate::channel::{INIT_FD, SECCOMP_FD, STDERR_FD};
use crate::error::{failure, INTERNAL, OS_ERROR, UNAVAILABLE};
use crate::payload_args::ARGS_FD;
use crate::pidfd::Pinned;
use anyhow::{Context, Result};
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The running outer layer: nest (now bwrap) pinned, and the read end of bwrap's stderr.
pub struct Nest {
    /// bwrap as pid 1 of the outer namespace; SIGKILL to it is the teardown.
    pub pid1: Pinned,
    /// bwrap's own stderr, so its errors become one `snug: ` line (SPEC R4).
    pub bwrap_err: OwnedFd,
}

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

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is filled by the kernel.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("pipe");
    }
    // SAFETY: both descriptors were just created.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A close-on-exec copy at 10 or above, so the child's `dup2` onto 2..=5 never clobbers a
/// source it still needs.
fn high(fd: RawFd) -> Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor owned here.
    let n = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
    if n < 0 {
        return Err(std::io::Error::last_os_error()).context("fcntl(F_DUPFD_CLOEXEC)");
    }
    // SAFETY: just created.
    Ok(unsafe { OwnedFd::from_raw_fd(n) })
}

fn cstrings(v: &[String]) -> Result<Vec<CString>> {
    v.iter()
        .map(|s| {
            CString::new(s.as_str())
                .map_err(|_| failure(crate::error::USAGE, format!("argument contains a NUL byte: {s:?}")))
        })
        .collect()
}

/// Clone nest and have it exec `argv` (bwrap) with an empty environment, with the channel at
/// fd 3, the caller's stderr at fd 4, `seccomp` at fd 5, the `payload_args` memfd at fd 6
/// ([`ARGS_FD`]) and a pipe to snug at fd 2.
///
/// Between clone and exec the child makes only raw system calls (async-signal-safe):
/// `setpgid`, `prctl(PR_SET_PDEATHSIG)`, `poll` on snug's own pidfd (a snug killed before
/// the prctl is noticed), the id maps and mounts of [`nestproc`], `dup2`, `close_range`,
/// [`sigseal::seal`], `execve`.
///
/// # Errors
/// 69 when the kernel refuses the namespaces or the /proc mount (with the reason), 70 for
/// other failures.
pub fn nest(
    argv: &[String],
    channel: RawFd,
    seccomp: RawFd,
    payload_args: RawFd,
    bounds: &crate::bounds::ForChild,
) -> Result<Nest> {
    // SAFETY: plain syscall reading this process's effective uid.
    let root = unsafe { libc::geteuid() } == 0;
    let args = cstrings(argv)?;
    let mut arg_ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    arg_ptrs.push(std::ptr::null());
    let env_ptrs: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: plain syscalls.
    let map = nestproc::IdMap::identity(unsafe { libc::getuid() }, unsafe { libc::getgid() });
    let own = Pinned::open(std::process::id() as i32).context("pidfd_open(self)")?;
    let (err_r, err_w) = pipe()?; // nest's setup errors; EOF once bwrap is exec'd
    let (bw_r, bw_w) = pipe()?; // bwrap's stderr
    let fds = [high(channel)?, high(2)?, high(seccomp)?, high(bw_w.as_raw_fd())?, high(payload_args)?];
    drop(bw_w);
    let raw: [RawFd; 5] =
        [fds[0].as_raw_fd(), fds[1].as_raw_fd(), fds[2].as_raw_fd(), fds[3].as_raw_fd(), fds[4].as_raw_fd()];

    let bounds_for_child = (bounds.procs_fds(), bounds.nproc);
    let mut flags = (libc::CLONE_PIDFD | libc::CLONE_NEWPID | libc::CLONE_NEWNS) as u64;
    if !root {
        flags |= libc::CLONE_NEWUSER as u64;
    }
    let mut pidfd: RawFd = -1;
    let args3 = CloneArgs {
        flags,
        pidfd: &mut pidfd as *mut RawFd as u64,
        exit_signal: libc::SIGCHLD as u64,
        ..Default::default()
    };
    // SAFETY: clone3 without CLONE_VM and with no stack behaves like fork(2): the child gets
    // a copy of this single-threaded process and, below, makes only raw syscalls before
    // execve or _exit. Everything it touches was built before the call.
    let pid = unsafe { libc::syscall(libc::SYS_clone3, &args3 as *const CloneArgs, std::mem::size_of::<CloneArgs>()) };
    if pid == 0 {
        // SAFETY: the child side, async-signal-safe calls only (see above).
        unsafe { child(root, &map, own.raw(), err_w.as_raw_fd(), raw, bounds_for_child, (&arg_ptrs, &env_ptrs)) }
    }
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ENOMEM)) {
            // SPEC R4: a fork the system refused now is a run-time OS error, not a missing feature.
            return Err(failure(OS_ERROR, format!("cannot start the sandbox: clone3: {}", crate::error::io_text(&e))));
        }
        return Err(failure(
            UNAVAILABLE,
            format!("cannot create the sandbox's namespaces (clone3: {e}); `snug doctor` says why"),
        ));
    }
    drop(err_w);
    drop(fds);
    // SAFETY: CLONE_PIDFD stored a new descriptor in `pidfd`.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    let pid1 = Pinned::adopt(pidfd).context("nest pidfd")?;
    let mut buf = Vec::new();
    let _ = std::fs::File::from(err_r).take(16).read_to_end(&mut buf);
    if !buf.is_empty() {
        pid1.reap();
        if buf.len() == 5 {
            if let Some(e) = nestproc::NestError::from_bytes(&buf) {
                return Err(failure(UNAVAILABLE, e.to_string()));
            }
        }
        if buf.len() == 5 && buf[0] == 0xfc {
            let errno = i32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]);
            let e = crate::error::strerror(errno);
            return Err(failure(
                OS_ERROR,
                format!("cannot put the sandbox under its bounds (cgroup or RLIMIT_NPROC): {e}"),
            ));
        }
        if buf.len() == 5 && buf[0] == 0xff {
            let errno = i32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]);
            let e = std::io::Error::from_raw_os_error(errno);
            return Err(failure(UNAVAILABLE, format!("cannot run {}: {e}", argv[0])));
        }
        return Err(failure(INTERNAL, "nest failed before running bwrap"));
    }
    Ok(Nest { pid1, bwrap_err: bw_r })
}

/// The child of `nest`; never returns.
///
/// # Safety
/// Only async-signal-safe calls: this runs between clone3 and execve.
unsafe fn child(
    root: bool,
    map: &nestproc::IdMap,
    parent_pidfd: RawFd,
    err: RawFd,
    fds: [RawFd; 5],
    bounds: ([RawFd; 2], Option<u64>),
    (argv, envp): (&[*const libc::c_char], &[*const libc::c_char]),
) -> ! {
    let fail = |bytes: [u8; 5]| -> ! {
        // SAFETY: write/_exit are async-signal-safe; `bytes` lives in this frame.
        unsafe {
            libc::write(err, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(INTERNAL)
        }
    };
    let errno_bytes = |tag: u8| -> [u8; 5] {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0).to_le_bytes();
        [tag, e[0], e[1], e[2], e[3]]
    };
    // SAFETY: raw syscalls only.
    unsafe {
        // Own process group: signals a terminal or a caller sends to snug's group never reach bwrap.
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        let mut p = libc::pollfd { fd: parent_pidfd, events: libc::POLLIN, revents: 0 };
        if libc::poll(&mut p, 1, 0) != 0 {
            libc::_exit(INTERNAL); // snug died before the prctl took effect
        }
        // SPEC K5: enter this run's cgroups before anything else is forked, so every
        // sandbox process is born inside them (`0` means the writer, `cgroups(7)`).
        for fd in bounds.0 {
            if fd >= 0 && libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                fail(errno_bytes(0xfc));
            }
        }
        if let Some(n) = bounds.1 {
            let lim = libc::rlimit { rlim_cur: n, rlim_max: n };
            if libc::setrlimit(libc::RLIMIT_NPROC, &lim) != 0 {
                fail(errno_bytes(0xfc));
            }
        }
        if !root {
            if let Err(e) = map.write() {
                fail(e.to_bytes());
            }
        }
        if let Err(e) = nestproc::prepare() {
            fail(e.to_bytes());
        }
        if libc::dup2(fds[0], INIT_FD) < 0
            || libc::dup2(fds[1], STDERR_FD) < 0
            || libc::dup2(fds[2], SECCOMP_FD) < 0
            || libc::dup2(fds[3], 2) < 0
            || libc::dup2(fds[4], ARGS_FD) < 0
        {
            fail(errno_bytes(0xfe));
        }
        // Nothing else the caller left open reaches the sandbox.
        libc::syscall(libc::SYS_close_range, ARGS_FD as u32 + 1, u32::MAX, libc::CLOSE_RANGE_CLOEXEC);
        if sigseal::seal().is_err() {
            fail(errno_bytes(0xfd));
        }
        libc::execve(argv[0], argv.as_ptr(), envp.as_ptr());
        fail(errno_bytes(0xff))
    }
}
