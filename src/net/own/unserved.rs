//! Seeing attempts on ports snug does not serve (SPEC N7). The kernel refuses them itself
//! (every address is local in the sandbox's namespace, and no socket listens at that port):
//! a TCP SYN gets a reset, a UDP datagram an ICMP "port unreachable". Both are delivered
//! locally on the namespace's `lo`, so raw sockets (`raw(7)`) made in that namespace by the
//! setup child beside the listeners receive a copy; a classic BPF filter on each
//! (`SO_ATTACH_FILTER`, `socket(7)`) keeps exactly those answers, and
//! [`snug_core::net_allow::unserved`] names the attempt each answers.
//!
//! Why raw sockets: a listening socket covers one port, so seeing every port would take
//! 65,535 of them, or a redirection (nftables `tproxy`) that snug does not use. A packet
//! socket on `lo` sees the same answers with one descriptor, but closing one waits for an
//! RCU grace period (`packet_release` calls `synchronize_net`): 4–11 ms measured at the end
//! of every run on a loaded 2-core machine, against B9's 1 ms. Four raw sockets (TCP and
//! ICMP, IPv4 and IPv6) cost four `socket(2)` and four `setsockopt(2)` at start and close at
//! once; the kernel still refuses at `connect(2)` (`ECONNREFUSED`, the fastest answer a
//! client can get), and each filter drops every other packet in the kernel, so the copy
//! path pays a clone and a few BPF instructions per TCP segment on `lo`.

use std::net::IpAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use libc::sock_filter;
use snug_core::net_allow::unserved::{attempt, attempt_v6, Attempt};

/// Bytes kept of each packet: an ICMP error quoting an IP and a UDP header is at most 96.
const SNAP: u32 = 256;

/// One raw socket: its family and protocol.
pub const WATCHED: [(i32, i32); 4] = [
    (libc::AF_INET, libc::IPPROTO_TCP),
    (libc::AF_INET, libc::IPPROTO_ICMP),
    (libc::AF_INET6, libc::IPPROTO_TCP),
    (libc::AF_INET6, libc::IPPROTO_ICMPV6),
];

const fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter { code, jt: 0, jf: 0, k }
}

/// `A == k` jumps to instruction `t`, else to `f` (absolute indices; `pc` is this one's).
const fn jeq(pc: u8, k: u32, t: u8, f: u8) -> sock_filter {
    let code = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    sock_filter { code, jt: t - pc - 1, jf: f - pc - 1, k }
}

const LDB: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
const LDH: u16 = (libc::BPF_LD | libc::BPF_H | libc::BPF_ABS) as u16;
const LDW: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const LDB_X: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_IND) as u16;
const LDH_X: u16 = (libc::BPF_LD | libc::BPF_H | libc::BPF_IND) as u16;
const LDW_X: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_IND) as u16;
/// X = 4 × (the byte's low nibble): the IPv4 header's length.
const LDX_IHL: u16 = (libc::BPF_LDX | libc::BPF_B | libc::BPF_MSH) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// IPv4 TCP (a raw IPv4 socket's data starts at the IP header): keep a RST|ACK with
/// sequence number 0 (the kernel's answer to a SYN on a closed port, `tcp_v4_send_reset`).
const FILTER_V4_TCP: [sock_filter; 7] = [
    stmt(LDX_IHL, 0),
    stmt(LDB_X, 13),
    jeq(2, 0x14, 3, 5),
    stmt(LDW_X, 4),
    jeq(4, 0, 6, 5),
    stmt(RET, 0),
    stmt(RET, SNAP),
];

/// ICMP: keep port unreachable (type 3, code 3).
const FILTER_V4_ICMP: [sock_filter; 5] =
    [stmt(LDX_IHL, 0), stmt(LDH_X, 0), jeq(2, 0x0303, 4, 3), stmt(RET, 0), stmt(RET, SNAP)];

/// IPv6 TCP (the data starts at the TCP header): keep RST|ACK with sequence number 0.
const FILTER_V6_TCP: [sock_filter; 6] =
    [stmt(LDB, 13), jeq(1, 0x14, 2, 4), stmt(LDW, 4), jeq(3, 0, 5, 4), stmt(RET, 0), stmt(RET, SNAP)];

/// ICMPv6 (the data starts at the ICMPv6 header): keep port unreachable (type 1, code 4).
const FILTER_V6_ICMP: [sock_filter; 4] = [stmt(LDH, 0), jeq(1, 0x0104, 3, 2), stmt(RET, 0), stmt(RET, SNAP)];

/// The filter for the raw socket of `family` and `proto`.
fn filter(family: i32, proto: i32) -> &'static [sock_filter] {
    match (family, proto) {
        (libc::AF_INET, libc::IPPROTO_TCP) => &FILTER_V4_TCP,
        (libc::AF_INET, _) => &FILTER_V4_ICMP,
        (_, libc::IPPROTO_TCP) => &FILTER_V6_TCP,
        _ => &FILTER_V6_ICMP,
    }
}

/// A raw socket of `family` and `proto` in the current network namespace, filtered as
/// [`filter`] says, non-blocking and close-on-exec. The filter is on before the first packet
/// can be queued: the socket is made, filtered and only then drained once of anything that
/// arrived in between.
///
/// # Errors
/// The errno of the step that failed (`EPERM` without `CAP_NET_RAW` over the namespace).
///
/// # Safety
/// Async-signal-safe: called in the setup child between fork and exit.
pub unsafe fn socket(family: i32, proto: i32) -> Result<RawFd, i32> {
    // SAFETY: the filter and the buffer live for the calls.
    unsafe {
        let fd = libc::socket(family, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, proto);
        if fd < 0 {
            return Err(nestproc::errno());
        }
        let f = filter(family, proto);
        let prog = libc::sock_fprog { len: f.len() as u16, filter: f.as_ptr().cast_mut() };
        let size = size_of_val(&prog) as u32;
        if libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&prog as *const libc::sock_fprog).cast(),
            size,
        ) != 0
        {
            let e = nestproc::errno();
            libc::close(fd);
            return Err(e);
        }
        let mut buf = [0u8; 64];
        while libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) >= 0 {}
        Ok(fd)
    }
}

/// The attempts behind what waits on the raw socket `fd` of `family`: at most `most` packets
/// read; how many were read comes back too.
pub fn read(fd: &OwnedFd, family: i32, proto: i32, most: usize) -> (Vec<Attempt>, usize) {
    use nix::sys::socket::{recvfrom, SockaddrStorage};
    let mut out = Vec::new();
    let mut buf = [0u8; SNAP as usize];
    let mut n = 0;
    while n < most {
        let Ok((len, from)) = recvfrom::<SockaddrStorage>(fd.as_raw_fd(), &mut buf) else { break };
        n += 1;
        let packet = &buf[..len.min(buf.len())];
        let got = if family == libc::AF_INET {
            attempt(packet)
        } else {
            let from = from.as_ref().and_then(|a| a.as_sockaddr_in6()).map(|a| IpAddr::V6(a.ip()));
            from.and_then(|f| attempt_v6(proto as u8, f, packet))
        };
        out.extend(got);
    }
    (out, n)
}
