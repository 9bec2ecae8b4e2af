//! What init reads of sandbox processes from its own `/proc` (`proc(5)`): the requester of a
//! trapped terminal change (T11) and the signal state of a group (T3). As the namespace's
//! pid 1, init sees exactly the sandbox's processes, under the numbers they see themselves.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The fields of `/proc/PID/stat` after the command name: state, ppid, pgrp, session, tty_nr.
fn stat_fields(pid: i32) -> Option<Vec<i64>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().skip(1).take(4).filter_map(|f| f.parse().ok()).collect())
}

/// The process group of `pid`, from its stat line.
pub fn pgrp(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(1).map(|v| *v as i32)
}

/// Every pid in this namespace but init's own.
pub fn pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()).filter(|p| *p != 1).collect()
}

/// Send `sig` to process group `pgrp` of this namespace; init's own group (id 1) is addressed
/// as "my group", since `kill(-1)` would mean every process (`kill(2)`).
pub fn signal_group(pgrp: i32, sig: i32) {
    // SAFETY: plain syscall within this namespace.
    unsafe { libc::kill(if pgrp == 1 { 0 } else { -pgrp }, sig) };
}

/// The thread that made a trapped request.
pub struct Requester {
    pidfd: OwnedFd,
    mem: String,
    /// Its process group.
    pub pgrp: i32,
    /// Its controlling terminal is the caller's: it is in the caller's session, whose leader
    /// lives outside the sandbox's pid namespace, so `/proc/PID/stat` shows session 0 there
    /// (`proc(5)`), and it has a controlling terminal at all. (Comparing terminal device
    /// numbers would not do: bwrap's own devpts numbers its ptys from 0 too.)
    pub ctty_is_caller: bool,
    /// The thread ignores or blocks SIGTTOU (`is_ignored` in `drivers/tty/tty_jobctrl.c`).
    pub ttou_off: bool,
}

impl Requester {
    /// Look up thread `tid`; `None` once it is gone.
    pub fn of(tid: i32) -> Option<Requester> {
        let f = stat_fields(tid)?;
        let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
        let sig = sigseal::SigState::parse(&status).ok()?;
        let tgid: i32 = status.lines().find_map(|l| l.strip_prefix("Tgid:"))?.trim().parse().ok()?;
        // SAFETY: plain syscall; the descriptor is owned below.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tgid, 0) };
        if fd < 0 {
            return None;
        }
        let off = |m: u64| sigseal::SigState::has(m, libc::SIGTTOU);
        Some(Requester {
            // SAFETY: just created.
            pidfd: unsafe { OwnedFd::from_raw_fd(fd as RawFd) },
            mem: format!("/proc/{tid}/mem"),
            pgrp: *f.get(1)? as i32,
            ctty_is_caller: *f.get(2)? == 0 && *f.get(3)? != 0,
            ttou_off: off(sig.blocked) || off(sig.ignored),
        })
    }

    /// A copy of its descriptor `fd`: the very file it asked about (`pidfd_getfd(2)`).
    ///
    /// # Errors
    /// `EBADF` when it has no such descriptor, `EPERM` when ptrace access is denied.
    pub fn file(&self, fd: i32) -> io::Result<OwnedFd> {
        // SAFETY: plain syscall; the descriptor is owned below.
        let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, self.pidfd.as_raw_fd(), fd, 0) };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: just created.
        Ok(unsafe { OwnedFd::from_raw_fd(got as RawFd) })
    }

    /// Carry out ioctl `cmd` with the requester's argument `arg` on `fd`, reading what `arg`
    /// points to once from its memory; the ioctl's result or its errno.
    pub fn perform(&self, fd: RawFd, cmd: u32, arg: u64) -> Result<i64, i32> {
        let err = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        let by_value = [libc::TCFLSH as u32, libc::TCXONC as u32, libc::TIOCEXCL as u32].contains(&cmd);
        let rc = if by_value {
            // SAFETY: these requests take an int by value.
            unsafe { libc::ioctl(fd, cmd as _, arg as libc::c_int) }
        } else {
            let size = match cmd {
                c if c == libc::TIOCSPGRP as u32 || c == libc::TIOCSETD as u32 => 4,
                c if c == libc::TIOCSWINSZ as u32 => 8,
                c if [libc::TCSETA, libc::TCSETAW, libc::TCSETAF].iter().any(|r| *r as u32 == c) => 18,
                c if [libc::TCSETS2, libc::TCSETSW2, libc::TCSETSF2].iter().any(|r| *r as u32 == c) => {
                    std::mem::size_of::<libc::termios2>()
                }
                _ => std::mem::size_of::<libc::termios2>() - 8, // the kernel's struct termios
            };
            let mut buf = [0u8; 64];
            let file = std::fs::File::open(&self.mem).map_err(|e| e.raw_os_error().unwrap_or(libc::EFAULT))?;
            use std::os::unix::fs::FileExt;
            file.read_exact_at(&mut buf[..size], arg).map_err(|_| libc::EFAULT)?;
            // SAFETY: `buf` holds at least the `size` bytes the request reads.
            unsafe { libc::ioctl(fd, cmd as _, buf.as_ptr()) }
        };
        if rc < 0 {
            return Err(err());
        }
        Ok(rc as i64)
    }
}

/// Whether SIGINT reached no handler in the processes `pids`: each ignored or blocked it
/// (SPEC T3). A process with a handler answered; one with the default action died of it.
pub fn int_unanswered(pids: &[i32]) -> bool {
    let off = |s: &sigseal::SigState| {
        sigseal::SigState::has(s.ignored, libc::SIGINT) || sigseal::SigState::has(s.blocked, libc::SIGINT)
    };
    pids.iter().filter_map(|p| sigseal::SigState::of(*p).ok()).all(|s| off(&s))
}
