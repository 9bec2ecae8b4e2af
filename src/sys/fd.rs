//! Raw descriptor calls rustix has no safe form for: a descriptor number the caller left
//! open, and `ioctl`s whose answer is a new descriptor or a pid that may be 0.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Whether descriptor `n` is open (`fcntl(2)` `F_GETFD`). Async-signal-safe and usable before
/// Rust's runtime is up (from `.init_array`).
pub fn is_open(n: RawFd) -> bool {
    // SAFETY: F_GETFD takes integers only and reads the descriptor table.
    unsafe { libc::fcntl(n, libc::F_GETFD) != -1 }
}

/// Descriptor `n` as the caller left it open, or `None` when it is not open. Only for the
/// descriptors snug inherited and never closes (it works on copies), so the borrow stays
/// valid for the process's life.
pub fn inherited(n: RawFd) -> Option<BorrowedFd<'static>> {
    // SAFETY: once F_GETFD succeeded `n` is open, and snug never closes a descriptor its
    // caller passed (the contract above), so the borrow outlives every use.
    is_open(n).then(|| unsafe { BorrowedFd::borrow_raw(n) })
}

/// `ioctl_ns(2)` `NS_GET_USERNS`: the user namespace that owns namespace `ns`, as a new
/// descriptor. Raw: rustix's typed ioctls have no form whose result is a new descriptor.
///
/// # Errors
/// The `ioctl(2)` error (`EPERM` when the owner is outside the caller's namespace).
pub fn ns_owner(ns: impl AsFd) -> io::Result<OwnedFd> {
    /// `NS_GET_USERNS` (`include/uapi/linux/nsfs.h`): `_IO(0xb7, 0x1)`.
    const NS_GET_USERNS: libc::c_ulong = 0xb701;
    // SAFETY: NS_GET_USERNS takes no argument and returns a new descriptor or -1; a new one is
    // owned by the caller only.
    unsafe {
        let fd = libc::ioctl(ns.as_fd().as_raw_fd(), NS_GET_USERNS as _);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// `TIOCGSID` (`tty_ioctl(4)`): the session of the terminal `fd`, which answers only for the
/// caller's own controlling terminal; `None` when the session's leader is outside the
/// caller's pid namespace (the kernel answers 0, which rustix's `tcgetsid` cannot hold).
///
/// # Errors
/// The `ioctl(2)` error (`ENOTTY` for another terminal or none).
pub fn tty_session(fd: impl AsFd) -> io::Result<Option<snug_core::Pid>> {
    use rustix::ioctl::{ioctl, Getter, Opcode};
    // SAFETY: TIOCGSID writes one pid_t, the getter's type.
    Ok(snug_core::Pid::new(unsafe { ioctl(fd, Getter::<{ libc::TIOCGSID as Opcode }, libc::pid_t>::new()) }?))
}

/// `tcgetattr(3)` as the C library's `termios`, for a fork child that compares settings
/// without rustix values. Async-signal-safe (one `ioctl(2)`).
pub fn termios_of(fd: RawFd) -> Option<libc::termios> {
    // SAFETY: termios is plain integers (all-zero a valid value); tcgetattr fills the one in
    // this frame and reads nothing else.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(fd, &mut t) == 0).then_some(t)
    }
}

/// The whole of a small `/proc` file (`/proc/PID/stat`, `status`, `fdinfo/N`), as text: one
/// open, reads of 4 KiB until end of file, one close. `std::fs::read_to_string` sizes its
/// buffer from `fstat(2)`, which says 0 for these, and so read 32, 32, 64, 128 … bytes at a
/// time: ten system calls for a `stat` line, three times in each start (B1).
///
/// # Errors
/// The `open(2)` or `read(2)` error.
pub fn read_proc(path: &str) -> io::Result<String> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match rustix::io::read(&fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    String::from_utf8(out).map_err(|_| io::Error::from_raw_os_error(libc::EILSEQ))
}
