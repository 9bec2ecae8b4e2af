//! Where a connection may go (SPEC N6): the addresses an allowed name resolved to on the host
//! side are checked before snug connects, so that a name cannot lead into the host's
//! loopback, its link-local or cloud metadata addresses, or the host itself, unless an
//! explicit address pattern names the address.

use std::net::{IpAddr, Ipv6Addr};

use super::decision::Reason;
use super::pattern::Allowed;

/// The cloud metadata service's IPv6 address (AWS); its IPv4 one is link-local.
pub const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254);

/// Why `addr` may not be reached through a name, or `None` when it may. `own` are the
/// host's own addresses. An address pattern naming `addr` allows it whatever it is.
pub fn refused(addr: IpAddr, own: &[IpAddr], allowed: &Allowed) -> Option<Reason> {
    let addr = match addr {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        a => a,
    };
    if allowed.addr_named(addr) {
        return None;
    }
    let why = match addr {
        IpAddr::V4(a) if a.octets()[..2] == [169, 254] && a.octets()[2..] == [169, 254] => Reason::Metadata,
        IpAddr::V6(a) if a == METADATA_V6 => Reason::Metadata,
        IpAddr::V4(a) if a.is_loopback() || a.is_unspecified() => Reason::Loopback,
        IpAddr::V6(a) if a.is_loopback() || a.is_unspecified() => Reason::Loopback,
        IpAddr::V4(a) if a.is_link_local() => Reason::LinkLocal,
        IpAddr::V6(a) if a.segments()[0] & 0xffc0 == 0xfe80 => Reason::LinkLocal,
        IpAddr::V4(a) if a.is_multicast() || a.is_broadcast() => Reason::AddressNotAllowed,
        IpAddr::V6(a) if a.is_multicast() => Reason::AddressNotAllowed,
        a if super::pool::in_pool(a) => Reason::AddressNotAllowed,
        a if own.contains(&a) => Reason::HostOwn,
        _ => return None,
    };
    Some(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn n6_loopback_link_local_metadata_and_own_are_refused() {
        let none = Allowed::default();
        let own = [ip("192.0.2.1"), ip("2001:db8::1")];
        assert_eq!(refused(ip("127.0.0.1"), &own, &none), Some(Reason::Loopback));
        assert_eq!(refused(ip("127.3.4.5"), &own, &none), Some(Reason::Loopback));
        assert_eq!(refused(ip("::1"), &own, &none), Some(Reason::Loopback));
        assert_eq!(refused(ip("::ffff:127.0.0.1"), &own, &none), Some(Reason::Loopback));
        assert_eq!(refused(ip("0.0.0.0"), &own, &none), Some(Reason::Loopback));
        assert_eq!(refused(ip("169.254.169.254"), &own, &none), Some(Reason::Metadata));
        assert_eq!(refused(ip("fd00:ec2::254"), &own, &none), Some(Reason::Metadata));
        assert_eq!(refused(ip("169.254.1.1"), &own, &none), Some(Reason::LinkLocal));
        assert_eq!(refused(ip("fe80::1"), &own, &none), Some(Reason::LinkLocal));
        assert_eq!(refused(ip("192.0.2.1"), &own, &none), Some(Reason::HostOwn));
        assert_eq!(refused(ip("2001:db8::1"), &own, &none), Some(Reason::HostOwn));
        assert_eq!(refused(ip("198.18.0.1"), &own, &none), Some(Reason::AddressNotAllowed));
        assert_eq!(refused(ip("203.0.113.5"), &own, &none), None);
        assert_eq!(refused(ip("2001:db8::5"), &own, &none), None);
    }

    #[test]
    fn n6_an_address_pattern_names_them_back_in() {
        let a = Allowed::parse(&["127.0.0.1:8080", "192.0.2.0/24"]).unwrap();
        let own = [ip("192.0.2.1")];
        assert_eq!(refused(ip("127.0.0.1"), &own, &a), None);
        assert_eq!(refused(ip("192.0.2.1"), &own, &a), None);
        assert_eq!(refused(ip("127.0.0.2"), &own, &a), Some(Reason::Loopback));
    }

    #[test]
    fn n6_multicast_and_broadcast_are_refused() {
        let none = Allowed::default();
        assert_eq!(refused(ip("224.0.0.1"), &[], &none), Some(Reason::AddressNotAllowed));
        assert_eq!(refused(ip("239.255.255.250"), &[], &none), Some(Reason::AddressNotAllowed));
        assert_eq!(refused(ip("255.255.255.255"), &[], &none), Some(Reason::AddressNotAllowed));
        assert_eq!(refused(ip("ff02::1"), &[], &none), Some(Reason::AddressNotAllowed));
        assert_eq!(refused(ip("ff05::1:3"), &[], &none), Some(Reason::AddressNotAllowed));
        assert_eq!(refused(ip("::ffff:224.0.0.1"), &[], &none), Some(Reason::AddressNotAllowed));
    }

    #[test]
    fn n6_edges_of_the_refused_blocks() {
        let none = Allowed::default();
        assert_eq!(refused(ip("::"), &[], &none), Some(Reason::Loopback));
        assert_eq!(refused(ip("febf::1"), &[], &none), Some(Reason::LinkLocal));
        assert_eq!(refused(ip("fec0::1"), &[], &none), None);
        assert_eq!(refused(ip("10.0.169.254"), &[], &none), None);
        assert_eq!(refused(ip("169.254.169.1"), &[], &none), Some(Reason::LinkLocal));
        assert_eq!(refused(ip("fd00:ec2::253"), &[], &none), None);
        assert_eq!(refused(ip("fd73:6e75:6700::1"), &[], &none), Some(Reason::AddressNotAllowed));
        assert_eq!(refused(ip("198.20.0.1"), &[], &none), None);
        let a = Allowed::parse(&["224.0.0.0/4", "fe80::/10"]).unwrap();
        assert_eq!(refused(ip("224.0.0.1"), &[], &a), None);
        assert_eq!(refused(ip("fe80::1"), &[], &a), None);
    }
}
