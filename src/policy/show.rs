//! `snug profile show NAME` (SPEC O3): a profile with its paths resolved for this caller
//! (`{home}` = `$HOME`, `{target}` = the current directory as DIR), each path marked when it
//! is missing on this host: skipped for an optional (`?`) entry, an error at run time otherwise.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{expand_for, optional};
use crate::error::{failure, USAGE};
use crate::host::{Entry, Host, RealHost};
use crate::profiles::{host_dirs, load, SYS_ETC, SYS_LINKS};

/// The protected paths at the root of DIR and of every `rw` grant (SPEC P8), as the docs
/// and `snug profile show` list them ([`crate::protect`] finds them).
pub const PROTECTED: [&str; 15] = [
    ".git/hooks",
    "the hooks directory core.hooksPath names in .git/config, when it lies in DIR or the grant",
    ".git/config",
    "the files include.path and includeIf.*.path name in .git/config, when they lie in DIR or the grant",
    ".git/config.worktree",
    ".git/commondir",
    ".git/modules/*/config",
    ".git/modules/*/hooks",
    ".git/modules/NAME of a submodule .gitmodules names that is not initialised yet",
    ".git as a file (a worktree or submodule): itself, and the hooks and config of the git directory it names",
    ".gitmodules",
    ".envrc",
    ".vscode/",
    ".idea/",
    ".snug.toml",
];

/// `snug profile show NAME` for the caller: HOME from the environment, DIR = the current
/// directory.
///
/// # Errors
/// [`crate::error::POLICY`] when the profile does not exist or its file is bad; [`USAGE`]
/// when HOME is unset or the current directory is gone.
pub fn show(name: &str) -> anyhow::Result<String> {
    let env = crate::host::host_env();
    let home = env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| PathBuf::from(v)).filter(|h| h.is_absolute());
    let home = home.ok_or_else(|| failure(USAGE, "HOME must be set to an absolute path"))?;
    let cwd = std::env::current_dir().map_err(|e| failure(USAGE, format!("current directory: {e}")))?;
    show_in(name, &host_dirs(), &RealHost, &home, &cwd)
}

/// [`show`] over the directories `dirs`, the host view `host`, HOME `home` and DIR `target`.
///
/// # Errors
/// As [`show`].
pub fn show_in(name: &str, dirs: &[PathBuf], host: &dyn Host, home: &Path, target: &Path) -> anyhow::Result<String> {
    let p = load(name, dirs, host)?;
    let mut out = String::new();
    let _ = writeln!(out, "profile {}  ({})", p.name, p.source.label());
    if !p.description.is_empty() {
        let _ = writeln!(out, "  description: {}", p.description);
    }
    let _ = writeln!(out, "  (resolved for HOME={} and DIR={})", home.display(), target.display());
    if !p.include.is_empty() {
        let _ = writeln!(out, "  include: {}", p.include.join(" "));
    }
    for (word, list) in [("ro", &p.ro), ("rw", &p.rw), ("tmpfs", &p.tmpfs)] {
        for written in list {
            let (opt, raw) = optional(written);
            let line = match expand_for(raw, home, target, true) {
                Ok(None) => format!("{raw}  (nothing: DIR's parent is /)"),
                Err(e) => format!("{raw}  (invalid: {e})"),
                Ok(Some(path)) if word != "tmpfs" && host.stat(Path::new(&path)) == Entry::Missing => {
                    let what = match (opt, word == "rw" && p.create_rw) {
                        (true, true) => "not on this host: created at the run",
                        (true, false) => "not on this host: skipped",
                        (false, _) => "missing: a run fails",
                    };
                    format!("{path}  ({what})")
                }
                Ok(Some(path)) => path,
            };
            let _ = writeln!(out, "  {word:<7} {line}");
        }
    }
    if p.host_view {
        let _ = writeln!(out, "  as-host {}  (symlink or ro, as on the host)", SYS_LINKS.join(" "));
        for path in SYS_ETC {
            let there = if host.stat(Path::new(path)) == Entry::Missing { "not on this host: skipped" } else { "" };
            let _ = writeln!(
                out,
                "  ro      {path}{}",
                if there.is_empty() { String::new() } else { format!("  ({there})") }
            );
        }
    }
    if p.net {
        out.push_str("  network: pasta\n");
    }
    for pattern in &p.net_allow {
        let _ = writeln!(out, "  net-allow {pattern}  (a network of snug's own)");
    }
    if !p.pass.is_empty() {
        let names = p.pass.join(" ");
        let _ = writeln!(out, "  pass    {names}  (your values when set; a file or directory one names, read-only)");
    }
    for raw in &p.unprotect {
        let line = expand_for(raw, home, target, true).ok().flatten().unwrap_or_else(|| raw.clone());
        let _ = writeln!(out, "  unprotect {line}  (the payload may write it)");
    }
    for (k, v) in &p.env {
        let value = expand_for(v, home, target, false).ok().flatten().unwrap_or_else(|| v.clone());
        match k.strip_suffix('+') {
            Some(var) => {
                let _ = writeln!(out, "  env     {var}={value}:…  (put before {var})");
            }
            None => {
                let _ = writeln!(out, "  env     {k}={value}");
            }
        }
    }
    if !p.rw.is_empty() {
        out.push_str(
            "  protected at the root of each rw path (read-only to the payload; --unprotect PATH lifts one):\n",
        );
        for path in PROTECTED {
            let _ = writeln!(out, "    {path}");
        }
    }
    if p.create_rw {
        let _ = writeln!(out, "  note: {}", crate::profiles::toolchains::CACHES_RISK);
    }
    Ok(out)
}
