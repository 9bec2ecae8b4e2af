//! The overlay itself (SPEC W1): mounted at DIR in nest's own mount namespace, after nest set
//! it up and before bwrap has its options, so bwrap's bind of DIR shows the merged view and
//! the host's DIR is the lower layer, never written. Debian 12's bwrap 0.8 has no
//! `--overlay`; a helper joins nest's namespaces (`setns(2)` on nest's pidfd) and mounts
//! there, so nothing of it is left on the host once the sandbox is gone.

use crate::error::{failure, UNAVAILABLE};
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

/// `overlay(5)`'s mount data for lower `dir`, `upper` and `work`. As root, `redirect_dir=on`
/// makes rename(2) of a directory that existed before work (SPEC W6). As a user the kernel
/// needs `userxattr` (Linux 5.11+, `Documentation/filesystems/overlayfs.rst`), and then
/// refuses `redirect_dir`: such a rename fails with EXDEV.
///
/// `volatile` (Linux 5.10+): the overlay's unmount, when the sandbox's mount namespace goes,
/// would otherwise `syncfs(2)` the whole filesystem holding the state directory, which costs
/// whatever every other writer there has left dirty (tens of ms on a busy host, SPEC B10).
/// The kept changes are plain files in the page cache: they survive snug's SIGKILL (W5), not
/// a crash of the machine, and the payload's `fsync(2)` inside DIR returns without waiting
/// for the disk.
pub fn options(dir: &Path, upper: &Path, work: &Path, root: bool) -> String {
    let mut out = format!("lowerdir={},upperdir={},workdir={},volatile", esc(dir), esc(upper), esc(work));
    out.push_str(if root { ",redirect_dir=on" } else { ",userxattr" });
    out
}

/// A path as overlayfs' option parser reads it: `,` `:` and `\` escaped with `\`.
fn esc(p: &Path) -> String {
    let mut out = String::new();
    for c in p.to_string_lossy().chars() {
        if matches!(c, ',' | ':' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The overlay's helper ([`start`]): it mounts once the run's start has passed on the coarse
/// clock and nest has exec'd bwrap, while snug builds bwrap's options. Killed and reaped when
/// dropped unjoined (a nest started again has other namespaces).
pub struct Pending {
    child: Option<std::os::fd::OwnedFd>,
    /// The host pid of the nest it mounts in.
    pub nest: snug_core::Pid,
}

/// Exit code of a helper that saw nest fail before bwrap's exec (nest's error pipe has
/// bytes): [`crate::start::Nest::ready`] reports that failure, not the helper.
const NEST_FAILED: i32 = 255;

/// Start the helper that mounts the overlay `data` ([`options`]) at `dir` in the user and
/// mount namespaces of the nest `nest` pins (root: its mount namespace only; host pid
/// `nest_pid`); a forked helper, since `setns(2)` needs a single-threaded caller. It first
/// waits, in the child, until (1) `CLOCK_REALTIME_COARSE` has reached `started_ns` (ns since
/// the epoch; 0: no wait), so that a host file changed once the overlay is mounted has a
/// ctime at or after the recorded start (SPEC W4's conflicts, [`super::floor`]), and (2)
/// `exec_watch`, nest's setup pipe when snug has not read it yet, hangs up with nothing in it:
/// nest exec'd bwrap, so its mount tree is private and its id maps are written (a mount before
/// that would reach the host's DIR through shared propagation). Started early, both waits
/// overlap snug's own work instead of adding to it (SPEC B10). The child makes only `prctl`,
/// `clock_gettime`, `nanosleep`, `poll`, `setns`, `mount` and `_exit` (async-signal-safe);
/// it dies with snug (`PR_SET_PDEATHSIG`).
///
/// # Errors
/// 71 when the helper cannot be started.
pub fn start(
    (nest, nest_pid, exec_watch): (BorrowedFd<'_>, snug_core::Pid, Option<BorrowedFd<'_>>),
    dir: &Path,
    data: &str,
    root: bool,
    started_ns: u128,
) -> anyhow::Result<Pending> {
    let nul = |_| failure(crate::error::USAGE, format!("{}: the path contains a NUL byte", dir.display()));
    let target = CString::new(dir.as_os_str().as_encoded_bytes()).map_err(nul)?;
    let data = CString::new(data).map_err(|_| failure(crate::error::USAGE, "a path contains a NUL byte"))?;
    let flags = if root { libc::CLONE_NEWNS } else { libc::CLONE_NEWUSER | libc::CLONE_NEWNS };
    let (pidfd, watch) = (nest.as_raw_fd(), exec_watch.map(|w| w.as_raw_fd()));
    let started = i64::try_from(started_ns).unwrap_or(i64::MAX);
    // SAFETY: the child makes only the raw system calls named above, on integers, a stack
    // timespec and pollfd and the two C strings built above, and never returns.
    let cloned = unsafe { crate::sys::process::clone3(0) };
    let cloned =
        cloned.map_err(|e| failure(crate::error::OS_ERROR, format!("cannot start the overlay's helper: {e}")))?;
    let crate::sys::process::Cloned::Parent { pidfd: child, .. } = cloned else {
        // SAFETY: raw system calls on integers, on stack values and on NUL-terminated strings
        // that outlive them.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            loop {
                libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut now);
                if now.tv_sec.saturating_mul(1_000_000_000).saturating_add(now.tv_nsec) >= started {
                    break;
                }
                let nap = libc::timespec { tv_sec: 0, tv_nsec: 100_000 };
                libc::nanosleep(&nap, std::ptr::null_mut());
            }
            if let Some(fd) = watch {
                let mut p = libc::pollfd { fd, events: 0, revents: 0 };
                while libc::poll(&mut p, 1, -1) < 0 {}
                if p.revents & libc::POLLIN != 0 {
                    libc::_exit(NEST_FAILED);
                }
            }
            if libc::setns(pidfd, flags) != 0 {
                libc::_exit(128 + *libc::__errno_location());
            }
            let kind = c"overlay".as_ptr();
            if libc::mount(kind, target.as_ptr(), kind, 0, data.as_ptr().cast()) != 0 {
                libc::_exit(*libc::__errno_location());
            }
            libc::_exit(0)
        }
    };
    Ok(Pending { child: Some(child), nest: nest_pid })
}

impl Pending {
    /// Wait for the helper and say what it did.
    ///
    /// # Errors
    /// 69 with the kernel's reason and what to set when the kernel refuses (SPEC W1); 70
    /// when nest failed first (its own error is reported before this).
    pub fn join(mut self, dir: &Path) -> anyhow::Result<()> {
        let Some(child) = self.child.take() else { return Ok(()) };
        match wait(&child)? {
            NEST_FAILED => Err(failure(crate::error::INTERNAL, "--cow: nest failed before the overlay was mounted")),
            code => outcome(code, dir),
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            let _ = rustix::process::pidfd_send_signal(&child, rustix::process::Signal::KILL);
            let _ = wait(&child);
        }
    }
}

/// What the helper's exit `code` says (0: mounted).
fn outcome(code: i32, dir: &Path) -> anyhow::Result<()> {
    if code == 0 {
        return Ok(());
    }
    let (what, errno) = if code >= 128 { ("join the sandbox's namespaces", code - 128) } else { ("mount", code) };
    let why = crate::error::strerror(errno);
    Err(failure(
        UNAVAILABLE,
        format!(
            "--cow: cannot {what} the overlay on {}: {why}; the kept changes need a local filesystem \
             (ext4, xfs, btrfs): set XDG_STATE_HOME to a directory on one",
            dir.display()
        ),
    ))
}

/// The helper's exit code (`waitid(2)` on its pidfd).
fn wait(child: &std::os::fd::OwnedFd) -> anyhow::Result<i32> {
    use rustix::process::{waitid, WaitId, WaitIdOptions};
    loop {
        match waitid(WaitId::PidFd(std::os::fd::AsFd::as_fd(child)), WaitIdOptions::EXITED) {
            Ok(Some(st)) => return Ok(st.exit_status().unwrap_or(libc::EIO)),
            Ok(None) => continue,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(failure(crate::error::OS_ERROR, format!("waitid: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// W1: commas and colons in a path do not split overlayfs' options.
    #[test]
    fn w1_options_escape_the_separators() {
        let o = options(Path::new("/a,b:c"), Path::new("/u"), Path::new("/w"), false);
        assert_eq!(o, "lowerdir=/a\\,b\\:c,upperdir=/u,workdir=/w,volatile,userxattr");
        assert!(options(Path::new("/a"), Path::new("/u"), Path::new("/w"), true).ends_with(",redirect_dir=on"));
    }
}
