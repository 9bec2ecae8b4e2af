//! Policy: what the sandbox sees. Resolves the requested profiles (SPEC P1–P3) into an
//! ordered list of mounts, a clean environment and the network switch, which
//! [`crate::bwrap::command_line`] turns into bwrap(1) options.
//!
//! Merge rules, per destination path (profiles compose by union):
//! - `rw` beats `tmpfs` beats `ro` beats a `@sys` symlink; on a tie the first profile keeps
//!   it. So a path asked ro and rw is rw (P2) and, when DIR's
//!   parent is $HOME, $HOME stays an empty tmpfs: hiding the home directory is `@home`'s
//!   promise, and a read-only bind of the parent would show all of it.
//! - The base mounts `--dev /dev`, `--proc /proc`, `--tmpfs /tmp` lose to any profile at the
//!   same path (`@tmp-shared`), except that /dev and /proc cannot be replaced at all (a
//!   private /proc is what hides host pids, SPEC X1), and that the private /tmp beats DIR's
//!   parent when DIR is `/tmp/x`: the parent's read-only bind would show the host's /tmp.
//! - Mounts are sorted by path, component by component, so a parent is always mounted
//!   before anything below it and never covers it.

mod caller;
mod dir_rule;
pub mod program;
pub use caller::create_missing;
mod grants;
mod net_allow;
pub use grants::{env_entries, raw_values, with_raw_values, Grants};
mod resolve;
pub use resolve::resolve_with;
mod show;
#[cfg(test)]
mod tests;
mod values;
pub use show::show;
#[cfg(test)]
pub(crate) use show::show_in;

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{failure, POLICY};
use crate::host::{host_env, passwd_home, RealHost};
use crate::profiles::{self, Profile};
pub use values::optional;
use values::{expand, expand_value, normalise, Vars};

/// PATH inside the sandbox: fixed, so a host PATH cannot point into hidden directories.
pub const SANE_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/// [`Mount::profile`] of the mounts every sandbox gets (/dev, /proc, private /tmp).
pub const BASE: &str = "(base)";

/// How one path is provided inside the sandbox (the bwrap(1) option it becomes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MountKind {
    /// `--ro-bind SRC DEST`.
    Ro,
    /// `--bind SRC DEST`.
    Rw,
    /// `--tmpfs DEST`: empty, private, gone after the run.
    Tmpfs,
    /// `--symlink SRC DEST`, SRC being the link's target (as on the host).
    Symlink,
    /// `--dev DEST`: a minimal private /dev.
    Dev,
    /// `--proc DEST`: the sandbox pid namespace's own procfs.
    Proc,
}

impl MountKind {
    /// Merge rank at one destination: the higher one wins (see the module doc).
    fn rank(self) -> u8 {
        match self {
            MountKind::Rw => 4,
            MountKind::Tmpfs => 3,
            MountKind::Ro => 2,
            MountKind::Symlink => 1,
            MountKind::Dev | MountKind::Proc => 0,
        }
    }
}

/// One mount of the sandbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mount {
    /// What kind of mount.
    pub kind: MountKind,
    /// Host path for binds, link target for symlinks, `None` otherwise.
    pub src: Option<PathBuf>,
    /// Path inside the sandbox.
    pub dest: PathBuf,
    /// The profile that asked for it, or [`BASE`].
    pub profile: String,
}

/// The resolved policy: everything bwrap needs to know about the sandbox's view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// Profiles in effect, requested ones first, each included one after its includer.
    pub profiles: Vec<String>,
    /// Mounts in the order bwrap must perform them (parents first).
    pub mounts: Vec<Mount>,
    /// The complete environment of the payload (bwrap `--clearenv` + `--setenv`).
    pub env: Vec<(String, String)>,
    /// `@net` asked for a network (SPEC N1); otherwise loopback only.
    pub net: bool,
    /// `net_allow` patterns of the profiles (SPEC N5), each with the profile that gave it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub net_allow: Vec<(String, String)>,
    /// DIR, canonical: writable under the defaults, and the payload's cwd.
    pub target: PathBuf,
    /// The caller's $HOME (normalised), the same path inside.
    pub home: PathBuf,
    /// The smallest `max_procs` of the profiles (SPEC K5).
    pub max_procs: Option<u64>,
    /// The smallest `memory` of the profiles, in bytes (SPEC K5).
    pub memory: Option<u64>,
    /// Writable directories missing on the host that a toolchain profile asked for: created
    /// by [`create_missing`] before the run (SPEC O8), never by `--dry-run`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub create: Vec<PathBuf>,
    /// Nested user namespaces allowed (`allow_userns` in a profile, `--allow-userns`; SPEC
    /// X2); otherwise bwrap's `--disable-userns`.
    pub allow_userns: bool,
    /// Paths `unprotect` and `--unprotect` lift, with what is below them (SPEC P8).
    pub unprotect: Vec<PathBuf>,
    /// Mounts that keep the protected paths read-only (SPEC P8, [`crate::protect`]), after `mounts`.
    pub protected: Vec<Mount>,
    /// DIR through a copy-on-write overlay (`cow` in a profile, `--cow`; SPEC W1).
    pub cow: bool,
}

impl Policy {
    /// Whether host path `p` is visible in the sandbox: the deepest mount above it is a bind.
    pub fn shows(&self, p: &Path) -> bool {
        let m = self.mounts.iter().filter(|m| p.starts_with(&m.dest)).max_by_key(|m| m.dest.components().count());
        m.is_some_and(|m| matches!(m.kind, MountKind::Ro | MountKind::Rw))
    }
}

/// What the caller asked for, with the host facts resolution depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// `-p NAME`, in command-line order.
    pub profiles: Vec<String>,
    /// `--no-defaults`: drop [`profiles::DEFAULTS`].
    pub no_defaults: bool,
    /// DIR as given (`None`: the current directory).
    pub dir: Option<PathBuf>,
    /// The caller's environment.
    pub host_env: Vec<(String, String)>,
    /// User profile directories in search order ([`profiles::config_dirs`]).
    pub config_dirs: Vec<PathBuf>,
    /// `--ro`, `--rw`, `--tmpfs`, `-e` (SPEC P5), applied after every profile.
    pub grants: Grants,
    /// Apply DIR's `.snug.toml` once allowed (SPEC P6); `--no-project` clears it.
    pub project: bool,
}

/// Resolve `req` on this machine: [`resolve_with`] and the real host.
///
/// # Errors
/// See [`resolve_with`].
pub fn resolve(req: &Request) -> anyhow::Result<Policy> {
    resolve_with(req, &RealHost)
}

/// A profile path or env value with its placeholders expanded for `HOME=home` and
/// `DIR=target`, as [`resolve`] would (for `snug profile show`). A path is checked like a
/// mount; `Ok(None)`: it uses `{target_parent}` and DIR's parent is `/`.
///
/// # Errors
/// The reason the entry is invalid (unknown placeholder, relative path, `..`).
pub fn expand_for(raw: &str, home: &Path, target: &Path, is_path: bool) -> anyhow::Result<Option<String>> {
    let parent = target.parent().filter(|p| *p != Path::new("/")).map(Path::to_path_buf);
    let vars = Vars { home: normalise(home), target_parent: parent, target: target.to_path_buf() };
    if is_path {
        Ok(expand(raw, &vars)?.map(|p| p.to_string_lossy().into_owned()))
    } else {
        expand_value(raw, &vars).map(Some)
    }
}

/// The [`Request`] for `profiles` (`-p`), `no_defaults` and `dir` (`None`: the current
/// directory) on this host. When HOME is unset (`env -i snug …`) it comes from the passwd
/// entry of the real uid (getpwuid_r(3)).
/// `project`: apply DIR's `.snug.toml` (SPEC P6).
pub fn request_from_host(
    profiles: &[String],
    no_defaults: bool,
    dir: Option<PathBuf>,
    grants: Grants,
    project: bool,
) -> Request {
    let mut env = host_env();
    if !env.iter().any(|(k, _)| k == "HOME") {
        if let Some(home) = passwd_home() {
            env.push(("HOME".to_string(), home));
        }
    }
    Request {
        profiles: profiles.to_vec(),
        no_defaults,
        dir,
        config_dirs: profiles::config_dirs(&env),
        host_env: env,
        grants,
        project,
    }
}

/// Record `m` unless a mount of higher rank already holds its destination, or one of equal
/// rank that a default profile did not merely imply: an explicit grant of DIR's parent
/// (`--ro /tmp` for DIR = /tmp/x) is that grant, not `@parent-ro`'s, which the private /tmp
/// replaces.
fn ask(mounts: &mut BTreeMap<PathBuf, Mount>, m: Mount) {
    match mounts.get(&m.dest) {
        Some(old) if old.kind.rank() > m.kind.rank() => {}
        Some(old) if old.kind.rank() == m.kind.rank() && old.profile != "@parent-ro" => {}
        _ => {
            mounts.insert(m.dest.clone(), m);
        }
    }
}

fn bad(p: &Profile, key: &str, entry: &str, why: &str) -> anyhow::Error {
    let place = match &p.source {
        profiles::Source::Builtin => format!("profile {}", p.name),
        profiles::Source::File(f) => format!("profile {} ({})", p.name, f.display()),
        // The flag alone names it: `--ro "/x": /x does not exist` (SPEC P5).
        profiles::Source::CommandLine => return failure(POLICY, format!("{} {entry:?}: {why}", p.name)),
    };
    failure(POLICY, format!("{place}: {key} {entry:?}: {why}"))
}
