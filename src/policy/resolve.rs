//! [`resolve_with`] in named steps: the caller's places (HOME, DIR), the profiles in order,
//! each profile merged in (bounds, paths, the host's view, network, passed entries, env),
//! then the base mounts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::caller::passed;
use super::values::{self, environment, expand, expand_value, normalise, optional, Vars};
use super::{ask, bad, dir_rule, grants, net_allow, Mount, MountKind, Policy, Request, BASE};
use crate::error::{failure, POLICY, USAGE};
use crate::host::{Entry, Host};
use crate::profiles::includes::visit;
use crate::profiles::{self, Profile};

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
    let vars = places(req, host)?;
    let (order, in_effect) = in_order(req, host, &vars)?;
    let unprotect = grants::lifted(&order, &vars)?;
    let mut m = Merged::default();
    for p in &order {
        m.bounds(p)?;
        m.paths(p, &vars, host)?;
        if p.host_view {
            sys_host_view(p, host, &mut m.mounts);
        }
        net_allow::add(p, &mut m.net_allow).map_err(|(raw, why)| bad(p, "net_allow", &raw, &why))?;
        passed(p, &req.host_env, host, &mut m.env, &mut m.mounts);
        (m.net, m.allow_userns, m.cow) = (m.net | p.net, m.allow_userns | p.allow_userns, m.cow | p.cow);
        m.env_of(p, &vars)?;
    }
    base_mounts(&mut m.mounts);

    Ok(Policy {
        profiles: in_effect,
        mounts: m.mounts.into_values().collect(),
        env: environment(&req.host_env, &vars.home, m.env, m.prepend),
        net: m.net,
        net_allow: m.net_allow,
        home: vars.home,
        target: vars.target,
        max_procs: m.max_procs,
        memory: m.memory,
        create: m.create,
        allow_userns: m.allow_userns,
        unprotect,
        protected: Vec::new(),
        cow: m.cow,
    })
}

/// HOME and DIR, checked (absolute HOME, DIR a directory in UTF-8, P9's rule), with DIR's
/// parent: the placeholders' values.
fn places(req: &Request, host: &dyn Host) -> anyhow::Result<Vars> {
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
    Ok(Vars { home, target_parent: parent, target })
}

/// The profiles to merge, in order: the defaults, `-p`, each included one after its
/// includer, DIR's `.snug.toml` and what it includes (P6), then the command line's grants
/// (P5). With it, the names in effect (the grants are not named).
fn in_order(req: &Request, host: &dyn Host, vars: &Vars) -> anyhow::Result<(Vec<Profile>, Vec<String>)> {
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
    Ok((order, in_effect))
}

/// What the profiles merged so far ask for.
#[derive(Default)]
struct Merged {
    mounts: BTreeMap<PathBuf, Mount>,
    env: BTreeMap<String, (String, String)>,
    net: bool,
    allow_userns: bool,
    cow: bool,
    net_allow: Vec<(String, String)>,
    max_procs: Option<u64>,
    memory: Option<u64>,
    create: Vec<PathBuf>,
    /// `NAME+` entries: prepended to NAME with `:`, first profile first, so profiles combine.
    prepend: BTreeMap<String, Vec<String>>,
}

impl Merged {
    /// `max_procs` and `memory` (K5): the smallest of the profiles wins.
    fn bounds(&mut self, p: &Profile) -> anyhow::Result<()> {
        if let Some(n) = p.max_procs {
            if n < crate::bounds::MIN_MAX_PROCS {
                return Err(bad(p, "max_procs", &n.to_string(), "must be at least 3 (bwrap and init count)"));
            }
            self.max_procs = Some(self.max_procs.map_or(n, |m| m.min(n)));
        }
        if let Some(text) = &p.memory {
            let bytes = crate::bounds::parse_size(text).map_err(|e| bad(p, "memory", text, &e.to_string()))?;
            self.memory = Some(self.memory.map_or(bytes, |m| m.min(bytes)));
        }
        Ok(())
    }

    /// `ro`, `rw` and `tmpfs` paths, expanded and checked, each asked at its rank.
    fn paths(&mut self, p: &Profile, vars: &Vars, host: &dyn Host) -> anyhow::Result<()> {
        for (key, kind, list) in
            [("ro", MountKind::Ro, &p.ro), ("rw", MountKind::Rw, &p.rw), ("tmpfs", MountKind::Tmpfs, &p.tmpfs)]
        {
            for raw in list {
                let (optional, raw) = optional(raw);
                let Some(dest) = expand(raw, vars).map_err(|e| bad(p, key, raw, &e.to_string()))? else {
                    continue; // {target_parent} when DIR's parent is /
                };
                if dest == Path::new("/") && kind != MountKind::Tmpfs {
                    return Err(bad(p, key, raw, "binding the host's / would expose all of it; use a DIR below /"));
                }
                if kind != MountKind::Tmpfs && host.stat(&dest) == Entry::Missing {
                    if optional && kind == MountKind::Rw && p.create_rw && dest.starts_with(&vars.home) {
                        self.create.push(dest.clone()); // a toolchain's cache: made before the run
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
                ask(&mut self.mounts, Mount { kind, src, dest, profile: p.name.clone() });
            }
        }
        Ok(())
    }

    /// `env` entries, expanded: a variable two profiles set differently is refused; `NAME+`
    /// is kept to prepend.
    fn env_of(&mut self, p: &Profile, vars: &Vars) -> anyhow::Result<()> {
        for (k, raw) in &p.env {
            if k.is_empty() || k.contains(['=', '\0']) || raw.contains('\0') {
                return Err(bad(p, "env", k, "not a valid environment entry"));
            }
            let v = &expand_value(raw, vars).map_err(|e| bad(p, "env", k, &e.to_string()))?;
            if let Some(var) = k.strip_suffix('+').filter(|v| !v.is_empty()) {
                self.prepend.entry(var.to_string()).or_default().push(v.clone());
                continue;
            }
            match self.env.get(k) {
                Some((v0, p0)) if v0 != v => {
                    let who = grants::who(p);
                    return Err(failure(POLICY, format!("env {k}: profile {p0} sets {v0:?}, {who} sets {v:?}")));
                }
                Some(_) => {}
                None => {
                    self.env.insert(k.clone(), (v.clone(), p.name.clone()));
                }
            }
        }
        Ok(())
    }
}

/// /dev, /proc and a private /tmp, unless a profile holds the path (see the module doc of
/// [`super`]).
fn base_mounts(mounts: &mut BTreeMap<PathBuf, Mount>) {
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
