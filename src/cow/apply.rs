//! `snug apply` (SPEC W4): the kept changes written into DIR, never outside it. Every parent
//! is opened from DIR's descriptor with `openat2(2)` `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`,
//! so a `..` or a symlink planted in DIR after the run is refused, not followed; each file is
//! a temporary file in its directory renamed over the old one; deletions come last, deepest
//! first. What is refused before anything is written (conflicts, protected paths) is
//! [`super::plan`]'s.

use super::changes::{Change, Kind, Node};
use crate::error::{failure, OS_ERROR};
use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// What `snug apply` was asked.
pub struct Ask<'a> {
    /// The kept run.
    pub name: &'a str,
    /// Only these paths.
    pub paths: &'a [PathBuf],
    /// Apply the rest when something is refused.
    pub partial: bool,
    /// Apply over host changes made since the run started.
    pub force: bool,
    /// Protected paths that may be written.
    pub unprotect: &'a [PathBuf],
}

/// Apply; returns the exit code (0; 1 when something was refused; 71 when the system refused
/// a write, SPEC R4) after one `snug: ` line per path not applied.
///
/// # Errors
/// As [`super::diff::load`]; 71 when DIR cannot be opened.
pub fn apply(ask: &Ask<'_>) -> anyhow::Result<i32> {
    let (mut kept, dir, all) = super::diff::load(ask.name, ask.paths)?;
    super::store::not_running(&kept)?;
    let mut meta = kept.meta.clone().ok_or_else(|| failure(OS_ERROR, format!("{}: no record", ask.name)))?;
    let beneath = beneath();
    let root_fd = rustix::fs::openat2(
        rustix::fs::CWD,
        &dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(|e| {
        failure(OS_ERROR, format!("cannot open DIR {}: {}", dir.display(), crate::error::strerror(e.raw_os_error())))
    })?;
    let since = super::plan::Since { started: meta.started_ns, applied: &meta.applied };
    let (todo, refused) = super::plan::plan(ask, &all, root_fd.as_fd(), &since, &dir);
    for line in &refused {
        crate::log::say!("snug: apply: {line}");
    }
    if !refused.is_empty() && !ask.partial {
        crate::log::say!("snug: apply: nothing written; --partial applies the rest");
        return Ok(1);
    }
    let (mut failed, mut os_failed) = (0usize, false);
    let mut applied = 0usize;
    // Writes in path order (a directory before what it holds), deletions deepest first.
    let (dels, writes): (Vec<&Change>, Vec<&Change>) = todo.into_iter().partition(|c| c.kind == Kind::Deleted);
    let mut links = Links::new();
    let mut modes = super::modes::DirModes::new();
    let mut wrote_in = std::collections::BTreeSet::new();
    for c in writes.iter().chain(dels.iter().rev()) {
        match write_one(root_fd.as_fd(), c, beneath, &mut links, &mut modes) {
            Ok(()) => {
                applied += 1;
                wrote_in.insert(c.path.parent().unwrap_or(Path::new("")).to_path_buf());
                if c.new == Some(Node::Dir) {
                    wrote_in.insert(c.path.clone());
                }
            }
            Err(e) => {
                failed += 1;
                os_failed |= e.raw_os_error().is_some();
                crate::log::say!("snug: apply: {}: {}", c.path.display(), crate::error::io_text(&e));
            }
        }
    }
    for (rel, e) in modes.finish(root_fd.as_fd(), beneath) {
        failed += 1;
        os_failed |= e.raw_os_error().is_some();
        crate::log::say!("snug: apply: {}: mode: {}", rel.display(), crate::error::io_text(&e));
    }
    let q = crate::quote::quote(ask.name).into_owned();
    let all_done = refused.is_empty() && failed == 0;
    if all_done && ask.paths.is_empty() {
        super::store::remove(&kept)?;
        crate::log::say!("snug: applied {applied} changes to {}; {q} is no longer kept", dir.display());
    } else {
        // What stays kept is judged later against DIR as snug leaves it now.
        for rel in wrote_in {
            if let Some(t) = ctime_at(root_fd.as_fd(), &rel, beneath) {
                meta.applied.insert(rel, t);
            }
        }
        if let Err(e) = super::store::write_meta(&mut kept, meta) {
            crate::log::say!("snug: apply: {}: {}", ask.name, crate::error::io_text(&e));
        }
        crate::log::say!("snug: applied {applied} changes to {}; the rest stays kept as {q}", dir.display());
    }
    // R4: a write the system refused (EACCES, EROFS, ENOSPC) is snug's own failure, 71; a
    // path refused by W4's rules is 1, as a conflict is.
    Ok(match (all_done, os_failed) {
        (true, _) => 0,
        (false, true) => OS_ERROR,
        (false, false) => 1,
    })
}

/// The ctime (ns) of DIR's directory `rel` ("" is DIR), opened as `how` resolves.
fn ctime_at(root: BorrowedFd<'_>, rel: &Path, how: ResolveFlags) -> Option<i128> {
    let st = if rel.as_os_str().is_empty() {
        rustix::fs::fstat(root).ok()?
    } else {
        let fd = rustix::fs::openat2(root, rel, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty(), how);
        rustix::fs::fstat(fd.ok()?).ok()?
    };
    Some(super::plan::ctime(&st))
}

/// How every path below DIR is resolved: never leaving DIR, never following a symlink.
pub(super) fn beneath() -> ResolveFlags {
    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
}

/// The directory holding `rel`, opened from DIR without leaving it or following a symlink.
pub(super) fn parent_of(root: BorrowedFd<'_>, rel: &Path, how: ResolveFlags) -> std::io::Result<OwnedFd> {
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) || rel.as_os_str().is_empty() {
        return Err(std::io::Error::other("refused: the path leaves DIR"));
    }
    let parent = rel.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let fd = rustix::fs::openat2(root, parent, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty(), how)
        .map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::XDEV => {
                std::io::Error::other("refused: a directory on the way is a symlink or leaves DIR")
            }
            e => e.into(),
        })?;
    Ok(fd)
}

/// Files applied so far that have other names in the upper layer: (device, inode) of the
/// kept file → where it was applied, so the payload's hard links stay links in DIR.
type Links = std::collections::HashMap<(u64, u64), PathBuf>;

/// Write one change; directory modes wait in `modes` ([`super::modes`]).
fn write_one(
    root: BorrowedFd<'_>,
    c: &Change,
    how: ResolveFlags,
    links: &mut Links,
    modes: &mut super::modes::DirModes,
) -> std::io::Result<()> {
    let parent = parent_of(root, &c.path, how)?;
    modes.open_up(parent.as_fd(), c.path.parent().unwrap_or(Path::new("")))?;
    let name = c.path.file_name().unwrap_or_default();
    if matches!(c.kind, Kind::Deleted | Kind::Type) {
        remove_at(parent.as_fd(), Path::new(name))?;
        if c.kind == Kind::Deleted {
            return Ok(());
        }
    }
    let me_root = rustix::process::geteuid().is_root();
    let mode = c.mode & 0o777;
    if c.mode & 0o6000 != 0 {
        crate::log::say!("snug: apply: {}: set-id bits not applied (mode {:o})", c.path.display(), mode);
    }
    let owner = |fd: BorrowedFd<'_>, at: &Path| -> std::io::Result<()> {
        if me_root {
            let (u, g) = (rustix::fs::Uid::from_raw(c.owner.0), rustix::fs::Gid::from_raw(c.owner.1));
            rustix::fs::chownat(fd, at, Some(u), Some(g), AtFlags::SYMLINK_NOFOLLOW)?;
        }
        Ok(())
    };
    // Not the name itself: a name near NAME_MAX (255 bytes) would leave no room.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = format!(".snug-apply.{}.{n}", std::process::id());
    match (&c.new, c.kind) {
        (Some(Node::Dir), Kind::Mode) => {
            modes.later(&c.path, mode);
            Ok(())
        }
        (Some(_), Kind::Mode) => chmod_nofollow(parent.as_fd(), name, mode),
        (Some(Node::Dir), _) => {
            match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            owner(parent.as_fd(), Path::new(name))?;
            modes.later(&c.path, mode);
            Ok(())
        }
        (Some(Node::Symlink(target)), _) => {
            let _ = rustix::fs::unlinkat(&parent, tmp.as_str(), AtFlags::empty());
            rustix::fs::symlinkat(target.as_os_str(), &parent, tmp.as_str())?;
            let done = owner(parent.as_fd(), Path::new(&tmp))
                .and_then(|()| Ok(rustix::fs::renameat(&parent, tmp.as_str(), &parent, name)?));
            done.inspect_err(|_| {
                let _ = rustix::fs::unlinkat(&parent, tmp.as_str(), AtFlags::empty());
            })
        }
        (Some(Node::File), _) => {
            use std::os::unix::fs::MetadataExt;
            let src = c.source.as_deref().ok_or_else(|| std::io::Error::other("no source"))?;
            let m = std::fs::symlink_metadata(src)?;
            let key = (m.dev(), m.ino());
            let linked = match links.get(&key).filter(|_| m.nlink() > 1) {
                Some(first) => {
                    let from = parent_of(root, first, how)?;
                    let first_name = first.file_name().unwrap_or_default();
                    let _ = rustix::fs::unlinkat(&parent, tmp.as_str(), AtFlags::empty());
                    rustix::fs::linkat(&from, first_name, &parent, tmp.as_str(), AtFlags::empty()).is_ok()
                }
                None => false,
            };
            let made = if linked { Ok(()) } else { copy_in(parent.as_fd(), &tmp, src, mode, &owner) };
            if !linked && m.nlink() > 1 {
                links.insert(key, c.path.clone());
            }
            let done = made.and_then(|()| Ok(rustix::fs::renameat(&parent, tmp.as_str(), &parent, name)?));
            done.inspect_err(|_| {
                let _ = rustix::fs::unlinkat(&parent, tmp.as_str(), AtFlags::empty());
            })
        }
        _ => Ok(()),
    }
}

/// `src` (the upper layer's file, opened without following a symlink) copied into a new
/// `tmp` in `parent`, with its owner (root only) and `mode` (no set-id bits).
fn copy_in(
    parent: BorrowedFd<'_>,
    tmp: &str,
    src: &Path,
    mode: u32,
    owner: &dyn Fn(BorrowedFd<'_>, &Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut from = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(src)?;
    if !from.metadata()?.is_file() {
        return Err(std::io::Error::other("the kept file is not a regular file"));
    }
    let _ = rustix::fs::unlinkat(parent, tmp, AtFlags::empty());
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(parent, tmp, flags, Mode::from_raw_mode(0o600))?;
    let mut to = std::fs::File::from(fd);
    copy_sparse(&mut from, &mut to)?;
    owner(parent, Path::new(tmp))?;
    rustix::fs::fchmod(&to, Mode::from_raw_mode(mode))?;
    Ok(())
}

/// Copy `from` into the empty `to` data extent by data extent (`lseek(2)` `SEEK_DATA`,
/// `SEEK_HOLE`), so a sparse file the payload made (`truncate -s 20G`) stays sparse in DIR
/// instead of costing its whole size in real blocks. Each extent goes through
/// [`std::io::copy`] (`copy_file_range(2)` on Linux). A file system without `SEEK_DATA`
/// (`EINVAL`) gets a plain copy.
fn copy_sparse(from: &mut std::fs::File, to: &mut std::fs::File) -> std::io::Result<()> {
    use rustix::fs::{seek, SeekFrom};
    use std::io::{Read, Seek};
    let size = from.metadata()?.len();
    let mut at = 0;
    while at < size {
        let data = match seek(&*from, SeekFrom::Data(at)) {
            Ok(d) => d,
            Err(rustix::io::Errno::NXIO) => break, // only a hole from `at` to the end
            Err(rustix::io::Errno::INVAL) if at == 0 => {
                std::io::copy(from, to)?;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let hole = seek(&*from, SeekFrom::Hole(data))?.min(size);
        from.seek(std::io::SeekFrom::Start(data))?;
        to.seek(std::io::SeekFrom::Start(data))?;
        let n = std::io::copy(&mut (&*from).take(hole - data), to)?;
        if n < hole - data {
            return to.set_len(data + n); // the file shrank while copied: what was read is all
        }
        at = hole;
    }
    to.set_len(size)
}

/// chmod of `name` in `parent` without following a symlink: an `O_PATH` descriptor of the
/// node itself, changed through its `/proc/self/fd` entry (fchmodat's `AT_SYMLINK_NOFOLLOW`
/// needs Linux 6.6's fchmodat2). A symlink's mode means nothing and is left.
fn chmod_nofollow(parent: BorrowedFd<'_>, name: &std::ffi::OsStr, mode: u32) -> std::io::Result<()> {
    let fd = rustix::fs::openat(parent, name, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
    if rustix::fs::fstat(&fd)?.st_mode & libc::S_IFMT == libc::S_IFLNK {
        return Ok(());
    }
    super::modes::chmod_fd(fd.as_fd(), mode)
}

/// Remove `name` in `parent`, a directory with all it holds, never following a symlink.
fn remove_at(parent: BorrowedFd<'_>, name: &Path) -> std::io::Result<()> {
    let st = match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Ok(rustix::fs::unlinkat(parent, name, AtFlags::empty())?);
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = rustix::fs::openat(parent, name, flags, Mode::empty())?;
    // A read-only directory of the caller's (`chmod -R a-w`) that goes anyway: opened up.
    if st.st_mode & 0o300 != 0o300 && st.st_uid == rustix::process::geteuid().as_raw() {
        rustix::fs::fchmod(&dir, Mode::from_raw_mode(0o700))?;
    }
    let mut entries = Vec::new();
    for e in rustix::fs::Dir::read_from(&dir)? {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            entries.push(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(n).to_os_string());
        }
    }
    for n in entries {
        remove_at(dir.as_fd(), Path::new(&n))?;
    }
    Ok(rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)?)
}
