//! Every descriptor number snug fixes in a child between fork and exec, in one place: which
//! number holds what in bwrap and the sandbox init, and in pasta. The numbers are a contract
//! between `start`'s child body (which `dup2(2)`s them) and `init` (which adopts them).

use std::os::fd::RawFd;

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
/// In pasta: the user namespace it joins, when passed as a descriptor (`/proc/self/fd/3`).
pub const PASTA_USERNS_FD: RawFd = 3;
