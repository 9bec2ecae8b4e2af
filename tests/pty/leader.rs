//! snug as the leader of a terminal session of its own (SPEC T10): what `ssh -t host snug …`,
//! `xterm -e snug …` or `tmux new-window 'snug …'` make. A fresh pty whose slave is snug's
//! stdin, stdout, stderr and controlling terminal (`setsid` + `TIOCSCTTY` before the exec,
//! `setsid(2)`, `ioctl_tty(2)`); closing the master hangs the session up, which the kernel
//! tells the session leader alone (SIGHUP, then SIGCONT).

use super::{find, open_pty, own_tty, read_some};
use crate::common::{ended_within, kill_if_running, readable, snug_cmd, Who};
use std::os::fd::OwnedFd;
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
        own_tty(who, &slave);
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
        let Some(fd) = self.master.as_ref() else { return false };
        loop {
            if find(&self.out, needle.as_bytes()).is_some() {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            if readable(fd, left.min(Duration::from_secs(1))) && !read_some(fd, &mut self.out, false) {
                return false;
            }
        }
    }

    /// Type `bytes` at the terminal.
    pub fn send(&self, bytes: &[u8]) {
        let fd = self.master.as_ref().expect("the terminal is there");
        assert_eq!(rustix::io::write(fd, bytes).expect("write to the master"), bytes.len());
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
        ended_within(&mut self.child, limit)
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        kill_if_running(&mut self.child);
    }
}
