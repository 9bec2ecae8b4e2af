//! Cgroups a snug killed by SIGKILL left behind (SPEC K1, K5): found by name at the next
//! run and removed once empty.

use super::cgroup::{self, pid_ns, remove_tree, start_time, PREFIX};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A cgroup of another pid namespace's snug is judged by age: one that is empty and older
/// than this cannot belong to a live run (a run's nest sits in it from its first
/// milliseconds to its end).
const FOREIGN_STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Remove cgroups a snug killed by SIGKILL left in `dir`: only names snug makes, only when
/// that snug is gone (same pid namespace: its pid and start time no longer match; another
/// one: empty for [`FOREIGN_STALE_AFTER`]); a cgroup that still holds a process stays
/// (`rmdir` fails with EBUSY). Returns the names of the stale ones found, removed or not.
pub fn remove_stale(dir: &Path) -> Vec<String> {
    let mut stale = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else { return stale };
    let ours = pid_ns();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else { continue };
        let words: Vec<u64> = rest.split('-').filter_map(|w| w.parse().ok()).collect();
        let &[pid, start, ns] = words.as_slice() else { continue };
        let gone = if ns == ours {
            i32::try_from(pid).ok().and_then(snug_core::Pid::new).and_then(start_time) != Some(start)
        } else {
            let age = e.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
            age.is_some_and(|a| a > FOREIGN_STALE_AFTER)
        };
        if gone {
            remove_tree(&e.path());
            stale.push(name);
        }
    }
    stale
}

/// Remove cgroup `name` (a stale one [`remove_stale`] found elsewhere) from the hierarchy
/// whose snug directory is `dir`, with what is below it; one still holding a process stays.
pub fn remove_named(dir: &Path, name: &str) {
    if name.starts_with(PREFIX) && !name.contains('/') {
        remove_tree(&dir.join(name));
    }
}

/// The hierarchies [`super::prepare`] made cgroups in, whose stale cgroups [`sweep`] removes.
pub(super) static STALE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Remove what earlier runs left in the hierarchies this run uses ([`remove_stale`]).
/// Called once the nest runs bwrap, while bwrap sets the sandbox up, rather than in [`super::prepare`]
/// before the nest is cloned: listing a hierarchy and reading each stale owner's
/// `/proc/PID/stat` is off B1's critical path there, and names never collide (pid and start
/// time are in them). A stale run found there may have had cgroups in every v1 hierarchy
/// (`--allow-userns`, [`super::own_in_other_hierarchies`]) that this run does not use: those of the
/// same name go too, so a killed run's cgroups do not wait for a run with the same flags.
/// That costs a look at the other hierarchies only when something stale was found.
pub fn sweep() {
    let swept = std::mem::take(&mut *STALE.lock().unwrap_or_else(|e| e.into_inner()));
    let mut stale = Vec::new();
    for dir in &swept {
        stale.extend(remove_stale(dir));
    }
    if stale.is_empty() {
        return;
    }
    let host = cgroup::Host::read();
    for controller in host.v1_controllers() {
        let Ok(w) = super::usable(&host, &controller) else { continue };
        if swept.iter().any(|d| d == w.dir()) {
            continue;
        }
        for name in &stale {
            remove_named(w.dir(), name);
        }
    }
}
