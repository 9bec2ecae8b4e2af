//! What a run takes from the caller beyond the profiles' own entries: the variables a
//! profile passes with the caller's value (`@net`'s proxy and CA ones, SPEC N1) and the
//! toolchain caches created before the run (SPEC O8).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::values::io_text;
use super::values::normalise;
use super::{ask, Mount, MountKind, Policy};
use crate::host::{Entry, Host};
use crate::profiles::Profile;

/// A profile's `pass` variables (`@net`'s proxy and CA ones): the caller's value when it has
/// one, and what an absolute value names read-only when it exists on the host (the CA file
/// a TLS-intercepting network needs). Never `/`, /dev or /proc; a later profile's value wins.
pub(super) fn passed(
    p: &Profile,
    host_env: &[(String, String)],
    host: &dyn Host,
    env: &mut BTreeMap<String, (String, String)>,
    mounts: &mut BTreeMap<PathBuf, Mount>,
) {
    for name in &p.pass {
        let Some((_, value)) = host_env.iter().find(|(k, _)| k == name) else { continue };
        env.entry(name.clone()).or_insert_with(|| (value.clone(), p.name.clone()));
        let path = Path::new(value);
        let plain = path.is_absolute() && !path.components().any(|c| c == std::path::Component::ParentDir);
        let dest = normalise(path);
        let special = ["/dev", "/proc"].iter().any(|s| dest.starts_with(s)) || dest == Path::new("/");
        if plain && !special && !value.contains('\0') && host.stat(&dest) != Entry::Missing {
            ask(mounts, Mount { kind: MountKind::Ro, src: Some(dest.clone()), dest, profile: p.name.clone() });
        }
    }
}

/// Create the toolchain caches [`Policy::create`] lists (`mkdir -p`, mode 0755 less the
/// umask, `mkdir(2)`), so the run can bind them and what is cached there persists (SPEC O8).
/// One that cannot be created (a read-only `$HOME`) loses its mount, as before the cache
/// existed, and is named in the returned notes: the run goes on without keeping that cache.
pub fn create_missing(policy: &mut Policy) -> Vec<String> {
    let mut notes = Vec::new();
    for dir in std::mem::take(&mut policy.create) {
        match std::fs::create_dir_all(&dir) {
            Ok(()) => crate::log::log!("created the missing cache {}", dir.display()),
            Err(e) => {
                notes.push(format!("cannot create the cache {}: {}; it is not kept", dir.display(), io_text(&e)));
                policy.mounts.retain(|m| m.dest != dir);
            }
        }
    }
    notes
}
