//! Prepare a fresh pid + mount namespace before a program (bwrap) runs as its pid 1.
//!
//! A process created with `CLONE_NEWPID | CLONE_NEWNS` (`clone(2)`, `pid_namespaces(7)`)
//! still sees the /proc of the namespace it came from, and its mount tree still propagates
//! to and from the host (`mount_namespaces(7)`, "Shared subtrees"). [`prepare`] makes the
//! tree private and mounts a /proc that belongs to the new pid namespace; [`IdMap`] writes
//! the uid/gid maps of a new user namespace (`user_namespaces(7)`) when one was created
//! because the caller is not root. Everything here is async-signal-safe and allocation-free
//! once built, so it can run between `fork(2)`/`clone3(2)` and `execve(2)`: each call is one
//! bare system call, made through rustix (its raw Linux backend takes the C strings given
//! here as they are, without allocating).

use rustix::fd::BorrowedFd;

/// Which step failed; with the `errno` in [`NestError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Writing `/proc/self/setgroups`.
    Setgroups,
    /// Writing `/proc/self/gid_map`.
    GidMap,
    /// Writing `/proc/self/uid_map`.
    UidMap,
    /// `mount(NULL, "/", NULL, MS_REC | MS_PRIVATE)`.
    MakePrivate,
    /// Mounting a new procfs on /proc.
    MountProc,
    /// Binding one of [`DEV_NODES`] onto itself read-only.
    DevNodes,
}

/// A failed step and its `errno`, small and `Copy` so a child can send it through a pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}", .step.describe(), std::io::Error::from_raw_os_error(*.errno))]
pub struct NestError {
    /// The step that failed.
    pub step: Step,
    /// Its `errno`.
    pub errno: i32,
}

impl Step {
    /// What the step does, for error messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Step::Setgroups => "cannot deny setgroups in the new user namespace",
            Step::GidMap => "cannot write the gid map of the new user namespace",
            Step::UidMap => "cannot write the uid map of the new user namespace",
            Step::MakePrivate => "cannot make the mount tree private",
            Step::MountProc => "the kernel refused to mount /proc in a new pid namespace",
            Step::DevNodes => "cannot bind the host's device nodes read-only",
        }
    }

    /// The step's number, for a child to send to its parent with the step's `errno`. The
    /// library has no wire format of its own: the program that forks carries this number in
    /// whatever encoding its other messages use (snug: a tag byte and an i32), so a parent
    /// decodes every child error with one decoder.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The inverse of [`Step::code`]; `None` for a number no step has.
    pub fn from_code(code: u8) -> Option<Step> {
        [Step::Setgroups, Step::GidMap, Step::UidMap, Step::MakePrivate, Step::MountProc, Step::DevNodes]
            .into_iter()
            .find(|s| s.code() == code)
    }
}

/// The one-line maps of a user namespace that maps the creator's own uid and gid to
/// themselves (what an unprivileged process may write, `user_namespaces(7)`). Built before
/// the fork, written after it without allocating.
#[derive(Debug, Clone)]
pub struct IdMap {
    uid_line: [u8; 40],
    uid_len: usize,
    gid_line: [u8; 40],
    gid_len: usize,
}

impl IdMap {
    /// Maps for `uid` and `gid` onto themselves, count 1.
    pub fn identity(uid: u32, gid: u32) -> IdMap {
        let mut m = IdMap { uid_line: [0; 40], uid_len: 0, gid_line: [0; 40], gid_len: 0 };
        m.uid_len = Self::line(&mut m.uid_line, uid);
        m.gid_len = Self::line(&mut m.gid_line, gid);
        m
    }

    fn line(buf: &mut [u8; 40], id: u32) -> usize {
        let s = format!("{id} {id} 1\n");
        buf[..s.len()].copy_from_slice(s.as_bytes());
        s.len()
    }

    /// Write `deny` to setgroups, then the gid map, then the uid map of the calling process's
    /// (new) user namespace. Async-signal-safe: `open(2)`, `write(2)`, `close(2)`.
    ///
    /// # Errors
    /// The first step that failed, with its `errno`.
    pub fn write(&self) -> Result<(), NestError> {
        write_file(c"/proc/self/setgroups", b"deny", Step::Setgroups)?;
        write_file(c"/proc/self/gid_map", &self.gid_line[..self.gid_len], Step::GidMap)?;
        write_file(c"/proc/self/uid_map", &self.uid_line[..self.uid_len], Step::UidMap)
    }
}

/// The calling thread's `errno` (`errno(3)`); async-signal-safe, a thread-local read.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Between fork and exec: lead a new process group (`setpgid(2)`), so a terminal's ^C or a
/// kill of the parent's group never reaches the child; get SIGKILL when the parent dies
/// (`PR_SET_PDEATHSIG`, `prctl(2)`); and fail with `ESRCH` when the parent died before the
/// prctl took effect, which `parent_pidfd` (a pidfd of the parent, `pidfd_open(2)`) shows by
/// polling readable. Works across a new pid namespace, where `getppid(2)` says 0.
/// Async-signal-safe: raw system calls only.
///
/// # Errors
/// The failing call's `errno`.
pub fn own_group_tied_to(parent_pidfd: BorrowedFd<'_>) -> Result<(), rustix::io::Errno> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use rustix::process::{set_parent_process_death_signal, setpgid, Signal};
    setpgid(None, None)?;
    set_parent_process_death_signal(Some(Signal::KILL))?;
    let mut p = [PollFd::new(&parent_pidfd, PollFlags::IN)];
    if !matches!(poll(&mut p, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })), Ok(0)) {
        return Err(rustix::io::Errno::SRCH);
    }
    Ok(())
}

/// Mark every descriptor from `first` on close-on-exec (`close_range(2)` with
/// `CLOSE_RANGE_CLOEXEC`), so nothing the caller left open reaches the program exec'd next.
/// Async-signal-safe; a kernel without it (before 5.11) leaves the descriptors as they were.
pub fn cloexec_from(first: u32) {
    // SAFETY: integer arguments only.
    unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) };
}

fn write_file(path: &std::ffi::CStr, data: &[u8], step: Step) -> Result<(), NestError> {
    use rustix::fs::{open, Mode, OFlags};
    let fail = |e: rustix::io::Errno| NestError { step, errno: e.raw_os_error() };
    let fd = open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty()).map_err(fail)?;
    match rustix::io::write(&fd, data).map_err(fail)? {
        n if n == data.len() => Ok(()),
        _ => Err(NestError { step, errno: libc::EIO }),
    }
}

/// Make the mount tree private, then mount a procfs of the calling process's pid namespace on
/// /proc (`nosuid,nodev,noexec`, which a user namespace needs to match the locked host /proc).
/// Call it as pid 1 of a new pid + mount namespace. Async-signal-safe: only `mount(2)`.
///
/// # Errors
/// [`Step::MakePrivate`] or [`Step::MountProc`] with the kernel's `errno`. `EPERM` on
/// [`Step::MountProc`] typically means a container whose own /proc is partly covered, so the
/// kernel refuses a new one (`mount_too_revealing` in `fs/namespace.c`).
pub fn prepare() -> Result<(), NestError> {
    use rustix::mount::{mount, mount_change, MountFlags, MountPropagationFlags};
    let fail = |step| move |e: rustix::io::Errno| NestError { step, errno: e.raw_os_error() };
    mount_change(c"/", MountPropagationFlags::REC | MountPropagationFlags::PRIVATE).map_err(fail(Step::MakePrivate))?;
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    mount(c"proc", c"/proc", c"proc", flags, None).map_err(fail(Step::MountProc))
}

/// The nodes bwrap's `--dev` binds from the host's /dev into the sandbox's (`bwrap.c`,
/// `devnodes`): the host's own inodes.
pub const DEV_NODES: [&std::ffi::CStr; 6] =
    [c"/dev/null", c"/dev/zero", c"/dev/full", c"/dev/random", c"/dev/urandom", c"/dev/tty"];

/// Bind each of [`DEV_NODES`] onto itself read-only (`nosuid`, devices allowed), in the
/// calling process's private mount namespace: bwrap's `--dev` binds of them copy the
/// read-only flag, so a payload that is the host's root, which holds CAP_CHOWN and owns
/// them, cannot `chmod` or `chown` the host's nodes (`EROFS`) while reads and writes still
/// reach the device (`mount(2)`, `MS_BIND | MS_REMOUNT | MS_RDONLY`). bwrap's own
/// `--remount-ro` would add `nodev` and leave the nodes unusable. Call it after [`prepare`],
/// as the host's root. Async-signal-safe: only `mount(2)`.
///
/// # Errors
/// [`Step::DevNodes`] with the kernel's `errno` (`ENOENT` for a missing node, which bwrap's
/// `--dev` would refuse as well).
pub fn read_only_dev_nodes() -> Result<(), NestError> {
    use rustix::mount::{mount_bind, mount_remount, MountFlags};
    let fail = |e: rustix::io::Errno| NestError { step: Step::DevNodes, errno: e.raw_os_error() };
    for node in DEV_NODES {
        mount_bind(node, node).map_err(fail)?;
        mount_remount(node, MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID, c"").map_err(fail)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_codes_round_trip() {
        let e = NestError { step: Step::MountProc, errno: libc::EPERM };
        for s in [Step::Setgroups, Step::GidMap, Step::UidMap, Step::MakePrivate, Step::MountProc] {
            assert_eq!(Step::from_code(s.code()), Some(s));
        }
        assert_eq!(Step::from_code(9), None);
        assert!(e.to_string().contains("mount /proc"));
    }

    #[test]
    fn identity_map_lines() {
        let m = IdMap::identity(1000, 100);
        assert_eq!(&m.uid_line[..m.uid_len], b"1000 1000 1\n");
        assert_eq!(&m.gid_line[..m.gid_len], b"100 100 1\n");
    }

    /// `prepare` in a real child made with unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID):
    /// the /proc its own child sees has that child as pid 1. Positive control: without
    /// `prepare`, /proc/self in the new namespace still names a host pid (not 1).
    #[test]
    fn prepare_gives_the_new_pid_namespace_its_own_proc() {
        assert_ne!(self_pid_seen_in_new_ns(false), "1", "control: host /proc leaks");
        assert_eq!(self_pid_seen_in_new_ns(true), "1");
    }

    fn self_pid_seen_in_new_ns(with_prepare: bool) -> String {
        use rustix::process::{geteuid, getgid, getuid};
        use std::os::unix::process::CommandExt;
        let root = geteuid().is_root();
        let map = IdMap::identity(getuid().as_raw(), getgid().as_raw());
        let mut cmd2 = std::process::Command::new("/bin/sh");
        cmd2.args(["-c", "exec readlink /proc/self"]);
        // SAFETY: unshare/mount/open/write only, all async-signal-safe.
        unsafe {
            cmd2.pre_exec(move || {
                let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
                if !root {
                    flags |= libc::CLONE_NEWUSER;
                }
                if libc::unshare(flags) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if !root {
                    map.write().map_err(|e| std::io::Error::from_raw_os_error(e.errno))?;
                }
                // unshare(CLONE_NEWPID) puts only later children in the new namespace: fork once.
                let pid = libc::fork();
                if pid > 0 {
                    let mut st = 0;
                    libc::waitpid(pid, &mut st, 0);
                    libc::_exit(libc::WEXITSTATUS(st));
                }
                if with_prepare {
                    prepare().map_err(|e| std::io::Error::from_raw_os_error(e.errno))?;
                }
                Ok(())
            });
        }
        let out = cmd2.output().expect("child runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}
