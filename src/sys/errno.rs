//! An `errno` (`errno(3)`) as a type, for the code that runs where only a number can travel:
//! the sandbox init reports a failure to snug as an errno over the channel, and a fork child
//! through its error pipe. Elsewhere errors are `anyhow` with [`crate::error::Failure`].

use std::io;

/// One `errno` value, never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// `EINVAL`: malformed input.
    pub const INVAL: Errno = Errno(libc::EINVAL);
    /// `ENOENT`: no such file.
    pub const NOENT: Errno = Errno(libc::ENOENT);
    /// `EACCES`: permission denied.
    pub const ACCES: Errno = Errno(libc::EACCES);

    /// The errno of an I/O error; `EIO` for one the kernel did not give.
    pub fn of(e: &io::Error) -> Errno {
        Errno(e.raw_os_error().filter(|&n| n != 0).unwrap_or(libc::EIO))
    }
}

/// The number itself, for the channel's reports (`Report::ExecFailed`, `Report::InitFailed`).
impl From<Errno> for i32 {
    fn from(e: Errno) -> i32 {
        e.0
    }
}

impl From<rustix::io::Errno> for Errno {
    fn from(e: rustix::io::Errno) -> Errno {
        Errno(e.raw_os_error())
    }
}
