//! The note for a command that is another program in the sandbox than on the caller's PATH
//! (SPEC O8): pyenv's `python3` on the caller's PATH, `/usr/bin/python3` inside, because
//! `@home` hides `~/.pyenv` and the sandbox's PATH is fixed (P1).

use std::path::{Path, PathBuf};

use crate::policy::{MountKind, Policy};

/// `note: python3 is /usr/bin/python3 in the sandbox, not /root/.pyenv/shims/python3 as on
/// your PATH; -p @python shows yours`, or `None` when both name the same file, `cmd` is a
/// path, or the sandbox has no such command (the 127 message says that, `crate::hints::not_found`).
pub fn other_program(cmd: &str, policy: &Policy) -> Option<String> {
    let caller = crate::hints::on_path(cmd, &crate::hints::caller_path())?;
    other_program_for(cmd, &caller, policy)
}

/// [`other_program`] for a caller whose PATH finds `caller` for `cmd`.
pub fn other_program_for(cmd: &str, caller: &Path, policy: &Policy) -> Option<String> {
    let path = policy.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone()).unwrap_or_default();
    let inside = std::env::split_paths(&path)
        .filter(|d| d.is_absolute() && visible(d, policy))
        .find_map(|d| crate::hints::on_path(cmd, d.as_os_str()))?;
    let same = |a: &Path, b: &Path| a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
    if same(&inside, caller) {
        return None;
    }
    let home = policy.home.to_string_lossy();
    let shown = caller.to_string_lossy();
    let fix = match crate::profiles::toolchains::profile_showing(&shown, &home) {
        Some(p) if !policy.profiles.iter().any(|q| q == p) => format!("-p {p} shows yours"),
        Some(_) => return None, // the profile is in effect: what it shows is what runs
        None => {
            let dir = caller.parent().map(Path::to_path_buf).unwrap_or_default();
            format!("the sandbox does not show {}", dir.display())
        }
    };
    Some(format!("note: {cmd} is {} in the sandbox, not {shown} as on your PATH; {fix}", inside.display()))
}

/// Whether the sandbox shows host directory `dir` as it is: the nearest mount at or above it
/// is a bind or a host symlink, not a tmpfs (an empty `$HOME`) and not nothing (bwrap's
/// empty root).
fn visible(dir: &Path, policy: &Policy) -> bool {
    let mut best: Option<(&PathBuf, MountKind)> = None;
    for m in &policy.mounts {
        if dir.starts_with(&m.dest) && best.is_none_or(|(d, _)| m.dest.components().count() > d.components().count()) {
            best = Some((&m.dest, m.kind));
        }
    }
    matches!(best, Some((_, MountKind::Ro | MountKind::Rw | MountKind::Symlink)))
}
