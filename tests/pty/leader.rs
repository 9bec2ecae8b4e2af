//! snug as the leader of a terminal session of its own (SPEC T10): what `ssh -t host snug …`,
//! `xterm -e snug …` or `tmux new-window 'snug …'` make. A fresh pty whose slave is snug's
//! stdin, stdout, stderr and controlling terminal (`setsid` + `TIOCSCTTY` before the exec,
//! `setsid(2)`, `ioctl_tty(2)`); closing the master hangs the session up, which the kernel
//! tells the session leader alone (SIGHUP, then SIGCONT).

use super::{check, find, open_pty};
use crate::common::{snug_cmd, test_user, Who};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// snug leading its own terminal session.
pub struct Leader {
    master: Option<OwnedFd>,
    child: Child,
    out: Vec<u8>,
}

impl Leader {
    /// `snug ARGS…` as `who` in `dir`, the session leader of a fresh 24×80 pty (setpriv
    /// execs in place, so the leader is snug itself).
    pub fn start(who: Who, dir: &Path, args: &[&str]) -> Leader {
        let (master, slave) = open_pty(24, 80);
        if who == Who::User {
            let (uid, gid) = test_user();
            // SAFETY: fchown on our own slave descriptor, as login(1) gives a user its tty.
            check(unsafe { libc::fchown(slave.as_raw_fd(), uid, gid) }, "fchown pty");
        }
        let mut cmd = snug_cmd(who, dir, args);
        super::lead_session(&mut cmd, &slave);
        let child = cmd.spawn().expect("spawn snug as a session leader");
        drop(cmd);
        drop(slave);
        Leader { master: Some(master), child, out: Vec::new() }
    }

    /// snug's pid (the session's id).
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Wait up to `limit` for `needle` on the terminal; false on timeout or hangup.
    pub fn wait_for(&mut self, needle: &str, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        let Some(fd) = self.master.as_ref().map(|m| m.as_raw_fd()) else { return false };
        loop {
            if find(&self.out, needle.as_bytes()).is_some() {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one pollfd in this frame.
            if unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(1000) as i32) } <= 0 {
                continue;
            }
            let mut buf = [0u8; 4096];
            // SAFETY: reads into `buf`.
            let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if r <= 0 {
                return false;
            }
            self.out.extend(&buf[..r as usize]);
        }
    }

    /// What the terminal showed so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.out).into_owned()
    }

    /// Close the master: the terminal goes away, as when its window closes. The moment.
    pub fn hangup(&mut self) -> Instant {
        self.master = None;
        Instant::now()
    }

    /// snug's status if it ends within `limit`; None (and snug still running) past it.
    pub fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
