//! The sandbox's network made snug's without a helper process, where snug may enter that
//! network namespace itself: `setns(2)` with `CLONE_NEWNET` needs `CAP_SYS_ADMIN` over the
//! namespace's owner and over one's own user namespace, which root has (over every user
//! namespace below its own, bwrap's included) and an unprivileged snug has only when the
//! namespace is owned by its own user namespace. It moves only the calling thread and needs
//! no single-threaded process, so this thread enters, routes and makes the sockets exactly
//! as the helper child would ([`super::setup`]), and comes back. That spares a `clone(2)` of
//! snug and the wait for the child to be scheduled (B9: 0.4 ms of 0.5 between the sandbox's
//! start and the payload's, and milliseconds on a loaded machine).

use std::os::fd::{AsFd, FromRawFd, OwnedFd};

use anyhow::Result;
use rustix::thread::{move_into_link_name_space as setns, LinkNameSpaceType::Network};

use super::setup::{step_failure, Made, Want, STEP_NETNS, STEP_ROUTE, STEP_SOCKET};
use crate::error::{failure, INTERNAL};

/// Enter `net`, route every address to its `lo` (`routes`), make the sockets `wants` names,
/// and return to this thread's own network namespace; `None` when this thread may not enter
/// (`EPERM`: the helper, which joins the owning user namespace first, must).
///
/// # Errors
/// 71 naming the step that failed (IPv6 and the raw sockets are best effort, as in the
/// helper); 70, and snug must not go on, when this thread cannot return to its own namespace.
pub fn make(net: &impl AsFd, routes: &[[u8; 36]; 2], wants: &[Want]) -> Result<Option<Vec<Made>>> {
    let home = std::fs::File::open("/proc/thread-self/ns/net").map_err(|e| step_failure(STEP_NETNS, errno(&e)))?;
    match setns(net.as_fd(), Some(Network)) {
        Ok(()) => {}
        Err(rustix::io::Errno::PERM) => return Ok(None),
        Err(e) => return Err(step_failure(STEP_NETNS, e.raw_os_error())),
    }
    let made = inside(routes, wants).map(Some);
    if setns(home.as_fd(), Some(Network)).is_err() {
        return Err(failure(INTERNAL, "cannot return from the sandbox's network namespace"));
    }
    made
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// The helper's work, in this thread, inside the sandbox's namespace.
fn inside(routes: &[[u8; 36]; 2], wants: &[Want]) -> Result<Vec<Made>> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
    let nl = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
    if nl < 0 {
        return Err(step_failure(STEP_ROUTE, nix::errno::Errno::last() as i32));
    }
    // SAFETY: `nl` was just made and is owned by nothing else.
    let nl = unsafe { OwnedFd::from_raw_fd(nl) };
    let mut v6 = true;
    for (i, m) in routes.iter().enumerate() {
        // SAFETY: `nl` is a netlink socket; the message lives for the call.
        let err = unsafe { super::setup::netlink_ask(std::os::fd::AsRawFd::as_raw_fd(&nl), m) };
        if err != 0 && i == 0 {
            return Err(step_failure(STEP_ROUTE, err));
        }
        v6 &= err == 0 || i == 0;
    }
    let mut made = Vec::new();
    for w in wants {
        if w.family == libc::AF_INET6 && !v6 {
            continue;
        }
        let raw = w.kind == libc::SOCK_RAW;
        // SAFETY: both make one socket with raw system calls on memory they own.
        let got = unsafe {
            if raw {
                super::unserved::socket(w.family, i32::from(w.port))
            } else {
                super::setup::socket_for(w)
            }
        };
        match got {
            // SAFETY: the descriptor was just made and is owned by nothing else.
            Ok(fd) => made.push(Made { want: *w, fd: unsafe { OwnedFd::from_raw_fd(fd) } }),
            Err(_) if raw || w.family == libc::AF_INET6 => {}
            Err(e) => return Err(step_failure(STEP_SOCKET, e)),
        }
    }
    Ok(made)
}
