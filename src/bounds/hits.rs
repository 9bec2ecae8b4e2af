//! Which bounds the sandbox hit (SPEC O5, K5): OOM kills under `--memory` and forks the
//! process cap refused, read from this run's cgroups before they are removed
//! (`cgroups(7)`; v1 `memory.oom_control`'s `oom_kill`, v2 `memory.events`' `oom_kill`,
//! `pids.events`' `max` in both; kernel `Documentation/admin-guide/cgroup-v{1,2}`).

use std::path::Path;

/// What the kernel counted; `None` where no cgroup held that bound (RLIMIT_NPROC counts
/// nothing, and no `--memory` means no memory bound).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hits {
    /// Processes the OOM killer killed in the sandbox.
    pub oom_kills: Option<u64>,
    /// Forks (and clones) refused because the sandbox was at its process cap.
    pub forks_refused: Option<u64>,
}

/// The value of `key` in a flat-keyed cgroup file (`key value` per line).
fn counter(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The larger of `key` in `file` of `dir` and of its leaf: where the kernel counts an event
/// (the cgroup whose limit was hit, its ancestors, or only the victim's) differs between
/// versions and controllers.
fn read(dir: &Path, file: &str, key: &str) -> Option<u64> {
    let at = |d: &Path| std::fs::read_to_string(d.join(file)).ok().and_then(|t| counter(&t, key));
    match (at(dir), at(&dir.join(super::cgroup::LEAF))) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).max(b.unwrap_or(0))),
    }
}

/// Read the hits from the cgroups in `dirs` (this run's), where `memory_bound` says whether
/// a memory limit was set.
pub fn read_all(dirs: &[std::path::PathBuf], memory_bound: bool) -> Hits {
    let mut h = Hits::default();
    for d in dirs {
        if memory_bound && d.join("memory.limit_in_bytes").exists() {
            h.oom_kills = read(d, "memory.oom_control", "oom_kill").or(h.oom_kills);
        }
        if memory_bound && d.join("memory.max").exists() {
            h.oom_kills = read(d, "memory.events", "oom_kill").or(h.oom_kills);
        }
        if d.join("pids.max").exists() {
            h.forks_refused = read(d, "pids.events", "max").or(h.forks_refused);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::counter;

    #[test]
    fn o5_counters_of_flat_keyed_files() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(counter(v1, "oom_kill"), Some(3));
        assert_eq!(counter("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n", "oom_kill"), Some(1));
        assert_eq!(counter("max 17\n", "max"), Some(17));
        assert_eq!(counter("max 17\n", "oom_kill"), None);
    }
}
