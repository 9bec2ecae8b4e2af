//! What `snug apply` writes and what it refuses before writing anything (SPEC W4): protected
//! paths, device nodes and the like, parents that are symlinks or leave DIR, and conflicts,
//! host paths changed since the run started.
//!
//! A host path that is there is in conflict when its ctime is the start or later
//! ([`super::floor`]). A host path that is gone leaves no ctime to read, so a removal is read
//! from the overlay instead: overlayfs marks every node it copies up from the lower layer
//! (DIR) with its `origin` attribute (a null one where DIR's filesystem has no file handles),
//! and a copy-up happens during the run, so a kept node with that mark was in DIR after the
//! start. When DIR no longer has it and the directory that held it changed since the start,
//! the host removed it during or after the run: writing it would undo that. The directory's
//! ctime keeps a name the payload gave a copied-up file (`mv a b`, `ln a b`, an editor's
//! `b~`), which carries the mark too but never was in DIR, from reading as a conflict while
//! the host left that directory alone. Two kept files carry no mark, so their host file's
//! removal is not seen: one the payload deleted and made again, and one that had other hard
//! links in DIR (overlayfs marks those only with its `index` feature, which the mount does not ask for).

use super::apply::{beneath, parent_of, Ask};
use super::changes::{copied_up, Change, Kind, Node};
use rustix::fs::{AtFlags, Stat};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// The changes of `all` to write, in `all`'s order (parents before children), and one line
/// per change refused; device nodes, FIFOs and sockets are left out, each with its line said
/// now. `root` is DIR (`dir`) opened.
pub fn plan<'a>(
    ask: &Ask<'_>,
    all: &'a [Change],
    root: BorrowedFd<'_>,
    since: &Since<'_>,
    dir: &Path,
) -> (Vec<&'a Change>, Vec<String>) {
    let unprotect: Vec<PathBuf> = ask.unprotect.iter().map(|p| clean(p, dir)).collect();
    let mut refused: Vec<String> = Vec::new();
    let mut held: Vec<&Path> = Vec::new();
    let mut todo: Vec<&Change> = Vec::new();
    for c in all {
        let q = c.path.display();
        let replaces = matches!(c.kind, Kind::Deleted | Kind::Type);
        if snug_core::protect::protected(&c.path, replaces) && !unprotect.iter().any(|u| c.path.starts_with(u)) {
            refused.push(format!("{q}: protected (--unprotect {q} writes it)"));
            held.push(&c.path);
            continue;
        }
        if let Some(Node::Special(w)) = &c.new {
            crate::log::say!("snug: apply: {q}: a {w}, not applied");
            continue;
        }
        match judge(c, &todo, &held, root, since, ask.force) {
            Ok(()) => todo.push(c),
            Err(why) => {
                refused.push(format!("{q}: {why}"));
                held.push(&c.path);
            }
        }
    }
    (todo, refused)
}

/// From when a host change counts (W4).
pub struct Since<'a> {
    /// The run's start in ns since the epoch.
    pub started: u128,
    /// The directories an earlier `apply` wrote in, with their ctime right after it
    /// ([`super::store::Meta::applied`]): a ctime still that is snug's own change.
    pub applied: &'a std::collections::BTreeMap<PathBuf, i128>,
}

/// Why `c` is refused, if it is; `todo` holds the changes accepted before it, `held` the
/// paths refused before it.
fn judge(
    c: &Change,
    todo: &[&Change],
    held: &[&Path],
    root: BorrowedFd<'_>,
    since: &Since<'_>,
    force: bool,
) -> Result<(), String> {
    let started = since.started;
    let under = |p: &Path| c.path.starts_with(p) && c.path != p;
    // Below a node this apply replaces by a directory (a symlink, a file), DIR keeps nothing
    // of its own and nothing is followed: the replacement is written first (path order) and
    // each write opens its parents again, never through a symlink, so the writes inside are
    // checked against what the replacement left.
    if todo.iter().any(|t| t.kind == Kind::Type && t.new == Some(Node::Dir) && under(&t.path)) {
        return Ok(());
    }
    let parent = match parent_of(root, &c.path, beneath()) {
        Ok(fd) => Some(fd),
        // A directory this apply makes first (where nothing, or a file, is now): nothing of
        // the host's there to conflict.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) => None,
        Err(e) => return Err(e.to_string()),
    };
    let Some(parent) = parent else {
        // That directory is a change refused: what it holds could only be written into it.
        return match held.iter().find(|h| under(h)) {
            Some(h) => Err(format!("inside {}, which is not applied", h.display())),
            None => Ok(()),
        };
    };
    if force {
        return Ok(());
    }
    let name = c.path.file_name().unwrap_or_default();
    match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if ctime(&st) >= started as i128 => {
            Err("changed on the host since the run started (--force writes over it)".into())
        }
        Err(rustix::io::Errno::NOENT) if removed(c, &parent, since) => {
            Err("removed on the host since the run started (--force writes it again)".into())
        }
        // A directory this apply removes goes with all it holds: a file the host changed in
        // it since the start is a conflict too, though the directory's own ctime shows none.
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR && matches!(c.kind, Kind::Deleted | Kind::Type) => {
            match changed_within(parent.as_fd(), Path::new(name), started as i128) {
                Some(inner) => Err(format!(
                    "{} changed on the host since the run started (--force removes it)",
                    c.path.join(inner).display()
                )),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The first path (relative to `name`) below the directory `name` in `parent` whose ctime is
/// `started` or later, read without following a symlink; `None` when there is none. One the
/// walk cannot read counts as changed: nothing unseen is removed without `--force`. An
/// absolute `name` is opened as it is (`openat(2)` ignores `parent` then).
pub(super) fn changed_within(parent: BorrowedFd<'_>, name: &Path, started: i128) -> Option<PathBuf> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(dir) = rustix::fs::openat(parent, name, flags, Mode::empty()) else { return Some(PathBuf::new()) };
    let Ok(entries) = rustix::fs::Dir::read_from(&dir) else { return Some(PathBuf::new()) };
    for e in entries {
        let Ok(e) = e else { return Some(PathBuf::new()) };
        let n = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(e.file_name().to_bytes());
        if n == "." || n == ".." {
            continue;
        }
        let Ok(st) = rustix::fs::statat(&dir, n, AtFlags::SYMLINK_NOFOLLOW) else { return Some(n.into()) };
        if ctime(&st) >= started {
            return Some(n.into());
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            if let Some(inner) = changed_within(dir.as_fd(), Path::new(n), started) {
                return Some(Path::new(n).join(inner));
            }
        }
    }
    None
}

/// Whether `c`, which DIR's directory `parent` does not hold, is a node the host removed
/// after the start (the module's note): copied up from DIR, from a directory changed since,
/// by other than an earlier `apply`.
fn removed(c: &Change, parent: &OwnedFd, since: &Since<'_>) -> bool {
    let copied = c.kind == Kind::Added && c.source.as_deref().is_some_and(copied_up);
    let rel = c.path.parent().unwrap_or(Path::new(""));
    let changed = |st: Stat| ctime(&st) >= since.started as i128 && since.applied.get(rel) != Some(&ctime(&st));
    copied && rustix::fs::fstat(parent).is_ok_and(changed)
}

/// A stat's ctime in ns since the epoch.
pub(super) fn ctime(st: &Stat) -> i128 {
    st.st_ctime as i128 * 1_000_000_000 + st.st_ctime_nsec as i128
}

/// A PATH argument relative to DIR, `.` components dropped.
fn clean(p: &Path, dir: &Path) -> PathBuf {
    let p = p.strip_prefix(dir).unwrap_or(p);
    p.components().filter(|c| matches!(c, Component::Normal(_))).collect()
}
