//! Start: clone `nest`, pid 1 of a new pid + mount + user namespace (as root nest makes the
//! user namespace itself, and snug maps it, SPEC P11), which prepares them and execs bwrap (docs/design.md, "Nest"). bwrap is
//! then pid 1 of the namespace, so whenever it dies the kernel kills everything below it
//! (`pid_namespaces(7)`): no window before `--die-with-parent` is armed, no escaped daemon.

use crate::error::{failure, INTERNAL, OS_ERROR, UNAVAILABLE};
use crate::pidfd::Pinned;
use anyhow::{Context, Result};
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// Why a run cannot start when `/proc` shows another pid namespace: snug reaches nest, init
/// and the payload through `/proc/PID`.
pub const PROC_NOT_OWN: &str =
    "/proc is not this pid namespace's (unshare --pid without --mount-proc?): snug needs a /proc of its own namespace";

mod child;

/// The running outer layer: nest (then bwrap) pinned, and the read end of bwrap's stderr.
pub struct Nest {
    /// bwrap as pid 1 of the outer namespace; SIGKILL to it is the teardown.
    pub pid1: Pinned,
    /// bwrap's own stderr, so its errors become one `snug: ` line (SPEC R4).
    pub bwrap_err: OwnedFd,
    /// nest's error pipe until [`Nest::ready`] read it.
    setup: Option<OwnedFd>,
    /// bwrap's program, for the error when its exec failed.
    program: String,
    /// nest's CPU affinity, narrowed off snug's CPU until [`Nest::ready`].
    apart: Option<crate::sys::cpu::Apart>,
    /// snug's end of the socket nest waits on for its cgroups ([`Nest::give_cgroups`]) and
    /// then the binds' descriptors ([`Nest::give_grants`]).
    cgroups: Option<OwnedFd>,
    /// As root, the id maps snug writes for nest's user namespace ([`crate::identity::own_maps`]).
    maps: Option<(String, String)>,
}

impl Nest {
    /// Hand nest the entry files of `bounds`' cgroups (`SCM_RIGHTS`, `unix(7)`), which it
    /// enters before it execs bwrap (K5), and close snug's copies. nest sets its namespace up
    /// meanwhile: the cgroups are made after the clone, beside it (SPEC B1).
    ///
    /// # Errors
    /// nest's own failure when it died before (its error pipe says why, [`Nest::ready`]);
    /// else 71 when `sendmsg(2)` fails.
    pub fn give_cgroups(&mut self, bounds: &mut crate::bounds::ForChild) -> Result<()> {
        use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
        let Some(sock) = self.cgroups.as_ref() else { return Ok(()) };
        let fds = bounds.procs();
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(crate::bounds::SLOTS))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(failure(INTERNAL, "too many cgroups for nest"));
        }
        let count = [fds.len() as u8];
        let sent = sendmsg(sock, &[std::io::IoSlice::new(&count)], &mut control, SendFlags::NOSIGNAL);
        drop(fds);
        bounds.entered();
        if let Err(e) = sent {
            self.ready()?;
            return Err(failure(OS_ERROR, format!("cannot hand nest its cgroups: {e}")));
        }
        Ok(())
    }

    /// Hand nest the descriptors of the policy's binds (SPEC P7, [`crate::grant_fd`]), which it
    /// puts at [`crate::sys::fds::GRANT_FD`] on for bwrap, in this order, and execs bwrap:
    /// call once, after [`Nest::give_cgroups`] and before [`Nest::ready`].
    ///
    /// # Errors
    /// 77 for more than [`crate::sys::fds::MAX_GRANTS`]; nest's own failure when it died
    /// before; else 71 when `sendmsg(2)` fails.
    pub fn give_grants(&mut self, fds: &[BorrowedFd<'_>]) -> Result<()> {
        use crate::sys::fds::MAX_GRANTS;
        use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
        let Some(sock) = self.cgroups.take() else { return Ok(()) };
        if let Some(maps) = self.maps.take() {
            // SPEC P11: nest said when its user namespace existed (one byte), long before
            // snug's policy is resolved; it waits for these descriptors before anything that
            // needs its ids mapped, so the maps are written first, and snug never waits for
            // nest's setup while it could be resolving the policy (B1).
            let mut byte = [0u8; 1];
            let got = rustix::net::recv(&sock, &mut byte, rustix::net::RecvFlags::empty());
            if !matches!(got, Ok((1, _))) {
                self.ready()?; // nest failed before: its error says why
                return Err(failure(INTERNAL, "nest ended before its user namespace was mapped"));
            }
            if let Err(e) = crate::identity::write_maps(self.pid1.host_pid, &maps) {
                if !crate::sys::process::proc_is_own() {
                    return Err(failure(UNAVAILABLE, PROC_NOT_OWN));
                }
                let e = crate::error::io_text(&e);
                return Err(failure(UNAVAILABLE, format!("cannot map the sandbox's user namespace: {e}")));
            }
        }
        if fds.len() > MAX_GRANTS {
            let n = fds.len();
            return Err(failure(crate::error::POLICY, format!("{n} binds: a sandbox has at most {MAX_GRANTS}")));
        }
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_GRANTS))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
            return Err(failure(INTERNAL, "too many bind descriptors for nest"));
        }
        let count = [fds.len() as u8];
        if let Err(e) = sendmsg(&sock, &[std::io::IoSlice::new(&count)], &mut control, SendFlags::NOSIGNAL) {
            self.ready()?;
            return Err(failure(OS_ERROR, format!("cannot hand nest the binds' descriptors: {e}")));
        }
        Ok(())
    }

    /// The bwrap snug's own lookup found, named in an exec error instead of plain "bwrap"
    /// (nest makes the same choice, [`nest`]).
    pub fn set_program(&mut self, path: &std::path::Path) {
        self.program = path.to_string_lossy().into_owned();
    }

    /// nest's setup pipe until [`Nest::ready`] read it: it hangs up with nothing in it once
    /// bwrap is exec'd.
    pub fn setup_watch(&self) -> Option<BorrowedFd<'_>> {
        self.setup.as_ref().map(|s| s.as_fd())
    }

    /// Wait until nest has exec'd bwrap (its error pipe ends at the exec, `O_CLOEXEC`) or
    /// failed before it, and say which. By the time snug's policy is resolved nest has long
    /// exec'd: this read returns at once.
    ///
    /// # Errors
    /// As [`nest`]'s; nest is reaped then. 71 when bwrap's CPU affinity cannot be given back
    /// (bwrap is then killed: no sandbox runs on fewer CPUs than its caller's).
    pub fn ready(&mut self) -> Result<()> {
        // Before bwrap has its options, so that it forks nothing with the narrowed mask.
        if let Some(apart) = self.apart.take() {
            // The options pipe's guard kills bwrap on this error.
            apart.restore().map_err(|e| failure(OS_ERROR, format!("cannot give bwrap its CPU affinity back: {e}")))?;
        }
        let Some(setup) = self.setup.take() else { return Ok(()) };
        let mut buf = Vec::new();
        let _ = std::fs::File::from(setup).take(16).read_to_end(&mut buf);
        if buf.is_empty() {
            return Ok(());
        }
        self.pid1.reap();
        Err(nest_failure(&buf, &self.program))
    }
}

/// A close-on-exec pipe (`pipe2(2)`): (read end, write end).
fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(std::io::Error::from).context("pipe")
}

/// A close-on-exec copy at 10 or above, so the child's `dup2` onto 2..=6 never clobbers a
/// source it still needs.
fn high(fd: impl AsFd) -> Result<OwnedFd> {
    rustix::io::fcntl_dupfd_cloexec(fd, 10).map_err(std::io::Error::from).context("fcntl(F_DUPFD_CLOEXEC)")
}

fn cstrings(v: &[String]) -> Result<Vec<CString>> {
    v.iter()
        .map(|s| {
            CString::new(s.as_str())
                .map_err(|_| failure(crate::error::USAGE, format!("argument contains a NUL byte: {s:?}")))
        })
        .collect()
}

/// Clone nest and have it exec `argv` with an empty environment, the program being the first
/// executable file of `program` (the places bwrap may be on PATH, [`crate::bwrap::on_path`]:
/// nest looks while snug makes the cgroups, so a long PATH costs the start nothing), with the channel at
/// fd 3, the caller's stderr at fd 4, `seccomp` at fd 5, the `payload_args` memfd at fd 6
/// ([`crate::payload_args::ARGS_FD`]), `options` (the read end of the pipe bwrap reads its
/// `--args` from, [`crate::sys::fds::BWRAP_ARGS_FD`]) at fd 8 and a pipe to snug at fd 2; in
/// terminal mode the pty's slave at fd 7 ([`crate::channel::PTY_FD`]) and on each of fds
/// 0–2 that `pty`'s mask names. nest enters the cgroups [`Nest::give_cgroups`] hands it,
/// and puts the binds' descriptors [`Nest::give_grants`] hands it at fd 9 on, before it
/// execs bwrap. Returns once nest is cloned; [`Nest::ready`] says whether
/// bwrap was exec'd.
///
/// Between clone and exec the child makes only raw system calls (async-signal-safe):
/// `setpgid`, `prctl(PR_SET_PDEATHSIG)`, `poll` on snug's own pidfd (a snug killed before
/// the prctl is noticed), the id maps and mounts of [`nestproc`] (as root: `unshare(CLONE_NEWUSER)` after them, and one byte to snug on the cgroups socket), `stat` of each place in
/// `program`, `recvmsg` (polled with `sched_yield` and `clock_gettime` for up to 1 ms) and `write` of
/// the cgroups' entry files, `recvmsg`, `fcntl(F_DUPFD_CLOEXEC)` and `close` of the binds'
/// descriptors, `dup2`, `close_range`,
/// [`sigseal::seal_ignored`] of `ignored` (snug's ignored signals, which nest inherits),
/// `execve`.
///
/// # Errors
/// 69 when the kernel refuses the namespaces (with the reason), 70 for other failures; the
/// /proc mount's, the search's and the exec's come from [`Nest::ready`].
pub fn nest(
    (program, ignored, deny_userns): (&[std::path::PathBuf], u64, bool),
    argv: &[String],
    fds: Passed<'_>,
    pty: Option<(BorrowedFd<'_>, crate::sys::fds::TtyFds)>,
) -> Result<Nest> {
    let Passed { channel, seccomp, payload_args, options } = fds;
    use rustix::process::{getgid, getuid};
    let root = rustix::process::geteuid().is_root();
    let args = cstrings(argv)?;
    let places = program.iter().map(|p| CString::new(p.as_os_str().as_encoded_bytes())).collect::<Result<Vec<_>, _>>();
    let places = places.map_err(|_| failure(crate::error::USAGE, "PATH contains a NUL byte"))?;
    let place_ptrs: Vec<*const libc::c_char> = places.iter().map(|p| p.as_ptr()).collect();
    let mut arg_ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    arg_ptrs.push(std::ptr::null());
    let env_ptrs: [*const libc::c_char; 1] = [std::ptr::null()];
    let map = nestproc::IdMap::identity(getuid().as_raw(), getgid().as_raw());
    let own = Pinned::open(crate::sys::process::own()).context("pidfd_open(self)")?;
    let (err_r, err_w) = pipe()?; // nest's setup errors; EOF once bwrap is exec'd
    let (bw_r, bw_w) = pipe()?; // bwrap's stderr
    let (cg_ours, cg_theirs) = crate::sys::packet::pair().context("socketpair")?;
    // The caller's stderr reaches init at fd 4; in terminal mode the pty's slave instead when
    // it was the caller's terminal (SPEC R2).
    let stderr = match pty {
        Some((slave, mask)) if mask.has(2) => slave,
        _ => rustix::stdio::stderr(),
    };
    let fds = [high(channel)?, high(stderr)?, high(seccomp)?, high(&bw_w)?, high(payload_args)?, high(options)?];
    let slave = pty.map(|(s, m)| high(s).map(|h| (h, m))).transpose()?;
    drop(bw_w);
    let raw: [RawFd; 6] = std::array::from_fn(|i| fds[i].as_raw_fd());

    // As root nest makes its user namespace itself, once its /proc is mounted, and snug maps
    // every id of its own onto it ([`Nest::give_cgroups`], SPEC P11).
    let mut flags = (libc::CLONE_NEWPID | libc::CLONE_NEWNS) as u64;
    if !root {
        flags |= libc::CLONE_NEWUSER as u64;
    }
    let maps = match root {
        true => Some(crate::identity::own_maps().context("reading snug's own uid and gid maps")?),
        false => None,
    };
    let plan = child::Plan {
        root,
        deny_userns: root && deny_userns,
        map: &map,
        parent_pidfd: own.as_fd(),
        err: err_w.as_raw_fd(),
        fds: raw,
        pty: slave.as_ref().map(|(s, m)| (s.as_raw_fd(), *m)),
        cgroups: cg_theirs.as_raw_fd(),
        program: &place_ptrs,
        ignored,
        argv: &arg_ptrs,
        envp: &env_ptrs,
    };
    let (pidfd, pid) = child::clone_nest(flags, &plan).map_err(clone_failure)?;
    let apart = crate::sys::cpu::apart(pid);
    drop(err_w);
    drop(cg_theirs);
    drop(fds);
    drop(slave);
    let pid1 = Pinned::cloned(pidfd, pid);
    Ok(Nest {
        pid1,
        bwrap_err: bw_r,
        setup: Some(err_r),
        program: argv[0].clone(),
        apart,
        cgroups: Some(cg_ours),
        maps,
    })
}

/// The descriptors nest hands on to bwrap at fixed numbers (see [`nest`]).
pub struct Passed<'a> {
    /// init's end of the channel.
    pub channel: BorrowedFd<'a>,
    /// The seccomp program.
    pub seccomp: BorrowedFd<'a>,
    /// The payload's argv and environment.
    pub payload_args: BorrowedFd<'a>,
    /// The read end of bwrap's `--args` pipe.
    pub options: BorrowedFd<'a>,
}

/// The error for a refused `clone3(2)`.
fn clone_failure(e: std::io::Error) -> anyhow::Error {
    if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ENOMEM)) {
        // SPEC R4: a fork the system refused now is a run-time OS error, not a missing feature.
        return failure(OS_ERROR, format!("cannot start the sandbox: clone3: {}", crate::error::io_text(&e)));
    }
    failure(UNAVAILABLE, format!("cannot create the sandbox's namespaces (clone3: {e}); `snug doctor` says why"))
}

/// The error for what nest wrote to its error pipe before it could exec bwrap: one
/// [`crate::sys::codec`] frame, a [`nestproc::Step`]'s code or one of [`child`]'s tags
/// (0xfc bounds, 0xff execve), and an `errno`.
fn nest_failure(buf: &[u8], program: &str) -> anyhow::Error {
    let Some((tag, errno)) = crate::sys::codec::decode(buf) else {
        return failure(INTERNAL, "nest failed before running bwrap");
    };
    if let Some(step) = nestproc::Step::from_code(tag) {
        return failure(UNAVAILABLE, nestproc::NestError { step, errno }.to_string());
    }
    match tag {
        child::NOT_FOUND => failure(UNAVAILABLE, crate::bwrap::NO_BWRAP),
        child::GRANTS => {
            let e = crate::error::strerror(errno);
            failure(OS_ERROR, format!("cannot pass the binds' descriptors to bwrap: {e}"))
        }
        child::USERNS => {
            let e = crate::error::strerror(errno);
            failure(UNAVAILABLE, format!("cannot make the sandbox's user namespace or turn nested ones off in it: {e}"))
        }
        child::BOUNDS => {
            let e = crate::error::strerror(errno);
            failure(OS_ERROR, format!("cannot put the sandbox under its bounds (cgroup or RLIMIT_NPROC): {e}"))
        }
        child::EXEC => {
            let e = std::io::Error::from_raw_os_error(errno);
            failure(UNAVAILABLE, format!("cannot run {program}: {e}"))
        }
        _ => failure(INTERNAL, "nest failed before running bwrap"),
    }
}
