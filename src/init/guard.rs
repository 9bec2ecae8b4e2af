//! Who may change the caller's terminal (SPEC T11). A sandbox process that ignores SIGTTOU
//! could otherwise `tcsetpgrp` the shared terminal from the background and read what the
//! caller types to their shell, or change its settings and size.
//!
//! Mechanism (DESIGN.md design (a)): a seccomp filter with a user-notification listener
//! (`seccomp_unotify(2)`), installed in the payload's process before its exec and so in
//! every sandbox process, traps the ioctls that change a terminal: the foreground
//! (`TIOCSPGRP`), the settings (the `TCSETS*`/`TCSETA*` family, `TCFLSH`, `TCXONC`,
//! `TIOCSETD`, `TIOCEXCL`) and the size (`TIOCSWINSZ`). Init answers each: it carries the change out
//! itself on the requester's very file (`pidfd_getfd(2)`, with the argument read once from
//! `/proc/PID/mem`), so no check-then-continue race lets a thread swap the descriptor, and
//! only while snug has handed the terminal to the sandbox and a sandbox group holds the
//! foreground (from inside, `tcgetpgrp` of a foreign group is 0). snug's take-back is ordered
//! after init's last change: init stops carrying out changes before it reports a stop, and
//! snug takes the terminal back only on that report. Chosen over design (b), a pty of
//! snug's own, because the kernel keeps delivering ^C, ^Z and SIGWINCH itself, the caller's
//! descriptors stay untouched (R2), and a SIGKILLed snug leaves no raw terminal behind.
//!
//! What this design cannot close: a sandbox process that leaves the caller's session
//! (`setsid`) while it holds the terminal open is outside the kernel's job control, so its
//! reads are not stopped (README, known limitations). A pty of snug's own would close it.

use super::unotify::{self, Notif};
use crate::channel::{Channel, Report};
use crate::live::socket::Got;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

/// The ioctl requests that change a terminal (`ioctl_tty(2)`); the rest pass untouched.
const TRAPPED: [u32; 15] = [
    libc::TIOCSPGRP as u32,
    libc::TCSETS as u32,
    libc::TCSETSW as u32,
    libc::TCSETSF as u32,
    libc::TCSETA as u32,
    libc::TCSETAW as u32,
    libc::TCSETAF as u32,
    libc::TCSETS2 as u32,
    libc::TCSETSW2 as u32,
    libc::TCSETSF2 as u32,
    libc::TCFLSH as u32,
    libc::TCXONC as u32,
    libc::TIOCSETD as u32,
    libc::TIOCSWINSZ as u32,
    libc::TIOCEXCL as u32,
];

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
/// x32's ioctl on x86-64 (`__X32_SYSCALL_BIT | 514`), trapped like the native one.
const X32_IOCTL: u32 = 0x4000_0000 + 514;

/// The filter program: trap [`TRAPPED`] ioctls, allow everything else (bwrap's own filter,
/// loaded first, still applies; seccomp takes the stricter answer of the two).
pub fn program() -> Vec<libc::sock_filter> {
    let stmt = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let ld = |off: u32| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, off);
    let n = TRAPPED.len() as u8;
    let mut p = vec![
        ld(4), // seccomp_data.arch
        jeq(AUDIT_ARCH, 0, n + 4),
        ld(0), // seccomp_data.nr
        jeq(libc::SYS_ioctl as u32, 1, 0),
        jeq(X32_IOCTL, 0, n + 1),
        ld(24), // low 32 bits of args[1]: the request is an unsigned int (`ioctl(2)`)
    ];
    for (i, req) in TRAPPED.iter().enumerate() {
        p.push(jeq(*req, n - i as u8, 0));
    }
    p.push(stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW));
    p.push(stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_USER_NOTIF));
    p
}

/// In the payload's process between fork and exec: install `prog` with a new listener and
/// pass the listener to init over `sock`. Raw syscalls only (async-signal-safe). Failure
/// (a kernel before 5.0) leaves the terminal unguarded; init then refuses nothing.
///
/// # Safety
/// Only in a freshly forked child; `prog` must be a valid program.
pub unsafe fn install(prog: &[libc::sock_filter], sock: RawFd) {
    let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut _ };
    // SAFETY: per the caller; every pointer refers to memory that outlives the calls.
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        let fd = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &fprog,
        );
        if fd < 0 {
            return;
        }
        let mut byte = 0u8;
        let mut iov = libc::iovec { iov_base: (&mut byte as *mut u8).cast(), iov_len: 1 };
        let mut cbuf = [0u64; 4];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(4) as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(4) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd as RawFd);
        libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL);
        libc::close(fd as RawFd);
    }
}

/// What init does with one trapped request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Carry it out on the requester's file and answer with the result.
    Perform,
    /// Let the kernel run it as asked: only for `TIOCSPGRP` from a process whose controlling
    /// terminal is not the caller's, which can then act on nothing but its own terminal.
    Continue,
    /// What the kernel does to a background process that does not ignore or block SIGTTOU:
    /// SIGTTOU to its group, and the call restarts once it is continued.
    StopRequester,
    /// Refuse with this errno.
    Refuse(i32),
}

/// A trapped request, as init sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// The ioctl request.
    pub cmd: u32,
    /// The descriptor refers to the caller's terminal (the same pty of the same devpts, or
    /// `/dev/tty` opened by a process whose controlling terminal is the caller's).
    pub on_caller_tty: bool,
    /// The requester's controlling terminal is the caller's (it is in the caller's session).
    pub ctty_is_caller: bool,
    /// The requester's group holds the terminal's foreground.
    pub in_front: bool,
    /// The requesting thread ignores or blocks SIGTTOU.
    pub ttou_off: bool,
    /// snug handed the terminal to the sandbox and a sandbox group holds the foreground.
    pub sandbox_in_front: bool,
}

/// The rule (T11): on the caller's terminal, a change happens only while the sandbox holds
/// the foreground; a background requester that would have been stopped by SIGTTOU still
/// is, as the kernel does (T8); one that ignores SIGTTOU is refused instead of obeyed.
pub fn verdict(r: &Request) -> Verdict {
    let spgrp = r.cmd == libc::TIOCSPGRP as u32;
    if !r.on_caller_tty {
        return match (spgrp, r.ctty_is_caller) {
            (true, true) => Verdict::Refuse(libc::ENOTTY), // not its controlling terminal
            (true, false) => Verdict::Continue,
            (false, _) => Verdict::Perform,
        };
    }
    if spgrp && !r.ctty_is_caller {
        return Verdict::Refuse(libc::ENOTTY);
    }
    if r.cmd == libc::TIOCEXCL as u32 {
        // Exclusive mode outlives snug: the caller's own opens of /dev/tty would fail (EBUSY).
        return Verdict::Refuse(libc::EPERM);
    }
    let job_control = r.cmd != libc::TIOCSWINSZ as u32; // `tty_check_change` in the kernel
    if job_control && r.ctty_is_caller && !r.in_front && !r.ttou_off {
        return Verdict::StopRequester;
    }
    if r.sandbox_in_front {
        Verdict::Perform
    } else if job_control {
        Verdict::Refuse(libc::EIO)
    } else {
        Verdict::Refuse(libc::EPERM)
    }
}

/// Init's side: the listener and what it needs to answer.
pub struct Guard {
    listener: OwnedFd,
    /// The caller's terminal (init's fd 0) as `fstat(2)` names it: the devpts instance
    /// (`st_dev`) and the pty (`st_rdev`); bwrap's own devpts reuses the pty numbers.
    tty: Option<(u64, u64)>,
    /// snug handed the terminal to the sandbox ([`crate::channel::Order::Handed`]).
    pub handed: bool,
}

/// `-ERESTARTSYS` (`include/linux/errno.h`): with SIGTTOU pending, the requester's call
/// restarts after the stop, as in the kernel's own `tty_check_change`.
const ERESTARTSYS: i32 = 512;

/// `/dev/tty` (`st_rdev` 5:0): a file opened there is its opener's controlling terminal.
const DEV_TTY: u64 = 5 << 8;

/// A character device's `(st_dev, st_rdev)`, or `None`.
fn char_dev(fd: impl AsFd) -> Option<(u64, u64)> {
    let st = rustix::fs::fstat(fd).ok()?;
    (rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::CharacterDevice)
        .then_some((st.st_dev, st.st_rdev))
}

impl Guard {
    /// The listener the payload's process sent on `sock`, or `None` (no listener: a kernel
    /// before 5.0).
    pub fn receive(sock: &OwnedFd) -> Option<Guard> {
        // Terminal mode means fd 0 is the caller's terminal; should it not answer, no file
        // counts as the caller's terminal and requests are carried out as asked.
        let tty = char_dev(rustix::stdio::stdin());
        // The child sends at once, or closes its end (packets: the close ends the wait).
        while !crate::fdpoll::readable(sock, None) {}
        match crate::live::socket::recv(sock.as_fd()) {
            Got::Packet(_, fds) => fds.into_iter().next().map(|listener| Guard { listener, tty, handed: false }),
            _ => None,
        }
    }

    /// The listener, for `poll(2)`.
    pub fn raw(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// Answer one pending request; tell snug when one is refused (for `-v`).
    pub fn serve(&self, chan: &Channel) {
        let mut req = unotify::empty();
        if unotify::ioctl(self.listener.as_fd(), Notif::Recv(&mut req)).is_err() {
            return; // the requester was interrupted meanwhile (ENOENT)
        }
        let (val, error, flags) = self.answer(&req, chan);
        let resp = libc::seccomp_notif_resp { id: req.id, val, error, flags };
        // ENOENT means the call was interrupted.
        let _ = unotify::ioctl(self.listener.as_fd(), Notif::Send(&resp));
    }

    fn still_valid(&self, id: u64) -> bool {
        unotify::ioctl(self.listener.as_fd(), Notif::IdValid(&id)).is_ok()
    }

    /// `(val, -errno, flags)` for the response.
    fn answer(&self, req: &libc::seccomp_notif, chan: &Channel) -> (i64, i32, u32) {
        let tid = req.pid as i32;
        let cmd = req.data.args[1] as u32;
        let Some(who) = crate::init::procfs::Requester::of(tid) else { return (0, -libc::ESRCH, 0) };
        let file = match who.file(req.data.args[0] as i32) {
            Ok(f) => f,
            // A requester that made itself non-dumpable (or runs an execute-only binary) keeps
            // its files and memory from init (`ptrace_may_access`): which terminal it means is
            // unknown, so it is let through only where any terminal may change: while the
            // sandbox holds the foreground (settings, size), or a foreground change that can
            // only reach its own controlling terminal. Else as for a background job.
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                let fg = foreground();
                let settings = cmd != libc::TIOCSPGRP as u32 && cmd != libc::TIOCEXCL as u32;
                let go = (settings && self.handed && fg > 0) || (cmd == libc::TIOCSPGRP as u32 && !who.ctty_is_caller);
                if go {
                    return (0, 0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32);
                }
                if who.ctty_is_caller && !who.ttou_off && cmd != libc::TIOCSWINSZ as u32 && who.pgrp != fg {
                    crate::init::procfs::signal_group(who.pgrp, libc::SIGTTOU);
                    return (0, -ERESTARTSYS, 0);
                }
                return (0, -libc::EPERM, 0);
            }
            Err(_) => return (0, -libc::EBADF, 0),
        };
        if !self.still_valid(req.id) {
            return (0, -libc::ESRCH, 0);
        }
        let fg = foreground();
        let r = Request {
            cmd,
            on_caller_tty: match char_dev(&file) {
                Some((_, DEV_TTY)) => who.ctty_is_caller,
                id => id.is_some() && id == self.tty,
            },
            ctty_is_caller: who.ctty_is_caller,
            in_front: fg > 0 && who.pgrp == fg,
            ttou_off: who.ttou_off,
            sandbox_in_front: self.handed && fg > 0,
        };
        match verdict(&r) {
            Verdict::Continue => (0, 0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32),
            Verdict::Refuse(e) => {
                if r.on_caller_tty {
                    chan.report_if_room(Report::Refused(cmd as i32));
                }
                (0, -e, 0)
            }
            Verdict::StopRequester => {
                crate::init::procfs::signal_group(who.pgrp, libc::SIGTTOU);
                (0, -ERESTARTSYS, 0)
            }
            Verdict::Perform => match who.perform(file.as_fd(), cmd, req.data.args[2]) {
                Ok(v) => (v, 0, 0),
                Err(e) => (0, -e, 0),
            },
        }
    }
}

/// The caller's terminal's foreground group as this namespace numbers it; 0 when it is a
/// group outside the sandbox (`tcgetpgrp(3)` on init's fd 0, its controlling terminal).
pub(super) fn foreground() -> i32 {
    match rustix::termios::tcgetpgrp(rustix::stdio::stdin()) {
        Ok(pgrp) => pgrp.as_raw_nonzero().get(),
        Err(rustix::io::Errno::OPNOTSUPP) => 0, // how rustix reports a foreign group's 0
        Err(_) => -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(cmd: libc::Ioctl) -> Request {
        Request {
            cmd: cmd as u32,
            on_caller_tty: true,
            ctty_is_caller: true,
            in_front: false,
            ttou_off: true,
            sandbox_in_front: false,
        }
    }

    /// T11: while the caller holds the foreground nothing on the caller's terminal changes,
    /// SIGTTOU ignored or not; inside, job control between sandbox groups goes on (T6).
    #[test]
    fn t11_the_caller_keeps_the_terminal() {
        for cmd in [libc::TIOCSPGRP, libc::TCSETS, libc::TCSETSW2, libc::TCFLSH, libc::TIOCSETD] {
            assert_eq!(verdict(&req(cmd)), Verdict::Refuse(libc::EIO));
            assert_eq!(verdict(&Request { ttou_off: false, ..req(cmd) }), Verdict::StopRequester);
            assert_eq!(verdict(&Request { sandbox_in_front: true, ..req(cmd) }), Verdict::Perform);
        }
        assert_eq!(verdict(&req(libc::TIOCSWINSZ)), Verdict::Refuse(libc::EPERM));
        assert_eq!(verdict(&Request { ttou_off: false, ..req(libc::TIOCSWINSZ) }), Verdict::Refuse(libc::EPERM));
        // A process that left the caller's session holds the caller's terminal as a plain file.
        assert_eq!(verdict(&Request { ctty_is_caller: false, ..req(libc::TIOCSPGRP) }), Verdict::Refuse(libc::ENOTTY));
        assert_eq!(
            verdict(&Request { ctty_is_caller: false, ttou_off: false, ..req(libc::TCSETS) }),
            Verdict::Refuse(libc::EIO)
        );
    }

    /// A terminal of the sandbox's own (a pty the payload made) is the payload's business.
    #[test]
    fn t11_other_terminals_are_left_alone() {
        let other = |cmd, ctty_is_caller| Request { on_caller_tty: false, ctty_is_caller, ..req(cmd) };
        assert_eq!(verdict(&other(libc::TCSETS, true)), Verdict::Perform);
        assert_eq!(verdict(&other(libc::TIOCSWINSZ, false)), Verdict::Perform);
        assert_eq!(verdict(&other(libc::TIOCSPGRP, false)), Verdict::Continue);
        assert_eq!(verdict(&other(libc::TIOCSPGRP, true)), Verdict::Refuse(libc::ENOTTY));
    }

    #[test]
    fn program_traps_each_request_once() {
        let p = program();
        assert_eq!(p.len(), 6 + TRAPPED.len() + 2);
        assert_eq!(p.last().unwrap().k, libc::SECCOMP_RET_USER_NOTIF);
    }
}
