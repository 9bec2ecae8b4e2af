//! Room for init at `/run/snug/init` (SPEC R4): bwrap makes that file in whatever the policy
//! put at `/run`. By default that is bwrap's own empty root, but a bind of the host's `/run`
//! (`--ro /run`) would have bwrap make it in the host's directory, which fails (read-only,
//! or `/run/snug` is root's and closed to a user) and used to end every run with 69, as if
//! a host capability were missing.

use crate::error::{failure, POLICY};
use crate::policy::{MountKind, Policy};
use std::path::{Path, PathBuf};

/// Where init goes, as a directory: its parent.
fn init_dir() -> &'static Path {
    Path::new(crate::bwrap::INIT_PATH).parent().unwrap_or(Path::new("/run"))
}

/// With a bind of the host's providing `/run/snug`, an empty tmpfs over it for init's file
/// (added to `masks`, which bwrap mounts before init's bind), when the host has that
/// directory for the tmpfs to go on; else the run is refused, naming the grant.
///
/// # Errors
/// 77 (policy) naming the bind, when the host has no `/run/snug` below it.
pub fn make_room(policy: &Policy, masks: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let dir = init_dir();
    if masks.iter().any(|m| dir.starts_with(m)) {
        return Ok(());
    }
    let Some((m, _)) = crate::bwrap::provider(policy, dir) else { return Ok(()) };
    if !matches!(m.kind, MountKind::Ro | MountKind::Rw) {
        return Ok(());
    }
    let on_host = m.src.as_deref().map(|s| s.join(dir.strip_prefix(&m.dest).unwrap_or(Path::new(""))));
    if on_host.as_deref().is_some_and(Path::is_dir) {
        masks.push(dir.to_path_buf());
        return Ok(());
    }
    let grant = m.src.as_deref().unwrap_or(&m.dest).display();
    Err(failure(
        POLICY,
        format!(
            "the bind of {grant} at {} leaves no room for snug's init at {}: bind narrower paths \
             below it (such as --ro /run/dbus)",
            m.dest.display(),
            crate::bwrap::INIT_PATH
        ),
    ))
}
