//! nest's child side: `clone3(2)` and the body that runs between clone and `execve(2)`. Raw
//! libc on purpose: the child of a multi-threaded-capable process may make only
//! async-signal-safe calls (`signal-safety(7)`), and every one here is a bare system call.

use crate::error::INTERNAL;
use crate::sys::fds::{ARGS_FD, BWRAP_ARGS_FD, GRANT_FD, INIT_FD, MAX_GRANTS, PTY_FD, SECCOMP_FD, STDERR_FD};
use crate::sys::process::Cloned;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

/// Error-pipe tag: no place of [`Plan::program`] holds an executable file.
pub const NOT_FOUND: u8 = 0xfb;
/// Error-pipe tag: entering the cgroups failed.
pub const BOUNDS: u8 = 0xfc;
/// Error-pipe tag: `sigseal::seal_ignored` failed.
const SEAL: u8 = 0xfd;
/// Error-pipe tag: a `dup2(2)` failed.
const DUP: u8 = 0xfe;
/// Error-pipe tag: receiving or placing the bind descriptors failed.
pub const GRANTS: u8 = 0xfa;
/// Error-pipe tag: making nest's user namespace (as root) or turning nested ones off failed.
pub const USERNS: u8 = 0xf9;
/// Error-pipe tag: `execve(2)` of bwrap failed.
pub const EXEC: u8 = 0xff;

/// Everything the child needs, built before the clone (the child allocates nothing).
pub struct Plan<'a> {
    /// snug runs as root: nest makes its user namespace after its /proc, and snug writes the
    /// id maps (SPEC P11, [`crate::identity::write_maps`]).
    pub root: bool,
    /// As root, nest turns nested user namespaces off in its own (`user.max_user_namespaces
    /// = 0`), as bwrap's `--disable-userns`, which needs a user namespace of bwrap's (SPEC X2).
    pub deny_userns: bool,
    /// The id maps to write when not root.
    pub map: &'a nestproc::IdMap,
    /// A pidfd of snug, readable once snug died.
    pub parent_pidfd: BorrowedFd<'a>,
    /// The error pipe's write end: one [`crate::sys::codec`] frame (a tag and an `errno`)
    /// on failure; the tags below, or a [`nestproc::Step`]'s code.
    pub err: RawFd,
    /// Sources for fds 3, 4, 5, 2, 6 and 8 (channel, caller's stderr, seccomp, bwrap's
    /// stderr pipe, payload_args, bwrap's `--args` pipe), all at 10 or above.
    pub fds: [RawFd; 6],
    /// In terminal mode, the sandbox's pty slave and which of fds 0–2 become it (those that
    /// were the caller's terminal, SPEC R2); it also goes to [`PTY_FD`].
    pub pty: Option<(RawFd, crate::sys::fds::TtyFds)>,
    /// The socket snug sends the entry files of this run's cgroups on, each cgroup's `tasks`
    /// (v1) or `cgroup.procs` (v2) to write `0` to (SPEC K5; [`super::Nest::give_cgroups`]),
    /// then the descriptors of the policy's binds (SPEC P7; [`super::Nest::give_grants`]).
    pub cgroups: RawFd,
    /// Where bwrap may be, in PATH's order: the first executable regular file is exec'd.
    pub program: &'a [*const libc::c_char],
    /// The signals snug ignored at the clone ([`sigseal::ignored`]): the ones to reset.
    pub ignored: u64,
    /// NULL-terminated argv of bwrap.
    pub argv: &'a [*const libc::c_char],
    /// NULL-terminated (empty) environment.
    pub envp: &'a [*const libc::c_char],
}

/// [`crate::sys::process::clone3`] with `flags`; the child carries
/// out `plan` and execs bwrap, and never returns. The parent gets the child's pidfd and pid.
///
/// # Errors
/// The `clone3(2)` error.
pub fn clone_nest(flags: u64, plan: &Plan<'_>) -> std::io::Result<(OwnedFd, snug_core::Pid)> {
    // SAFETY: the child runs the body below, which makes only raw system calls (write,
    // _exit, close, dup2, recvmsg, fcntl, unshare, open, execve, and nestproc's and sigseal's) on integers and on memory
    // `plan` points at, all built before the call, and never returns.
    unsafe {
        let Cloned::Parent { pidfd, pid } = crate::sys::process::clone3(flags)? else {
            // The child: own group tied to snug, id maps, private mounts and /proc,
            // cgroups, descriptors in place, signal state sealed, then exec bwrap. On
            // failure it writes a tag and `errno` to the error pipe and `_exit`s.
            let p = plan;
            // Moved when it sits where a bind descriptor goes (`place_grants`).
            let err = std::cell::Cell::new(p.err);
            let fail = |tag: u8, errno: i32| -> ! {
                let bytes = crate::sys::codec::encode(tag, errno);
                libc::write(err.get(), bytes.as_ptr().cast(), bytes.len());
                libc::_exit(INTERNAL)
            };
            // Own process group (signals a terminal or a caller sends to snug's group never
            // reach bwrap), dying with snug; a snug already dead is noticed through its pidfd.
            if nestproc::own_group_tied_to(p.parent_pidfd).is_err() {
                libc::_exit(INTERNAL);
            }
            // bwrap on PATH, while snug makes the cgroups (PATHs of 15 directories are common).
            // Before the id maps: once the caller's ids are mapped, nest's capabilities in its
            // new user namespace cover the caller's files, and it could search a directory the
            // caller cannot, where snug's own lookup would choose another bwrap.
            let Some(program) = first_executable(p.program) else { fail(NOT_FOUND, libc::ENOENT) };
            // bwrap's stack is the main thread's: a tiny `ulimit -s` would crash it (R4).
            crate::stack::roomy_for_exec();
            if !p.root {
                if let Err(e) = p.map.write() {
                    fail(e.step.code(), e.errno);
                }
            }
            if let Err(e) = nestproc::prepare() {
                fail(e.step.code(), e.errno);
            }
            // SPEC P11: a root payload owns the host's device nodes and holds CAP_CHOWN.
            if p.root {
                if let Err(e) = nestproc::read_only_dev_nodes() {
                    fail(e.step.code(), e.errno);
                }
            }
            if p.root {
                // SPEC P11: the user namespace after /proc, which root mounts over whatever
                // the host's /proc has mounted on it (a container's masks): from a user
                // namespace the kernel refuses a /proc that would show them. snug maps it.
                if libc::unshare(libc::CLONE_NEWUSER) != 0 {
                    fail(USERNS, nestproc::errno());
                }
                if libc::write(p.cgroups, b"u".as_ptr().cast(), 1) != 1 {
                    fail(USERNS, nestproc::errno());
                }
            }
            // SPEC K5: enter this run's cgroups before bwrap, so every sandbox process is
            // born inside them; snug makes them meanwhile, and a snug that fails closes the
            // socket (or dies: the death signal ends this child).
            if let Err(errno) = enter_cgroups(p.cgroups) {
                fail(BOUNDS, errno);
            }
            let targets = [INIT_FD, STDERR_FD, SECCOMP_FD, 2, ARGS_FD, BWRAP_ARGS_FD];
            if p.fds.iter().zip(targets).any(|(&from, to)| libc::dup2(from, to) < 0) {
                fail(DUP, nestproc::errno());
            }
            if p.pty.is_none() {
                // Detached: whatever the caller had at PTY_FD must not reach the sandbox.
                libc::close(PTY_FD);
            }
            if let Some((slave, mask)) = p.pty {
                for fd in (0..2).filter(|&fd| mask.has(fd)) {
                    if libc::dup2(slave, fd) < 0 {
                        fail(DUP, nestproc::errno());
                    }
                }
                if libc::dup2(slave, PTY_FD) < 0 {
                    fail(DUP, nestproc::errno());
                }
            }
            // SPEC P7: the binds' sources as snug opened them, at GRANT_FD on; snug sends them
            // once its policy is resolved, while bwrap's namespace is being prepared above.
            let first_free = match place_grants(p.cgroups, &err) {
                Ok(n) => GRANT_FD as u32 + n,
                Err(errno) => fail(GRANTS, errno),
            };
            // After the binds' descriptors, so after snug mapped the ids (the sysctl is root's
            // in the user namespace, uid 0 there); /proc is nest's own (above).
            if p.deny_userns {
                let fd = libc::open(c"/proc/sys/user/max_user_namespaces".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    fail(USERNS, nestproc::errno());
                }
                libc::close(fd);
            }
            // Nothing else the caller left open reaches the sandbox; bwrap closes
            // BWRAP_ARGS_FD once it has read its options, and each bind's once it is bound.
            nestproc::cloexec_from(first_free);
            if let Err(e) = sigseal::seal_ignored(p.ignored) {
                fail(SEAL, e.0);
            }
            libc::execve(program, p.argv.as_ptr(), p.envp.as_ptr());
            fail(EXEC, nestproc::errno())
        };
        Ok((pidfd, pid))
    }
}

/// The first of `places` that is a regular file with an execute bit, as
/// [`crate::bwrap::find_program`] decides (`stat(2)` follows symlinks).
///
/// # Safety
/// For nest's child between clone and exec: each pointer is a NUL-terminated path.
unsafe fn first_executable(places: &[*const libc::c_char]) -> Option<*const libc::c_char> {
    places.iter().copied().find(|&place| {
        let mut st: libc::stat = std::mem::zeroed();
        libc::stat(place, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_mode & 0o111 != 0
    })
}

/// Receive the entry files on `sock` (one byte and up to [`crate::bounds::SLOTS`]
/// descriptors, `SCM_RIGHTS`, `unix(7)`) and write `0` into each: `0` means the writer
/// (`cgroups(7)`; on v1 the writing thread, which is all of this fork child, without the
/// RCU grace period a migration by pid costs). Raw calls only, on the stack.
///
/// # Safety
/// For nest's child between clone and exec: `sock` is the child's end of the socket.
unsafe fn enter_cgroups(sock: RawFd) -> Result<(), i32> {
    let mut count = 0u8;
    let mut iov = libc::iovec { iov_base: (&raw mut count).cast(), iov_len: 1 };
    // Room for SLOTS descriptors: CMSG_SPACE(16 * 4) is 80 bytes; u64s keep it aligned.
    let mut space = [0u64; 16];
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1 as _;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&space) as _;
    // Polled before it blocks: snug sends within some 100 µs, and waking a sleeping nest
    // costs snug's send and nest's start some 20 µs each on a VM's idle CPU (SPEC B1). Each
    // round yields, so that where nest shares snug's CPU snug goes on; at most 1 ms.
    let start = now_us();
    let got = loop {
        let polling = now_us().wrapping_sub(start) <= 1000;
        let flags = libc::MSG_CMSG_CLOEXEC | if polling { libc::MSG_DONTWAIT } else { 0 };
        let n = libc::recvmsg(sock, &mut msg, flags);
        match nestproc::errno() {
            _ if n >= 0 => break n,
            libc::EINTR => {}
            libc::EAGAIN if polling => {
                libc::sched_yield();
            }
            _ => break n,
        }
    };
    match got {
        1 => {}
        0 => return Err(libc::EPIPE),
        _ => return Err(nestproc::errno()),
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(libc::E2BIG);
    }
    let mut entered = 0usize;
    let mut c = libc::CMSG_FIRSTHDR(&msg);
    while !c.is_null() {
        if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
            let data = libc::CMSG_DATA(c).cast::<RawFd>();
            let n = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
            for i in 0..n {
                let fd = data.add(i).read_unaligned();
                let wrote = libc::write(fd, b"0".as_ptr().cast(), 1);
                let errno = nestproc::errno(); // before close(2) can change it
                libc::close(fd);
                if wrote != 1 {
                    return Err(errno);
                }
                entered += 1;
            }
        }
        c = libc::CMSG_NXTHDR(&msg, c);
    }
    // Fewer than snug sent is a refusal, not a run outside its bounds.
    if entered != count as usize {
        return Err(libc::EPROTO);
    }
    Ok(())
}

/// Receive the bind descriptors on `sock` (one byte, their count, and up to [`MAX_GRANTS`]
/// descriptors, `SCM_RIGHTS`), close `sock`, and put them at [`GRANT_FD`] on, without
/// close-on-exec, so that bwrap has them. Whatever sat at those numbers is no longer needed
/// (the sources of the fixed numbers were copied already), except the error pipe `err`,
/// which moves above them. Returns how many. Raw calls only, on the stack.
///
/// # Safety
/// For nest's child between clone and exec, after the fixed numbers are in place.
unsafe fn place_grants(sock: RawFd, err: &std::cell::Cell<RawFd>) -> Result<u32, i32> {
    let mut count = 0u8;
    let mut iov = libc::iovec { iov_base: (&raw mut count).cast(), iov_len: 1 };
    // CMSG_SPACE(240 * 4) is 976 bytes; u64s keep it aligned.
    let mut space = [0u64; 124];
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1 as _;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&space) as _;
    let got = loop {
        let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n >= 0 || nestproc::errno() != libc::EINTR {
            break n;
        }
    };
    match got {
        1 => {}
        0 => return Err(libc::EPIPE),
        _ => return Err(nestproc::errno()),
    }
    libc::close(sock);
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(libc::E2BIG);
    }
    let mut fds = [-1 as RawFd; MAX_GRANTS];
    let mut n = 0usize;
    let mut c = libc::CMSG_FIRSTHDR(&msg);
    while !c.is_null() {
        if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
            let data = libc::CMSG_DATA(c).cast::<RawFd>();
            let k = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
            for i in 0..k {
                if n == MAX_GRANTS {
                    return Err(libc::E2BIG);
                }
                fds[n] = data.add(i).read_unaligned();
                n += 1;
            }
        }
        c = libc::CMSG_NXTHDR(&msg, c);
    }
    if n != count as usize {
        return Err(libc::EPROTO);
    }
    // Everything still needed goes above the range first, so no dup2 below clobbers it.
    let above = GRANT_FD + n as RawFd;
    let lift = |fd: RawFd| -> Result<RawFd, i32> {
        if fd >= GRANT_FD && fd < above {
            let moved = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, above);
            if moved < 0 {
                return Err(nestproc::errno());
            }
            libc::close(fd);
            return Ok(moved);
        }
        Ok(fd)
    };
    err.set(lift(err.get())?);
    for fd in fds.iter_mut().take(n) {
        *fd = lift(*fd)?;
    }
    for (i, &fd) in fds.iter().take(n).enumerate() {
        // dup2 leaves the copy without close-on-exec (`dup(2)`).
        if libc::dup2(fd, GRANT_FD + i as RawFd) < 0 {
            return Err(nestproc::errno());
        }
        libc::close(fd);
    }
    Ok(n as u32)
}

/// `CLOCK_MONOTONIC` in µs (`clock_gettime(2)`, async-signal-safe).
fn now_us() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write; clock_gettime is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000 + t.tv_nsec as u64 / 1000
}
