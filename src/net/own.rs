//! `--net-allow` (SPEC N5–N8): the sandbox gets a network of snug's own instead of none or
//! pasta's. In the network namespace bwrap made, every address is local and snug's sockets
//! listen there ([`setup`]); snug answers DNS itself ([`dns`], [`dns_tcp`]), resolves allowed
//! names on the host side ([`resolver`]), checks where they lead, connects from its own
//! namespace and copies ([`conn`]), all from the supervisor's poll loop ([`serve`]).
//!
//! Why listeners on the wildcard address per allowed port rather than per pool address:
//! one socket per port and family whatever the number of names (a pool address per name
//! would take a listener per name and port, up to 65,536 × 256), and snug sees every
//! connection to a served port, so each refusal is counted (N7). The cost is that a refused
//! connection on a served port is reset after the handshake (`ECONNRESET` at the first read
//! or write, within a millisecond) rather than refused at `connect(2)`; a port no pattern
//! names has no listener and the kernel refuses it (`ECONNREFUSED`), which snug sees on raw
//! sockets in the sandbox's namespace ([`unserved`]).
//!
//! The sandbox's /etc/hosts is replaced by one naming only localhost: otherwise a name the
//! host's file maps would resolve inside to its real address, which is then refused as an
//! address no pattern names; through snug's resolver it gets a pool address and works.

mod conn;
mod dns;
mod dns_tcp;
mod in_place;
mod resolver;
pub mod serve;
mod setup;
mod unserved;

use std::path::{Path, PathBuf};

use anyhow::Result;
use snug_core::net_allow::Allowed;

use crate::error::{failure, POLICY, USAGE};
use crate::log::log;
use crate::pidfd::Pinned;
use crate::policy::{MountKind, Policy};
pub use serve::Served;

const HOSTS: &str = "/etc/hosts";
/// The sandbox's /etc/hosts with a network of snug's own.
/// The sandbox's hostname (`snug`, bwrap's `--hostname`) is its own loopback, as on a host.
const HOSTS_TEXT: &str = "# snug --net-allow: names resolve through snug's resolver\n\
                          127.0.0.1\tlocalhost\n127.0.1.1\tsnug\n::1\tlocalhost ip6-localhost ip6-loopback\n";

/// The plan of a network of snug's own for one run.
#[derive(Debug)]
pub struct Own {
    allowed: Allowed,
    /// The replacement /etc/hosts on the host, until bwrap has bound it.
    hosts: Option<PathBuf>,
    /// The host's own addresses (N6), read before bwrap starts: off the path between the
    /// sandbox's start and the payload's (B9).
    own: Vec<std::net::IpAddr>,
}

impl Own {
    /// Plan for `allowed`; when `policy` binds the host's /etc/hosts, bind a file naming only
    /// localhost instead (written now unless `dry_run`).
    ///
    /// # Errors
    /// 70 when that file cannot be written.
    pub fn plan(policy: &mut Policy, allowed: Allowed, dry_run: bool) -> Result<Own> {
        let mut hosts = None;
        let own = if dry_run { Vec::new() } else { own_addresses() };
        if let Some(m) = policy.mounts.iter_mut().find(|m| m.dest == Path::new(HOSTS) && m.kind != MountKind::Tmpfs) {
            m.kind = MountKind::Ro;
            if dry_run {
                m.src = Some(PathBuf::from("<a hosts file naming only localhost>"));
            } else {
                let path = super::dns::write_private("hosts", HOSTS_TEXT)?;
                m.src = Some(path.clone());
                hosts = Some(path);
            }
        }
        Ok(Own { allowed, hosts, own })
    }

    /// What `--dry-run` shows: each pattern with the ports it allows, and where snug listens.
    pub fn dry_run_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .allowed
            .patterns
            .iter()
            .map(|p| {
                let ports: Vec<String> =
                    p.ports.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
                format!("{} ports {}", p.text, ports.join(","))
            })
            .collect();
        let ports: Vec<String> = self.allowed.ports().iter().map(u16::to_string).collect();
        out.push(format!("listening on tcp {} and dns 53 (udp, tcp)", ports.join(",")));
        out
    }

    /// Make the sandbox's network snug's, before the payload starts (N3), and serve it.
    ///
    /// # Errors
    /// As [`setup::make`].
    pub fn attach(&mut self, init: &Pinned) -> Result<Served> {
        if let Some(p) = self.hosts.take() {
            let _ = std::fs::remove_file(p); // bound by now; the mount keeps it
        }
        raise_nofile();
        let made = setup::make(init, &setup::wanted(&self.allowed.ports()))?;
        log!("net: {} sockets made in the sandbox's network namespace", made.len());
        Ok(Served::new(self.allowed.clone(), std::mem::take(&mut self.own), made))
    }
}

impl Drop for Own {
    fn drop(&mut self) {
        if let Some(p) = self.hosts.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// `--net-allow`'s patterns, checked (SPEC N5).
///
/// # Errors
/// 64 naming the pattern not understood, or the one past the bound on ports; 64 with
/// `-p @net` on the command line (two networks).
pub fn from_command_line(patterns: Vec<String>, profiles: &[String]) -> Result<Vec<String>> {
    if patterns.is_empty() {
        return Ok(patterns);
    }
    Allowed::parse(&patterns).map_err(|e| failure(USAGE, e.to_string()))?;
    if profiles.iter().any(|p| p == "@net") {
        return Err(failure(USAGE, BOTH));
    }
    Ok(patterns)
}

/// The clash of `@net` with `--net-allow`.
const BOTH: &str = "-p @net (all of the network, through pasta) and --net-allow (only what the patterns name) \
                    do not go together: choose one";

/// The patterns of the run: the profiles' (`net_allow`) and the command line's; `None` when
/// there are none (no network of snug's own).
///
/// # Errors
/// 77 when `@net` is in effect too (one of them came from a profile or `.snug.toml`; both
/// on the command line were refused as 64 before), or when the patterns together pass the
/// bound on ports and a profile's pattern is the one that does; 64 when the command line's is.
pub fn allowed_for(policy: &Policy, cli: &[String]) -> Result<Option<Allowed>> {
    let from_profiles = policy.net_allow.iter().map(|(p, _)| p.clone());
    let all: Vec<String> = from_profiles.chain(cli.iter().cloned()).collect();
    if all.is_empty() {
        return Ok(None);
    }
    if policy.net {
        let who = policy.net_allow.first().map_or("--net-allow".to_string(), |(_, p)| format!("net_allow of {p}"));
        return Err(failure(POLICY, format!("{BOTH} (@net and {who} are both in effect)")));
    }
    Allowed::parse(&all).map(Some).map_err(|e| {
        let code = if cli.contains(&e.pattern) { USAGE } else { POLICY };
        failure(code, e.to_string())
    })
}

/// snug's own soft descriptor limit up to the hard one (SPEC N5): each connection holds two.
/// The payload keeps the caller's: its processes were forked before this.
fn raise_nofile() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

/// The addresses of the host's interfaces (N6: a name leading to the host itself is refused).
fn own_addresses() -> Vec<std::net::IpAddr> {
    let Ok(all) = nix::ifaddrs::getifaddrs() else { return Vec::new() };
    all.filter_map(|i| {
        let a = i.address?;
        if let Some(v4) = a.as_sockaddr_in() {
            return Some(std::net::IpAddr::V4(v4.ip()));
        }
        a.as_sockaddr_in6().map(|v6| std::net::IpAddr::V6(v6.ip()))
    })
    .collect()
}
