//! Seeing attempts on ports snug does not serve (SPEC N7). The kernel refuses them itself
//! (every address is local in the sandbox's namespace, and no socket listens at that port):
//! a TCP SYN gets a reset, a UDP datagram an ICMP "port unreachable". A packet socket on the
//! namespace's `lo` (`packet(7)`), made in that namespace by the setup child beside the
//! listeners, receives exactly those answers through a classic BPF filter
//! (`SO_ATTACH_FILTER`, `socket(7)`); [`snug_core::net_allow::unserved`] names the attempt
//! each answers.
//!
//! Why a packet socket rather than listeners on every port: a listening socket covers one
//! port, so seeing every port would take 65,535 of them (descriptors, and a bind each at
//! start), or a redirection (nftables `tproxy`) that snug does not use. The packet socket
//! is one descriptor and four system calls at start, the kernel still refuses at once
//! (`ECONNREFUSED` at `connect(2)`, the fastest answer a client can get), and the filter
//! drops every other packet in the kernel, so the copy path pays a few BPF instructions per
//! packet on `lo` and nothing else. Outgoing copies are not delivered
//! (`PACKET_IGNORE_OUTGOING`), so each answer is seen once.

use std::os::fd::{AsFd, OwnedFd, RawFd};

use libc::sock_filter;

/// Bytes kept of each packet: an ICMPv6 error quoting an IPv6 and a UDP header is 96.
const SNAP: u32 = 256;

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
const RSH: u16 = (libc::BPF_ALU | libc::BPF_RSH | libc::BPF_K) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const DROP: u8 = 24;
const KEEP: u8 = 25;

/// Keep a TCP RST|ACK with sequence number 0 (the kernel's answer to a SYN on a closed
/// port) and an ICMP port unreachable, over IPv4 (no extension headers needed: IHL read)
/// and IPv6 (TCP or ICMPv6 as the first header, as the kernel sends them); drop the rest.
/// Offsets are from the IP header: a `SOCK_DGRAM` packet socket filters from there.
const FILTER: [sock_filter; 26] = [
    stmt(LDB, 0), // 0: version
    stmt(RSH, 4),
    jeq(2, 4, 3, 14),
    stmt(LDB, 9), // 3: IPv4 protocol
    jeq(4, 6, 6, 5),
    jeq(5, 1, 11, DROP),
    stmt(LDX_IHL, 0), // 6: TCP over IPv4
    stmt(LDB_X, 13),
    jeq(8, 0x14, 9, DROP),
    stmt(LDW_X, 4),
    jeq(10, 0, KEEP, DROP),
    stmt(LDX_IHL, 0), // 11: ICMP: type 3, code 3
    stmt(LDH_X, 0),
    jeq(13, 0x0303, KEEP, DROP),
    jeq(14, 6, 15, DROP), // 14: IPv6
    stmt(LDB, 6),
    jeq(16, 6, 17, 21),
    stmt(LDB, 53), // 17: TCP over IPv6
    jeq(18, 0x14, 19, DROP),
    stmt(LDW, 44),
    jeq(20, 0, KEEP, DROP),
    jeq(21, 58, 22, DROP), // 21: ICMPv6: type 1, code 4
    stmt(LDH, 40),
    jeq(23, 0x0104, KEEP, DROP),
    stmt(RET, 0), // 24
    stmt(RET, SNAP),
];

/// The packet socket on `lo` of the current network namespace, filtered as [`FILTER`] says,
/// non-blocking and close-on-exec. It receives nothing before the filter is on: made with
/// protocol 0, it is bound to all protocols on `lo` (interface 1 in every namespace) last.
///
/// # Errors
/// The errno of the step that failed (`EPERM` without `CAP_NET_RAW` over the namespace).
///
/// # Safety
/// Async-signal-safe: called in the setup child between fork and exit.
pub unsafe fn socket() -> Result<RawFd, i32> {
    // SAFETY: the filter, option values and address live for the calls.
    unsafe {
        let fd = libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(nestproc::errno());
        }
        let prog = libc::sock_fprog { len: FILTER.len() as u16, filter: FILTER.as_ptr().cast_mut() };
        let on: libc::c_int = 1;
        let mut ok = libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&prog as *const libc::sock_fprog).cast(),
            size_of_val(&prog) as u32,
        ) == 0;
        ok = ok
            && libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                libc::PACKET_IGNORE_OUTGOING,
                (&on as *const libc::c_int).cast(),
                4,
            ) == 0;
        let mut at: libc::sockaddr_ll = std::mem::zeroed();
        at.sll_family = libc::AF_PACKET as u16;
        at.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        at.sll_ifindex = 1;
        ok = ok && libc::bind(fd, (&at as *const libc::sockaddr_ll).cast(), size_of_val(&at) as u32) == 0;
        if !ok {
            let e = nestproc::errno();
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

/// Every packet waiting on `fd`, at most `most` of them, each as the bytes kept.
pub fn read(fd: &OwnedFd, most: usize) -> Vec<Vec<u8>> {
    use rustix::net::{recv, RecvFlags};
    let mut out = Vec::new();
    let mut buf = [0u8; SNAP as usize];
    while out.len() < most {
        match recv(fd.as_fd(), &mut buf, RecvFlags::DONTWAIT) {
            Ok((n, _)) => out.push(buf[..n.min(buf.len())].to_vec()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => break,
        }
    }
    out
}
