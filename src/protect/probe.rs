//! Looking at a writable root without following a symlink in it (SPEC P8): every path is
//! opened from the root's descriptor with `openat2(2)` `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`, and its last component is looked at with `fstatat(2)`
//! `AT_SYMLINK_NOFOLLOW`, so a link a payload planted never moves a bind out of its place.

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{openat2, statat, AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// What lies at a path below a root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A directory (device, inode).
    Dir(u64, u64),
    /// A regular file or anything else that is no directory and no symlink.
    File(u64, u64),
    /// A symlink, not followed (device, inode).
    Symlink(u64, u64),
    /// Nothing, in a directory that exists.
    Missing,
    /// A directory above it does not exist (or is no directory).
    NoParent,
}

/// What tells a node at a watched path from one put there in its place during the run: its
/// device, inode, type and ctime. The inode alone does not: a filesystem hands a freed one out
/// again at once (ext4 gives the `mkdir` right after an `rm` of a symlink that symlink's
/// number), and a new node's ctime is its making.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    id: (u64, u64),
    kind: u32,
    ctime: (i64, i64),
}

/// The [`Stamp`] of what is at `rel` below `root`, not followed; `None` when nothing is there
/// or it cannot be looked at.
pub fn stamp(root: &OwnedFd, rel: &Path) -> Option<Stamp> {
    let (parent, name) = split(rel);
    let dir = open_dir(root, parent).ok()??;
    let st = statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    let kind = st.st_mode & libc::S_IFMT;
    Some(Stamp { id: (st.st_dev, st.st_ino), kind, ctime: (st.st_ctime, st.st_ctime_nsec as i64) })
}

/// Why a path could not be looked at: a symlink on the way, or another error.
#[derive(Debug)]
pub enum Refused {
    /// A symlink (or a mount crossing) between the root and the path.
    Symlink,
    /// Any other error, as errno.
    Os(Errno),
}

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS).union(ResolveFlags::NO_MAGICLINKS);

/// Open `root` (absolute; symlinks above it are the caller's own) as an `O_PATH` directory.
pub fn open_root(root: &Path) -> Option<OwnedFd> {
    rustix::fs::open(root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()
}

/// The directory `rel` below `root`, through no symlink (`O_PATH`); `Ok(None)` when missing.
pub fn open_dir(root: &OwnedFd, rel: &Path) -> Result<Option<OwnedFd>, Refused> {
    if rel.as_os_str().is_empty() {
        return rustix::io::fcntl_dupfd_cloexec(root, 0).map(Some).map_err(Refused::Os);
    }
    // RESOLVE_NO_SYMLINKS covers the last component too (ELOOP); O_NOFOLLOW would, with
    // O_PATH, open a symlink itself and fail with ENOTDIR, which reads as missing.
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    match openat2(root, rel, flags, Mode::empty(), BENEATH) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT | Errno::NOTDIR) => Ok(None),
        Err(Errno::LOOP | Errno::XDEV) => Err(Refused::Symlink),
        Err(e) => Err(Refused::Os(e)),
    }
}

/// What is at `rel` below `root` (`rel` not empty).
pub fn probe(root: &OwnedFd, rel: &Path) -> Result<Kind, Refused> {
    let (parent, name) = split(rel);
    let Some(dir) = open_dir(root, parent)? else { return Ok(Kind::NoParent) };
    match statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            let id = (st.st_dev, st.st_ino);
            Ok(match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => Kind::Dir(id.0, id.1),
                FileType::Symlink => Kind::Symlink(id.0, id.1),
                _ => Kind::File(id.0, id.1),
            })
        }
        Err(Errno::NOENT) => Ok(Kind::Missing),
        Err(e) => Err(Refused::Os(e)),
    }
}

/// The first 64 KiB of the regular file `rel` below `root`, through no symlink, as text.
pub fn read_small(root: &OwnedFd, rel: &Path) -> Option<String> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK;
    let fd = openat2(root, rel, flags, Mode::empty(), BENEATH).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut buf = vec![0u8; 64 << 10];
    let mut n = 0;
    while n < buf.len() {
        match rustix::io::read(&fd, &mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
    buf.truncate(n);
    String::from_utf8(buf).ok()
}

/// The target of the symlink `rel` below `root`, as written.
pub fn link_target(root: &OwnedFd, rel: &Path) -> Option<std::path::PathBuf> {
    let (parent, name) = split(rel);
    let dir = open_dir(root, parent).ok()??;
    let target = rustix::fs::readlinkat(&dir, name, Vec::new()).ok()?;
    let bytes = target.into_bytes();
    Some(std::path::PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes)))
}

/// The names of the real directories (no symlinks) in directory `rel` below `root`, sorted.
pub fn subdirs(root: &OwnedFd, rel: &Path) -> Result<Vec<std::ffi::OsString>, Refused> {
    use std::os::unix::ffi::OsStrExt;
    let Some(dir) = open_dir(root, rel)? else { return Ok(Vec::new()) };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = openat2(&dir, ".", flags, Mode::empty(), BENEATH).map_err(Refused::Os)?;
    let mut out = Vec::new();
    let mut entries = rustix::fs::Dir::read_from(&fd).map_err(Refused::Os)?;
    // Bounded: a directory of a million entries must not stall the start.
    for entry in entries.by_ref().take(10_000) {
        let Ok(entry) = entry else { break };
        let name = std::ffi::OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        if entry.file_type() == FileType::Directory
            || (entry.file_type() == FileType::Unknown && matches!(probe(root, &rel.join(name)), Ok(Kind::Dir(..))))
        {
            out.push(name.to_os_string());
        }
    }
    out.sort();
    Ok(out)
}

/// (parent, last component) of `rel`.
pub fn split(rel: &Path) -> (&Path, &std::ffi::OsStr) {
    (rel.parent().unwrap_or(Path::new("")), rel.file_name().unwrap_or_default())
}
