//! What init reads of sandbox processes from its own `/proc` (`proc(5)`): the requester of a
//! trapped terminal change (T11) and the signal state of a group (T3). As the namespace's
//! pid 1, init sees exactly the sandbox's processes, under the numbers they see themselves.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

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

/// The session of `pid`, from its stat line.
pub fn session(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(2).map(|v| *v as i32)
}

/// Every pid in this namespace but init's own.
pub fn pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()).filter(|p| *p != 1).collect()
}

/// Send `sig` to process group `pgrp` of this namespace; init's own group (id 1) is addressed
/// as "my group", since `kill(-1)` would mean every process (`kill(2)`).
pub fn signal_group(pgrp: i32, sig: i32) {
    let _ = crate::signals::kill(if pgrp == 1 { 0 } else { -pgrp }, sig);
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
        let pidfd = crate::pidfd::open(tgid).ok()?;
        let off = |m: u64| sigseal::SigState::has(m, libc::SIGTTOU);
        Some(Requester {
            pidfd,
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
        use rustix::process::{pidfd_getfd, PidfdGetfdFlags};
        Ok(pidfd_getfd(&self.pidfd, fd, PidfdGetfdFlags::empty())?)
    }

    /// Carry out ioctl `cmd` with the requester's argument `arg` on `fd`, reading what `arg`
    /// points to once from its memory; the ioctl's result or its errno.
    pub fn perform(&self, fd: BorrowedFd<'_>, cmd: u32, arg: u64) -> Result<i64, i32> {
        let by_value = [libc::TCFLSH as u32, libc::TCXONC as u32, libc::TIOCEXCL as u32].contains(&cmd);
        let arg = if by_value {
            TtyArg::Value(arg as libc::c_int)
        } else {
            let size = pointee_size(cmd).ok_or(libc::ENOTTY)?;
            let mut buf = [0u8; 64];
            let file = std::fs::File::open(&self.mem).map_err(|e| e.raw_os_error().unwrap_or(libc::EFAULT))?;
            use std::os::unix::fs::FileExt;
            file.read_exact_at(&mut buf[..size], arg).map_err(|_| libc::EFAULT)?;
            TtyArg::Struct(buf)
        };
        tty_ioctl(fd, cmd, &arg).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }
}

/// The bytes a terminal-changing request reads through its pointer argument (`ioctl_tty(2)`;
/// the kernel's own structs, not glibc's), at most 64; `None` for any other request.
fn pointee_size(cmd: u32) -> Option<usize> {
    let is = |reqs: &[libc::Ioctl]| reqs.iter().any(|r| *r as u32 == cmd);
    Some(if is(&[libc::TIOCSPGRP, libc::TIOCSETD]) {
        4
    } else if is(&[libc::TIOCSWINSZ]) {
        8
    } else if is(&[libc::TCSETA, libc::TCSETAW, libc::TCSETAF]) {
        18
    } else if is(&[libc::TCSETS2, libc::TCSETSW2, libc::TCSETSF2]) {
        std::mem::size_of::<libc::termios2>()
    } else if is(&[libc::TCSETS, libc::TCSETSW, libc::TCSETSF]) {
        std::mem::size_of::<libc::termios2>() - 8 // the kernel's struct termios
    } else {
        return None;
    })
}

/// The argument of a trapped terminal request: an int by value, or the bytes its pointer
/// argument points to.
enum TtyArg {
    Value(libc::c_int),
    Struct([u8; 64]),
}

/// `ioctl(2)` request `cmd` with `arg` on terminal `fd`: the result.
fn tty_ioctl(fd: BorrowedFd<'_>, cmd: u32, arg: &TtyArg) -> io::Result<i64> {
    // The kernel reads the argument as an unsigned long: an int by value zero-extended, as a
    // variadic int arrives, or the address of the bytes.
    let word = match arg {
        TtyArg::Value(v) => *v as libc::c_uint as libc::c_ulong,
        TtyArg::Struct(buf) => buf.as_ptr() as libc::c_ulong,
    };
    // SAFETY: by value, nothing of ours is passed; by pointer, `buf` holds 64 bytes, at least
    // what any request of `pointee_size` reads, borrowed for the call, and the kernel only
    // reads it (these requests set, never get).
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), cmd as _, word) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as i64)
}

/// Whether SIGINT reached no handler in the processes `pids`: each ignored or blocked it
/// (SPEC T3). A process with a handler answered; one with the default action died of it.
pub fn int_unanswered(pids: &[i32]) -> bool {
    let off = |s: &sigseal::SigState| {
        sigseal::SigState::has(s.ignored, libc::SIGINT) || sigseal::SigState::has(s.blocked, libc::SIGINT)
    };
    pids.iter().filter_map(|p| sigseal::SigState::of(*p).ok()).all(|s| off(&s))
}
