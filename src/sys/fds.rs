//! Every descriptor number snug fixes in a child between fork and exec, in one place: which
//! number holds what in bwrap and the sandbox init, and in pasta. The numbers are a contract
//! between `start`'s child body (which `dup2(2)`s them) and `init` (which adopts them).

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// The channel to snug, in bwrap and init (`crate::channel`).
pub const INIT_FD: RawFd = 3;
/// The caller's own stderr in init; bwrap's fd 2 is a pipe to snug so its errors can be
/// reported as one `snug: ` line, and init puts this one back on fd 2.
pub const STDERR_FD: RawFd = 4;
/// The seccomp program bwrap loads (`--seccomp 5`, `bwrap(1)`).
pub const SECCOMP_FD: RawFd = 5;
/// The `payload_args` memfd: the payload's argv and environment.
pub const ARGS_FD: RawFd = 6;
/// The sandbox's pty slave in bwrap and init, in terminal mode: init makes it its
/// controlling terminal (SPEC T1) and holds it for the pty's foreground.
pub const PTY_FD: RawFd = 7;
/// In bwrap only: the read end of the pipe its options come from (`--args 8`, `bwrap(1)`),
/// written once snug's policy is resolved; bwrap closes it after reading.
pub const BWRAP_ARGS_FD: RawFd = 8;
/// In bwrap only: the first of the descriptors snug opened for the policy's binds (SPEC P7,
/// `crate::grant_fd`), one each from here on, in the policy's order (`--bind-fd 9 DEST`,
/// `bwrap(1)`); bwrap closes each once it has bound it.
pub const GRANT_FD: RawFd = 9;
/// At most this many bind descriptors (`SCM_MAX_FD` is 253 per message, `unix(7)`).
pub const MAX_GRANTS: usize = 240;
/// Which of fds 0–2 are the caller's terminal, so become the sandbox pty's slave (SPEC R2,
/// T1). A copy of a bit set: a child between fork and exec may read it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TtyFds(u32);

impl TtyFds {
    /// The fds `n` in 0–2 for which `is_tty(n)`.
    pub fn of(is_tty: impl Fn(RawFd) -> bool) -> TtyFds {
        TtyFds((0..3).filter(|&n| is_tty(n)).map(|n| 1 << n).sum())
    }

    /// Whether fd `n` is the terminal.
    pub const fn has(self, n: RawFd) -> bool {
        self.0 & (1 << n) != 0
    }

    /// Both stdin and stdout are the terminal.
    pub const fn in_and_out(self) -> bool {
        self.has(0) && self.has(1)
    }
}

/// In pasta: the user namespace it joins, when passed as a descriptor (`/proc/self/fd/3`).
pub const PASTA_USERNS_FD: RawFd = 3;

/// Take ownership of the descriptors this process was exec'd with at fixed numbers (`init`'s
/// [`INIT_FD`], [`STDERR_FD`], [`ARGS_FD`], [`PTY_FD`]): `None` for a number that is not
/// open (`fcntl(2)` `F_GETFD`). Once per process: a second call gets `None` for every number,
/// so no descriptor ever has two owners.
pub fn adopt<const N: usize>(fds: [RawFd; N]) -> [Option<OwnedFd>; N] {
    static ADOPTED: AtomicBool = AtomicBool::new(false);
    let first = !ADOPTED.swap(true, Ordering::SeqCst);
    fds.map(|fd| {
        // F_GETFD only asks whether the number is open; it owns nothing.
        let open = first && rustix::io::fcntl_getfd(for_query(fd)).is_ok();
        // SAFETY: the exec handed these numbers to this process (the contract of this
        // module); the once-only flag above means nothing in it took them before, and it
        // opens nothing before `main` adopts them.
        open.then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    })
}

/// A borrow of `fd` for one `fcntl(2)` query.
fn for_query(fd: RawFd) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: used only for F_GETFD, which fails with EBADF on a closed number and has no
    // effect on an open one; the borrow does not outlive that call.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

#[cfg(test)]
mod tests {
    use super::TtyFds;

    #[test]
    fn r2_tty_fds_name_each_descriptor() {
        let err_only = TtyFds::of(|n| n == 2);
        assert!(err_only.has(2) && !err_only.has(0) && !err_only.has(1) && !err_only.in_and_out());
        let in_only = TtyFds::of(|n| n == 0);
        assert!(in_only.has(0) && !in_only.has(1) && !in_only.in_and_out());
        let out_only = TtyFds::of(|n| n == 1);
        assert!(out_only.has(1) && !out_only.has(0) && !out_only.in_and_out());
        let all = TtyFds::of(|_| true);
        assert!((0..3).all(|n| all.has(n)) && all.in_and_out());
        assert_eq!(TtyFds::default(), TtyFds::of(|_| false));
    }
}
