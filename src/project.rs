//! A project's own policy (SPEC P6): `DIR/.snug.toml`, the keys of a profile plus
//! `profiles = [...]`. DIR is untrusted, so the file is applied only after its user allowed
//! that exact content: `snug allow [DIR]` records its SHA-256 (FIPS 180-4) in the user's state
//! directory, keyed by DIR's canonical path, as `direnv allow` does, with a copy of what was
//! allowed so a changed file can be reviewed with `diff`. A file never allowed, or changed
//! since, is refused (77) with the command that shows it; `--no-project` skips it.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{failure, OS_ERROR, POLICY, USAGE};
use crate::host::{Entry, Host};
use crate::profiles::Profile;
use crate::quote::quote;

/// The project file's name in DIR.
pub const FILE: &str = ".snug.toml";

/// The project profile's name in the policy (`--dry-run`, messages).
pub const NAME: &str = ".snug.toml";

/// snug's state directory: `$XDG_STATE_HOME/snug`, else `$HOME/.local/state/snug` (the
/// XDG Base Directory spec; a relative value is ignored, as it says).
pub fn state_dir(env: &[(String, String)]) -> Option<PathBuf> {
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| PathBuf::from(v)).filter(|p| p.is_absolute());
    get("XDG_STATE_HOME").map(|s| s.join("snug")).or_else(|| get("HOME").map(|h| h.join(".local/state/snug")))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// SHA-256 of `data`, in hex.
pub fn sha256(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// The record for DIR `target`: `allowed/<sha256 of the path>` holds the allowed content's
/// hash and the path; `.toml` beside it, a copy of that content.
fn record(state: &Path, target: &Path) -> (PathBuf, PathBuf) {
    let key = sha256(target.as_os_str().as_encoded_bytes());
    let dir = state.join("allowed");
    (dir.join(&key), dir.join(format!("{key}.toml")))
}

/// The project profile of DIR `target` and the profiles it adds, when DIR has a
/// `.snug.toml` that its user allowed; `None` when there is none.
///
/// # Errors
/// [`POLICY`] (77): a file not allowed, changed since allowed, unreadable or not valid.
pub fn load(
    target: &Path,
    env: &[(String, String)],
    host: &dyn Host,
) -> anyhow::Result<Option<(Profile, Vec<String>)>> {
    let file = target.join(FILE);
    match host.lstat(&file) {
        Entry::Missing => return Ok(None),
        // The placeholder a run keeps there while `.snug.toml` is protected and missing
        // (SPEC P8), marked by its mode: no policy. Any other directory is a mistake to say,
        // not a policy to pass over in silence (P6).
        Entry::Dir if placeholder(&file) => return Ok(None),
        Entry::Dir => {
            let why = "a directory, not a policy file: remove it, or run with --no-project";
            return Err(failure(POLICY, format!("{}: {why}", file.display())));
        }
        _ => {}
    }
    let text = match host.read(&file) {
        Ok(Some(t)) => t,
        Ok(None) => return Err(failure(POLICY, format!("{}: a symlink to nothing", file.display()))),
        Err(e) => return Err(failure(POLICY, format!("{}: {}", file.display(), crate::error::io_text(&e)))),
    };
    let shown = quote(&file.to_string_lossy()).into_owned();
    let dir = quote(&target.to_string_lossy()).into_owned();
    let how = format!("then snug allow {dir}, or run with --no-project");
    let state = state_dir(env);
    let (rec, copy) = match &state {
        Some(s) => record(s, target),
        None => return Err(failure(POLICY, format!("{shown} cannot be allowed: HOME is not set"))),
    };
    let recorded = std::fs::read_to_string(&rec).unwrap_or_default();
    let recorded = recorded.split_whitespace().next().unwrap_or_default();
    if recorded.is_empty() {
        let why = format!("{shown} is not allowed: review it (cat {shown}), {how}");
        return Err(failure(POLICY, why));
    }
    if recorded != sha256(text.as_bytes()) {
        let saved = quote(&copy.to_string_lossy()).into_owned();
        let why = format!("{shown} changed since you allowed it: review it (diff -u {saved} {shown}), {how}");
        return Err(failure(POLICY, why));
    }
    parse(&file, &text).map(Some)
}

/// Whether the directory at `path` is a run's placeholder: its mode is exactly the mode runs
/// make them with (`protect::placeholder::DIR_MODE`, not imported: protect reads the policy).
fn placeholder(path: &Path) -> bool {
    const PLACEHOLDER_MODE: u32 = 0o1500;
    rustix::fs::lstat(path).is_ok_and(|st| st.st_mode & 0o7777 == PLACEHOLDER_MODE)
}

fn parse(file: &Path, text: &str) -> anyhow::Result<(Profile, Vec<String>)> {
    crate::profiles::parse_project(NAME, file, text)
}

/// `snug allow [DIR]` (or `--revoke`): record (or forget) DIR's `.snug.toml` as it is now;
/// the caller gives the project root a run would take when the command line has no DIR.
/// Returns the line to print.
///
/// # Errors
/// [`USAGE`] when DIR or its file is missing, [`POLICY`] when the file is not valid,
/// [`OS_ERROR`] when the state directory cannot be written.
pub fn allow(dir: Option<PathBuf>, revoke: bool) -> anyhow::Result<String> {
    let mut env = crate::host::host_env();
    if !env.iter().any(|(k, _)| k == "HOME") {
        env.extend(crate::host::passwd_home().map(|h| ("HOME".to_string(), h)));
    }
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    let target = std::fs::canonicalize(&dir)
        .map_err(|e| failure(USAGE, format!("DIR {}: {}", dir.display(), crate::error::io_text(&e))))?;
    let state = state_dir(&env).ok_or_else(|| failure(USAGE, "HOME must be set to an absolute path"))?;
    let (rec, copy) = record(&state, &target);
    let file = target.join(FILE);
    if revoke {
        let _ = std::fs::remove_file(&copy);
        return match std::fs::remove_file(&rec) {
            Ok(()) => Ok(format!("revoked {}\n", file.display())),
            Err(_) => Ok(format!("{} was not allowed\n", file.display())),
        };
    }
    let text = match crate::host::RealHost.read(&file) {
        Ok(Some(t)) => t,
        Ok(None) => return Err(failure(USAGE, format!("no {FILE} in {}", target.display()))),
        Err(e) => return Err(failure(POLICY, format!("{}: {}", file.display(), crate::error::io_text(&e)))),
    };
    // Never record a file that would then fail: its own text, and every profile it names
    // (`profiles`, `include`) with what those include, as a run would load them (SPEC P6).
    let (own, named) = parse(&file, &text)?;
    let dirs = crate::profiles::config_dirs(&env);
    let mut load = |n: &str| crate::profiles::load(n, &dirs, &crate::host::RealHost);
    for name in named.iter().chain(&own.include) {
        crate::profiles::includes::check_includes(name, &mut load)
            .map_err(|e| failure(POLICY, format!("{}: {}", file.display(), crate::error::one_line(&e))))?;
    }
    let hash = sha256(text.as_bytes());
    let os = |e: std::io::Error| failure(OS_ERROR, format!("{}: {}", state.display(), crate::error::io_text(&e)));
    let parent = rec.parent().unwrap_or(&state);
    // The user's alone: what they allowed is nobody else's business.
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent).map_err(os)?;
    write_new(&copy, text.as_bytes()).map_err(os)?;
    write_new(&rec, format!("{hash} {}\n", target.display()).as_bytes()).map_err(os)?;
    Ok(format!("allowed {} (sha256 {hash})\n", file.display()))
}

/// Write `path` whole: a temporary file beside it, renamed over it.
fn write_new(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}
