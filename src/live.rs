//! Live sandboxes (SPEC L1–L5): every run has a name and one control socket,
//! `$XDG_RUNTIME_DIR/snug/NAME.sock` (root: `/run/snug/NAME.sock`; a user without
//! `XDG_RUNTIME_DIR`: `/tmp/snug-UID/`), mode 0600 in a 0700 directory the user owns, with
//! a lock file beside it ([`lockfile`]: how a stopped run is reached). `snug ps`, `stop`,
//! `signal` and `exec` reach a run through them; the run's side is [`server::Server`], one
//! more descriptor in the supervisor's poll loop (no thread).

mod appear;
pub mod client;
pub mod exec;
pub mod lockfile;
mod peer;
pub mod ps;
pub mod runtime;
pub mod server;
pub mod socket;
pub mod stop;
pub mod wire;

use crate::error::{failure, OS_ERROR, USAGE};
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether `name` may name a run: 1–64 of `A-Z a-z 0-9 _ . -`, not starting with `.` or `-`.
pub fn valid_name(name: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || "_.-".contains(c);
    (1..=64).contains(&name.len()) && name.chars().all(ok) && !name.starts_with(['.', '-'])
}

/// Check a `--name` or a NAME argument.
///
/// # Errors
/// 64 with the rule.
pub fn check_name(name: &str) -> anyhow::Result<()> {
    if valid_name(name) {
        return Ok(());
    }
    Err(failure(USAGE, format!("bad name {name:?}: use 1-64 letters, digits, '_', '.', '-' (not first)")))
}

/// A short name for a run without `--name`: the command's base name and four random hex
/// digits, e.g. `sleep-3fa2` (`getrandom(2)`).
pub fn generated_name(cmd: &[OsString]) -> String {
    let base = cmd.first().map(|c| Path::new(c).file_name().unwrap_or(c).to_string_lossy().into_owned());
    let mut stem: String = base.unwrap_or_default().chars().filter(|c| c.is_ascii_alphanumeric()).take(16).collect();
    if stem.is_empty() {
        stem = "run".into();
    }
    let mut r = [0u8; 2];
    let _ = rustix::rand::getrandom(&mut r, rustix::rand::GetRandomFlags::empty());
    format!("{stem}-{:02x}{:02x}", r[0], r[1])
}

/// This user's directory of control sockets (not created).
pub fn own_dir() -> PathBuf {
    if euid() == 0 {
        return PathBuf::from("/run/snug");
    }
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        // Only a runtime directory that is this user's own (a `sudo` may leave another's).
        Some(x) if x.is_absolute() && std::fs::metadata(&x).is_ok_and(|m| m.is_dir() && m.uid() == euid()) => {
            x.join("snug")
        }
        _ => PathBuf::from(format!("/tmp/snug-{}", euid())),
    }
}

/// Whether `dir` is a real directory (no symlink) owned by `uid` that nobody else may write
/// to (so no one else can plant or replace a socket in it). snug creates it 0700.
pub(crate) fn private_dir(dir: &Path, uid: u32) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0)
}

/// [`own_dir`], created 0700 when missing and checked: a directory this user owns that no
/// one else can write to (a `/tmp/snug-UID` planted by another user is refused).
///
/// # Errors
/// 71 when it cannot be created or is not private.
pub fn ensure_own_dir() -> anyhow::Result<PathBuf> {
    let dir = own_dir();
    if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            let what = crate::error::io_text(&e);
            return Err(failure(OS_ERROR, format!("cannot create {}: {what}", dir.display())));
        }
    }
    if !private_dir(&dir, euid()) {
        return Err(failure(OS_ERROR, format!("{} is not a directory only this user owns and enters", dir.display())));
    }
    Ok(dir)
}

/// The directories `ps` looks in: the caller's own; for root, every user's too (SPEC L1).
pub fn dirs_to_scan() -> Vec<(PathBuf, Option<u32>)> {
    dirs_to_scan_near(&|_, _| true)
}

/// [`dirs_to_scan`], reading the directories that hold other users' (`/run/user`, `/tmp`)
/// only where `near(dir, prefix)` says one of their entries named `prefix…` matters: a
/// run's masks need only those its binds could show (`/tmp` has hundreds of entries on a
/// busy host, SPEC B1).
pub fn dirs_to_scan_near(near: &dyn Fn(&Path, &str) -> bool) -> Vec<(PathBuf, Option<u32>)> {
    let mut dirs = vec![(own_dir(), Some(euid()))];
    if euid() != 0 {
        return dirs;
    }
    let mut add = |pattern_dir: &str, under: &str, prefix: &str| {
        if !near(Path::new(pattern_dir), prefix) {
            return;
        }
        for e in std::fs::read_dir(pattern_dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(uid) = name.strip_prefix(prefix).and_then(|u| u.parse::<u32>().ok()) else { continue };
            let d = e.path().join(under);
            if !dirs.iter().any(|(x, _)| *x == d) {
                dirs.push((d, Some(uid)));
            }
        }
    };
    add("/run/user", "snug", "");
    add("/tmp", "", "snug-");
    dirs.into_iter().map(|(d, u)| (d.components().collect(), u)).collect()
}

/// The control sockets in `dir` that `uid` owns (and are private), as (name, path).
pub fn sockets_in(dir: &Path, uid: Option<u32>) -> Vec<(String, PathBuf)> {
    files_in(dir, uid, ".sock")
}

/// The files `NAME` + `suffix` in `dir` (private to `uid` when given), as (name, path).
pub fn files_in(dir: &Path, uid: Option<u32>, suffix: &str) -> Vec<(String, PathBuf)> {
    if uid.is_some_and(|u| !private_dir(dir, u)) {
        return Vec::new();
    }
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let name = n.strip_suffix(suffix)?.to_string();
            valid_name(&name).then(|| (name, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Make `path` mode 0600 (a socket's mode decides who may `connect(2)` to it, `unix(7)`).
///
/// # Errors
/// The `chmod(2)` error.
pub fn private_mode(path: &Path) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l1_names() {
        assert!(valid_name("build-1") && valid_name("a") && valid_name("x.y_z"));
        for bad in ["", ".x", "-x", "a/b", "a b", "ä", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        let g = generated_name(&[OsString::from("/usr/bin/sleep"), OsString::from("5")]);
        assert!(g.starts_with("sleep-") && g.len() == 10 && valid_name(&g), "{g}");
        assert!(generated_name(&[]).starts_with("run-"));
    }
}
