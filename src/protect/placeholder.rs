//! Placeholders for protected paths that do not exist (SPEC P8): made before the run,
//! removed after it, and recorded meanwhile in a file of the caller's state directory that
//! the run holds an `flock(2)` on, so that the next run sweeps what a run killed with SIGKILL
//! left (the kernel drops the lock with the last descriptor, whatever ended the process).

use std::io::Write as _;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::{flock, mkdirat, openat, statat, unlinkat, AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::probe::{self, Kind};
use super::{aside, Protection, Watch, PLACEHOLDER};
use crate::error::{failure, POLICY};

/// A placeholder this run made: where, of which kind, and its (device, inode).
struct Made {
    path: PathBuf,
    root: PathBuf,
    dir: bool,
    id: (u64, u64),
}

/// A run's protection on the host: the placeholders it made and the paths it watches. When
/// dropped (after the sandbox is gone, also on an error), it removes the placeholders, moves
/// aside what the payload made at a watched path (one `snug: ` line each) and its record.
pub struct Guard {
    made: Vec<Made>,
    watched: Vec<Watch>,
    record: Option<(PathBuf, std::fs::File)>,
    run: String,
}

/// The directory of the runs' records: `$XDG_STATE_HOME/snug/placeholders` (default
/// `~/.local/state/snug/placeholders`), `None` without a usable HOME.
fn records() -> Option<PathBuf> {
    let vars: Vec<(String, String)> =
        ["XDG_STATE_HOME", "HOME"].iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v))).collect();
    crate::project::state_dir(&vars).map(|s| s.join("placeholders"))
}

/// Make `p`'s placeholders and record them; run `run`'s watches start here. A placeholder
/// that cannot be made where the caller may not write is dropped with its mount (the payload,
/// with fewer rights, cannot write there either).
///
/// # Errors
/// [`POLICY`] (77) when something else than a directory or file appeared at a placeholder's
/// path meanwhile (a symlink would carry its bind elsewhere).
pub fn prepare(p: &mut Protection, run: &str) -> anyhow::Result<Guard> {
    let mut guard = Guard { made: Vec::new(), watched: p.watched.clone(), record: None, run: run.to_string() };
    if p.placeholders.is_empty() && p.watched.is_empty() {
        return Ok(guard);
    }
    guard.record = open_record();
    let mut dropped = Vec::new();
    for h in &p.placeholders {
        match make(&h.root, &h.path, h.dir) {
            Ok(Some(id)) => {
                if let Some((_, f)) = guard.record.as_mut() {
                    let kind = if h.dir { 'D' } else { 'F' };
                    let _ = writeln!(f, "{kind}\t{}\t{}\t{}\t{}", id.0, id.1, h.root.display(), h.path.display());
                }
                guard.made.push(Made { path: h.path.clone(), root: h.root.clone(), dir: h.dir, id });
            }
            Ok(None) => {}
            Err(Errno::ACCESS | Errno::PERM | Errno::ROFS) => dropped.push(h.path.clone()),
            Err(_) => {
                let why = "something other than a file or directory appeared there as the run started";
                return Err(failure(POLICY, format!("{}: a protected path, and {why}", h.path.display())));
            }
        }
    }
    p.mounts.retain(|m| !(m.profile == PLACEHOLDER && dropped.contains(&m.dest)));
    p.placeholders.retain(|h| !dropped.contains(&h.path));
    Ok(guard)
}

/// Make an empty directory or file at `path` below `root`, through no symlink: its (device,
/// inode), or `None` when a directory or file is there already (not ours to remove).
fn make(root: &Path, path: &Path, dir: bool) -> Result<Option<(u64, u64)>, Errno> {
    let rootfd = probe::open_root(root).ok_or(Errno::NOENT)?;
    let rel = path.strip_prefix(root).map_err(|_| Errno::INVAL)?;
    let (parent, name) = probe::split(rel);
    let pdir = probe::open_dir(&rootfd, parent).map_err(|_| Errno::LOOP)?.ok_or(Errno::NOENT)?;
    // O_PATH descriptors do not serve mkdirat/openat: the parent again, readable.
    let pdir = openat(&pdir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    let made = if dir {
        mkdirat(&pdir, name, Mode::from_raw_mode(0o755))
    } else {
        let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        openat(&pdir, name, flags, Mode::from_raw_mode(0o644)).map(drop)
    };
    match made {
        Ok(()) => {
            let st = statat(&pdir, name, AtFlags::SYMLINK_NOFOLLOW)?;
            Ok(Some((st.st_dev, st.st_ino)))
        }
        Err(Errno::EXIST) => match probe::probe(&rootfd, rel) {
            Ok(Kind::Dir(..) | Kind::File(..)) => Ok(None),
            _ => Err(Errno::EXIST),
        },
        Err(e) => Err(e),
    }
}

/// Remove the placeholder `name` in `root`'s `rel` parent when it is still the one made
/// (same device and inode, still empty: a directory that is not fails with ENOTEMPTY).
fn remove(root: &Path, path: &Path, dir: bool, id: (u64, u64)) {
    let Some(rootfd) = probe::open_root(root) else { return };
    let Ok(rel) = path.strip_prefix(root) else { return };
    let (parent, name) = probe::split(rel);
    let Ok(Some(pdir)) = probe::open_dir(&rootfd, parent) else { return };
    let Ok(pdir) = openat(&pdir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) else {
        return;
    };
    let Ok(st) = statat(&pdir, name, AtFlags::SYMLINK_NOFOLLOW) else { return };
    let ty = FileType::from_raw_mode(st.st_mode);
    if (st.st_dev, st.st_ino) != id || (ty == FileType::Directory) != dir || (!dir && st.st_size != 0) {
        return;
    }
    let _ = unlinkat(&pdir, name, if dir { AtFlags::REMOVEDIR } else { AtFlags::empty() });
}

impl Drop for Guard {
    fn drop(&mut self) {
        for m in self.made.drain(..).rev() {
            remove(&m.root, &m.path, m.dir, m.id);
        }
        for w in &self.watched {
            if let Some(line) = aside::settle(w, &self.run) {
                crate::log::say!("snug: {line}");
            }
        }
        if let Some((path, _file)) = self.record.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A new record, locked for the life of this process: made under a hidden name, locked,
/// then renamed into place, so that a sweep never sees it unlocked.
fn open_record() -> Option<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = records()?;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).ok()?;
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let name = format!("{}-{stamp}", std::process::id());
    let hidden = dir.join(format!(".{name}"));
    let file = std::fs::OpenOptions::new().create_new(true).append(true).open(&hidden).ok()?;
    flock(file.as_fd(), FlockOperation::LockExclusive).ok()?;
    let path = dir.join(name);
    std::fs::rename(&hidden, &path).ok()?;
    Some((path, file))
}

/// Remove what runs that ended without removing their placeholders left (a SIGKILL of snug):
/// each record no live run holds locked. Called before a run looks at its roots.
pub fn sweep() {
    let Some(dir) = records() else { return };
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    for e in entries.flatten().take(1000) {
        if e.file_name().as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = e.path();
        let Ok(file) = std::fs::OpenOptions::new().read(true).open(&path) else { continue };
        if flock(file.as_fd(), FlockOperation::NonBlockingLockExclusive).is_err() {
            continue; // its run is alive
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines().rev() {
            let f: Vec<&str> = line.splitn(5, '\t').collect();
            let [kind, dev, ino, root, p] = f[..] else { continue };
            let (Ok(dev), Ok(ino)) = (dev.parse(), ino.parse()) else { continue };
            remove(Path::new(root), Path::new(p), kind == "D", (dev, ino));
        }
        let _ = std::fs::remove_file(&path);
    }
}
