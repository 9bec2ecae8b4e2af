//! Bounds of the sandbox (SPEC K5): at most `--max-procs` processes (default 4096) and, with
//! `--memory`, at most that much memory. Enforced by a cgroup snug creates below its own
//! (pids.max; memory.max or v1 memory.limit_in_bytes, `cgroups(7)`) that the nest child
//! enters before it execs bwrap, so every sandbox process is born inside it. Without a pids
//! cgroup, the process cap falls back to `RLIMIT_NPROC` set in the nest child
//! (`setrlimit(2)`): since Linux 5.14 it counts per user namespace, and the sandbox runs in
//! its own one, so it bounds the sandbox alone, except as root, whom fork(2) exempts: then
//! each run says the cap is not enforced. A memory bound has no such fallback: asking for
//! one where no cgroup can be made is an error (69).
//!
//! On cgroup v1, when the payload may create user namespaces (and so mount a cgroupfs), the
//! sandbox also gets a cgroup of its own, without limits, in every other hierarchy snug may
//! write (freezer, cpu, cpuset, blkio, devices, ...): otherwise it would sit in snug's own
//! cgroup there, often the root, and its cgroup namespace would show all of that hierarchy
//! (SPEC K5, X2).

pub mod cgroup;
mod hits;
mod stale;
pub use stale::sweep;
use stale::STALE;
pub mod usage;
pub use hits::Hits;
mod size;
pub use size::{parse_size, parse_size_arg};

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Mutex;

use crate::error::{failure, UNAVAILABLE};
use cgroup::Where;

/// How many cgroups the nest child may enter: one per v1 hierarchy, with room to spare
/// (the kernel has 14 v1 controllers).
pub const SLOTS: usize = 16;

/// The smallest process cap a run can start under (SPEC K5, R4): bwrap and snug's init count
/// against it, and the payload needs one more.
pub const MIN_MAX_PROCS: u64 = 3;

/// The default process cap (SPEC K5).
pub const DEFAULT_MAX_PROCS: u64 = 4096;

/// What the run asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most processes the sandbox may hold at once (`--max-procs`, profile `max_procs`).
    pub max_procs: u64,
    /// Most memory in bytes (`--memory`, profile `memory`); `None`: no bound.
    pub memory: Option<u64>,
    /// The payload may create user namespaces (`--allow-userns`, or a bwrap without
    /// `--disable-userns`; SPEC X2), and so mount a cgroupfs: then the sandbox also gets a
    /// cgroup of its own in every other v1 hierarchy. Without one it cannot mount anything,
    /// and those cgroups would only cost start-up time (1–2 ms for seven of them).
    pub nested_userns: bool,
}

/// How one bound is enforced here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// A cgroup created below `Where`'s directory.
    Cgroup(Where),
    /// `RLIMIT_NPROC` in the sandbox's user namespace.
    Rlimit,
    /// Not enforced, and why.
    Unavailable(String),
}

impl Mechanism {
    /// One line for `doctor` and `--dry-run`.
    pub fn describe(&self) -> String {
        match self {
            Mechanism::Cgroup(w) => format!("{} (a cgroup below {})", w.word(), w.dir().display()),
            Mechanism::Rlimit => "RLIMIT_NPROC in the sandbox's user namespace".into(),
            Mechanism::Unavailable(why) => format!("unavailable: {why}"),
        }
    }

    /// The word for `--json`: `cgroup-v1`, `cgroup-v2`, `rlimit`, `unavailable`.
    pub fn word(&self) -> &'static str {
        match self {
            Mechanism::Cgroup(Where::V1(_)) => "cgroup-v1",
            Mechanism::Cgroup(Where::V2(_)) => "cgroup-v2",
            Mechanism::Rlimit => "rlimit",
            Mechanism::Unavailable(_) => "unavailable",
        }
    }
}

pub(crate) fn usable(host: &cgroup::Host, controller: &str) -> anyhow::Result<Where> {
    let w = host.find(controller)?;
    if cgroup::writable(w.dir()) {
        Ok(w)
    } else {
        Err(anyhow::anyhow!("{} {} is not writable by this user (no delegated cgroup)", w.word(), w.dir().display()))
    }
}

/// Which mechanism enforces (processes, memory) on this host for this user.
pub fn plan() -> (Mechanism, Mechanism) {
    let host = cgroup::Host::read();
    (procs_mechanism(&host), memory_mechanism(&host))
}

fn procs_mechanism(host: &cgroup::Host) -> Mechanism {
    match usable(host, "pids") {
        Ok(w) => Mechanism::Cgroup(w),
        // fork(2) checks RLIMIT_NPROC only for users other than the host's uid 0
        // (kernel/fork.c, `INIT_USER`), in every user namespace: it binds no root sandbox.
        Err(why) if rustix::process::geteuid().is_root() => Mechanism::Unavailable(format!(
            "{why}; RLIMIT_NPROC does not bind root (fork(2) exempts uid 0): mount the cgroup v1 pids \
             controller, or enable pids in the cgroup.subtree_control of snug's cgroup (v2)"
        )),
        Err(_) => Mechanism::Rlimit,
    }
}

fn memory_mechanism(host: &cgroup::Host) -> Mechanism {
    match usable(host, "memory") {
        Ok(w) => Mechanism::Cgroup(w),
        Err(why) => Mechanism::Unavailable(why.to_string()),
    }
}

/// Which cgroups a run needs, known from the command line before the policy gives the
/// values: the nest child enters them before bwrap reads its options (SPEC B1), and
/// [`ForChild::limit`] writes the values before bwrap can fork.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// A memory bound is asked for.
    pub memory: bool,
    /// As [`Limits::nested_userns`].
    pub nested_userns: bool,
}

impl Limits {
    /// The cgroups these limits need.
    pub fn shape(&self) -> Shape {
        Shape { memory: self.memory.is_some(), nested_userns: self.nested_userns }
    }
}

/// Which limit a cgroup file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    Procs,
    Memory,
}

/// What the nest child must do before it execs bwrap (built before the clone), and where
/// the limits' values go once they are known.
pub struct ForChild {
    /// `tasks` (v1) or `cgroup.procs` (v2) of each cgroup to enter (the child writes `0`,
    /// meaning itself, [`cgroup::create`]).
    procs: Vec<OwnedFd>,
    /// The cgroups made for this shape, and the limit files in them.
    values: Vec<(PathBuf, &'static str, Bound)>,
    /// Every cgroup made (also those without a limit), for [`ForChild::abandon`].
    dirs: Vec<PathBuf>,
    /// No pids cgroup: `RLIMIT_NPROC` holds the cap, set on bwrap by [`ForChild::limit`].
    rlimit: bool,
    /// Why nothing holds the process cap here (root without a pids cgroup), said once.
    unenforced: Option<String>,
    shape: Shape,
}

impl ForChild {
    /// The entry files nest writes `0` into (at most [`SLOTS`]).
    pub fn procs(&self) -> Vec<BorrowedFd<'_>> {
        self.procs.iter().map(|fd| fd.as_fd()).collect()
    }

    /// Close the entry files once the nest child has them (it enters through its copies).
    pub fn entered(&mut self) {
        self.procs.clear();
    }
}

/// The process cap this run applied (0 before [`ForChild::limit`]), for [`cap_hint`].
static CAP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// When a fork in the sandbox was refused (EAGAIN): the words naming the likely cause, the
/// process cap, with what already counts against it (SPEC R4, K5). Empty when no cap applied.
pub fn cap_hint() -> String {
    match CAP.load(std::sync::atomic::Ordering::Relaxed) {
        0 => String::new(),
        n => format!(
            " (likely the process cap, --max-procs {n}: bwrap and snug's init count against it, \
             so {n} leaves the payload {})",
            match n.saturating_sub(2) {
                0 => "no process at all".to_string(),
                1 => "1 process".to_string(),
                k => format!("{k} processes"),
            }
        ),
    }
}

/// The cgroups this run created, removed by [`cleanup`].
static CREATED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Create the cgroups of `shape` for one run, without their limits yet ([`ForChild::limit`]).
///
/// # Errors
/// 69 when a memory bound was asked for and no cgroup can hold it; 71 when creating a
/// cgroup snug may create fails.
pub fn prepare(shape: Shape) -> anyhow::Result<ForChild> {
    // The memory controller is looked up only when a bound asks for it.
    let host = cgroup::Host::read();
    let procs = procs_mechanism(&host);
    let memory = match shape.memory {
        true => memory_mechanism(&host),
        false => Mechanism::Unavailable("not asked".into()),
    };
    let unenforced = match &procs {
        Mechanism::Unavailable(why) => Some(why.clone()),
        _ => None,
    };
    let mut out =
        ForChild { procs: Vec::new(), values: Vec::new(), dirs: Vec::new(), rlimit: false, unenforced, shape };
    let mem_file = |w: &Where| if matches!(w, Where::V1(_)) { "memory.limit_in_bytes" } else { "memory.max" };
    match (&procs, &memory, shape.memory) {
        // One v2 cgroup holds both.
        (Mechanism::Cgroup(p @ Where::V2(_)), Mechanism::Cgroup(Where::V2(_)), true) => {
            out.make(p, &[("pids.max", Bound::Procs), (mem_file(p), Bound::Memory)])?;
        }
        _ => {
            match &procs {
                Mechanism::Cgroup(w) => out.make(w, &[("pids.max", Bound::Procs)])?,
                _ => out.rlimit = true,
            }
            if shape.memory {
                match &memory {
                    Mechanism::Cgroup(w) => out.make(w, &[(mem_file(w), Bound::Memory)])?,
                    m => {
                        let how = "run snug in a delegated cgroup (systemd-run --user --scope -p Delegate=yes snug …) or as root";
                        return Err(failure(
                            UNAVAILABLE,
                            format!("--memory cannot be enforced here: {}; {how}", m.describe()),
                        ));
                    }
                }
            }
        }
    }
    if shape.nested_userns {
        own_in_other_hierarchies(&host, &mut out);
    }
    Ok(out)
}

impl ForChild {
    /// The shape these cgroups were made for.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Create one cgroup below `w` for the `files` limits (values come later).
    fn make(&mut self, w: &Where, files: &[(&'static str, Bound)]) -> anyhow::Result<()> {
        STALE.lock().unwrap_or_else(|e| e.into_inner()).push(w.dir().to_path_buf());
        let (dir, fd) = cgroup::create(w, &[])?;
        CREATED.lock().unwrap_or_else(|e| e.into_inner()).push(dir.clone());
        self.values.extend(files.iter().map(|(f, b)| (dir.clone(), *f, *b)));
        self.dirs.push(dir);
        self.procs.push(fd);
        Ok(())
    }

    /// Write `limits`' values (of this shape) into the cgroups, or `RLIMIT_NPROC` of `bwrap`
    /// (`prlimit(2)`) where no pids cgroup holds the cap: before bwrap has its options, so
    /// before anything in the sandbox can fork. Logged under `-v`.
    ///
    /// # Errors
    /// 71 when a write or `prlimit(2)` fails.
    pub fn limit(&self, limits: &Limits, bwrap: snug_core::Pid) -> anyhow::Result<()> {
        if let Some(why) = &self.unenforced {
            // SPEC K5 cannot hold: said, not hidden (the run goes on, as without snug).
            crate::log::say!("snug: the process cap (--max-procs {}) is not enforced here: {why}", limits.max_procs);
        }
        CAP.store(limits.max_procs, std::sync::atomic::Ordering::Relaxed);
        MEMORY_BOUND.store(limits.memory.is_some(), std::sync::atomic::Ordering::Relaxed);
        let os = |what: String| failure(crate::error::OS_ERROR, what);
        for (dir, file, bound) in &self.values {
            let value = match bound {
                Bound::Procs => limits.max_procs.to_string(),
                Bound::Memory => limits.memory.map_or_else(|| "max".to_string(), |b| b.to_string()),
            };
            cgroup::write(dir, file, &value)?;
            crate::log::log!("bound: {file}={value} in {}", dir.display());
        }
        if self.rlimit {
            use rustix::process::{prlimit, Resource, Rlimit};
            let n = Some(limits.max_procs);
            let set =
                prlimit(crate::sys::process::to_rustix(bwrap), Resource::Nproc, Rlimit { current: n, maximum: n });
            set.map_err(|e| {
                os(format!(
                    "cannot put the sandbox under its bounds (RLIMIT_NPROC): {}",
                    crate::error::strerror(e.raw_os_error())
                ))
            })?;
            crate::log::log!("bound: RLIMIT_NPROC={} in the sandbox's user namespace", limits.max_procs);
        }
        Ok(())
    }

    /// Remove these cgroups, for a nest that was killed and reaped before it ran anything.
    pub fn abandon(self) {
        CREATED.lock().unwrap_or_else(|e| e.into_inner()).retain(|d| !self.dirs.contains(d));
        for d in self.dirs.iter().rev() {
            cgroup::remove(d);
        }
    }
}

/// What the sandbox used and which bounds it hit, from this run's cgroups (call once the
/// sandbox is gone, before [`cleanup`]).
pub fn usage() -> usage::Usage {
    usage::read(&CREATED.lock().unwrap_or_else(|e| e.into_inner()))
}

/// A cgroup of the sandbox's own in each v1 hierarchy not used for a bound yet, where snug
/// may create one; one it cannot make is logged and left out (the bounds stand without it).
pub(crate) fn own_in_other_hierarchies(host: &cgroup::Host, out: &mut ForChild) {
    let have: Vec<PathBuf> = CREATED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter_map(|d| d.parent().map(PathBuf::from))
        .collect();
    for controller in host.v1_controllers() {
        let Ok(w @ Where::V1(_)) = usable(host, &controller) else { continue };
        if have.iter().any(|d| d == w.dir()) || out.procs.len() >= SLOTS {
            continue;
        }
        STALE.lock().unwrap_or_else(|e| e.into_inner()).push(w.dir().to_path_buf());
        let files = if controller == "cpuset" { cgroup::cpuset_files(&w) } else { Vec::new() };
        match cgroup::create(&w, &files) {
            Ok((dir, fd)) => {
                crate::log::log!("own cgroup in the {controller} hierarchy: {}", dir.display());
                CREATED.lock().unwrap_or_else(|e| e.into_inner()).push(dir.clone());
                out.dirs.push(dir);
                out.procs.push(fd);
            }
            Err(e) => crate::log::log!("no cgroup of its own in the {controller} hierarchy: {e}"),
        }
    }
}

/// Whether this run set a memory limit (for [`hits`]).
static MEMORY_BOUND: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Which bounds the sandbox hit, from this run's cgroups; call before [`cleanup`].
pub fn hits() -> Hits {
    let dirs = CREATED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    hits::read_all(&dirs, MEMORY_BOUND.load(std::sync::atomic::Ordering::Relaxed))
}

/// Remove the cgroups this run created (the sandbox is gone by now).
pub fn cleanup() {
    let dirs = std::mem::take(&mut *CREATED.lock().unwrap_or_else(|e| e.into_inner()));
    for d in dirs.iter().rev() {
        cgroup::remove(d);
    }
}

/// The `bounds` part of the dry-run plan: (text lines, JSON value).
pub fn plan_for_dry_run(limits: &Limits) -> (String, serde_json::Value) {
    let (procs, memory) = plan();
    let mut text = format!("bounds:\n  processes {:<10} {}\n", limits.max_procs, procs.describe());
    let mem = limits.memory.map_or("none".to_string(), |b| b.to_string());
    let mem_how = if limits.memory.is_some() {
        memory.describe()
    } else {
        format!("not asked (--memory); {}", memory.describe())
    };
    text.push_str(&format!("  memory    {mem:<10} {mem_how}\n"));
    let json = serde_json::json!({
        "max_procs": limits.max_procs,
        "procs_mechanism": procs.word(),
        "memory": limits.memory,
        "memory_mechanism": memory.word(),
    });
    (text, json)
}
