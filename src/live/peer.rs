//! Whether a control connection comes from inside a sandbox (SPEC X4): every sandbox sits
//! in a pid namespace below the one its snug runs in, so a peer whose pid namespace is not
//! snug's own is refused, whatever it could see or bind.
//!
//! The peer is pinned with `SO_PEERPIDFD` (Linux 6.5, `socket(7)`): a pidfd of the process
//! that connected, which a pid reused since cannot stand in for. Its depth below the
//! `/proc` mount's pid namespace is the length of the `NSpid:` line of the pidfd's fdinfo
//! (`proc(5)`); it must equal snug's own (`/proc/self/status`), and the peer must be visible
//! in snug's namespace at all (`SO_PEERCRED` gives pid 0 otherwise). Older kernels: a pidfd
//! of `SO_PEERCRED`'s pid.

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use snug_core::Pid;

/// How many pid namespaces the `NSpid:` line in `text` names (0 when there is none, or the
/// process is gone: `-1`, or not visible: `0`).
fn depth(text: &str) -> usize {
    let Some(line) = text.lines().find_map(|l| l.strip_prefix("NSpid:")) else { return 0 };
    let ids: Vec<i64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    if ids.first().is_some_and(|p| *p > 0) {
        ids.len()
    } else {
        0
    }
}

/// A pidfd of the process at the other end of `conn`.
fn pidfd_of(conn: BorrowedFd<'_>, pid: Pid) -> Option<OwnedFd> {
    match nix::sys::socket::getsockopt(&conn, nix::sys::socket::sockopt::PeerPidfd) {
        Ok(fd) => Some(fd),
        // Before Linux 6.5 the option does not exist.
        Err(nix::errno::Errno::ENOPROTOOPT) => crate::pidfd::open(pid).ok(),
        Err(_) => None,
    }
}

/// Whether the peer of `conn` (whose `SO_PEERCRED` pid is `pid`) runs in snug's own pid
/// namespace; false when anything cannot be told (refused, never guessed).
pub fn in_own_pid_namespace(conn: BorrowedFd<'_>, pid: Option<Pid>) -> bool {
    let Some(pid) = pid else {
        return false; // not visible here: an outer or unrelated namespace
    };
    let Some(pidfd) = pidfd_of(conn, pid) else { return false };
    depths(pidfd.as_fd()).is_some_and(|(peer, own)| peer > 0 && peer == own)
}

/// Whether the process behind `pidfd` runs in a pid namespace below this process's own. Such
/// a process sees this one as pid 0 (`SO_PEERCRED`) and, as snug, refuses it like a sandbox.
pub fn below_own(pidfd: BorrowedFd<'_>) -> bool {
    depths(pidfd).is_some_and(|(peer, own)| peer > own && own > 0)
}

/// The [`depth`] of the process behind `pidfd` and of this process; `None` when either
/// cannot be read.
fn depths(pidfd: BorrowedFd<'_>) -> Option<(usize, usize)> {
    let peer = crate::sys::fd::read_proc(&format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd())).ok()?;
    let own = crate::sys::fd::read_proc("/proc/self/status").ok()?;
    Some((depth(&peer), depth(&own)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x4_nspid_depth() {
        assert_eq!(depth("Pid:\t12\nNSpid:\t12\n"), 1);
        assert_eq!(depth("Pid:\t12\nNSpid:\t12\t3\t1\n"), 3);
        assert_eq!(depth("Pid:\t-1\nNSpid:\t-1\n"), 0);
        assert_eq!(depth("Pid:\t0\nNSpid:\t0\n"), 0);
        assert_eq!(depth("Pid:\t5\n"), 0);
    }

    /// X4: a peer in this process's own pid namespace passes (the test's own connection);
    /// the sandboxed peer's refusal is tested end to end in tests/live/sandboxes.rs.
    #[test]
    fn x4_own_namespace_peer_passes() {
        let (a, _b) = crate::sys::packet::pair().unwrap();
        assert!(in_own_pid_namespace(a.as_fd(), Some(crate::sys::process::own())));
        assert!(!in_own_pid_namespace(a.as_fd(), None));
    }
}
