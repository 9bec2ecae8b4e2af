//! A profile file's text to a [`Profile`] (SPEC P2, P3), and a project's `.snug.toml`, which
//! holds the same keys plus `profiles` (P6): one set of keys, one parser.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{Profile, Source};
use crate::error::{failure, POLICY};

/// The keys a profile file may hold, exactly (SPEC P2); anything else is an error (P3).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    description: String,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    ro: Vec<String>,
    #[serde(default)]
    rw: Vec<String>,
    #[serde(default)]
    tmpfs: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    max_procs: Option<u64>,
    memory: Option<String>,
    #[serde(default)]
    allow_userns: bool,
    /// Protected paths the payload may write (SPEC P8).
    #[serde(default)]
    unprotect: Vec<String>,
    /// SPEC W1: DIR through a copy-on-write overlay.
    #[serde(default)]
    cow: bool,
    #[serde(default)]
    net_allow: Vec<String>,
    /// Only in a project's `.snug.toml` (SPEC P6): more profiles to add, as `-p`.
    profiles: Option<Vec<String>>,
}

/// Parse the text of profile file `file` named `name`.
///
/// # Errors
/// A [`POLICY`] failure naming the file, the line and the offending key: unknown key,
/// wrong type, bad TOML (SPEC P3).
pub fn parse(name: &str, file: &Path, text: &str) -> anyhow::Result<Profile> {
    let (profile, profiles) = parse_any(name, file, text)?;
    if profiles.is_some() {
        return Err(failure(
            POLICY,
            format!("{}: unknown field `profiles` (only a project's .snug.toml has it)", file.display()),
        ));
    }
    Ok(profile)
}

/// A project's `.snug.toml` (SPEC P6): the keys of a profile file, plus `profiles`; the
/// profile, and the profiles it adds (`profiles`, then `include`, as `-p`).
///
/// # Errors
/// As [`parse`].
pub fn parse_project(name: &str, file: &Path, text: &str) -> anyhow::Result<(Profile, Vec<String>)> {
    let (mut profile, profiles) = parse_any(name, file, text)?;
    let mut more = profiles.unwrap_or_default();
    more.append(&mut profile.include);
    Ok((profile, more))
}

fn parse_any(name: &str, file: &Path, text: &str) -> anyhow::Result<(Profile, Option<Vec<String>>)> {
    let parsed: ProfileFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let at = line.map(|l| format!(":{l}")).unwrap_or_default();
        failure(POLICY, format!("{}{at}: {}", file.display(), e.message()))
    })?;
    let profile = Profile {
        name: name.to_string(),
        source: Source::File(file.to_path_buf()),
        description: parsed.description,
        include: parsed.include,
        ro: parsed.ro,
        rw: parsed.rw,
        tmpfs: parsed.tmpfs,
        env: parsed.env,
        host_view: false,
        net: false,
        net_allow: parsed.net_allow,
        max_procs: parsed.max_procs,
        memory: parsed.memory,
        pass: Vec::new(),
        create_rw: false,
        allow_userns: parsed.allow_userns,
        unprotect: parsed.unprotect,
        cow: parsed.cow,
    };
    Ok((profile, parsed.profiles))
}
