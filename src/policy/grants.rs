//! Grants on the command line (SPEC P5): `--ro`, `--rw`, `--tmpfs` and `-e` become one
//! profile per flag, named after the flag and applied after every other profile, so they
//! go through exactly the checks, merge rules and messages of the profile keys `ro`, `rw`,
//! `tmpfs` and `env` — except that a message names the flag (`--ro "/x": /x does not
//! exist`), and `--dry-run` shows the flag as the mount's origin.

use std::path::Path;

use crate::error::{failure, USAGE};
use crate::profiles::{Profile, Source};

/// Grants on the command line (SPEC P5), as written: checked and expanded by
/// [`crate::policy`] under the same rules as the profile keys of the same name (the plan
/// side owns the type; the command line only fills it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// `--ro PATH`, repeatable.
    pub ro: Vec<String>,
    /// `--rw PATH`, repeatable.
    pub rw: Vec<String>,
    /// `--tmpfs PATH`, repeatable.
    pub tmpfs: Vec<String>,
    /// `-e NAME` or `-e NAME=VALUE`, repeatable, in order; a value that is not UTF-8 is
    /// here as text (U+FFFD for what is not) and in `env_bytes` as it was given.
    pub env: Vec<String>,
    /// `-e NAME=VALUE` whose VALUE is not UTF-8: (index in `env`, VALUE's bytes) (R7).
    pub env_bytes: Vec<EnvBytes>,
    /// `--unprotect PATH`, repeatable: a protected path (SPEC P8) the payload may write.
    pub unprotect: Vec<String>,
}

/// The grants as profiles `--ro`, `--rw`, `--tmpfs`, `-e` (only those given). A relative
/// path is made absolute against the current directory (lexically; `..` is refused later,
/// as in a profile). `-e NAME` takes the caller's value from `host_env`, and is left out
/// when the caller has none (as env(1) and `docker run -e` do); a later `-e` of the same
/// name wins.
pub(super) fn as_profiles(g: &Grants, host_env: &[(String, String)]) -> Vec<Profile> {
    let mut out = Vec::new();
    for (flag, list) in [("--ro", &g.ro), ("--rw", &g.rw), ("--tmpfs", &g.tmpfs)] {
        if list.is_empty() {
            continue;
        }
        let mut p = flag_profile(flag);
        let paths = list.iter().map(|raw| absolute(raw)).collect();
        match flag {
            "--ro" => p.ro = paths,
            "--rw" => p.rw = paths,
            _ => p.tmpfs = paths,
        }
        out.push(p);
    }
    if !g.unprotect.is_empty() {
        let mut p = flag_profile("--unprotect");
        p.unprotect = g.unprotect.iter().map(|raw| absolute(raw)).collect();
        out.push(p);
    }
    if !g.env.is_empty() {
        let mut p = flag_profile("-e");
        for entry in &g.env {
            match entry.split_once('=') {
                Some((k, v)) => {
                    p.env.insert(k.to_string(), v.to_string());
                }
                None => {
                    if let Some((_, v)) = host_env.iter().find(|(k, _)| k == entry) {
                        p.env.insert(entry.clone(), v.clone());
                    } else if entry.is_empty() {
                        // Checked (and refused) with the other entries.
                        p.env.insert(String::new(), String::new());
                    }
                }
            }
        }
        out.push(p);
    }
    out
}

/// `-e NAME` entries whose caller's value is not UTF-8 (R7: it reaches the payload byte
/// for byte), as (NAME, value), unless a later `-e NAME=VALUE` replaces it. Resolution
/// holds text only; [`with_raw_values`] puts these in place afterwards.
pub fn raw_values(g: &Grants) -> Vec<(String, std::ffi::OsString)> {
    let mut out: Vec<(String, std::ffi::OsString)> = Vec::new();
    for (i, name) in g.env.iter().enumerate().filter(|(_, e)| !e.contains('=') && !e.is_empty()) {
        let later = g.env[i + 1..].iter().any(|e| e == name || e.split_once('=').is_some_and(|(k, _)| k == name));
        let Some(v) = std::env::var_os(name).filter(|v| v.to_str().is_none()) else { continue };
        if !later {
            out.push((name.clone(), v));
        }
    }
    for (i, v) in &g.env_bytes {
        let name = g.env[*i].split_once('=').map_or("", |(k, _)| k);
        let later = g.env[i + 1..].iter().any(|e| e == name || e.split_once('=').is_some_and(|(k, _)| k == name));
        if !later {
            out.retain(|(k, _)| k != name);
            out.push((name.to_string(), v.clone()));
        }
    }
    out
}

/// A `-e NAME=VALUE` whose VALUE is not UTF-8: its index among the `-e` entries, and VALUE.
pub type EnvBytes = (usize, std::ffi::OsString);

/// `-e` as given: each entry checked ([`check_env_entry`]; a NAME that is not UTF-8 is a
/// usage error naming it), as text for resolution, with the bytes of each VALUE that is not
/// UTF-8 kept aside so that they reach the payload as they are (R7).
///
/// # Errors
/// 64 naming the entry.
pub fn env_entries(given: Vec<std::ffi::OsString>) -> anyhow::Result<(Vec<String>, Vec<EnvBytes>)> {
    use std::os::unix::ffi::OsStrExt;
    let (mut text, mut bytes) = (Vec::new(), Vec::new());
    for (i, entry) in given.into_iter().enumerate() {
        let raw = entry.as_bytes();
        let (name, value) = match raw.iter().position(|b| *b == b'=') {
            Some(at) => (&raw[..at], Some(&raw[at + 1..])),
            None => (raw, None),
        };
        if std::str::from_utf8(name).is_err() {
            let shown = crate::quote::quote_bytes(raw);
            return Err(failure(USAGE, format!("-e {shown}: the variable's name is not UTF-8 text")));
        }
        let lossy = entry.to_string_lossy().into_owned();
        check_env_entry(&lossy)?;
        if let Some(v) = value.filter(|v| std::str::from_utf8(v).is_err()) {
            bytes.push((i, std::ffi::OsStr::from_bytes(v).to_owned()));
        }
        text.push(lossy);
    }
    Ok((text, bytes))
}

/// The payload's environment as bytes: `env` with each of `raw` in place of, or after, the
/// entry of its name.
pub fn with_raw_values(
    env: &[(String, String)],
    raw: &[(String, std::ffi::OsString)],
) -> Vec<(String, std::ffi::OsString)> {
    let mut out: Vec<(String, std::ffi::OsString)> = env.iter().map(|(k, v)| (k.clone(), v.into())).collect();
    for (k, v) in raw {
        match out.iter_mut().find(|(n, _)| n == k) {
            Some(slot) => slot.1 = v.clone(),
            None => out.push((k.clone(), v.clone())),
        }
    }
    out
}

/// `-e NAME` or `-e NAME=VALUE`: NAME must be a name a program can look up, not empty, with
/// no `=`, white space or control character (`environ(7)`; R4: a usage error, 64).
pub fn check_env_entry(entry: &str) -> anyhow::Result<()> {
    let name = entry.split_once('=').map_or(entry, |(k, _)| k);
    // Control characters written as escapes: never raw on the caller's terminal.
    let escaped = |s: &str| crate::quote::quote(&s.escape_debug().to_string()).into_owned();
    let shown = escaped(entry);
    if name.is_empty() {
        return Err(failure(
            USAGE,
            format!("-e {shown}: the variable's name is empty (write -e NAME or -e NAME=VALUE)"),
        ));
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        let name = escaped(name);
        return Err(failure(
            USAGE,
            format!("-e {shown}: {name} is not a variable name (no spaces or control characters in a name)"),
        ));
    }
    Ok(())
}

/// The paths every profile's `unprotect` names (SPEC P8), expanded and checked as a mount's.
pub(super) fn lifted(order: &[Profile], vars: &super::values::Vars) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for p in order {
        for raw in &p.unprotect {
            match super::values::expand(raw, vars) {
                Ok(Some(path)) => out.push(path),
                Ok(None) => {}
                Err(e) => return Err(super::bad(p, "unprotect", raw, &e.to_string())),
            }
        }
    }
    Ok(out)
}

/// How an env conflict names the one that set the second value: `profile NAME`, or the flag.
pub(super) fn who(p: &Profile) -> String {
    match p.source {
        Source::CommandLine => p.name.clone(),
        _ => format!("profile {}", p.name),
    }
}

fn flag_profile(flag: &str) -> Profile {
    let mut p = Profile::builtin(flag, "grants on the command line");
    p.source = Source::CommandLine;
    p
}

/// `raw` unchanged when absolute or starting with a placeholder (`{home}/x`), else joined
/// to the current directory.
fn absolute(raw: &str) -> String {
    // `?PATH`, optional as in a profile: the mark stays in front of the absolute path.
    if let Some(rest) = raw.strip_prefix('?') {
        return format!("?{}", absolute(rest));
    }
    if raw.starts_with('/') || raw.starts_with('{') || raw.is_empty() {
        return raw.to_string();
    }
    match std::env::current_dir() {
        Ok(cwd) => Path::new(&cwd).join(raw).to_string_lossy().into_owned(),
        Err(_) => raw.to_string(),
    }
}
