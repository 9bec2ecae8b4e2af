//! The seccomp user-notification ioctls on a listener (`seccomp_unotify(2)`), which neither
//! rustix nor nix names: the one audited place for them (T11).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// One request on a listener, each with the struct of its own layout.
pub enum Notif<'a> {
    /// `SECCOMP_IOCTL_NOTIF_RECV`: the kernel fills the (all-zero) notification.
    Recv(&'a mut libc::seccomp_notif),
    /// `SECCOMP_IOCTL_NOTIF_SEND`: answer a notification.
    Send(&'a libc::seccomp_notif_resp),
    /// `SECCOMP_IOCTL_NOTIF_ID_VALID`: whether the notification with this id still waits.
    IdValid(&'a u64),
}

/// A notification to receive into: all zero, as `SECCOMP_IOCTL_NOTIF_RECV` requires.
pub fn empty() -> libc::seccomp_notif {
    let data = libc::seccomp_data { nr: 0, arch: 0, instruction_pointer: 0, args: [0; 6] };
    libc::seccomp_notif { id: 0, pid: 0, flags: 0, data }
}

/// Make `op` on `listener`.
///
/// # Errors
/// The ioctl's error: `ENOENT` once the requester was interrupted (or the id is stale).
pub fn ioctl(listener: BorrowedFd<'_>, op: Notif<'_>) -> io::Result<()> {
    let (request, arg): (libc::c_ulong, *mut libc::c_void) = match op {
        Notif::Recv(n) => (libc::SECCOMP_IOCTL_NOTIF_RECV as _, (n as *mut libc::seccomp_notif).cast()),
        Notif::Send(r) => {
            (libc::SECCOMP_IOCTL_NOTIF_SEND as _, (r as *const libc::seccomp_notif_resp).cast_mut().cast())
        }
        Notif::IdValid(id) => (libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _, (id as *const u64).cast_mut().cast()),
    };
    // SAFETY: each request gets a pointer to the struct its number encodes (`_IOWR`/`_IOW`
    // with that size), alive for the call; the kernel writes only RECV's, which is borrowed
    // mutably, and only reads the others.
    if unsafe { libc::ioctl(listener.as_raw_fd(), request as _, arg) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
