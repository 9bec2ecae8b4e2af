//! What the sandbox used and which bound it hit (SPEC K5, O5), read once it is gone and
//! before its cgroups are removed: from this run's cgroups (`cgroups(7)`; v1
//! `memory.max_usage_in_bytes`, `memory.oom_control`'s `oom_kill`; v2 `memory.peak`,
//! `memory.events`' `oom_kill`, `cpu.stat`'s `usage_usec`; both `pids.events`' `max`, the
//! forks `pids.max` refused), else from `getrusage(2)` `RUSAGE_CHILDREN`: the processes
//! snug waited for, each of which waited for its own (bwrap for init, init for every
//! sandbox process), so the payload's CPU time is in it; its `ru_maxrss` is the largest
//! single process, not the sandbox's sum.

use std::path::Path;

use serde::Serialize;

/// Resource use of one run and the bounds it hit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Peak memory in bytes.
    pub peak_memory_bytes: Option<u64>,
    /// What [`Usage::peak_memory_bytes`] measures: `sandbox` (its memory cgroup, page cache
    /// and tmpfs included) or `largest_process` (`ru_maxrss`).
    pub peak_memory_of: &'static str,
    /// CPU time, user and system, in milliseconds.
    pub cpu_ms: Option<u64>,
    /// What [`Usage::cpu_ms`] measures: `sandbox` (its v2 cgroup) or `waited_processes`
    /// (`RUSAGE_CHILDREN`).
    pub cpu_of: &'static str,
    /// How the process bound was enforced: `cgroup-v1`, `cgroup-v2`, `rlimit`.
    pub procs_by: &'static str,
    /// How the memory bound was enforced: `cgroup-v1`, `cgroup-v2`, or `none`.
    pub memory_by: &'static str,
    /// Processes the OOM killer killed in the sandbox's memory cgroup; `None` without one.
    pub oom_kills: Option<u64>,
    /// Forks refused at `pids.max`; `None` without a pids cgroup (an RLIMIT_NPROC refusal is
    /// not counted anywhere).
    pub refused_forks: Option<u64>,
}

/// `KEY N` from a flat-keyed cgroup file.
fn keyed(dir: &Path, file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

fn number(dir: &Path, file: &str) -> Option<u64> {
    std::fs::read_to_string(dir.join(file)).ok()?.trim().parse().ok()
}

/// Read what the cgroups in `dirs` (this run's, [`super::prepare`]) recorded, with
/// `getrusage(2)` for what they do not hold.
pub fn read(dirs: &[std::path::PathBuf]) -> Usage {
    let mut u = Usage {
        peak_memory_of: "largest_process",
        cpu_of: "waited_processes",
        procs_by: "rlimit",
        memory_by: "none",
        ..Usage::default()
    };
    for d in dirs {
        let v2 = d.join("cgroup.controllers").exists();
        let word = if v2 { "cgroup-v2" } else { "cgroup-v1" };
        if d.join("pids.max").exists() {
            u.procs_by = word;
            u.refused_forks = keyed(d, "pids.events", "max");
        }
        if v2 {
            if let Some(usec) = keyed(d, "cpu.stat", "usage_usec") {
                u.cpu_ms = Some(usec / 1000);
                u.cpu_of = "sandbox";
            }
        }
        let peak = if v2 { number(d, "memory.peak") } else { number(d, "memory.max_usage_in_bytes") };
        if d.join(if v2 { "memory.max" } else { "memory.limit_in_bytes" }).exists() {
            u.memory_by = word;
            u.oom_kills =
                if v2 { keyed(d, "memory.events", "oom_kill") } else { keyed(d, "memory.oom_control", "oom_kill") };
            if peak.is_some() {
                u.peak_memory_bytes = peak;
                u.peak_memory_of = "sandbox";
            }
        }
    }
    if let Ok(r) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN) {
        let ms = |t: nix::sys::time::TimeVal| {
            u64::try_from(t.tv_sec()).unwrap_or(0) * 1000 + u64::try_from(t.tv_usec()).unwrap_or(0) / 1000
        };
        if u.cpu_ms.is_none() {
            u.cpu_ms = Some(ms(r.user_time()) + ms(r.system_time()));
        }
        if u.peak_memory_bytes.is_none() {
            // ru_maxrss is in KiB on Linux (getrusage(2)).
            u.peak_memory_bytes = u64::try_from(r.max_rss()).ok().map(|k| k * 1024);
        }
    }
    u
}
