//! Attempts the kernel refused in the sandbox's network namespace because nothing listens
//! there (SPEC N7: "refused connections to ports snug does not serve included"). Every
//! address in that namespace is local, so a TCP connection to a port without a listener is
//! answered by the kernel with a reset, and a UDP datagram to a port without a socket with an
//! ICMP "port unreachable"; both are delivered on the namespace's `lo`, where snug's raw
//! sockets see them. This module reads such a packet and names the attempt it answers; the
//! binary turns that into a [`Decision`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::decision::{Decision, Reason, Verdict};
use super::pattern::Allowed;

/// TCP flags of the kernel's reset in answer to a SYN on a closed port (`tcp_v4_send_reset`,
/// `tcp_v6_send_reset`: RST|ACK with sequence number 0, since the SYN carried no ACK).
pub const RST_ACK: u8 = 0x14;
/// The port snug's resolver answers on: a datagram from it that found no socket is the
/// payload's own lost interest in an answer, not an attempt.
const DNS: u16 = 53;

/// What was attempted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// A TCP connection.
    Tcp,
    /// A UDP datagram.
    Udp,
}

/// One attempt the kernel refused: where it went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// TCP or UDP.
    pub proto: Proto,
    /// The address and port the payload tried.
    pub dest: SocketAddr,
}

fn be16(p: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(p.get(at..at + 2)?.try_into().ok()?))
}

fn be32(p: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(p.get(at..at + 4)?.try_into().ok()?))
}

fn v4(p: &[u8], at: usize) -> Option<IpAddr> {
    let b: [u8; 4] = p.get(at..at + 4)?.try_into().ok()?;
    Some(IpAddr::V4(Ipv4Addr::from(b)))
}

fn v6(p: &[u8], at: usize) -> Option<IpAddr> {
    let b: [u8; 16] = p.get(at..at + 16)?.try_into().ok()?;
    Some(IpAddr::V6(Ipv6Addr::from(b)))
}

/// The attempt `packet` (an IPv4 or IPv6 packet from its header on, as a raw IPv4 socket
/// gives it; `raw(7)`) refuses: a TCP reset with RST|ACK and sequence
/// number 0 names the address and port it comes from; an ICMP port unreachable (type 3 code 3,
/// ICMPv6 type 1 code 4; RFC 792, RFC 4443) names the destination of the UDP datagram it
/// quotes. `None` for any other packet, and for a datagram that snug's resolver sent.
pub fn attempt(packet: &[u8]) -> Option<Attempt> {
    match packet.first()? >> 4 {
        4 => {
            let ihl = usize::from(packet[0] & 0x0f) * 4;
            match *packet.get(9)? {
                6 => tcp_reset(packet, ihl, v4(packet, 12)?),
                1 if be16(packet, ihl)? == 0x0303 => {
                    let inner = packet.get(ihl + 8..)?;
                    let inner_ihl = usize::from(*inner.first()? & 0x0f) * 4;
                    if inner.first()? >> 4 != 4 || *inner.get(9)? != 17 {
                        return None;
                    }
                    udp(inner, inner_ihl, v4(inner, 16)?)
                }
                _ => None,
            }
        }
        6 => attempt_v6(*packet.get(6)?, v6(packet, 8)?, packet.get(40..)?),
        _ => None,
    }
}

/// The same for what follows an IPv6 header: `next` is its next-header value, `from` its
/// source address, `transport` the rest (a raw IPv6 socket gives no header, the source
/// address beside the data; `raw(7)`, `ipv6(7)`). The kernel sends its resets and ICMPv6
/// errors with no extension header.
pub fn attempt_v6(next: u8, from: IpAddr, transport: &[u8]) -> Option<Attempt> {
    match next {
        6 => tcp_reset(transport, 0, from),
        58 if be16(transport, 0)? == 0x0104 => {
            let inner = transport.get(8..)?;
            if inner.first()? >> 4 != 6 || *inner.get(6)? != 17 {
                return None;
            }
            udp(inner, 40, v6(inner, 24)?)
        }
        _ => None,
    }
}

/// The reset at `at` in `packet`, from `from`: the kernel's answer to a SYN on a closed port.
fn tcp_reset(packet: &[u8], at: usize, from: IpAddr) -> Option<Attempt> {
    if *packet.get(at + 13)? != RST_ACK || be32(packet, at + 4)? != 0 {
        return None;
    }
    Some(Attempt { proto: Proto::Tcp, dest: SocketAddr::new(from, be16(packet, at)?) })
}

/// The quoted UDP header at `at` in `inner`, whose destination is `to`.
fn udp(inner: &[u8], at: usize, to: IpAddr) -> Option<Attempt> {
    if be16(inner, at)? == DNS {
        return None;
    }
    Some(Attempt { proto: Proto::Udp, dest: SocketAddr::new(to, be16(inner, at + 2)?) })
}

/// The decision for attempt `a`: `name` is the allowed name whose pool address it went to,
/// if any; `served` whether snug holds a TCP socket for its port (then snug saw a TCP attempt
/// itself, and a reset from that port is its own refusal, already counted; a datagram to that
/// port, a QUIC client's to 443, reached no socket of snug's and is counted here). `None` for
/// an attempt on loopback (the payload's own business) or over TCP on a served port.
pub fn decision(a: &Attempt, name: Option<&str>, allowed: &Allowed, served: bool) -> Option<Decision> {
    let ip = a.dest.ip();
    if ip.is_loopback() || (served && a.proto == Proto::Tcp) {
        return None;
    }
    let subject = match name {
        Some(n) => format!("{n}:{}", a.dest.port()),
        None => a.dest.to_string(),
    };
    let (kind, why) = match a.proto {
        Proto::Udp => ("udp", Reason::Udp),
        Proto::Tcp if name.is_some() || allowed.addr_named(ip) => ("tcp", Reason::PortNotAllowed),
        Proto::Tcp => ("tcp", Reason::AddressNotAllowed),
    };
    Some(Decision { kind, subject, upstream: None, verdict: Verdict::Refused(why), sent: 0, received: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 header (no options) with protocol `proto` from `src` to `dst`, then `rest`.
    fn ip4(proto: u8, src: [u8; 4], dst: [u8; 4], rest: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0];
        p.extend(src);
        p.extend(dst);
        p.extend(rest);
        p
    }

    fn ip6(next: u8, src: Ipv6Addr, dst: Ipv6Addr, rest: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0, 0, 0, next, 64];
        p.extend(src.octets());
        p.extend(dst.octets());
        p.extend(rest);
        p
    }

    /// A TCP header from `sport` to `dport` with sequence number `seq` and `flags`.
    fn tcp(sport: u16, dport: u16, seq: u32, flags: u8) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend(sport.to_be_bytes());
        t.extend(dport.to_be_bytes());
        t.extend(seq.to_be_bytes());
        t.extend(1u32.to_be_bytes());
        t.extend([0x50, flags, 0, 0, 0, 0, 0, 0]);
        t
    }

    fn udp_hdr(sport: u16, dport: u16) -> Vec<u8> {
        [sport.to_be_bytes(), dport.to_be_bytes(), 8u16.to_be_bytes(), [0, 0]].concat()
    }

    #[test]
    fn n7_a_kernel_reset_names_the_port_tried() {
        let rst = ip4(6, [203, 0, 113, 7], [203, 0, 113, 7], &tcp(5432, 40000, 0, RST_ACK));
        let a = attempt(&rst).unwrap();
        assert_eq!(a, Attempt { proto: Proto::Tcp, dest: "203.0.113.7:5432".parse().unwrap() });
        // snug's own reset of an accepted connection carries a sequence number; a SYN is no refusal.
        assert_eq!(attempt(&ip4(6, [203, 0, 113, 7], [1, 1, 1, 1], &tcp(443, 40000, 77, RST_ACK))), None);
        assert_eq!(attempt(&ip4(6, [203, 0, 113, 7], [1, 1, 1, 1], &tcp(443, 40000, 0, 0x02))), None);
        let six: Ipv6Addr = "2001:db8::7".parse().unwrap();
        let a = attempt(&ip6(6, six, six, &tcp(22, 40000, 0, RST_ACK))).unwrap();
        assert_eq!(a.dest, "[2001:db8::7]:22".parse().unwrap());
        assert_eq!(attempt(&rst[..30]), None, "truncated");
        assert_eq!(attempt(&[]), None);
        assert_eq!(attempt(&[0x45]), None);
    }

    #[test]
    fn n7_a_port_unreachable_names_the_datagram_sent() {
        let quoted = ip4(17, [10, 0, 0, 1], [203, 0, 113, 1], &udp_hdr(40000, 9999));
        let icmp = ip4(1, [203, 0, 113, 1], [10, 0, 0, 1], &[&[3, 3, 0, 0, 0, 0, 0, 0][..], &quoted].concat());
        let a = attempt(&icmp).unwrap();
        assert_eq!(a, Attempt { proto: Proto::Udp, dest: "203.0.113.1:9999".parse().unwrap() });
        // Host unreachable (code 1) is not a port nobody serves.
        let other = ip4(1, [203, 0, 113, 1], [10, 0, 0, 1], &[&[3, 1, 0, 0, 0, 0, 0, 0][..], &quoted].concat());
        assert_eq!(attempt(&other), None);
        // A reply of snug's resolver that found the asker gone.
        let reply = ip4(17, [192, 0, 2, 53], [192, 0, 2, 53], &udp_hdr(53, 40000));
        let lost = ip4(1, [192, 0, 2, 53], [192, 0, 2, 53], &[&[3, 3, 0, 0, 0, 0, 0, 0][..], &reply].concat());
        assert_eq!(attempt(&lost), None);
        let (a6, b6): (Ipv6Addr, Ipv6Addr) = ("2001:db8::1".parse().unwrap(), "2001:db8::9".parse().unwrap());
        let quoted6 = ip6(17, a6, b6, &udp_hdr(40000, 443));
        let icmp6 = ip6(58, b6, a6, &[&[1, 4, 0, 0, 0, 0, 0, 0][..], &quoted6].concat());
        assert_eq!(attempt(&icmp6).unwrap().dest, "[2001:db8::9]:443".parse().unwrap());
        // Only a quoted UDP datagram is an attempt, and only a port unreachable answers one.
        let quoted_tcp = ip4(6, [10, 0, 0, 1], [203, 0, 113, 1], &udp_hdr(40000, 9999));
        let icmp = ip4(1, [203, 0, 113, 1], [10, 0, 0, 1], &[&[3, 3, 0, 0, 0, 0, 0, 0][..], &quoted_tcp].concat());
        assert_eq!(attempt(&icmp), None, "a quoted TCP segment");
        let unreachable6 = ip6(58, b6, a6, &[&[1, 3, 0, 0, 0, 0, 0, 0][..], &quoted6].concat());
        assert_eq!(attempt(&unreachable6), None, "address unreachable (code 3)");
        let quoted6_tcp = ip6(6, a6, b6, &udp_hdr(40000, 443));
        let icmp6 = ip6(58, b6, a6, &[&[1, 4, 0, 0, 0, 0, 0, 0][..], &quoted6_tcp].concat());
        assert_eq!(attempt(&icmp6), None, "a quoted IPv6 TCP segment");
    }

    #[test]
    fn n7_unserved_attempts_are_decided_once() {
        let allowed = Allowed::parse(&["pkgs.example", "203.0.113.0/24:5432"]).unwrap();
        let tcp = |d: &str| Attempt { proto: Proto::Tcp, dest: d.parse().unwrap() };
        let d = decision(&tcp("198.18.0.1:22"), Some("pkgs.example"), &allowed, false).unwrap();
        assert_eq!((d.subject.as_str(), d.verdict), ("pkgs.example:22", Verdict::Refused(Reason::PortNotAllowed)));
        let d = decision(&tcp("203.0.113.7:22"), None, &allowed, false).unwrap();
        assert_eq!(d.verdict, Verdict::Refused(Reason::PortNotAllowed));
        let d = decision(&tcp("198.51.100.7:8080"), None, &allowed, false).unwrap();
        assert_eq!((d.subject.as_str(), d.verdict), ("198.51.100.7:8080", Verdict::Refused(Reason::AddressNotAllowed)));
        let udp = Attempt { proto: Proto::Udp, dest: "[2001:db8::9]:443".parse().unwrap() };
        let d = decision(&udp, None, &allowed, false).unwrap();
        assert_eq!(
            (d.kind, d.subject.as_str(), d.verdict),
            ("udp", "[2001:db8::9]:443", Verdict::Refused(Reason::Udp))
        );
        assert_eq!(decision(&tcp("127.0.0.1:8080"), None, &allowed, false), None, "loopback is the payload's");
        assert_eq!(decision(&tcp("[::1]:8080"), None, &allowed, false), None);
        assert_eq!(decision(&tcp("203.0.113.7:443"), None, &allowed, true), None, "served: counted where accepted");
        // A datagram to a port snug serves over TCP reached nothing of snug's: counted here.
        // Positive control: with `served` alone deciding, this was None and the refusal unseen.
        let quic = Attempt { proto: Proto::Udp, dest: "198.18.0.1:443".parse().unwrap() };
        let d = decision(&quic, Some("pkgs.example"), &allowed, true).unwrap();
        assert_eq!((d.subject.as_str(), d.verdict), ("pkgs.example:443", Verdict::Refused(Reason::Udp)));
    }
}
