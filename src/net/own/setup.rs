//! The sandbox's network namespace made snug's (SPEC N5, N3): every address local (`local
//! 0.0.0.0/0 dev lo`, `local ::/0 dev lo` in table `local`), and snug's listening sockets
//! made inside, by a short-lived child that joins the sandbox's user and network namespaces
//! (`setns(2)` into a user namespace needs a single-threaded process: a fork child is one)
//! and hands the descriptors back over `SCM_RIGHTS` (`unix(7)`). A socket belongs to the
//! namespace it was made in, whoever holds it later, so snug serves them from its own poll
//! loop while its own connections to the host side leave from its own namespace.

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use anyhow::{Context, Result};

use crate::error::{failure, INTERNAL, OS_ERROR};
use crate::pidfd::Pinned;

/// What one socket is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want {
    /// `AF_INET` or `AF_INET6`.
    pub family: i32,
    /// `SOCK_STREAM` (listening) or `SOCK_DGRAM`.
    pub kind: i32,
    /// The port on the wildcard address; a raw socket's (`SOCK_RAW`) protocol.
    pub port: u16,
}

/// A socket made in the sandbox's namespace, with what it is for.
#[derive(Debug)]
pub struct Made {
    /// What it is for.
    pub want: Want,
    /// The socket: listening (TCP) or bound (UDP), non-blocking, close-on-exec.
    pub fd: OwnedFd,
}

/// The raw sockets that see attempts on ports nobody serves ([`super::unserved`]), then the
/// sockets for DNS (UDP and TCP at 53, both families) and a TCP listener per port of `ports`
/// in both families. A raw socket's `port` is its protocol.
pub fn wanted(ports: &[u16]) -> Vec<Want> {
    let mut out: Vec<Want> = super::unserved::WATCHED
        .iter()
        .map(|&(family, proto)| Want { family, kind: libc::SOCK_RAW, port: proto as u16 })
        .collect();
    for family in [libc::AF_INET, libc::AF_INET6] {
        out.push(Want { family, kind: libc::SOCK_DGRAM, port: 53 });
        out.push(Want { family, kind: libc::SOCK_STREAM, port: 53 });
        for &port in ports.iter().filter(|&&p| p != 53) {
            out.push(Want { family, kind: libc::SOCK_STREAM, port });
        }
    }
    out
}

/// A netlink `RTM_NEWROUTE` for `local <any>/0 dev lo table local` (`rtnetlink(7)`).
fn route_message(family: u8, seq: u32) -> [u8; 36] {
    let mut m = [0u8; 36];
    m[0..4].copy_from_slice(&36u32.to_ne_bytes()); // nlmsg_len
    m[4..6].copy_from_slice(&libc::RTM_NEWROUTE.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK | libc::NLM_F_CREATE | libc::NLM_F_REPLACE) as u16;
    m[6..8].copy_from_slice(&flags.to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    // struct rtmsg: family, dst_len 0, src_len, tos, table, protocol, scope, type.
    m[16] = family;
    m[20] = libc::RT_TABLE_LOCAL;
    m[21] = libc::RTPROT_BOOT;
    m[22] = libc::RT_SCOPE_HOST;
    m[23] = libc::RTN_LOCAL;
    // RTA_OIF = 1 (lo is interface 1 in every network namespace).
    m[28..30].copy_from_slice(&8u16.to_ne_bytes());
    m[30..32].copy_from_slice(&libc::RTA_OIF.to_ne_bytes());
    m[32..36].copy_from_slice(&1u32.to_ne_bytes());
    m
}

/// Step numbers the child reports with an errno.
const STEP_USERNS: u32 = 1;
pub(super) const STEP_NETNS: u32 = 2;
pub(super) const STEP_ROUTE: u32 = 3;
pub(super) const STEP_SOCKET: u32 = 4;
/// A packet's first word when it carries an error rather than a socket.
const ERROR: u32 = u32::MAX;

/// Route and make the sockets `wants` names in the network namespace of `init`, and return
/// them. IPv6 is best effort: where the namespace has none, only IPv4 sockets come back;
/// so are the raw sockets that see refusals on ports nobody serves.
///
/// # Errors
/// 71 when the namespace cannot be joined, routed or given its IPv4 sockets (the step and
/// errno are named); 70 when the sandbox ended first.
pub fn make(init: &Pinned, wants: &[Want]) -> Result<Vec<Made>> {
    use crate::sys::process::{clone3, Cloned};
    let pid = init.host_pid;
    let net = std::fs::File::open(format!("/proc/{pid}/ns/net")).context("opening the sandbox's network namespace")?;
    let owner = crate::sys::fd::ns_owner(&net).context("ioctl(NS_GET_USERNS) on the sandbox's network namespace")?;
    if init.exited() {
        return Err(failure(INTERNAL, "the sandbox ended before its network was made"));
    }
    // Joining one's own user namespace is EINVAL: only another one is joined.
    let join_user = !same_ns(&owner, "/proc/self/ns/user");
    let routes = [route_message(libc::AF_INET as u8, 1), route_message(libc::AF_INET6 as u8, 2)];
    if !join_user || rustix::process::geteuid().is_root() {
        if let Some(made) = super::in_place::make(&net, &routes, wants)? {
            return Ok(made);
        }
    }
    let (ours, theirs) = crate::sys::packet::pair().context("socketpair")?;
    let (owner_fd, net_fd, sock) = (owner.as_raw_fd(), net.as_raw_fd(), theirs.as_raw_fd());
    // SAFETY: the child makes only raw system calls (setns, socket, setsockopt, bind, listen,
    // sendto, recv, sendmsg, _exit) on integers and on memory built before the clone, which
    // its own copy of this process's memory holds, and never returns.
    let cloned = unsafe { clone3(0) };
    match cloned {
        // SAFETY: the child body of the clone above, under the same contract.
        Ok(Cloned::Child) => unsafe { child(sock, (join_user, owner_fd), net_fd, &routes, wants) },
        Ok(Cloned::Parent { pidfd, pid }) => {
            drop(theirs);
            let made = collect(&ours, wants);
            let _ = crate::sys::process::wait_ended(pid);
            drop((pidfd, net, owner));
            made
        }
        Err(e) => Err(failure(OS_ERROR, format!("cannot start the network's helper: {}", crate::error::io_text(&e)))),
    }
}

/// Read what the child sent until it closed its end: packets of up to [`BATCH`] indices
/// into `wants`, one descriptor each, or one error.
fn collect(ours: &OwnedFd, wants: &[Want]) -> Result<Vec<Made>> {
    use crate::sys::packet::readable;
    use std::mem::MaybeUninit;

    use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut made = Vec::new();
    loop {
        if !readable(ours.as_fd(), 5000) {
            return Err(failure(INTERNAL, "the network's helper did not finish within 5 s"));
        }
        let mut buf = [0u8; 4 * BATCH];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(BATCH))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let flags = RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT;
        let got = match recvmsg(ours, &mut [std::io::IoSliceMut::new(&mut buf)], &mut control, flags) {
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            Err(_) => break,
            Ok(m) if m.bytes == 0 => break,
            Ok(m) => m.bytes,
        };
        let mut fds: Vec<OwnedFd> = Vec::new();
        for m in control.drain() {
            if let RecvAncillaryMessage::ScmRights(it) = m {
                fds.extend(it);
            }
        }
        let words: Vec<u32> =
            buf[..got].chunks_exact(4).map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]])).collect();
        if let [ERROR, step, errno] = words[..] {
            return Err(step_failure(step, errno as i32));
        }
        if words.len() != fds.len() || words.iter().any(|&i| i as usize >= wants.len()) {
            return Err(failure(INTERNAL, "the network's helper said something unexpected"));
        }
        made.extend(words.iter().zip(fds).map(|(&i, fd)| Made { want: wants[i as usize], fd }));
    }
    if made.iter().all(|m| m.want.family != libc::AF_INET) && wants.iter().any(|w| w.family == libc::AF_INET) {
        return Err(failure(INTERNAL, "the network's helper ended without handing its sockets over"));
    }
    Ok(made)
}

pub(super) fn step_failure(step: u32, errno: i32) -> anyhow::Error {
    let what = match step {
        STEP_USERNS => "join the sandbox's user namespace",
        STEP_NETNS => "join the sandbox's network namespace",
        STEP_ROUTE => "route every address to the sandbox's loopback",
        STEP_SOCKET => "make a listening socket in the sandbox",
        _ => "set the sandbox's network up",
    };
    failure(OS_ERROR, format!("cannot {what}: {}", crate::error::strerror(errno)))
}

/// Whether descriptor `fd` and the namespace file at `path` are the same namespace.
fn same_ns(fd: &OwnedFd, path: &str) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let (Ok(theirs), Ok(ours)) = (std::fs::metadata(path), rustix::fs::fstat(fd)) else { return false };
    ours.st_dev == theirs.dev() && ours.st_ino == theirs.ino()
}

/// The child: join, route, make each socket and send it, exit.
///
/// # Safety
/// Only in the child of a fork; async-signal-safe calls only.
unsafe fn child(
    sock: RawFd,
    (join_user, owner): (bool, RawFd),
    net: RawFd,
    routes: &[[u8; 36]; 2],
    wants: &[Want],
) -> ! {
    // SAFETY: raw system calls on integers and this process's own memory (see `make`).
    unsafe {
        let fail = |step: u32, errno: i32| -> ! {
            let words = [ERROR, step, errno as u32];
            libc::send(sock, words.as_ptr().cast(), 12, libc::MSG_NOSIGNAL);
            crate::sys::process::exit_now(1)
        };
        if join_user && libc::setns(owner, libc::CLONE_NEWUSER) != 0 {
            fail(STEP_USERNS, nestproc::errno());
        }
        if libc::setns(net, libc::CLONE_NEWNET) != 0 {
            fail(STEP_NETNS, nestproc::errno());
        }
        let nl = libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE);
        if nl < 0 {
            fail(STEP_ROUTE, nestproc::errno());
        }
        let mut v6 = true;
        for (i, m) in routes.iter().enumerate() {
            let err = netlink_ask(nl, m);
            if err != 0 && i == 0 {
                fail(STEP_ROUTE, err);
            }
            v6 &= err == 0 || i == 0;
        }
        // Sent in batches: one wake-up of snug per BATCH sockets, not one each.
        let mut batch = Batch { index: [0; BATCH], fd: [-1; BATCH], len: 0 };
        for (i, w) in wants.iter().enumerate() {
            if w.family == libc::AF_INET6 && !v6 {
                continue;
            }
            let raw = w.kind == libc::SOCK_RAW;
            let made = if raw { super::unserved::socket(w.family, i32::from(w.port)) } else { socket_for(w) };
            match made {
                Ok(fd) => {
                    batch.index[batch.len] = i as u32;
                    batch.fd[batch.len] = fd;
                    batch.len += 1;
                    if batch.len == BATCH {
                        batch.send(sock);
                    }
                }
                // IPv6 and the raw sockets are best effort: the run goes on without them.
                Err(_) if raw || w.family == libc::AF_INET6 => {}
                Err(e) => fail(STEP_SOCKET, e),
            }
        }
        batch.send(sock);
        crate::sys::process::exit_now(0)
    }
}

/// Send one netlink request and read its acknowledgement: 0 or the errno.
///
/// # Safety
/// Async-signal-safe; `nl` is a netlink socket.
pub(super) unsafe fn netlink_ask(nl: RawFd, m: &[u8; 36]) -> i32 {
    // SAFETY: the buffers live for the calls.
    unsafe {
        let mut to: libc::sockaddr_nl = std::mem::zeroed();
        to.nl_family = libc::AF_NETLINK as u16;
        let sent = libc::sendto(
            nl,
            m.as_ptr().cast(),
            m.len(),
            0,
            (&to as *const libc::sockaddr_nl).cast(),
            size_of_val(&to) as u32,
        );
        if sent < 0 {
            return nestproc::errno();
        }
        let mut buf = [0u8; 256];
        let n = libc::recv(nl, buf.as_mut_ptr().cast(), buf.len(), 0);
        if n < 20 {
            return if n < 0 { nestproc::errno() } else { libc::EIO };
        }
        // struct nlmsgerr after the 16-byte header: a negative errno, 0 for success.
        let ty = u16::from_ne_bytes([buf[4], buf[5]]);
        if ty != libc::NLMSG_ERROR as u16 {
            return libc::EIO;
        }
        -i32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]])
    }
}

/// One socket on the wildcard address of `w`'s family: bound, listening for TCP, with the
/// destination address of each datagram reported for UDP (`IP_PKTINFO`, `IPV6_RECVPKTINFO`,
/// and `IPV6_FREEBIND` to answer from it).
///
/// # Safety
/// Async-signal-safe.
pub(super) unsafe fn socket_for(w: &Want) -> Result<RawFd, i32> {
    // SAFETY: the option values and addresses live for the calls.
    unsafe {
        let fd = libc::socket(w.family, w.kind | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(nestproc::errno());
        }
        let on: libc::c_int = 1;
        let opt = |level, name| libc::setsockopt(fd, level, name, (&on as *const libc::c_int).cast(), 4) == 0;
        let mut ok = opt(libc::SOL_SOCKET, libc::SO_REUSEADDR);
        let bound = if w.family == libc::AF_INET {
            ok &= w.kind != libc::SOCK_DGRAM || opt(libc::IPPROTO_IP, libc::IP_PKTINFO);
            let mut a: libc::sockaddr_in = std::mem::zeroed();
            a.sin_family = libc::AF_INET as u16;
            a.sin_port = w.port.to_be();
            libc::bind(fd, (&a as *const libc::sockaddr_in).cast(), size_of_val(&a) as u32)
        } else {
            ok &= opt(libc::IPPROTO_IPV6, libc::IPV6_V6ONLY);
            ok &= w.kind != libc::SOCK_DGRAM || opt(libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO);
            // A reply's source given by `IPV6_PKTINFO` must be an assigned address unless the
            // socket may bind any (`ip6_datagram_send_ctl` in net/ipv6/datagram.c): the
            // addresses `local ::/0` makes local are not assigned, so without it a question to
            // 2001:db8::53 would get no answer where one to 192.0.2.53 does.
            ok &= w.kind != libc::SOCK_DGRAM || opt(libc::IPPROTO_IPV6, libc::IPV6_FREEBIND);
            let mut a: libc::sockaddr_in6 = std::mem::zeroed();
            a.sin6_family = libc::AF_INET6 as u16;
            a.sin6_port = w.port.to_be();
            libc::bind(fd, (&a as *const libc::sockaddr_in6).cast(), size_of_val(&a) as u32)
        };
        if !ok || bound != 0 || (w.kind == libc::SOCK_STREAM && libc::listen(fd, 4096) != 0) {
            let e = nestproc::errno();
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

/// Sockets handed over in one packet at most (below the kernel's `SCM_MAX_FD`, 253).
const BATCH: usize = 32;

/// Sockets made and not yet sent: their indices into the wants and their descriptors.
struct Batch {
    index: [u32; BATCH],
    fd: [RawFd; BATCH],
    len: usize,
}

impl Batch {
    /// Send the indices with their descriptors in one packet, then close this process's
    /// copies.
    ///
    /// # Safety
    /// Async-signal-safe.
    unsafe fn send(&mut self, sock: RawFd) {
        if self.len == 0 {
            return;
        }
        let bytes = 4 * self.len;
        // SAFETY: the message and its control buffer live on this stack for the call.
        unsafe {
            let mut iov = libc::iovec { iov_base: self.index.as_mut_ptr().cast(), iov_len: bytes };
            let mut space = [0u64; 24]; // CMSG_SPACE(4 × BATCH) = 144 bytes
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = space.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(bytes as u32) as _;
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes as u32) as _;
            let data = libc::CMSG_DATA(c).cast::<RawFd>();
            for k in 0..self.len {
                std::ptr::write_unaligned(data.add(k), self.fd[k]);
            }
            libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL);
            for k in 0..self.len {
                libc::close(self.fd[k]);
            }
        }
        self.len = 0;
    }
}
