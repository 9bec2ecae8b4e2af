//! `-p @net` (SPEC N1–N4): egress for the sandbox through pasta (Debian package `passt`),
//! attached from the host side to the network namespace bwrap made with `--unshare-net`.
//!
//! Choices, each checked against the pasta Debian ships (`0.0~git20230309.7c7625d`) and the
//! option table of later releases:
//! - **Isolation (N1).** `--tcp-ports none --udp-ports none --tcp-ns none --udp-ns none`: no
//!   port forwarding in either direction, so nothing bound on the host's loopback is
//!   mirrored into the sandbox; `--no-map-gw`: the gateway address is not translated to the
//!   host's loopback (pasta's default), so the host's loopback services stay out of reach.
//!   `--config-net` gives the interface the host's addresses and routes, IPv4 and IPv6 as far
//!   as the host has them (pasta's defaults).
//! - **Which namespaces.** The netns is init's (`/proc/<init-pid>/ns/net`). The user
//!   namespace pasta joins must be the one that *owns* that netns, or it may not configure
//!   it: as root that is init's own, but an unprivileged bwrap that mounts a devpts puts the
//!   sandbox in a second, nested user namespace, from which the netns is out of reach. So
//!   snug asks the kernel for the owner (`NS_GET_USERNS`, `ioctl_ns(2)`) and names it to
//!   pasta by path (see [`pasta`]).
//! - **Readiness (N3).** `--pid /proc/self/fd/1` with stdout a pipe to snug: in foreground
//!   mode pasta writes its pid file only after it opened the tap device in the namespace,
//!   configured addresses and routes (`tap_sock_init` → `pasta_ns_conf`, synchronous
//!   netlink) and bound its sockets, right before its event loop. A line on that pipe is
//!   the readiness signal; EOF means pasta died first. No sleep, no polling of interfaces.
//!   Before pasta starts, snug turns IPv6 duplicate address detection off in the namespace
//!   (see [`dad`]), so its addresses are usable at once and no early connection is lost.
//! - **DNS.** The sandbox reads the host's /etc/resolv.conf (`@sys` binds it). A resolver on
//!   a routable address is reached through pasta like any other host. A resolver on the
//!   host's loopback (systemd-resolved's 127.0.0.53, a local dnsmasq) would be the
//!   sandbox's own loopback inside, so then snug binds a rewritten copy naming
//!   [`dns::FORWARD_V4`] instead and passes `--dns-forward` for it: pasta sends what
//!   arrives there on port 53 to the host's first resolver. That one address and port is
//!   the only way into the host's loopback, and only towards the resolver the host uses.
//! - **Lifecycle (N2).** Started by snug in its own process group, sealed, with
//!   `PR_SET_PDEATHSIG(SIGKILL)`, in the foreground (`--foreground`, never daemonized) so it
//!   stays snug's child, pinned by a pidfd; stopped (TERM, then KILL after
//!   [`pasta::STOP_WITHIN`]) when the sandbox ends, however it ends.

mod dad;
mod dns;
pub mod own;
pub mod pasta;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::{failure, UNAVAILABLE};
use crate::pidfd::Pinned;
use crate::policy::Policy;
pub use pasta::Pasta;

/// The network a sandbox got once init was up: pasta's (`-p @net`) or snug's own
/// (`--net-allow`), which the supervisor serves.
pub enum Attached {
    /// pasta, stopped when the sandbox ends (N2).
    Pasta(Pasta),
    /// snug's own, served from the supervisor's poll loop (N5).
    Own(Box<own::Served>),
}

/// The Debian package that ships pasta (SPEC N4).
pub const PACKAGE: &str = "passt";

/// What `--dry-run` shows where snug names init's netns (its host pid is known only once
/// the sandbox runs).
pub const INIT_PID: &str = "<init-pid>";

/// `pasta` on `$PATH` (only there, so that a caller's PATH decides, as for bwrap).
pub fn find_pasta() -> Option<PathBuf> {
    crate::bwrap::find_program("pasta")
}

/// The network plan for one run: which pasta, how it is told about DNS, and the resolv.conf
/// the sandbox gets when the host's resolver is on loopback.
#[derive(Debug)]
pub struct Net {
    pasta: PathBuf,
    /// snug runs as root: pasta is told to stay root (see [`command_line`]).
    root: bool,
    /// A rewritten resolv.conf, bound over /etc/resolv.conf; `Some` means `--dns-forward`.
    resolv: Option<dns::Resolv>,
}

impl Net {
    /// Plan `@net` for `policy`. When the host's resolver is on loopback, the policy's
    /// /etc/resolv.conf bind is pointed at a rewritten copy (written now unless `dry_run`).
    ///
    /// # Errors
    /// 69 naming [`PACKAGE`] when pasta is not installed (SPEC N4: never a silent fallback);
    /// 70 when the rewritten resolv.conf cannot be written.
    pub fn plan(policy: &mut Policy, dry_run: bool) -> Result<Net> {
        let pasta = find_pasta().ok_or_else(|| {
            failure(
                UNAVAILABLE,
                format!("-p @net needs pasta, which is not on PATH: install the Debian package {PACKAGE}"),
            )
        })?;
        let root = rustix::process::geteuid().is_root();
        let resolv = dns::Resolv::plan(policy, dry_run)?;
        Ok(Net { pasta, root, resolv })
    }

    /// The command line `--dry-run` shows, with [`INIT_PID`] for init's pid.
    pub fn dry_run_line(&self) -> Vec<String> {
        let userns = format!("<owner of /proc/{INIT_PID}/ns/net>");
        command_line(&self.pasta, self.root, self.resolv.is_some(), &userns, &netns_path(INIT_PID))
    }

    /// Attach pasta to the namespace of the sandbox whose init is `init`, and return once the
    /// network is configured (SPEC N3). Called once init is up, before it starts the payload.
    ///
    /// # Errors
    /// 69 with pasta's own error line when it fails to start or configure the namespace;
    /// 70 for snug's own failures.
    pub fn attach(&mut self, init: &Pinned) -> Result<Pasta> {
        // bwrap has mounted the sandbox's view by now: the bound copy lives on without its name.
        if let Some(r) = self.resolv.as_mut() {
            r.remove();
        }
        let pid = init.host_pid.to_string();
        pasta::start(init, |userns| {
            command_line(&self.pasta, self.root, self.resolv.is_some(), userns, &netns_path(&pid))
        })
    }
}

fn netns_path(pid: &str) -> String {
    format!("/proc/{pid}/ns/net")
}

/// pasta's argv: attach to `netns` as a member of `userns`, configure it, forward nothing,
/// never map the gateway to the host's loopback, report readiness through the pid file on
/// stdout, stay in the foreground and log errors to stderr.
///
/// As root pasta would switch to `nobody` before opening the namespaces, and `nobody` may
/// not open a root-owned process's `/proc/PID/ns` files: `--runas 0:0` keeps it root (it
/// still drops its capabilities and sandboxes itself).
pub fn command_line(pasta: &Path, root: bool, dns_forward: bool, userns: &str, netns: &str) -> Vec<String> {
    let mut argv: Vec<String> = vec![pasta.to_string_lossy().into_owned()];
    let words = [
        "--foreground",
        "--quiet",
        "--stderr",
        "--pid",
        "/proc/self/fd/1",
        "--tcp-ports",
        "none",
        "--udp-ports",
        "none",
        "--tcp-ns",
        "none",
        "--udp-ns",
        "none",
        "--no-map-gw",
        "--config-net",
        "--no-netns-quit",
    ];
    argv.extend(words.iter().map(|w| w.to_string()));
    if dns_forward {
        argv.extend(["--dns-forward".to_string(), dns::FORWARD_V4.to_string()]);
    }
    if root {
        argv.extend(["--runas".to_string(), "0:0".to_string()]);
    }
    argv.extend(["--userns".to_string(), userns.to_string(), "--netns".to_string(), netns.to_string()]);
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n1_command_line_forwards_nothing_and_keeps_host_loopback_out() {
        let argv = command_line(Path::new("/usr/bin/pasta"), false, false, "/proc/9/fd/4", "/proc/7/ns/net");
        let line = argv.join(" ");
        for want in [
            "--tcp-ports none",
            "--udp-ports none",
            "--tcp-ns none",
            "--udp-ns none",
            "--no-map-gw",
            "--config-net",
            "--foreground",
            "--pid /proc/self/fd/1",
            "--userns /proc/9/fd/4 --netns /proc/7/ns/net",
        ] {
            assert!(line.contains(want), "{want} missing from {line}");
        }
        assert!(!line.contains("--runas") && !line.contains("--dns-forward"), "{line}");
        let root = command_line(Path::new("/usr/bin/pasta"), true, true, "u", "n").join(" ");
        assert!(root.contains("--runas 0:0") && root.contains("--dns-forward 169.254.1.1"), "{root}");
    }
}
