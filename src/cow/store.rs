//! Where the kept changes live (SPEC W1, W5): `STATE/cow/NAME/` (mode 0700, the user's),
//! with `upper/` and `work/` (overlayfs' layers) and `meta.json` (DIR, the start). They are
//! plain files: a snug killed with SIGKILL leaves them for a later `snug diff`.

use crate::error::{failure, OS_ERROR, USAGE};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A kept run's record, `meta.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Meta {
    /// DIR, canonical: the lower layer and where `apply` writes.
    pub dir: PathBuf,
    /// The run's start, RFC 3339, for people.
    pub started: String,
    /// The run's start in ns since the epoch (`CLOCK_REALTIME`): a host file whose ctime is
    /// this or later changed during or after the run ([`super::floor`]).
    pub started_ns: u128,
    /// The payload's command, for `snug diff`'s list.
    pub command: Vec<String>,
    /// Mounted as root (`trusted.overlay.*` attributes) or as a user (`user.overlay.*`).
    pub root: bool,
    /// Directories of DIR (relative) that a `snug apply` which left changes kept wrote in,
    /// with their ctime (ns) right after: a later apply does not take snug's own writes for
    /// the host's (W4).
    #[serde(default)]
    pub applied: std::collections::BTreeMap<PathBuf, i128>,
}

/// One kept run.
#[derive(Clone, Debug)]
pub struct Kept {
    /// Its name (the run's).
    pub name: String,
    /// `STATE/cow/NAME`.
    pub path: PathBuf,
    /// Its record; `None` when `meta.json` is missing or unreadable.
    pub meta: Option<Meta>,
}

impl Kept {
    /// The upper layer: what the payload wrote.
    pub fn upper(&self) -> PathBuf {
        self.path.join("upper")
    }

    /// overlayfs' work directory.
    pub fn work(&self) -> PathBuf {
        self.path.join("work")
    }
}

/// `STATE/cow` for the caller's environment.
///
/// # Errors
/// 64 when neither `XDG_STATE_HOME` nor `HOME` is an absolute path.
pub fn base() -> anyhow::Result<PathBuf> {
    let vars: Vec<(String, String)> =
        ["XDG_STATE_HOME", "HOME"].iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v))).collect();
    let state = crate::project::state_dir(&vars)
        .ok_or_else(|| failure(USAGE, "--cow needs HOME or XDG_STATE_HOME set to an absolute path"))?;
    Ok(state.join("cow"))
}

/// A name `snug diff|apply|discard` accepts: a run's name (SPEC L1), so never `..` or a `/`.
///
/// # Errors
/// 64 for anything else.
pub fn check_name(name: &str) -> anyhow::Result<()> {
    crate::live::check_name(name)
}

/// The kept run `name`.
///
/// # Errors
/// 64 when there is none.
pub fn find(name: &str) -> anyhow::Result<Kept> {
    check_name(name)?;
    let path = base()?.join(name);
    if std::fs::symlink_metadata(&path).map(|m| m.is_dir()).unwrap_or(false) {
        return Ok(load(name, path));
    }
    let q = crate::quote::quote(name);
    Err(failure(USAGE, format!("no kept changes named {q}; snug diff lists them")))
}

fn load(name: &str, path: PathBuf) -> Kept {
    let meta = std::fs::read(path.join("meta.json")).ok().and_then(|b| serde_json::from_slice(&b).ok());
    Kept { name: name.to_string(), path, meta }
}

/// `name`, or another from `draw` (at most 8 times) while changes under it are kept: a
/// generated name never fails a run (SPEC W1's 64 is for a name the caller chose).
pub fn free_name(mut name: String, draw: impl Fn() -> String) -> String {
    let Ok(base) = base() else { return name };
    for _ in 0..8 {
        if std::fs::symlink_metadata(base.join(&name)).is_err() {
            break;
        }
        name = draw();
    }
    name
}

/// Every kept run, by name.
pub fn list() -> Vec<Kept> {
    let Ok(base) = base() else { return Vec::new() };
    let Ok(rd) = std::fs::read_dir(&base) else { return Vec::new() };
    let mut out: Vec<Kept> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| e.file_name().to_str().is_some_and(crate::live::valid_name)) // not the trash
        .filter_map(|e| e.file_name().to_str().map(|n| load(n, e.path())))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Make `STATE/cow/NAME` with its layers, all 0700; its record comes with [`write_meta`].
///
/// # Errors
/// 64 when changes named `name` are kept already (SPEC W1); 71 when it cannot be made.
pub fn create(base: &Path, name: &str) -> anyhow::Result<Kept> {
    let path = base.join(name);
    let os = |e: std::io::Error| failure(OS_ERROR, format!("{}: {}", path.display(), crate::error::io_text(&e)));
    let mut b = std::fs::DirBuilder::new();
    b.mode(0o700);
    if let Err(e) = b.create(&path) {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            let q = crate::quote::quote(name);
            return Err(failure(
                USAGE,
                format!(
                    "changes named {q} are kept from an earlier --cow run: snug apply {q} or snug discard {q} first"
                ),
            ));
        }
        return Err(os(e));
    }
    let kept = Kept { name: name.to_string(), path: path.clone(), meta: None };
    b.create(kept.upper()).map_err(os)?;
    b.create(kept.work()).map_err(os)?;
    Ok(kept)
}

/// The file a running `--cow` run holds an exclusive `flock(2)` on, in its kept directory:
/// the kernel lets it go however snug ends (SIGKILL included), so a held lock is a live run.
const LOCK: &str = "running";

/// Take the run's lock on `kept` for as long as the returned descriptor lives (close-on-exec:
/// nothing snug starts holds it past its exec).
///
/// # Errors
/// The open's or the lock's.
pub fn hold(kept: &Kept) -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{flock, FlockOperation, Mode, OFlags};
    let flags = OFlags::CREATE | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let fd = rustix::fs::open(kept.path.join(LOCK), flags, Mode::from_raw_mode(0o600))?;
    flock(&fd, FlockOperation::NonBlockingLockExclusive)?;
    Ok(fd)
}

/// Whether the run that keeps `kept` is still running ([`hold`]'s lock is held).
pub fn running(kept: &Kept) -> bool {
    use rustix::fs::{flock, FlockOperation, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    match rustix::fs::open(kept.path.join(LOCK), flags, Mode::empty()) {
        Ok(fd) => flock(&fd, FlockOperation::NonBlockingLockShared) == Err(rustix::io::Errno::WOULDBLOCK),
        Err(_) => false,
    }
}

/// 64 when the run that keeps `kept` is still running: `apply` or `discard` under it would
/// pull DIR's changes from under a live payload, and lose what it writes after.
///
/// # Errors
/// As said.
pub fn not_running(kept: &Kept) -> anyhow::Result<()> {
    if !running(kept) {
        return Ok(());
    }
    let q = crate::quote::quote(&kept.name);
    Err(failure(USAGE, format!("{q} is still running: its changes can be applied or discarded once it has ended")))
}

/// Write `meta` as `kept`'s record, `meta.json`.
///
/// # Errors
/// The write's.
pub fn write_meta(kept: &mut Kept, meta: Meta) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(&meta).map_err(std::io::Error::other)?;
    std::fs::write(kept.path.join("meta.json"), text)?;
    kept.meta = Some(meta);
    Ok(())
}

/// Remove a kept run whole. overlayfs may leave `work/work` with mode 0 and a payload a
/// directory it made unreadable: when a first try fails, directories are made searchable on
/// the way down (never following a symlink: `symlink_metadata`) and it is tried again.
///
/// # Errors
/// 71 with the path that could not be removed.
pub fn remove(kept: &Kept) -> anyhow::Result<()> {
    if std::fs::remove_dir_all(&kept.path).is_ok() {
        return Ok(());
    }
    open_up(&kept.path);
    std::fs::remove_dir_all(&kept.path)
        .map_err(|e| failure(OS_ERROR, format!("cannot remove {}: {}", kept.path.display(), crate::error::io_text(&e))))
}

fn open_up(dir: &Path) {
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            open_up(&e.path());
        }
    }
}
