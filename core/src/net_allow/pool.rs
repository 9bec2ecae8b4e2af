//! The private addresses that stand for allowed names (SPEC N5): snug's resolver answers an
//! allowed name with one IPv4 address from 198.18.0.0/15 (RFC 2544's benchmarking block,
//! never a real host's) and one IPv6 address from a ULA prefix, the same pair for the whole
//! run, so that a connection to either tells snug which name the payload meant.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The first IPv4 pool address; the block is 198.18.0.0/15.
pub const V4_BASE: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 0);
/// The ULA prefix (RFC 4193) of the IPv6 pool addresses, a /64.
pub const V6_BASE: Ipv6Addr = Ipv6Addr::new(0xfd73, 0x6e75, 0x6700, 0, 0, 0, 0, 0);
/// At most this many names get addresses in a run (SPEC N5); past it, SERVFAIL.
pub const MAX_NAMES: usize = 65_536;

/// Names and their pool addresses, bounded by [`MAX_NAMES`].
#[derive(Debug, Default)]
pub struct Pool {
    by_name: HashMap<String, u32>,
    names: Vec<String>,
}

impl Pool {
    /// The addresses of `name` (already valid and lower case), given now if it had none;
    /// `None` once [`MAX_NAMES`] names have addresses.
    pub fn addresses(&mut self, name: &str) -> Option<(Ipv4Addr, Ipv6Addr)> {
        let i = match self.by_name.get(name) {
            Some(&i) => i,
            None => {
                if self.names.len() >= MAX_NAMES {
                    return None;
                }
                let i = self.names.len() as u32;
                self.names.push(name.to_string());
                self.by_name.insert(name.to_string(), i);
                i
            }
        };
        Some(at(i))
    }

    /// The name `addr` stands for, when it is a pool address given out in this run.
    pub fn name_of(&self, addr: IpAddr) -> Option<&str> {
        let i = index(addr)?;
        self.names.get(i as usize).map(String::as_str)
    }

    /// How many names have addresses.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no name has an address yet.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Whether `addr` lies in either pool block (given out or not).
pub fn in_pool(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => u32::from(a) >> 17 == u32::from(V4_BASE) >> 17,
        IpAddr::V6(a) => u128::from(a) >> 64 == u128::from(V6_BASE) >> 64,
    }
}

fn at(i: u32) -> (Ipv4Addr, Ipv6Addr) {
    // Skip the block's first address (198.18.0.0), a network address to some tools.
    let n = i + 1;
    (Ipv4Addr::from(u32::from(V4_BASE) + n), Ipv6Addr::from(u128::from(V6_BASE) + u128::from(n)))
}

fn index(addr: IpAddr) -> Option<u32> {
    let addr = match addr {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        a => a,
    };
    if !in_pool(addr) {
        return None;
    }
    let n = match addr {
        IpAddr::V4(a) => u32::from(a) - u32::from(V4_BASE),
        IpAddr::V6(a) => u32::try_from(u128::from(a) - u128::from(V6_BASE)).ok()?,
    };
    n.checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n5_one_pair_per_name_and_back() {
        let mut p = Pool::default();
        let (a4, a6) = p.addresses("a.example").unwrap();
        let (b4, _) = p.addresses("b.example").unwrap();
        assert_eq!(p.addresses("a.example").unwrap(), (a4, a6));
        assert_eq!(a4, Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(b4, Ipv4Addr::new(198, 18, 0, 2));
        assert_eq!(p.name_of(a4.into()), Some("a.example"));
        assert_eq!(p.name_of(a6.into()), Some("a.example"));
        assert_eq!(p.name_of(IpAddr::V6(b4.to_ipv6_mapped())), Some("b.example"));
        assert_eq!(p.name_of(Ipv4Addr::new(198, 18, 0, 9).into()), None);
        assert_eq!(p.name_of(Ipv4Addr::new(203, 0, 113, 1).into()), None);
    }

    #[test]
    fn n5_names_are_bounded() {
        let mut p = Pool::default();
        for i in 0..MAX_NAMES {
            assert!(p.addresses(&format!("n{i}.example")).is_some());
        }
        assert!(p.addresses("one-more.example").is_none());
        assert!(p.addresses("n7.example").is_some(), "a name that has its pair keeps it");
        let (last4, _) = at(MAX_NAMES as u32 - 1);
        assert!(in_pool(last4.into()));
    }

    #[test]
    fn n5_pool_counts_names_and_maps_every_v6_address_back() {
        let mut p = Pool::default();
        assert!(p.is_empty());
        assert_eq!(p.len(), 0);
        p.addresses("a.example").unwrap();
        assert!(!p.is_empty());
        assert_eq!(p.len(), 1);
        let (_, b6) = p.addresses("b.example").unwrap();
        let (_, c6) = p.addresses("c.example").unwrap();
        p.addresses("a.example").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p.name_of(b6.into()), Some("b.example"));
        assert_eq!(p.name_of(c6.into()), Some("c.example"));
        assert_eq!(p.name_of(V4_BASE.into()), None, "the block's first address is no name's");
        assert_eq!(p.name_of(V6_BASE.into()), None);
    }

    #[test]
    fn n5_pool_blocks_edges() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(in_pool(ip("198.18.0.0")) && in_pool(ip("198.19.255.255")));
        assert!(!in_pool(ip("198.17.255.255")) && !in_pool(ip("198.20.0.0")));
        assert!(in_pool(ip("fd73:6e75:6700:0:ffff:ffff:ffff:ffff")) && in_pool(ip("fd73:6e75:6700::")));
        assert!(!in_pool(ip("fd73:6e75:6700:1::")) && !in_pool(ip("fd73:6e75:66ff:ffff:ffff:ffff:ffff:ffff")));
    }
}
