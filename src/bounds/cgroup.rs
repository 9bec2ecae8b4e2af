//! The cgroups snug may use for its bounds (SPEC K5): always one it creates directly below
//! the cgroup snug itself runs in, in each hierarchy (`/proc/self/cgroup`, `cgroups(7)`);
//! no other cgroup is ever moved, limited or removed. cgroup v1 hierarchies (`pids`,
//! `memory`) and the v2 unified hierarchy are both understood; v2 only when snug's cgroup
//! already enables the controller for its children (`cgroup.subtree_control`), since
//! enabling it would change snug's own cgroup, which holds processes.
//!
//! The sandbox sits in a leaf below the cgroup that holds the limits ([`LEAF`]): with its own
//! cgroup namespace (bwrap `--unshare-cgroup-try`) rooted at the leaf, a cgroupfs the
//! payload might mount shows the leaf and what is below it, never the limits above it, nor
//! any other cgroup; and limits are hierarchical, so nothing written in the leaf lifts them
//! (SPEC K5, X2).

use crate::error::{failure, io_text, OS_ERROR};
use anyhow::anyhow;
use std::fs;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Prefix of the cgroups snug creates: `snug-PID-STARTTIME-PIDNS` (start time in clock
/// ticks since boot, `proc(5)` field 22; the inode of snug's pid namespace, since pids mean
/// something only inside one), so a stale one can be told from a live one exactly.
pub(super) const PREFIX: &str = "snug-";

/// The inode of this process's pid namespace (`/proc/self/ns/pid`, `namespaces(7)`).
pub(super) fn pid_ns() -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino())
}

/// The cgroup the sandbox's processes sit in, below the one holding the limits.
pub const LEAF: &str = "sandbox";

/// A controller as snug can reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Where {
    /// A cgroup v1 hierarchy for this controller; the directory of snug's own cgroup there.
    V1(PathBuf),
    /// The cgroup v2 hierarchy; the directory of snug's own cgroup there.
    V2(PathBuf),
}

impl Where {
    /// The directory of snug's own cgroup in this hierarchy.
    pub fn dir(&self) -> &Path {
        match self {
            Where::V1(d) | Where::V2(d) => d,
        }
    }

    /// `cgroup v1` or `cgroup v2`, for people.
    pub fn word(&self) -> &'static str {
        match self {
            Where::V1(_) => "cgroup v1",
            Where::V2(_) => "cgroup v2",
        }
    }
}

/// `(hierarchy id, controllers, path)` per line of `/proc/self/cgroup`.
fn own_cgroups() -> Vec<(String, Vec<String>, String)> {
    let text = read_proc("/proc/self/cgroup");
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let (id, ctl, path) = (it.next()?, it.next()?, it.next()?);
            Some((id.to_string(), ctl.split(',').filter(|c| !c.is_empty()).map(String::from).collect(), path.into()))
        })
        .collect()
}

/// `(mount root, mount point, fstype, super options)` of each cgroup mount (`proc(5)`,
/// /proc/self/mountinfo).
fn cgroup_mounts() -> Vec<Mount> {
    let text = read_proc("/proc/self/mountinfo");
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            let fstype = *r.first()?;
            if fstype != "cgroup" && fstype != "cgroup2" {
                return None;
            }
            let opts = r.get(2).map(|o| o.split(',').map(String::from).collect()).unwrap_or_default();
            Some((unescape(f.get(3)?), PathBuf::from(unescape(f.get(4)?)), fstype.to_string(), opts))
        })
        .collect()
}

/// A procfs file's text ("" when unreadable), read into room for 16 KiB: procfs says size 0,
/// so `fs::read_to_string` would probe with reads of 32 bytes and up, each a system call that
/// formats the file again from where it stopped (about ten for mountinfo and cgroup here).
fn read_proc(path: &str) -> String {
    use std::io::Read;
    let mut text = String::with_capacity(16 << 10);
    match fs::File::open(path).and_then(|mut f| f.read_to_string(&mut text)) {
        Ok(_) => text,
        Err(_) => String::new(),
    }
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
}

/// The directory for cgroup `path` of a hierarchy mounted at `point` from `root`.
fn join(point: &Path, root: &str, path: &str) -> Option<PathBuf> {
    let rel = if root == "/" { path } else { path.strip_prefix(root)? };
    Some(point.join(rel.trim_start_matches('/')))
}

/// `(mount root, mount point, fstype, super options)` of a cgroup mount.
type Mount = (String, PathBuf, String, Vec<String>);

/// snug's cgroups, and the host's cgroup mounts when the usual places do not hold them.
pub struct Host {
    /// Read only when needed: `/proc/self/mountinfo` takes 0.1 ms to read and 0.07 ms to
    /// parse in snug's start-up, on B1's critical path ([`conventional`]).
    mounts: std::cell::OnceCell<Vec<Mount>>,
    own: Vec<(String, Vec<String>, String)>,
}

impl Host {
    /// Read `/proc/self/cgroup`.
    pub fn read() -> Host {
        Host { mounts: std::cell::OnceCell::new(), own: own_cgroups() }
    }

    fn mounts(&self) -> &[Mount] {
        self.mounts.get_or_init(cgroup_mounts)
    }

    /// The v1 hierarchies snug's own cgroups are in, by the first controller each carries
    /// (`cpu`, `freezer`, ...); named hierarchies without a controller (`name=systemd`,
    /// whose tree belongs to the init system's process tracking) are left out.
    pub fn v1_controllers(&self) -> Vec<String> {
        let real = |c: &String| !c.starts_with("name=");
        self.own
            .iter()
            .filter(|(id, _, _)| id != "0")
            .filter_map(|(_, c, _)| c.iter().find(|c| real(c)).cloned())
            .collect()
    }

    /// Where `controller` (`pids`, `memory`) can be bounded by snug, or why not.
    pub fn find(&self, controller: &str) -> anyhow::Result<Where> {
        let own = &self.own;
        if let Some((_, _, path)) = own.iter().find(|(_, c, _)| c.iter().any(|c| c == controller)) {
            if let Some(dir) = conventional(controller, path) {
                return Ok(Where::V1(dir));
            }
            let m = self.mounts().iter().find(|m| m.2 == "cgroup" && m.3.iter().any(|o| o == controller));
            return match m.and_then(|(root, point, _, _)| join(point, root, path)) {
                Some(dir) if dir.is_dir() => Ok(Where::V1(dir)),
                _ => Err(anyhow!("the cgroup v1 {controller} hierarchy is not mounted where snug can see it")),
            };
        }
        let Some((_, _, path)) = own.iter().find(|(id, c, _)| id == "0" && c.is_empty()) else {
            return Err(anyhow!("no cgroup {controller} controller on this host"));
        };
        let found = || {
            let m = self.mounts().iter().find(|m| m.2 == "cgroup2");
            m.and_then(|(root, point, _, _)| join(point, root, path))
        };
        let Some(dir) = conventional("", path).or_else(found) else {
            return Err(anyhow!("cgroup2 is not mounted"));
        };
        let enabled = fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
        if !enabled.split_whitespace().any(|c| c == controller) {
            return Err(anyhow!(
                "cgroup v2: {controller} is not enabled for the children of snug's cgroup {}",
                dir.display()
            ));
        }
        Ok(Where::V2(dir))
    }
}

/// snug's cgroup `path` where every init system and container runtime mounts the hierarchy
/// (`/sys/fs/cgroup/CONTROLLER` for v1, `/sys/fs/cgroup` for v2 with `controller` ""),
/// when a cgroup filesystem of that version is mounted there (`statfs(2)`) and the directory
/// exists: then mountinfo need not be read. A hierarchy mounted from a subtree (a container
/// without its own cgroup namespace) has no such directory, and mountinfo says where it is,
/// unless the subtree's paths happen to repeat snug's: then snug's cgroups land below that
/// subtree, in the right hierarchy, so the bounds still hold. Were another controller
/// mounted under this one's name, the limit's file would be missing and the run would fail
/// (71), not go unbounded.
fn conventional(controller: &str, path: &str) -> Option<PathBuf> {
    const CGROUP_SUPER_MAGIC: u64 = 0x0027_e0eb;
    const CGROUP2_SUPER_MAGIC: u64 = 0x6367_7270;
    let point = Path::new("/sys/fs/cgroup").join(controller);
    let magic = if controller.is_empty() { CGROUP2_SUPER_MAGIC } else { CGROUP_SUPER_MAGIC };
    let fs = rustix::fs::statfs(&point).ok()?;
    let dir = join(&point, "/", path)?;
    (fs.f_type as u64 == magic && dir.is_dir()).then_some(dir)
}

/// Whether snug may create a cgroup in `dir` (write and search permission, `access(2)`).
pub fn writable(dir: &Path) -> bool {
    use rustix::fs::{access, Access};
    access(dir, Access::WRITE_OK | Access::EXEC_OK).is_ok()
}

/// The start time of `pid` in clock ticks since boot (`proc(5)`, stat field 22).
pub(super) fn start_time(pid: snug_core::Pid) -> Option<u64> {
    let stat = crate::sys::fd::read_proc(&format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split(' ').nth(19)?.parse().ok()
}

/// This snug's cgroup name (worked out once: a start asks for it more than once).
pub fn own_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let pid = crate::sys::process::own();
        format!("{PREFIX}{pid}-{}-{}", start_time(pid).unwrap_or(0), pid_ns())
    })
    .clone()
}

/// The file the nest child writes `0` into to enter a cgroup (`cgroups(7)`). On v1, `tasks`:
/// `0` there moves only the writing thread, which the kernel does without taking
/// `cgroup_threadgroup_rwsem` for writing (`cgroup_procs_write_start`, `kernel/cgroup/cgroup.c`:
/// "If we migrate a single thread ... we can skip the global lock"), so without waiting for an
/// RCU grace period (`rcu_sync_enter`), about 10 ms on a 2-core host. The nest child is a
/// fork child, so that thread is the whole process. On v2, `cgroup.procs` (`tasks` is v1 only,
/// `cgroup.threads` needs a threaded subtree).
fn entry_file(w: &Where) -> &'static str {
    match w {
        Where::V1(_) => "tasks",
        Where::V2(_) => "cgroup.procs",
    }
}

/// Create `NAME` below `w`'s directory, write `files` (name, value) into it, and open the file
/// the nest child writes `0` into to enter it ([`entry_file`]).
///
/// # Errors
/// The failing step, a run-time OS error (71, SPEC R4).
pub fn create(w: &Where, files: &[(&str, String)]) -> anyhow::Result<(PathBuf, OwnedFd)> {
    let os = |what: String| failure(OS_ERROR, what);
    let parent = w.dir();
    let dir = parent.join(own_name());
    let mkdir = |d: &Path| fs::create_dir(d).map_err(|e| os(format!("cannot create {}: {}", d.display(), io_text(&e))));
    mkdir(&dir)?;
    let set = || -> anyhow::Result<OwnedFd> {
        for (file, value) in files {
            write(&dir, file, value)?;
        }
        let leaf = dir.join(LEAF);
        mkdir(&leaf)?;
        let entry = leaf.join(entry_file(w));
        let f = fs::OpenOptions::new().write(true).open(&entry);
        Ok(f.map_err(|e| os(format!("cannot open {}: {}", entry.display(), io_text(&e))))?.into())
    };
    match set() {
        Ok(fd) => Ok((dir, fd)),
        Err(e) => {
            remove_tree(&dir);
            Err(e)
        }
    }
}

/// Write `value` into cgroup file `file` of `dir` (a limit, a cpuset setting).
///
/// # Errors
/// A run-time OS error (71, SPEC R4) naming the value and the file.
pub fn write(dir: &Path, file: &str, value: &str) -> anyhow::Result<()> {
    let path = dir.join(file);
    let w = fs::OpenOptions::new().write(true).open(&path).and_then(|mut f| f.write_all(value.as_bytes()));
    w.map_err(|e| failure(OS_ERROR, format!("cannot write {value} to {}: {}", path.display(), io_text(&e))))
}

/// The `cpuset` settings a new v1 cpuset cgroup needs before a task may enter it (it starts
/// with no CPUs and no memory nodes, `cpusets(7)`): the parent's, and `cgroup.clone_children`
/// so that the leaf below copies them.
pub fn cpuset_files(w: &Where) -> Vec<(&'static str, String)> {
    let read = |f: &str| fs::read_to_string(w.dir().join(f)).unwrap_or_default().trim().to_string();
    vec![
        ("cpuset.cpus", read("cpuset.cpus")),
        ("cpuset.mems", read("cpuset.mems")),
        ("cgroup.clone_children", "1".into()),
    ]
}

/// Remove `dir` and every cgroup below it, deepest first (cgroupfs removes only empty
/// directories with `rmdir(2)`; a payload allowed a user namespace may have made some). An
/// explicit stack, not recursion: the depth is the payload's choice. Bounded: at most
/// 10,000 directories are looked at.
pub(super) fn remove_tree(dir: &Path) {
    let mut stack = vec![(dir.to_path_buf(), false)];
    let mut budget = 10_000;
    while let Some((d, expanded)) = stack.pop() {
        if expanded || budget == 0 {
            let _ = fs::remove_dir(&d);
            continue;
        }
        budget -= 1;
        stack.push((d.clone(), true));
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((e.path(), false));
            }
        }
    }
}

/// Remove a cgroup snug created, once the sandbox is gone. Processes of a pid namespace
/// that has just been reaped may still be leaving the cgroup: retry EBUSY briefly (at most
/// 50 ms in all); a cgroup left behind is removed by the next run ([`super::stale::sweep`]).
pub fn remove(dir: &Path) {
    // The usual end first, without listing a directory: the leaf snug made, then `dir`
    // (two rmdir(2) instead of two directory listings and two rmdir, on B1's teardown path).
    let _ = fs::remove_dir(dir.join(LEAF));
    if fs::remove_dir(dir).is_ok() {
        return;
    }
    for _ in 0..50 {
        remove_tree(dir);
        match fs::remove_dir(dir) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => std::thread::sleep(std::time::Duration::from_millis(1)),
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k5_join_under_mount_root() {
        assert_eq!(join(Path::new("/sys/fs/cgroup/pids"), "/", "/a/b"), Some(PathBuf::from("/sys/fs/cgroup/pids/a/b")));
        assert_eq!(join(Path::new("/sys/fs/cgroup"), "/ctr", "/ctr/x"), Some(PathBuf::from("/sys/fs/cgroup/x")));
        assert_eq!(join(Path::new("/sys/fs/cgroup"), "/ctr", "/other"), None);
        assert_eq!(join(Path::new("/sys/fs/cgroup"), "/", "/"), Some(PathBuf::from("/sys/fs/cgroup/")));
    }

    #[test]
    fn k5_own_name_carries_pid_and_start() {
        let name = own_name();
        let rest = name.strip_prefix(PREFIX).expect("prefix");
        let w: Vec<u64> = rest.split('-').map(|w| w.parse().expect("number")).collect();
        assert_eq!(w.len(), 3);
        assert_eq!(w[0], u64::from(std::process::id()));
        assert!(w[1] > 0 && w[2] > 0);
    }

    /// K5, B1: where the usual mount point answers, mountinfo gives the same directory (on
    /// this host; v1 and v2 alike), so skipping it changes no run's cgroups.
    #[test]
    fn k5_the_usual_mount_point_is_where_mountinfo_says() {
        let host = Host::read();
        for (id, controllers, path) in &host.own {
            let slow = |fstype: &str, c: &str| {
                let m = host.mounts().iter().find(|m| m.2 == fstype && (c.is_empty() || m.3.iter().any(|o| o == c)));
                m.and_then(|(root, point, _, _)| join(point, root, path))
            };
            let (fast, slow) = match (id.as_str(), controllers.first()) {
                ("0", None) => (conventional("", path), slow("cgroup2", "")),
                (_, Some(c)) if !c.starts_with("name=") => (conventional(c, path), slow("cgroup", c)),
                _ => continue,
            };
            if let Some(fast) = fast {
                assert_eq!(Some(fast), slow, "{id}:{controllers:?}:{path}");
            }
        }
    }
}
