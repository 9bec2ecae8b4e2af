//! The bounded walk of one watched tmpfs: by descriptor from its open root (`openat(2)` with
//! `O_NOFOLLOW`, `getdents64(2)`), never by path, so a symlink the payload left cannot lead
//! it elsewhere; a directory on another filesystem (a bind that is still mounted) is not
//! entered.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rustix::fs::{fstat, openat, Dir, FileType, Mode, OFlags};

use super::{MAX_DEPTH, MAX_ENTRIES, MAX_WALK};

/// A place (its sandbox path, and whether it is a file itself) and its file count.
pub(super) type Count = ((PathBuf, bool), u64);

/// Counts over all roots of one run.
pub(super) struct Walk<'a> {
    skip: &'a [PathBuf],
    start: Instant,
    entries: usize,
    complete: bool,
    files: u64,
    counts: BTreeMap<(PathBuf, bool), u64>,
}

/// One directory being read: its descriptor (to open what is in it), its listing, its path.
struct Level {
    fd: OwnedFd,
    dir: Dir,
    path: PathBuf,
    depth: usize,
}

impl<'a> Walk<'a> {
    /// A walk that leaves out the paths in `skip` (mountpoints) and what is below them.
    pub(super) fn new(skip: &'a [PathBuf]) -> Walk<'a> {
        Walk { skip, start: Instant::now(), entries: 0, complete: true, files: 0, counts: BTreeMap::new() }
    }

    /// Walk the directory `root`, which is `dest` in the sandbox, counting each file under the
    /// place `place` gives for its sandbox path (and whether that place is the file itself).
    /// `place` gives `None` for a file that is not counted at all (noise, O11).
    pub(super) fn root(&mut self, root: &OwnedFd, dest: &Path, place: &dyn Fn(&Path) -> Option<(PathBuf, bool)>) {
        let Ok(dev) = fstat(root).map(|s| s.st_dev) else { return self.incomplete() };
        let Some(first) = level(root, dest.to_path_buf(), 0) else { return self.incomplete() };
        let mut stack = vec![first];
        while let Some(top) = stack.last_mut() {
            let depth = top.depth;
            let entry = match top.dir.read() {
                None => {
                    stack.pop();
                    continue;
                }
                Some(Err(_)) => {
                    self.complete = false;
                    stack.pop();
                    continue;
                }
                Some(Ok(e)) => e,
            };
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            self.entries += 1;
            if self.entries > MAX_ENTRIES || (self.entries.is_multiple_of(64) && self.start.elapsed() > MAX_WALK) {
                return self.incomplete();
            }
            let path = top.path.join(OsStr::from_bytes(name));
            if self.skip.contains(&path) {
                continue;
            }
            if entry.file_type() != FileType::Directory {
                if let Some(at) = place(&path) {
                    self.files += 1;
                    *self.counts.entry(at).or_insert(0) += 1;
                }
                continue;
            }
            if depth >= MAX_DEPTH {
                self.complete = false;
                continue;
            }
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let Ok(fd) = openat(&top.fd, entry.file_name(), flags, Mode::empty()) else {
                self.complete = false; // unreadable (a chmod 000 by the payload)
                continue;
            };
            if fstat(&fd).map(|s| s.st_dev).ok() != Some(dev) {
                continue; // another filesystem: a bind mount, not what the payload wrote here
            }
            match level(&fd, path, depth + 1) {
                Some(l) => stack.push(l),
                None => self.complete = false,
            }
        }
    }

    fn incomplete(&mut self) {
        self.complete = false;
    }

    /// Files seen, whether the walk saw everything, and the count per place.
    pub(super) fn finish(self) -> (u64, bool, Vec<Count>) {
        (self.files, self.complete, self.counts.into_iter().collect())
    }
}

/// A [`Level`] for directory `fd` at `path` (its own descriptor: [`Dir`] reads a duplicate).
fn level(fd: &OwnedFd, path: PathBuf, depth: usize) -> Option<Level> {
    let own = rustix::io::fcntl_dupfd_cloexec(fd.as_fd(), 0).ok()?;
    let dir = Dir::read_from(fd).ok()?;
    Some(Level { fd: own, dir, path, depth })
}
