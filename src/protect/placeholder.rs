//! Placeholders for protected paths that do not exist (SPEC P8): an empty directory (an empty
//! file inside `.git`) made before the run with a mode no one gives such an entry by hand
//! ([`DIR_MODE`], [`FILE_MODE`]), and held with a shared `flock(2)` while a run uses it. After
//! the run, a run that can take the lock exclusively removes it: the last of the runs that
//! share it (the kernel drops a lock with the last descriptor, however the process ended).
//! One that a run killed with SIGKILL left is found by the next run in that directory by its
//! mode, used, and removed at that run's end, so DIR holds nothing extra.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{fchmod, flock, fstat, mkdirat, openat, statat, unlinkat, AtFlags, FileType, FlockOperation};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::probe::{self, Kind};
use super::{aside, Protection, Watch, PLACEHOLDER};
use crate::error::{failure, POLICY};

/// A placeholder directory's mode: sticky, read and search for its owner only.
pub const DIR_MODE: u32 = 0o1500;
/// A placeholder file's mode: read for its owner only.
pub const FILE_MODE: u32 = 0o400;

/// A placeholder this run holds: where, and the descriptor its shared lock is on.
struct Held {
    path: PathBuf,
    root: PathBuf,
    dir: bool,
    fd: OwnedFd,
}

/// A run's protection on the host: the placeholders it holds and the paths it watches. When
/// dropped (after the sandbox is gone, also on an error), it removes the placeholders no other
/// run holds, and moves aside what the payload made at a watched path (one `snug: ` line each).
pub struct Guard {
    held: Vec<Held>,
    watched: Vec<Watch>,
    run: String,
}

/// Whether `st` is a placeholder's: the mode, and empty (a file; a directory is checked
/// empty when it is removed).
pub fn marked(st: &rustix::fs::Stat) -> bool {
    let mode = st.st_mode & 0o7777;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => mode == DIR_MODE,
        FileType::RegularFile => mode == FILE_MODE && st.st_size == 0,
        _ => false,
    }
}

/// Make `p`'s placeholders (or take one already there: another run's, or a killed run's) and
/// hold them; `run` (the run's name) names what the watches move aside. A placeholder that
/// cannot be made where the caller may not write is dropped with its mount (the payload, with
/// fewer rights, cannot write there either).
///
/// # Errors
/// [`POLICY`] (77) when something else than a placeholder appeared at a placeholder's path
/// meanwhile (a symlink would carry its bind elsewhere).
pub fn prepare(p: &mut Protection, run: &str) -> anyhow::Result<Guard> {
    let mut guard = Guard { held: Vec::new(), watched: p.watched.clone(), run: run.to_string() };
    let mut dropped = Vec::new();
    for h in &p.placeholders {
        match hold(&h.root, &h.path, h.dir) {
            Ok(fd) => guard.held.push(Held { path: h.path.clone(), root: h.root.clone(), dir: h.dir, fd }),
            Err(Errno::ACCESS | Errno::PERM | Errno::ROFS) => dropped.push(h.path.clone()),
            Err(_) => {
                let why = "something other than a placeholder appeared there as the run started";
                return Err(failure(POLICY, format!("{}: a protected path, and {why}", h.path.display())));
            }
        }
    }
    p.mounts.retain(|m| !(m.profile == PLACEHOLDER && dropped.contains(&m.dest)));
    p.placeholders.retain(|h| !dropped.contains(&h.path));
    Ok(guard)
}

/// The parent of `path` below `root`, through no symlink, open for reading.
fn parent(root: &Path, path: &Path) -> Result<(OwnedFd, PathBuf), Errno> {
    let rootfd = probe::open_root(root).ok_or(Errno::NOENT)?;
    let rel = path.strip_prefix(root).map_err(|_| Errno::INVAL)?;
    let (parent, name) = probe::split(rel);
    let pdir = probe::open_dir(&rootfd, parent).map_err(|_| Errno::LOOP)?.ok_or(Errno::NOENT)?;
    // An O_PATH descriptor serves no mkdirat/openat: the parent again, readable.
    let pdir = openat(&pdir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    Ok((pdir, PathBuf::from(name)))
}

/// Make the placeholder at `path` below `root` unless one is there, open it through no
/// symlink, and take a shared lock on it.
fn hold(root: &Path, path: &Path, dir: bool) -> Result<OwnedFd, Errno> {
    let (pdir, name) = parent(root, path)?;
    let made = if dir {
        mkdirat(&pdir, &name, Mode::from_raw_mode(DIR_MODE))
    } else {
        let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        openat(&pdir, &name, flags, Mode::from_raw_mode(FILE_MODE)).map(drop)
    };
    match made {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e),
    }
    let kind = if dir { OFlags::DIRECTORY } else { OFlags::empty() };
    let fd = match openat(&pdir, &name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | kind, Mode::empty()) {
        Ok(fd) => fd,
        // Another user's run made it (root's, in a DIR both use): its mode lets no one else
        // read it. Opened by path, it is checked and used, never locked, so never removed
        // here: its own run removes it at its end ([`release`] cannot lock a path descriptor).
        Err(Errno::ACCESS) if made.is_err() => {
            openat(&pdir, &name, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC | kind, Mode::empty())
                .map_err(|_| Errno::EXIST)?
        }
        Err(_) => return Err(Errno::EXIST),
    };
    let st = fstat(&fd)?;
    if made.is_ok() {
        // The umask may have taken bits off: the mode is what marks it.
        fchmod(&fd, Mode::from_raw_mode(if dir { DIR_MODE } else { FILE_MODE }))?;
    } else if !marked(&st) {
        return Err(Errno::EXIST);
    }
    match flock(&fd, FlockOperation::LockShared) {
        Err(Errno::BADF) if made.is_err() => {} // opened by path: another user's placeholder
        r => r?,
    }
    Ok(fd)
}

/// Remove the placeholder `h` if this run is the last one holding it and it is still the
/// one held (same device and inode, empty: a directory that is not fails with ENOTEMPTY).
/// Gives back its descriptor, whose last close frees what was removed.
fn release(h: Held) -> OwnedFd {
    if flock(&h.fd, FlockOperation::NonBlockingLockExclusive).is_err() {
        return h.fd; // another run holds it and removes it at its end
    }
    let Ok(held) = fstat(&h.fd) else { return h.fd };
    let Ok((pdir, name)) = parent(&h.root, &h.path) else { return h.fd };
    let Ok(st) = statat(&pdir, &name, AtFlags::SYMLINK_NOFOLLOW) else { return h.fd };
    if (st.st_dev, st.st_ino) != (held.st_dev, held.st_ino) || !marked(&st) {
        return h.fd;
    }
    let _ = unlinkat(&pdir, &name, if h.dir { AtFlags::REMOVEDIR } else { AtFlags::empty() });
    h.fd
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The placeholders are gone from DIR before snug exits; the last close of each,
        // which frees its directory's block and can wait on the disk, is the kernel's
        // (`crate::sys::deferred`).
        let fds = self.held.drain(..).rev().map(release).collect();
        crate::sys::deferred::close_later(fds);
        for w in &self.watched {
            if let Some(line) = aside::settle(w, &self.run) {
                crate::log::say!("snug: {line}");
            }
        }
    }
}

/// Whether `kind` at `rel` below `root` is a placeholder (a run's, or one a killed run left):
/// [`super::plan`] plans it as missing.
pub fn is_placeholder(root: &OwnedFd, rel: &Path, kind: Kind) -> bool {
    if !matches!(kind, Kind::Dir(..) | Kind::File(..)) {
        return false;
    }
    let (parent, name) = probe::split(rel);
    let Ok(Some(dir)) = probe::open_dir(root, parent) else { return false };
    statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| marked(&st))
}
