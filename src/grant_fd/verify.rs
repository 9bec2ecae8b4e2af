//! Where each mount inside DIR must sit, checked by init before the payload starts (SPEC
//! P7). bwrap resolves a destination itself and follows symlinks on the way, so a path
//! inside DIR swapped between snug's walk and bwrap's mount could place a bind elsewhere in
//! the sandbox; init walks each destination again, through no symlink, and compares the
//! device and inode of its directory and of the mount with what snug opened on the host
//! (a bind shows the host file's own `st_dev` and `st_ino`).

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{openat2, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::Opened;
use crate::policy::{MountKind, Policy};

/// One mount inside DIR and where it must be: its directory and itself the files snug
/// opened, and a mount point (it is a bind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The destination, relative to DIR.
    pub rel: PathBuf,
    /// Device and inode of the directory holding it.
    pub parent: (u64, u64),
    /// Device and inode of what is mounted there.
    pub id: (u64, u64),
}

/// The mounts of `policy` strictly inside DIR that snug opened, and where each must sit.
/// One whose directory another mount than a bind provides (a tmpfs of the policy) is left
/// out: its directory is not the host's there.
pub fn expected_inside(policy: &Policy, opened: &[Opened]) -> Vec<Expected> {
    opened
        .iter()
        .filter_map(|o| {
            let m = &policy.mounts[o.index];
            let rel = m.dest.strip_prefix(&policy.target).ok().filter(|r| !r.as_os_str().is_empty())?;
            let above = policy
                .mounts
                .iter()
                .filter(|a| a.dest != m.dest && m.dest.starts_with(&a.dest))
                .max_by_key(|a| a.dest.components().count());
            let bound = above.is_some_and(|a| matches!(a.kind, MountKind::Ro | MountKind::Rw));
            if m.src.as_deref() != Some(m.dest.as_path()) || !bound {
                return None;
            }
            Some(Expected { rel: rel.to_path_buf(), parent: o.parent, id: o.id })
        })
        .collect()
}

/// The bytes init reads back with [`decode`]: per entry, `u32` length and the path, then
/// four `u64`s (parent device and inode, device and inode), little-endian.
pub fn encode(expected: &[Expected]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in expected {
        let bytes = e.rel.as_os_str().as_bytes();
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
        for n in [e.parent.0, e.parent.1, e.id.0, e.id.1] {
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
    out
}

/// [`encode`]'s entries; `None` for malformed bytes.
pub fn decode(mut bytes: &[u8]) -> Option<Vec<Expected>> {
    let mut out = Vec::new();
    let take = |n: usize, b: &mut &[u8]| -> Option<Vec<u8>> {
        let (head, rest) = (b.get(..n)?.to_vec(), b.get(n..)?);
        *b = rest;
        Some(head)
    };
    while !bytes.is_empty() {
        let len = u32::from_le_bytes(take(4, &mut bytes)?.try_into().ok()?) as usize;
        let rel = PathBuf::from(OsStr::from_bytes(&take(len, &mut bytes)?));
        let mut n = [0u64; 4];
        for v in &mut n {
            *v = u64::from_le_bytes(take(8, &mut bytes)?.try_into().ok()?);
        }
        out.push(Expected { rel, parent: (n[0], n[1]), id: (n[2], n[3]) });
    }
    Some(out)
}

/// Check, inside the sandbox, that each of `expected` sits below `target` where snug meant:
/// reached through no symlink, its directory and itself the files snug opened.
///
/// # Errors
/// `ESTALE` when one does not (snug reports it as 77); the walk's own errno otherwise.
pub fn check(target: &Path, expected: &[Expected]) -> Result<(), Errno> {
    placed(target, expected, true)
}

/// [`check`]; `mounted`: each must also be a mount point (off for tests on plain directories).
pub(super) fn placed(target: &Path, expected: &[Expected], mounted: bool) -> Result<(), Errno> {
    if expected.is_empty() {
        return Ok(());
    }
    let dir = rustix::fs::open(target, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    let id = |fd: &std::os::fd::OwnedFd| rustix::fs::fstat(fd).map(|st| (st.st_dev, st.st_ino));
    for e in expected {
        let parent_rel = e.rel.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = e.rel.file_name().ok_or(Errno::STALE)?;
        let parent =
            beneath(&dir, parent_rel, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC).map_err(|_| Errno::STALE)?;
        let here = beneath(&parent, Path::new(name), OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC)
            .map_err(|_| Errno::STALE)?;
        if id(&parent)? != e.parent || id(&here)? != e.id {
            return Err(Errno::STALE);
        }
        // A bind of a directory onto itself has its device and inode: that it is mounted
        // here, and not somewhere a swapped path led bwrap to, shows in its mount id
        // (`statx(2)` `STATX_MNT_ID`, Linux 5.8), which differs from its directory's.
        if let (true, Some(a), Some(b)) = (mounted, mount_id(&parent), mount_id(&here)) {
            if a == b {
                return Err(Errno::STALE);
            }
        }
    }
    Ok(())
}

/// `rel` below `dir` through no symlink: `openat2(2)` with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`. Where that call is answered `ENOSYS` (the
/// seccomp filter init runs under when the payload is the host's root, SPEC P11), the same
/// walk by hand: only plain names (no `..`, nothing absolute), each opened with `O_NOFOLLOW`,
/// so a symlink on the way is `ENOTDIR` and a symlink at the end is itself, not its target.
fn beneath(dir: &OwnedFd, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | ResolveFlags::BENEATH;
    match openat2(dir, rel, flags, Mode::empty(), how) {
        Err(Errno::NOSYS) => {}
        done => return done,
    }
    walk(dir, rel, flags)
}

/// [`beneath`]'s walk by hand, one plain name at a time with `O_NOFOLLOW`.
fn walk(dir: &OwnedFd, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => names.push(n),
            Component::CurDir => {}
            _ => return Err(Errno::XDEV),
        }
    }
    let Some((last, on_the_way)) = names.split_last() else {
        return rustix::fs::openat(dir, ".", flags | OFlags::NOFOLLOW, Mode::empty());
    };
    let mut at: Option<OwnedFd> = None;
    for n in on_the_way {
        let from = at.as_ref().map_or(dir.as_fd(), AsFd::as_fd);
        let next = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        at = Some(rustix::fs::openat(from, *n, next, Mode::empty())?);
    }
    rustix::fs::openat(at.as_ref().map_or(dir.as_fd(), AsFd::as_fd), *last, flags | OFlags::NOFOLLOW, Mode::empty())
}

/// The mount id of an open file, where the kernel reports one.
fn mount_id(fd: &std::os::fd::OwnedFd) -> Option<u64> {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    let st = statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID).ok()?;
    (st.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(st.stx_mnt_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p7_expected_round_trips() {
        let e = vec![
            Expected { rel: "build/cache".into(), parent: (1, 2), id: (3, 4) },
            Expected { rel: "v".into(), parent: (u64::MAX, 0), id: (7, 8) },
        ];
        assert_eq!(decode(&encode(&e)), Some(e));
        assert_eq!(decode(&[1, 0, 0]), None);
    }

    /// A directory swapped for a symlink to another one with the same contents is caught:
    /// the walk does not follow it.
    #[test]
    fn p7_check_refuses_a_swapped_directory() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("build/cache")).unwrap();
        let st = |p: &str| {
            let m = std::fs::metadata(t.path().join(p)).unwrap();
            (std::os::unix::fs::MetadataExt::dev(&m), std::os::unix::fs::MetadataExt::ino(&m))
        };
        let e = vec![Expected { rel: "build/cache".into(), parent: st("build"), id: st("build/cache") }];
        assert_eq!(placed(t.path(), &e, false), Ok(()));
        // Not a mount point: the bind went elsewhere.
        assert_eq!(check(t.path(), &e), Err(Errno::STALE));
        std::fs::rename(t.path().join("build"), t.path().join("old")).unwrap();
        std::os::unix::fs::symlink("old", t.path().join("build")).unwrap();
        assert_eq!(placed(t.path(), &e, false), Err(Errno::STALE));
    }
}

#[cfg(test)]
mod walk_tests {
    use super::*;

    /// P7 under a filter that answers `openat2` ENOSYS (P11): the walk by hand reaches what
    /// `openat2` would, and refuses a symlink on the way, `..` and an absolute path.
    #[test]
    fn p7_walk_by_hand_follows_no_symlink() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        std::os::unix::fs::symlink("a", t.path().join("l")).unwrap();
        let dir =
            rustix::fs::open(t.path(), OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        let id = |fd: &OwnedFd| rustix::fs::fstat(fd).map(|st| (st.st_dev, st.st_ino)).unwrap();
        let dirs = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let by_hand = walk(&dir, Path::new("a/b"), dirs).unwrap();
        assert_eq!(id(&by_hand), id(&beneath(&dir, Path::new("a/b"), dirs).unwrap()));
        assert!(walk(&dir, Path::new("./a"), dirs).is_ok());
        assert!(walk(&dir, Path::new("l/b"), dirs).is_err(), "a symlink on the way");
        assert!(walk(&dir, Path::new("l"), dirs).is_err(), "a symlink at the end, as a directory");
        assert!(walk(&dir, Path::new("a/../a"), dirs).is_err());
        assert!(walk(&dir, Path::new("/tmp"), dirs).is_err());
        let link = walk(&dir, Path::new("l"), OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC).unwrap();
        assert_ne!(id(&link), id(&walk(&dir, Path::new("a"), dirs).unwrap()), "the link itself, not its target");
    }
}
