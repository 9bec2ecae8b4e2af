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
use caller::passed;
mod grants;
mod net_allow;
pub use grants::{env_entries, raw_values, with_raw_values, Grants};
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

use crate::error::{failure, POLICY, USAGE};
use crate::host::{host_env, passwd_home, Entry, Host, RealHost};
use crate::profiles::includes::visit;
use crate::profiles::{self, Profile};
pub use values::optional;
use values::{environment, expand, expand_value, normalise, Vars};

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

/// Resolve `req` against `host`. Reads profile files and stats paths; nothing else.
///
/// # Errors
/// [`USAGE`] (64): DIR missing or not a directory, DIR the home directory, above it or `/`
/// (P9), HOME unset or relative.
/// [`POLICY`] (77): unknown profile, bad profile file, include cycle, a ro/rw path that
/// does not exist, a bad path or env entry, two profiles setting one variable differently,
/// an attempt to replace /dev or /proc. Every message is one line naming the profile
/// (and its file) and the key.
pub fn resolve_with(req: &Request, host: &dyn Host) -> anyhow::Result<Policy> {
    let get = |k: &str| req.host_env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let home = match get("HOME").map(Path::new) {
        Some(h) if h.is_absolute() => normalise(h),
        _ => return Err(failure(USAGE, "HOME must be set to an absolute path")),
    };
    let dir = req.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    // Named as the DIR argument: `snug /nope` is read as a directory, not a command (O7).
    let target = host.canonicalize(&dir).map_err(|e| {
        let why = values::io_text(&e);
        failure(USAGE, format!("DIR {}: {why}{}", dir.display(), crate::hints::dir_hint(&dir)))
    })?;
    // bwrap's command line is text: a path that is not UTF-8 would name another directory.
    if target.to_str().is_none() || home.to_str().is_none() {
        return Err(failure(USAGE, format!("{}: DIR and HOME must be valid UTF-8", dir.display())));
    }
    dir_rule::check(&target, &dir, &home, host)?; // SPEC P9
                                                  // A parent that is / would bind the whole host read-only, undoing @sys's short list: a
                                                  // DIR directly below / gets no parent mount.
    let parent = target.parent().filter(|p| *p != Path::new("/")).map(Path::to_path_buf);
    let vars = Vars { home: home.clone(), target_parent: parent, target };

    let mut names: Vec<String> = Vec::new();
    if !req.no_defaults {
        names.extend(profiles::DEFAULTS.iter().map(|s| s.to_string()));
    }
    names.extend(req.profiles.iter().cloned());
    let mut order: Vec<Profile> = Vec::new();
    for name in &names {
        visit(name, &mut Vec::new(), &mut order, &mut |n| profiles::load(n, &req.config_dirs, host))?;
    }
    // DIR's own policy after the caller's profiles, before the command line's grants (P6).
    let project = if req.project { crate::project::load(&vars.target, &req.host_env, host)? } else { None };
    if let Some((p, more)) = project {
        for name in &more {
            visit(name, &mut vec![p.name.clone()], &mut order, &mut |n| profiles::load(n, &req.config_dirs, host))?;
        }
        order.push(p);
    }
    let grants = grants::as_profiles(&req.grants, &req.host_env);
    let in_effect: Vec<String> = order.iter().map(|p| p.name.clone()).collect();
    order.extend(grants);
    let unprotect = grants::lifted(&order, &vars)?;

    let mut mounts: BTreeMap<PathBuf, Mount> = BTreeMap::new();
    let mut env: BTreeMap<String, (String, String)> = BTreeMap::new();
    let (mut net, mut allow_userns, mut cow) = (false, false, false);
    let mut net_allow = Vec::new();
    let (mut max_procs, mut memory): (Option<u64>, Option<u64>) = (None, None);
    let mut create: Vec<PathBuf> = Vec::new();
    // `NAME+` entries: prepended to NAME with `:`, first profile first, so profiles combine.
    let mut prepend: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in &order {
        if let Some(n) = p.max_procs {
            if n < crate::bounds::MIN_MAX_PROCS {
                return Err(bad(p, "max_procs", &n.to_string(), "must be at least 3 (bwrap and init count)"));
            }
            max_procs = Some(max_procs.map_or(n, |m| m.min(n)));
        }
        if let Some(text) = &p.memory {
            let bytes = crate::bounds::parse_size(text).map_err(|e| bad(p, "memory", text, &e.to_string()))?;
            memory = Some(memory.map_or(bytes, |m| m.min(bytes)));
        }
        for (key, kind, list) in
            [("ro", MountKind::Ro, &p.ro), ("rw", MountKind::Rw, &p.rw), ("tmpfs", MountKind::Tmpfs, &p.tmpfs)]
        {
            for raw in list {
                let (optional, raw) = optional(raw);
                let Some(dest) = expand(raw, &vars).map_err(|e| bad(p, key, raw, &e.to_string()))? else {
                    continue; // {target_parent} when DIR's parent is /
                };
                if dest == Path::new("/") && kind != MountKind::Tmpfs {
                    return Err(bad(p, key, raw, "binding the host's / would expose all of it; use a DIR below /"));
                }
                if kind != MountKind::Tmpfs && host.stat(&dest) == Entry::Missing {
                    if optional && kind == MountKind::Rw && p.create_rw && dest.starts_with(&vars.home) {
                        create.push(dest.clone()); // a toolchain's cache: made before the run
                    } else if optional {
                        continue;
                    } else {
                        return Err(bad(p, key, raw, &format!("{} does not exist", dest.display())));
                    }
                }
                if dest == Path::new("/dev") || dest == Path::new("/proc") {
                    return Err(bad(p, key, raw, "/dev and /proc are always private"));
                }
                let src = (kind != MountKind::Tmpfs).then(|| dest.clone());
                ask(&mut mounts, Mount { kind, src, dest, profile: p.name.clone() });
            }
        }
        if p.host_view {
            sys_host_view(p, host, &mut mounts);
        }
        net_allow::add(p, &mut net_allow).map_err(|(raw, why)| bad(p, "net_allow", &raw, &why))?;
        passed(p, &req.host_env, host, &mut env, &mut mounts);
        (net, allow_userns, cow) = (net | p.net, allow_userns | p.allow_userns, cow | p.cow);
        for (k, raw) in &p.env {
            if k.is_empty() || k.contains(['=', '\0']) || raw.contains('\0') {
                return Err(bad(p, "env", k, "not a valid environment entry"));
            }
            let v = &expand_value(raw, &vars).map_err(|e| bad(p, "env", k, &e.to_string()))?;
            if let Some(var) = k.strip_suffix('+').filter(|v| !v.is_empty()) {
                prepend.entry(var.to_string()).or_default().push(v.clone());
                continue;
            }
            match env.get(k) {
                Some((v0, p0)) if v0 != v => {
                    let who = grants::who(p);
                    return Err(failure(POLICY, format!("env {k}: profile {p0} sets {v0:?}, {who} sets {v:?}")));
                }
                Some(_) => {}
                None => {
                    env.insert(k.clone(), (v.clone(), p.name.clone()));
                }
            }
        }
    }
    for (path, kind) in [("/dev", MountKind::Dev), ("/proc", MountKind::Proc), ("/tmp", MountKind::Tmpfs)] {
        let dest = PathBuf::from(path);
        // DIR = /tmp/x: DIR's parent read-only would show the host's whole /tmp, its sockets
        // too (an ssh-agent's). The private /tmp wins over `@parent-ro`, as `@home`'s tmpfs
        // does when the parent is $HOME; DIR is still bound inside it.
        let parent_tmp = |m: &Mount| path == "/tmp" && m.kind == MountKind::Ro && m.profile == "@parent-ro";
        if mounts.get(&dest).is_none_or(parent_tmp) {
            let profile = BASE.to_string();
            mounts.insert(dest.clone(), Mount { kind, src: None, dest, profile });
        }
    }

    Ok(Policy {
        profiles: in_effect,
        mounts: mounts.into_values().collect(),
        env: environment(&req.host_env, &vars.home, env, prepend),
        net,
        net_allow,
        target: vars.target,
        home,
        max_procs,
        memory,
        create,
        allow_userns,
        unprotect,
        protected: Vec::new(),
        cow,
    })
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

/// `@sys`'s host-dependent part: [`profiles::SYS_LINKS`] as on the host, existing
/// [`profiles::SYS_ETC`] entries read-only.
fn sys_host_view(p: &Profile, host: &dyn Host, mounts: &mut BTreeMap<PathBuf, Mount>) {
    let profile = p.name.clone();
    for path in profiles::SYS_LINKS {
        let dest = PathBuf::from(path);
        let (kind, src) = match host.lstat(&dest) {
            Entry::Symlink(t) => (MountKind::Symlink, t),
            Entry::Dir => (MountKind::Ro, dest.clone()),
            Entry::File | Entry::Missing => continue,
        };
        ask(mounts, Mount { kind, src: Some(src), dest, profile: profile.clone() });
    }
    for path in profiles::SYS_ETC {
        let dest = PathBuf::from(path);
        if host.stat(&dest) != Entry::Missing {
            ask(mounts, Mount { kind: MountKind::Ro, src: Some(dest.clone()), dest, profile: profile.clone() });
        }
    }
}

/// Record `m` unless a mount of higher or equal rank already holds its destination.
fn ask(mounts: &mut BTreeMap<PathBuf, Mount>, m: Mount) {
    match mounts.get(&m.dest) {
        Some(old) if old.kind.rank() >= m.kind.rank() => {}
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
