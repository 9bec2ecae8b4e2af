//! Whether this snug may give its sandbox a cgroup namespace (bwrap `--unshare-cgroup-try`).
//! Inside another snug's sandbox with `--allow-userns` it may not: that filter refuses
//! `CLONE_NEWCGROUP` (src/seccomp/cgroupns.rs), and bwrap's "try" only checks that the kernel
//! has cgroup namespaces, so it would fail ("No permissions to create new namespace") and the
//! nested run with it.

use std::sync::OnceLock;

/// Whether a new cgroup namespace can be made here: yes without any seccomp filter
/// (`/proc/self/status`, `Seccomp: 0`, the usual case, one procfs read); under a filter, a
/// child asked to make one answers.
pub fn possible() -> bool {
    static ANSWER: OnceLock<bool> = OnceLock::new();
    *ANSWER.get_or_init(|| {
        let status = crate::sys::fd::read_proc("/proc/self/status").unwrap_or_default();
        let filtered = status.lines().any(|l| l.strip_prefix("Seccomp:").is_some_and(|v| v.trim() != "0"));
        !filtered || probe()
    })
}

/// A child that tries `unshare(CLONE_NEWCGROUP)` and exits 0 when it could.
fn probe() -> bool {
    use crate::sys::process::{clone3, exit_now, Cloned};
    // SAFETY: the child makes only unshare(2) and _exit(2), both async-signal-safe.
    match unsafe { clone3(0) } {
        Ok(Cloned::Child) => {
            // SAFETY: unshare takes an integer; nothing of this process's memory is touched.
            let r = unsafe { libc::unshare(libc::CLONE_NEWCGROUP) };
            exit_now(if r == 0 { 0 } else { 1 })
        }
        Ok(Cloned::Parent { pid, .. }) => crate::sys::process::wait_ended(pid).is_ok_and(|st| st.to_raw() == 0),
        Err(_) => false,
    }
}
