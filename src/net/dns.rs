//! DNS for `@net`: the sandbox keeps the host's resolv.conf unless the host's resolver is on
//! loopback, which inside the sandbox would be the sandbox's own (empty) loopback. Then the
//! sandbox gets a copy naming [`FORWARD_V4`], and pasta forwards DNS sent there to the host's
//! resolver (`--dns-forward`, see [`super`]).

use std::io::Write as _;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::policy::{MountKind, Policy};

/// The address the sandbox sends DNS to when the host's resolver is on loopback: link-local,
/// so it is never a real host on the network, and the one Podman uses with pasta.
pub const FORWARD_V4: &str = "169.254.1.1";

const RESOLV_CONF: &str = "/etc/resolv.conf";

/// A rewritten resolv.conf on the host, bound read-only over the sandbox's /etc/resolv.conf.
#[derive(Debug)]
pub struct Resolv {
    /// The file, until bwrap has mounted it (`None` in a dry run, or once removed).
    file: Option<PathBuf>,
}

impl Resolv {
    /// When `policy` binds the host's /etc/resolv.conf and that names a loopback resolver,
    /// write the rewritten copy (not in a `dry_run`) and bind it instead.
    ///
    /// # Errors
    /// When the copy cannot be written.
    pub fn plan(policy: &mut Policy, dry_run: bool) -> Result<Option<Resolv>> {
        let Some(mount) = policy
            .mounts
            .iter_mut()
            .find(|m| m.dest == Path::new(RESOLV_CONF) && matches!(m.kind, MountKind::Ro | MountKind::Rw))
        else {
            return Ok(None);
        };
        let Some(src) = &mount.src else { return Ok(None) };
        let Some(text) = std::fs::read_to_string(src).ok().and_then(|host| rewrite(&host)) else {
            return Ok(None);
        };
        mount.kind = MountKind::Ro;
        if dry_run {
            mount.src = Some(PathBuf::from(format!("<copy naming {FORWARD_V4}>")));
            return Ok(Some(Resolv { file: None }));
        }
        let path = write_private("resolv", &text)?;
        mount.src = Some(path.clone());
        Ok(Some(Resolv { file: Some(path) }))
    }

    /// Remove the file; a bind mount of it keeps working.
    pub fn remove(&mut self) {
        if let Some(p) = self.file.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Resolv {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A new file in the temporary directory holding `text`, world-readable (the sandbox's
/// user may be mapped to another uid), created exclusively so nothing else can be there.
pub(super) fn write_private(stem: &str, text: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir();
    let mut last = None;
    for n in 0..16 {
        let path = dir.join(format!("snug-{stem}-{}-{n}.conf", std::process::id()));
        match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o644).open(&path) {
            Ok(mut f) => {
                f.write_all(text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
        .with_context(|| format!("creating a {stem} file for the sandbox"))
}

/// The sandbox's resolv.conf for a host resolv.conf `host`, or `None` when the host's own
/// works unchanged (no nameserver on loopback). IPv4 loopback nameservers become one
/// [`FORWARD_V4`] line at the first one's place; IPv6 loopback ones are dropped (pasta
/// forwards the IPv4 address to the host's first IPv4 resolver); every other line is kept.
pub fn rewrite(host: &str) -> Option<String> {
    let loopback = |line: &str| -> Option<IpAddr> {
        let mut words = line.split_whitespace();
        if words.next() != Some("nameserver") {
            return None;
        }
        words.next()?.parse::<IpAddr>().ok().filter(IpAddr::is_loopback)
    };
    if !host.lines().any(|l| loopback(l).is_some()) {
        return None;
    }
    let mut out = format!(
        "# snug -p @net: the host's resolver is on its loopback, which the sandbox cannot reach;\n\
         # pasta forwards DNS sent to {FORWARD_V4} to it.\n"
    );
    let mut forwarded = false;
    for line in host.lines() {
        match loopback(line) {
            Some(IpAddr::V4(_)) if !forwarded => {
                out.push_str(&format!("nameserver {FORWARD_V4}\n"));
                forwarded = true;
            }
            Some(_) => out.push_str(&format!("# {line}\n")),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n1_routable_resolver_is_kept() {
        assert_eq!(rewrite("nameserver 10.255.255.53\nsearch example\n"), None);
        assert_eq!(rewrite("# nameserver 127.0.0.1\nnameserver fd00::1\n"), None);
    }

    #[test]
    fn n1_loopback_resolver_is_forwarded() {
        let host =
            "# stub\nnameserver 127.0.0.53\noptions edns0 trust-ad\nnameserver ::1\nnameserver 127.0.0.1\nsearch lan\n";
        let got = rewrite(host).expect("rewritten");
        let lines: Vec<&str> = got.lines().filter(|l| !l.starts_with("# snug") && !l.starts_with("# pasta")).collect();
        assert_eq!(
            lines,
            [
                "# stub",
                "nameserver 169.254.1.1",
                "options edns0 trust-ad",
                "# nameserver ::1",
                "# nameserver 127.0.0.1",
                "search lan"
            ]
        );
    }
}
