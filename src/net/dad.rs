//! No IPv6 duplicate address detection in the sandbox's network namespace, so the payload's
//! first IPv6 connections are not lost (SPEC N1, N3).
//!
//! Why: a new interface probes its link-local address for one to two seconds
//! (`accept_dad`, `dad_transmits`, `router_solicitation_delay` in the kernel's
//! `ip-sysctl.rst`; RFC 4862). Until it is done the kernel sends its probe, and its MLD
//! reports (RFC 3810 §5.2.13), from the unspecified address `::`. The pasta this targets
//! (Debian's `0.0~git20230309`) takes the source of every frame from the namespace that is
//! not link-local as the namespace's address (`tap6_handler`, `addr_seen`) and sends its TCP
//! frames there: one such frame between the payload's SYN and the remote side's first bytes
//! sends them to `::`, the namespace drops them, and the connection hangs. pasta is the
//! interface's only peer and never answers a probe, so detection there finds nothing and
//! costs nothing: snug turns it off in the namespace before pasta makes its interface, which
//! then has a usable link-local address at once, and every frame a real source.

use std::os::fd::{AsFd, AsRawFd};

use anyhow::{bail, Result};

/// `accept_dad` of `all` and of `default` (which a new interface copies), under the `/proc/sys`
/// of the namespace the opener is in (`conf/all`, `conf/default` in `ip-sysctl.rst`). The
/// kernel skips detection only when both `all`'s and the interface's are below 1
/// (`addrconf_dad_begin`, `net/ipv6/addrconf.c`).
const FILES: [&std::ffi::CStr; 2] =
    [c"/proc/sys/net/ipv6/conf/all/accept_dad", c"/proc/sys/net/ipv6/conf/default/accept_dad"];

/// The steps the child reports a failure of (the tag of its error frame).
const STEPS: [&str; 4] = [
    "joining the sandbox's user namespace",
    "joining its network namespace",
    "opening accept_dad",
    "writing accept_dad",
];

/// Write 0 to [`FILES`] in network namespace `net`, from a short-lived child that joins
/// `userns` first (the owner of `net`, `ioctl_ns(2)`; `None` when that is snug's own): its
/// creator, or root, has every capability there, which `setns(2)` into `net` and the
/// sysctls' write check (`CAP_NET_ADMIN` over `net`) need. A child, because a process joins
/// a user namespace only while it has one thread (`setns(2)`).
///
/// # Errors
/// The step that failed and its errno, or how the child ended.
pub fn turn_off(net: impl AsFd, userns: Option<impl AsFd>) -> Result<()> {
    use crate::sys::process::{clone3, exit_now, Cloned};
    let (fail_r, fail_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let (net_fd, fail_fd) = (net.as_fd().as_raw_fd(), fail_w.as_raw_fd());
    let user_fd = userns.as_ref().map(|u| u.as_fd().as_raw_fd());
    // SAFETY: the child makes only async-signal-safe system calls (setns, open, write,
    // close, _exit) on integers and on the static paths, and never returns; the descriptors
    // outlive it (the parent waits for it below).
    let cloned = unsafe { clone3(0) };
    match cloned {
        // SAFETY: the child body of the clone above, under the same contract.
        Ok(Cloned::Child) => unsafe {
            let fail = |step: u8| -> ! {
                let frame = crate::sys::codec::encode(step, nestproc::errno());
                libc::write(fail_fd, frame.as_ptr().cast(), frame.len());
                exit_now(1)
            };
            if let Some(fd) = user_fd {
                if libc::setns(fd, libc::CLONE_NEWUSER) != 0 {
                    fail(0);
                }
            }
            if libc::setns(net_fd, libc::CLONE_NEWNET) != 0 {
                fail(1);
            }
            for path in FILES {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    fail(2);
                }
                if libc::write(fd, b"0\n".as_ptr().cast(), 2) != 2 {
                    fail(3);
                }
                libc::close(fd);
            }
            exit_now(0)
        },
        Ok(Cloned::Parent { pidfd, pid }) => {
            drop(fail_w);
            let child = crate::pidfd::Pinned::cloned(pidfd, pid);
            let mut said = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::Read::take(std::fs::File::from(fail_r), 16), &mut said);
            let status = child.reap();
            if let Some((step, errno)) = crate::sys::codec::decode(&said) {
                let e = std::io::Error::from_raw_os_error(errno);
                let step = STEPS.get(usize::from(step)).copied().unwrap_or("a step");
                bail!("{step}: {}", crate::error::io_text(&e));
            }
            match status {
                Some(snug_core::WaitStatus::Exited(0)) => Ok(()),
                Some(s) => bail!("the child ended with wait status {:#x}", s.to_raw()),
                None => bail!("the child was reaped elsewhere"),
            }
        }
        Err(e) => bail!("clone3: {}", crate::error::io_text(&e)),
    }
}
