//! `--net-allow PATTERN` (SPEC N5): `HOST[:PORTS]` where HOST is a name (`example.com`), a
//! subdomain pattern (`*.example.com`: its subdomains, not itself), an address or a CIDR
//! (`203.0.113.0/24`, `[2001:db8::1]`, `2001:db8::/32`), and PORTS is `P` or `P-Q`; without
//! PORTS, 443 and 80. An IPv6 address with a port is written in brackets (`[2001:db8::1]:22`).

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

/// At most this many distinct ports in all patterns together (SPEC N5): each is one
/// listening socket per address family in the sandbox's namespace.
pub const MAX_PORTS: usize = 256;

/// The ports a pattern without `:PORTS` allows.
pub const DEFAULT_PORTS: [u16; 2] = [443, 80];

/// Why a pattern was not understood; the message names the pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--net-allow {:?}: {}", self.pattern, self.why)
    }
}

/// What a pattern names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    /// One name, lower case, without a trailing dot.
    Name(String),
    /// The subdomains of a name (`*.example.com`), not the name itself.
    Below(String),
    /// An address block; a single address has the full prefix length.
    Net(IpAddr, u8),
}

/// One parsed pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The pattern as written, for messages and the report.
    pub text: String,
    /// What it names.
    pub host: Host,
    /// Inclusive port ranges.
    pub ports: Vec<(u16, u16)>,
}

impl Pattern {
    /// Parse one pattern.
    ///
    /// # Errors
    /// A [`PatternError`] naming the pattern: empty, a bad name, port or prefix length.
    pub fn parse(text: &str) -> Result<Pattern, PatternError> {
        let err = |why: &str| PatternError { pattern: text.to_string(), why: why.to_string() };
        let t = text.trim();
        if t.is_empty() {
            return Err(err("empty pattern"));
        }
        let (host, ports) = split_port(t).ok_or_else(|| err("an IPv6 address with a port is written [ADDR]:PORT"))?;
        let ports = match ports {
            None => DEFAULT_PORTS.iter().map(|&p| (p, p)).collect(),
            Some(p) => vec![parse_ports(p).ok_or_else(|| err("ports are PORT or PORT-PORT, from 1 to 65535"))?],
        };
        let host = parse_host(host).map_err(|why| err(&why))?;
        Ok(Pattern { text: text.to_string(), host, ports })
    }

    /// Whether `port` is one this pattern allows.
    pub fn has_port(&self, port: u16) -> bool {
        self.ports.iter().any(|&(a, b)| a <= port && port <= b)
    }
}

/// `HOST` and `PORTS` of `HOST[:PORTS]`; `None` for an IPv6 address with a bare port.
fn split_port(t: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = t.strip_prefix('[') {
        let (addr, after) = rest.split_once(']')?;
        return match after {
            "" => Some((addr, None)),
            p => Some((addr, Some(p.strip_prefix(':')?))),
        };
    }
    match t.matches(':').count() {
        0 => Some((t, None)),
        1 => t.split_once(':').map(|(h, p)| (h, Some(p))),
        _ => Some((t, None)), // a bare IPv6 address or CIDR
    }
}

fn parse_ports(p: &str) -> Option<(u16, u16)> {
    let one = |s: &str| s.parse::<u16>().ok().filter(|&n| n > 0);
    let (a, b) = match p.split_once('-') {
        Some((a, b)) => (one(a)?, one(b)?),
        None => (one(p)?, one(p)?),
    };
    (a <= b).then_some((a, b))
}

fn parse_host(h: &str) -> Result<Host, String> {
    if let Some((addr, len)) = h.split_once('/') {
        let addr: IpAddr = addr.parse().map_err(|_| format!("{addr:?} is not an address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len: u8 = len.parse().ok().filter(|&l| l <= max).ok_or(format!("prefix length must be 0 to {max}"))?;
        return Ok(Host::Net(mask(addr, len), len));
    }
    if let Ok(addr) = h.parse::<IpAddr>() {
        return Ok(Host::Net(addr, if addr.is_ipv4() { 32 } else { 128 }));
    }
    let (below, name) = match h.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, h),
    };
    let name = valid_name(name).ok_or_else(|| format!("{h:?} is not a host name, *.NAME, address or CIDR"))?;
    Ok(if below { Host::Below(name) } else { Host::Name(name) })
}

/// `name` lower-cased without a trailing dot, when it is a DNS name (RFC 1123 labels).
pub fn valid_name(name: &str) -> Option<String> {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    (!name.is_empty() && name.len() <= 253 && name.split('.').all(label_ok)).then_some(name)
}

/// `addr` with the bits past `len` cleared.
pub fn mask(addr: IpAddr, len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len)) };
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

/// All patterns of a run, checked together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowed {
    /// In the order given.
    pub patterns: Vec<Pattern>,
}

impl Allowed {
    /// Parse every pattern and check the port bound.
    ///
    /// # Errors
    /// The first pattern not understood, or the one that takes the ports past [`MAX_PORTS`].
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Allowed, PatternError> {
        let mut patterns = Vec::new();
        let mut ports = BTreeSet::new();
        for t in texts {
            let p = Pattern::parse(t.as_ref())?;
            for &(a, b) in &p.ports {
                for port in a..=b {
                    ports.insert(port);
                    if ports.len() > MAX_PORTS {
                        return Err(PatternError {
                            pattern: p.text.clone(),
                            why: format!("more than {MAX_PORTS} ports in all patterns"),
                        });
                    }
                }
            }
            patterns.push(p);
        }
        Ok(Allowed { patterns })
    }

    /// Whether there is nothing to allow (no network of snug's own).
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Every port some pattern allows, ascending: where snug listens.
    pub fn ports(&self) -> Vec<u16> {
        let set: BTreeSet<u16> = self.patterns.iter().flat_map(|p| p.ports.iter().flat_map(|&(a, b)| a..=b)).collect();
        set.into_iter().collect()
    }

    /// Whether `name` (any case, trailing dot or not) is one a name pattern allows.
    pub fn name_allowed(&self, name: &str) -> bool {
        valid_name(name).is_some_and(|n| self.patterns.iter().any(|p| name_matches(&p.host, &n)))
    }

    /// Whether a connection to `name` at `port` is allowed.
    pub fn name_port_allowed(&self, name: &str, port: u16) -> bool {
        valid_name(name).is_some_and(|n| self.patterns.iter().any(|p| name_matches(&p.host, &n) && p.has_port(port)))
    }

    /// Whether an address pattern names `addr` at `port`.
    pub fn addr_allowed(&self, addr: IpAddr, port: u16) -> bool {
        self.patterns.iter().any(|p| p.has_port(port) && self::in_net(&p.host, addr))
    }

    /// Whether an address pattern names `addr` at any port (N6: then the host's own,
    /// loopback or link-local addresses may be reached through it).
    pub fn addr_named(&self, addr: IpAddr) -> bool {
        self.patterns.iter().any(|p| in_net(&p.host, addr))
    }
}

fn name_matches(host: &Host, name: &str) -> bool {
    match host {
        Host::Name(n) => n == name,
        Host::Below(n) => {
            name.len() > n.len() + 1 && name.ends_with(n.as_str()) && name[..name.len() - n.len()].ends_with('.')
        }
        Host::Net(..) => false,
    }
}

fn in_net(host: &Host, addr: IpAddr) -> bool {
    // An IPv4-mapped IPv6 address is the IPv4 address it carries.
    let addr = match addr {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        a => a,
    };
    match host {
        Host::Net(net, len) => net.is_ipv4() == addr.is_ipv4() && mask(addr, *len) == *net,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(p: &[&str]) -> Allowed {
        Allowed::parse(p).expect("parses")
    }

    #[test]
    fn n5_names_subdomains_and_default_ports() {
        let a = allowed(&["Example.COM.", "*.pkgs.example"]);
        assert!(a.name_port_allowed("example.com", 443) && a.name_port_allowed("EXAMPLE.com.", 80));
        assert!(!a.name_port_allowed("example.com", 22));
        assert!(!a.name_allowed("www.example.com") && !a.name_allowed("notexample.com"));
        assert!(a.name_allowed("a.pkgs.example") && a.name_allowed("b.a.pkgs.example"));
        assert!(!a.name_allowed("pkgs.example") && !a.name_allowed("xpkgs.example"));
        assert_eq!(a.ports(), [80, 443]);
    }

    #[test]
    fn n5_ports_and_ranges() {
        let a = allowed(&["git.example:22", "db.example:5432-5433"]);
        assert!(a.name_port_allowed("git.example", 22) && !a.name_port_allowed("git.example", 443));
        assert!(a.name_port_allowed("db.example", 5433) && !a.name_port_allowed("db.example", 5434));
        assert_eq!(a.ports(), [22, 5432, 5433]);
        for bad in ["x:0", "x:70000", "x:9-3", "x:", "x:a", ""] {
            assert!(Pattern::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn n5_addresses_and_cidrs() {
        let a = allowed(&["203.0.113.0/24:5432", "[2001:db8::1]:22", "2001:db8:1::/48", "198.51.100.7"]);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(a.addr_allowed(ip("203.0.113.9"), 5432) && !a.addr_allowed(ip("203.0.114.9"), 5432));
        assert!(a.addr_allowed(ip("::ffff:203.0.113.9"), 5432));
        assert!(a.addr_allowed(ip("2001:db8::1"), 22) && !a.addr_allowed(ip("2001:db8::2"), 22));
        assert!(a.addr_allowed(ip("2001:db8:1:2::3"), 443) && a.addr_allowed(ip("198.51.100.7"), 80));
        assert!(!a.name_allowed("203.0.113.9"));
        assert!(Pattern::parse("2001:db8::1:22").is_ok_and(|p| p.ports == [(443, 443), (80, 80)]));
        assert!(Pattern::parse("10.0.0.0/33").is_err() && Pattern::parse("exa mple").is_err());
    }

    #[test]
    fn n5_at_most_256_ports_naming_the_pattern() {
        assert!(Allowed::parse(&["a.example:1000-1255"]).is_ok());
        let e = Allowed::parse(&["a.example:1000-1254", "b.example:2000-2001"]).unwrap_err();
        assert_eq!(e.pattern, "b.example:2000-2001");
        assert!(e.to_string().contains("256"), "{e}");
    }

    #[test]
    fn n5_name_rules() {
        assert_eq!(valid_name("A-b.Example."), Some("a-b.example".to_string()));
        assert_eq!(valid_name("_dmarc.example"), Some("_dmarc.example".to_string()));
        assert_eq!(valid_name("x-_y.example"), Some("x-_y.example".to_string()));
        for bad in ["", ".", "a..example", "-a.example", "a-.example", "a b.example", "a*.example", "a/b"] {
            assert_eq!(valid_name(bad), None, "{bad}");
        }
        let l63 = "a".repeat(63);
        assert!(valid_name(&format!("{l63}.example")).is_some());
        assert!(valid_name(&format!("{l63}a.example")).is_none());
        let n253 = format!("{l63}.{l63}.{l63}.{}", "b".repeat(61));
        assert_eq!(n253.len(), 253);
        assert!(valid_name(&n253).is_some());
        assert!(valid_name(&format!("{n253}c")).is_none());
    }

    #[test]
    fn n5_subdomain_pattern_needs_a_label_before_the_name() {
        let below = Host::Below("pkgs.example".into());
        assert!(name_matches(&below, "a.pkgs.example"));
        assert!(!name_matches(&below, ".pkgs.example"));
        assert!(!name_matches(&below, "pkgs.example"));
        assert!(!name_matches(&below, "xpkgs.example"));
        assert!(!name_matches(&below, "kgs.example"));
        assert!(name_matches(&Host::Name("pkgs.example".into()), "pkgs.example"));
    }

    #[test]
    fn n5_empty_patterns_allow_nothing() {
        let none = allowed(&[] as &[&str]);
        assert!(none.is_empty());
        assert!(none.ports().is_empty() && !none.name_allowed("example.com"));
        assert!(!allowed(&["example.com"]).is_empty());
    }

    #[test]
    fn n5_port_and_prefix_edges() {
        let a = allowed(&["db.example:5432-5433", "one.example:7-7"]);
        assert!(!a.name_port_allowed("db.example", 5431) && a.name_port_allowed("db.example", 5432));
        assert!(a.name_port_allowed("one.example", 7) && !a.name_port_allowed("one.example", 8));
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let all = allowed(&["0.0.0.0/0", "10.1.2.3/32:22", "2001:db8::/128"]);
        assert!(all.addr_allowed(ip("203.0.113.9"), 443) && !all.addr_allowed(ip("2001:db8::9"), 443));
        assert!(all.addr_allowed(ip("10.1.2.3"), 22) && !all.addr_allowed(ip("10.1.2.4"), 22));
        assert!(all.addr_allowed(ip("2001:db8::"), 443) && !all.addr_allowed(ip("2001:db8::1"), 443));
        let six = allowed(&["::/0"]);
        assert!(six.addr_allowed(ip("2001:db8::9"), 80) && !six.addr_allowed(ip("203.0.113.9"), 80));
        assert!(six.addr_named(ip("fe80::1")) && !six.addr_named(ip("127.0.0.1")));
        assert!(Pattern::parse("2001:db8::/129").is_err() && Pattern::parse("10.0.0.0/x").is_err());
        assert!(Pattern::parse("[2001:db8::1]22").is_err() && Pattern::parse("[2001:db8::1").is_err());
        assert!(Pattern::parse("[2001:db8::1]").is_ok_and(|p| p.ports == [(443, 443), (80, 80)]));
        assert!(Pattern::parse("example.com").is_ok_and(|p| p.host == Host::Name("example.com".into())));
        assert!(Pattern::parse("x.example:22").is_ok_and(|p| p.ports == [(22, 22)]));
    }
}
