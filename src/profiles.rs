//! Profiles: the builtin ones (`@sys`, `@home`, `@cwd-rw`, `@parent-ro`, `@net`,
//! `@tmp-shared`) and user profiles read from TOML files (SPEC P2, P3, O3).
//!
//! A profile is kept here as written: paths still hold their `{home}`, `{target}` and
//! `{target_parent}` placeholders. [`crate::policy`] expands and merges them.

mod file;
pub mod includes;
pub mod toolchains;

pub use file::{parse, parse_project};

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{failure, Failure, POLICY};
use crate::host::{Entry, Host, RealHost};

/// The profiles used unless `--no-defaults` is given, in this order (SPEC P1).
pub const DEFAULTS: [&str; 4] = ["@sys", "@home", "@cwd-rw", "@parent-ro"];

/// Host entries `@sys` reproduces as they are on the host: a `--symlink` when the host
/// has a symlink there (merged-/usr systems: `/bin -> usr/bin`), a read-only bind when it
/// is a real directory, nothing when absent. Programs and ELF interpreters use these paths
/// (`#!/bin/sh`, `/lib64/ld-linux-x86-64.so.2`), so they must resolve as on the host.
pub const SYS_LINKS: [&str; 6] = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// Files under /etc that `@sys` binds read-only when they exist on the host. Kept short on
/// purpose: everything else in /etc (shadow, ssh keys, machine-id, sudoers…) stays hidden.
pub const SYS_ETC: [&str; 15] = [
    // getpwuid(3)/getgrgid(3): `id`, `ls -l`, shells and prompts name the user.
    "/etc/passwd",
    "/etc/group",
    // nsswitch.conf(5) tells glibc where passwd, group and hosts lookups go.
    "/etc/nsswitch.conf",
    // Name resolution, used once `@net` gives a network (resolv.conf(5), gai.conf(5)).
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    // Local time zone for date(1), logs, timestamps (localtime(5)).
    "/etc/localtime",
    // ld.so(8) finds shared libraries in multiarch directories through its cache.
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    // Debian's update-alternatives(1): /usr/bin/awk, editor, java… point into it.
    "/etc/alternatives",
    // TLS trust anchors (not /etc/ssl as a whole: /etc/ssl/private holds keys).
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    // os-release(5): tools that ask which distribution they run on.
    "/etc/os-release",
];

/// Where a profile came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Compiled into snug (its name starts with `@`).
    Builtin,
    /// A user profile file `NAME.toml`.
    File(PathBuf),
    /// Grants on the command line (`--ro`, `--rw`, `--tmpfs`, `-e`; SPEC P5); the
    /// profile's name is the flag.
    CommandLine,
}

impl Source {
    /// `builtin` or the file's path, for messages.
    pub fn label(&self) -> String {
        match self {
            Source::Builtin => "builtin".to_string(),
            Source::File(p) => p.display().to_string(),
            Source::CommandLine => "command line".to_string(),
        }
    }
}

/// One profile as written, placeholders not yet expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// `@sys`, or the user profile's file stem.
    pub name: String,
    /// Builtin or the file it was read from.
    pub source: Source,
    /// One line for `profile list`.
    pub description: String,
    /// Further profiles this one pulls in.
    pub include: Vec<String>,
    /// Paths bound read-only; each must exist.
    pub ro: Vec<String>,
    /// Paths bound read-write; each must exist.
    pub rw: Vec<String>,
    /// Paths that get an empty private tmpfs.
    pub tmpfs: Vec<String>,
    /// Environment entries added to the clean environment.
    pub env: BTreeMap<String, String>,
    /// `@sys` only: add [`SYS_LINKS`] and the existing [`SYS_ETC`] entries.
    pub host_view: bool,
    /// `@net` only: the sandbox gets a network (SPEC N1).
    pub net: bool,
    /// `net_allow`: patterns for a network of snug's own (SPEC N5), as `--net-allow`.
    pub net_allow: Vec<String>,
    /// `max_procs`: a process cap (SPEC K5); the smallest of all profiles applies.
    pub max_procs: Option<u64>,
    /// `allow_userns`: the payload may create user namespaces of its own (SPEC X2); on when
    /// any profile in effect says so.
    pub allow_userns: bool,
    /// `memory`: a memory bound as written (`512M`); the smallest of all profiles applies.
    pub memory: Option<String>,
    /// `cow`: DIR is shown through a copy-on-write overlay (SPEC W1); on when any profile
    /// in effect says so.
    pub cow: bool,
    /// Builtins only: variables passed with the caller's value when the caller has one; a
    /// value that is an absolute path to something on the host is also shown read-only
    /// there (`@net`'s proxy and CA variables, [`NET_VARS`]).
    pub pass: Vec<String>,
    /// `unprotect`: protected paths (SPEC P8) this profile lets the payload write.
    pub unprotect: Vec<String>,
    /// Builtins only: a writable (`rw`) directory missing on the host is created at the run
    /// instead of skipped (a toolchain's cache, SPEC O8), so what the payload caches persists.
    pub create_rw: bool,
}

impl Profile {
    /// An empty builtin profile `name` with `description`, to fill in.
    pub(crate) fn builtin(name: &str, description: &str) -> Profile {
        Profile {
            name: name.to_string(),
            source: Source::Builtin,
            description: description.to_string(),
            include: Vec::new(),
            ro: Vec::new(),
            rw: Vec::new(),
            tmpfs: Vec::new(),
            env: BTreeMap::new(),
            host_view: false,
            net: false,
            net_allow: Vec::new(),
            max_procs: None,
            allow_userns: false,
            memory: None,
            cow: false,
            pass: Vec::new(),
            create_rw: false,
            unprotect: Vec::new(),
        }
    }
}

/// The variables `@net` passes from the caller (SPEC N1): proxies, as curl(1), pip, git and
/// npm read them, and the CA bundles that a TLS-intercepting network needs
/// (openssl's `SSL_CERT_FILE`/`SSL_CERT_DIR`, requests, node, pip, curl, git).
pub const NET_VARS: [&str; 15] = [
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "all_proxy",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
];

/// Names of the builtin profiles, in the order `profile list` shows them.
/// The toolchain ones (`@rust` …) come from [`crate::profiles::toolchains`].
pub const BUILTINS: [&str; 12] = [
    "@sys",
    "@home",
    "@cwd-rw",
    "@parent-ro",
    "@net",
    "@tmp-shared",
    "@rust",
    "@python",
    "@node",
    "@go",
    "@git",
    "@shell",
];

/// The builtin profile `name`, or `None` when there is no such builtin.
pub fn builtin(name: &str) -> Option<Profile> {
    let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let p = match name {
        "@sys" => Profile {
            ro: strs(&["/usr"]),
            host_view: true,
            ..Profile::builtin(name, "/usr, the /bin and /lib entries and a few /etc files, read-only")
        },
        "@home" => Profile {
            tmpfs: strs(&["{home}"]),
            ..Profile::builtin(name, "$HOME is an empty private tmpfs, gone after the run")
        },
        "@cwd-rw" => Profile { rw: strs(&["{target}"]), ..Profile::builtin(name, "DIR read-write") },
        "@parent-ro" => Profile {
            ro: strs(&["{target_parent}"]),
            ..Profile::builtin(name, "DIR's parent read-only (nothing when DIR is /)")
        },
        "@net" => Profile {
            net: true,
            pass: strs(&NET_VARS),
            ..Profile::builtin(
                name,
                "network through pasta (not the host's loopback), with your proxy and CA variables",
            )
        },
        "@tmp-shared" => Profile {
            rw: strs(&["/tmp"]),
            ..Profile::builtin(name, "the host's /tmp read-write instead of a private tmpfs")
        },
        _ => return toolchains::builtin(name),
    };
    Some(p)
}

/// A user profile name is a file stem: letters, digits, `-`, `_`, `.`, not starting with
/// `.`, so that a name can never walk out of the profile directory (`../x`).
pub fn valid_user_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Find and read profile `name`: a builtin when it starts with `@`, else the first
/// `NAME.toml` found in `dirs`, in order (first found wins).
///
/// # Errors
/// [`POLICY`] failures: unknown builtin, no such file in any directory, a file that cannot
/// be read or parsed.
pub fn load(name: &str, dirs: &[PathBuf], host: &dyn Host) -> anyhow::Result<Profile> {
    if name.starts_with('@') {
        return builtin(name)
            .ok_or_else(|| failure(POLICY, format!("unknown profile {name} (builtins: {})", BUILTINS.join(" "))));
    }
    if !valid_user_name(name) {
        return Err(failure(POLICY, format!("unknown profile {name:?}: not a valid profile name")));
    }
    for dir in dirs {
        let file = dir.join(format!("{name}.toml"));
        match host.read(&file) {
            Ok(Some(text)) => return parse(name, &file, &text),
            // The file is there, as a symlink to nothing: that, not "no such profile".
            Ok(None) => match host.lstat(&file) {
                Entry::Symlink(to) => {
                    let why = format!("a symlink to {}, which does not exist", to.display());
                    return Err(failure(POLICY, format!("{}: {why}", file.display())));
                }
                _ => continue,
            },
            Err(e) => return Err(failure(POLICY, format!("{}: {}", file.display(), crate::error::io_text(&e)))),
        }
    }
    let places: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    // Builtins are written with `@`; a bare builtin name is most likely that (`-p net`).
    let meant = builtin(&format!("@{name}")).map(|_| format!("; did you mean @{name}?")).unwrap_or_default();
    Err(failure(POLICY, format!("unknown profile {name}: no {name}.toml in {}{meant}", places.join(" or "))))
}

/// The user profile directories in search order: `$XDG_CONFIG_HOME/snug/profiles.d`
/// (default `$HOME/.config/snug/profiles.d`), then `/etc/snug/profiles.d` (SPEC P2).
/// A relative `XDG_CONFIG_HOME` is ignored, as the XDG Base Directory spec says, so a
/// profile is never read relative to the current directory.
pub fn config_dirs(env: &[(String, String)]) -> Vec<PathBuf> {
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| PathBuf::from(v));
    let user = get("XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| get("HOME").filter(|p| p.is_absolute()).map(|h| h.join(".config")));
    let mut dirs: Vec<PathBuf> = user.into_iter().map(|c| c.join("snug/profiles.d")).collect();
    dirs.push(PathBuf::from("/etc/snug/profiles.d"));
    dirs
}

pub fn host_dirs() -> Vec<PathBuf> {
    config_dirs(&crate::host::host_env())
}

/// `snug profile list`: the builtins, then every user profile with its file (SPEC O3).
///
/// # Errors
/// Never an error for now; the `Result` leaves room for unreadable directories to become errors.
pub fn list() -> anyhow::Result<String> {
    list_in(&host_dirs())
}

/// [`list`] over the directories `dirs` (tests use their own).
pub fn list_in(dirs: &[PathBuf]) -> anyhow::Result<String> {
    let mut out = String::from("builtin profiles (defaults: @sys @home @cwd-rw @parent-ro):\n");
    for name in BUILTINS {
        if let Some(p) = builtin(name) {
            let _ = writeln!(out, "  {name:<12} {}", p.description);
        }
    }
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut lines = Vec::new();
    // Each profile read once however many chains include it; an error kept as its line.
    let mut cache: BTreeMap<String, Result<Profile, crate::error::Failure>> = BTreeMap::new();
    let mut cached = |n: &str| {
        let r = cache.entry(n.to_string()).or_insert_with(|| {
            load(n, dirs, &RealHost).map_err(|e| Failure { code: POLICY, message: crate::error::one_line(&e) })
        });
        r.clone().map_err(anyhow::Error::from)
    };
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files {
            let Some(name) = file_stem_if_profile(&file) else {
                continue;
            };
            if let Some(first) = seen.get(&name) {
                lines.push(format!("  {name:<12} (shadowed by {})", first.display()));
                continue;
            }
            let desc = match RealHost.read(&file) {
                // SPEC P4: what `-p NAME` would refuse is marked here, includes followed.
                Ok(Some(text)) => match parse(&name, &file, &text)
                    .and_then(|p| includes::check_includes(&name, &mut cached).map(|()| p))
                {
                    Ok(p) if p.description.is_empty() => "(no description)".to_string(),
                    Ok(p) => p.description,
                    Err(e) => format!("(invalid: {})", crate::error::one_line(&e)),
                },
                Ok(None) => match std::fs::read_link(&file) {
                    Ok(to) => format!("(invalid: a symlink to {}, which does not exist)", to.display()),
                    Err(_) => continue,
                },
                Err(e) => format!("(invalid: {})", crate::error::io_text(&e)),
            };
            lines.push(format!("  {name:<12} {desc}\n  {:<12} {}", "", file.display()));
            seen.insert(name, file);
        }
    }
    let places: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let _ = writeln!(out, "\nuser profiles ({}):", places.join(", then "));
    if lines.is_empty() {
        out.push_str("  (none)\n");
    }
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    Ok(out)
}

/// `snug profile list --names`: every profile `-p` can name, builtins first, one a line
/// (for the completion scripts, SPEC O7).
pub fn names() -> String {
    let mut out: Vec<String> = BUILTINS.iter().map(|s| s.to_string()).collect();
    for dir in host_dirs() {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut found: Vec<String> = entries.filter_map(|e| file_stem_if_profile(&e.ok()?.path())).collect();
        found.sort();
        out.extend(found.into_iter().filter(|n| !out.contains(n)).collect::<Vec<_>>());
    }
    out.iter().map(|n| format!("{n}\n")).collect()
}

fn file_stem_if_profile(file: &Path) -> Option<String> {
    if file.extension()? != "toml" {
        return None;
    }
    let stem = file.file_stem()?.to_str()?;
    valid_user_name(stem).then(|| stem.to_string())
}

#[cfg(test)]
mod tests;
