//! Every bind of the policy opened by snug itself (SPEC P7), so that bwrap binds what snug
//! checked (`--bind-fd`, `--ro-bind-fd`) instead of resolving the path again on the host,
//! where it would follow any symlink a payload, a repository or another user planted.
//!
//! A path is walked one component at a time from `/` with `openat2(2)` (`O_PATH`,
//! `O_NOFOLLOW`, `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH`: each step opens exactly one
//! directory entry and never follows anything itself). A symlink met on the way is followed
//! only when the directory holding it is owned by root or the caller, not writable by group
//! or others, and neither DIR, inside DIR, nor inside any `rw` bind: the caller's own
//! `~/.cargo -> /data/cargo` works, a link a sandbox could have planted never does.

pub mod verify;

pub use verify::expected_inside;

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{openat2, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::error::{failure, OS_ERROR, POLICY};
use crate::policy::{Mount, MountKind, Policy};

/// At most this many symlinks on one path, as the kernel's own walk (`ELOOP`, `path_resolution(7)`).
const MAX_LINKS: usize = 40;

/// One bind's source as snug opened it.
pub struct Opened {
    /// Index of the mount in [`Policy::mounts`].
    pub index: usize,
    /// `O_PATH` descriptor of the source, close-on-exec in snug (nest hands it to bwrap).
    pub fd: OwnedFd,
    /// The source's device and inode.
    pub id: (u64, u64),
    /// The device and inode of the directory that holds it.
    pub parent: (u64, u64),
}

/// A symlink followed on the way to a source: where it lies and what it says.
struct Followed {
    /// The directory holding the link (a real path: no symlink in it).
    dir: PathBuf,
    /// The link's own path and its target.
    link: PathBuf,
    target: PathBuf,
}

/// A source opened, with the real path it has and the links followed to reach it.
struct Walked {
    fd: OwnedFd,
    real: PathBuf,
    parent: (u64, u64),
    followed: Vec<Followed>,
}

/// Open every ro and rw bind's source of `policy` (SPEC P7). `dry_run`: the sources a toolchain
/// profile would create (`policy.create`) may be missing; nothing is kept open then.
///
/// # Errors
/// 77 naming the mount, the link and its target when a source, or a tmpfs inside DIR, is
/// reached through a symlink a sandbox could have planted, or when a source disappeared or stopped being a
/// directory since the policy was resolved; 71 for other refusals (`EACCES`, `EMFILE`).
pub fn open(policy: &Policy, dry_run: bool) -> anyhow::Result<Vec<Opened>> {
    let uid = rustix::process::getuid().as_raw();
    for m in policy.mounts.iter().filter(|m| m.kind == MountKind::Tmpfs) {
        if let Some(f) = link_below(&policy.target, &m.dest) {
            return Err(refused(m, &f, "inside DIR"));
        }
    }
    let mut walked: Vec<(usize, Walked)> = Vec::new();
    for (index, m) in policy.mounts.iter().enumerate() {
        let Some(src) = bind_source(m) else { continue };
        if dry_run && src.is_relative() {
            // A file snug writes only when it runs (`--net-allow`'s /etc/hosts), shown by
            // what it holds: there is nothing to open yet.
            continue;
        }
        match walk(src, uid) {
            Ok(w) => walked.push((index, w)),
            Err(Walk::Os(Errno::NOENT)) if dry_run && policy.create.iter().any(|c| c == src) => {}
            Err(e) => return Err(e.into_error(m)),
        }
    }
    // A link lying inside DIR or inside any rw bind is one a sandbox could have written.
    let mut writable: Vec<PathBuf> = vec![policy.target.clone()];
    writable
        .extend(walked.iter().filter(|(i, _)| policy.mounts[*i].kind == MountKind::Rw).map(|(_, w)| w.real.clone()));
    // DIR first, whichever mount met it: a link planted there that leads to a system
    // directory is what to name, not that directory's own links inside the rw bind it became.
    for inside in &writable {
        for (index, w) in &walked {
            if let Some(f) = w.followed.iter().find(|f| f.dir.starts_with(inside)) {
                let why = if *inside == policy.target {
                    "inside DIR".to_string()
                } else {
                    format!("inside the rw bind {}", inside.display())
                };
                return Err(refused(&policy.mounts[*index], f, &why));
            }
        }
    }
    Ok(walked.into_iter().map(|(index, w)| Opened { index, id: id_of(&w.fd), fd: w.fd, parent: w.parent }).collect())
}

/// The bwrap descriptor number of each mount of a policy (`None`: no descriptor, bwrap gets
/// the path), the `opened` ones numbered from `first` in their order.
pub fn numbers(mounts: usize, opened: &[Opened], first: i32) -> Vec<Option<i32>> {
    let mut out = vec![None; mounts];
    for (k, o) in opened.iter().enumerate() {
        out[o.index] = Some(first + k as i32);
    }
    out
}

/// Which grant a bwrap "Race condition binding dirfd" was about: the first opened source
/// whose path now names another file than the one snug opened (SPEC P7).
pub fn swapped<'a>(policy: &'a Policy, opened: &[Opened]) -> Option<&'a Path> {
    let uid = rustix::process::getuid().as_raw();
    opened.iter().find_map(|o| {
        let src = bind_source(&policy.mounts[o.index])?;
        let same = walk(src, uid).is_ok_and(|w| id_of(&w.fd) == o.id);
        (!same).then_some(src)
    })
}

/// `outcome` with a swap during start-up named (SPEC P7): bwrap's "Race condition binding
/// dirfd" (a bound path no longer the file snug opened), its failure to mount at a
/// destination inside DIR (swapped for a symlink meanwhile), or init's refusal of a
/// misplaced mount become 77 naming the path, when it can still be told which.
pub fn named(outcome: crate::end::Outcome, policy: &Policy, opened: &[Opened]) -> crate::end::Outcome {
    use crate::end::Outcome;
    let Outcome::Fail(e) = &outcome else { return outcome };
    let text = e.to_string();
    let inside = |m: &Mount| m.dest.starts_with(&policy.target) && m.dest != policy.target;
    let at_dest = opened
        .iter()
        .map(|o| &policy.mounts[o.index])
        .find(|m| inside(m) && text.starts_with("bwrap: ") && text.contains(&format!("/newroot{}", m.dest.display())));
    let race = text.contains("Race condition binding dirfd") || text.contains("is not where snug placed it");
    if !race && at_dest.is_none() {
        return outcome;
    }
    let what = match swapped(policy, opened).or(at_dest.map(|m| m.dest.as_path())) {
        Some(p) => format!("{}: it changed while the sandbox was set up", p.display()),
        None => "a granted path changed while the sandbox was set up".to_string(),
    };
    Outcome::Fail(failure(POLICY, format!("{what} (another file is there than snug opened); nothing ran")))
}

/// The host path a ro or rw mount binds.
fn bind_source(m: &Mount) -> Option<&Path> {
    matches!(m.kind, MountKind::Ro | MountKind::Rw).then_some(m.src.as_deref()).flatten()
}

/// Why a walk stopped.
enum Walk {
    /// A symlink in a directory not owned by root or the caller, or writable by others.
    Untrusted(Followed, String),
    /// More than [`MAX_LINKS`] symlinks.
    Loop,
    /// A system call failed.
    Os(Errno),
}

impl Walk {
    fn into_error(self, m: &Mount) -> anyhow::Error {
        let path = m.src.as_deref().unwrap_or(&m.dest).display();
        match self {
            Walk::Untrusted(f, why) => refused(m, &f, &why),
            Walk::Loop => failure(POLICY, format!("{} {path}: too many symlinks", who(m))),
            Walk::Os(e @ (Errno::NOENT | Errno::NOTDIR)) => {
                failure(POLICY, format!("{} {path}: {} (it changed since the policy was read)", who(m), text(e)))
            }
            Walk::Os(e) => failure(OS_ERROR, format!("{} {path}: cannot open it: {}", who(m), text(e))),
        }
    }
}

/// The first symlink on the way from DIR `target` down to `dest`, a destination inside it
/// (where bwrap would follow it: DIR is at the same path in the sandbox). Components that do
/// not exist yet are bwrap's to make, and end the look.
fn link_below(target: &Path, dest: &Path) -> Option<Followed> {
    let rest = dest.strip_prefix(target).ok()?;
    let mut at = target.to_path_buf();
    for c in rest.components() {
        let Component::Normal(name) = c else { return None };
        let here = at.join(name);
        match std::fs::symlink_metadata(&here) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&here).unwrap_or_default();
                return Some(Followed { dir: at, link: here, target });
            }
            Ok(_) => at = here,
            Err(_) => return None,
        }
    }
    None
}

/// The 77 for a grant that meets a symlink a sandbox could have planted.
fn refused(m: &Mount, f: &Followed, why: &str) -> anyhow::Error {
    let path = m.src.as_deref().unwrap_or(&m.dest).display();
    let (link, to) = (f.link.display(), f.target.display());
    failure(
        POLICY,
        format!(
            "{} {path}: {link} is a symlink (-> {to}) {why}; snug follows no link a sandbox could have planted",
            who(m)
        ),
    )
}

/// How a mount is named in a refusal: the flag, or its kind and the profile that asked for it.
fn who(m: &Mount) -> String {
    let kind = match m.kind {
        MountKind::Rw => "rw",
        MountKind::Tmpfs => "tmpfs",
        _ => "ro",
    };
    if m.profile.starts_with("--") {
        m.profile.clone()
    } else {
        format!("profile {}: {kind}", m.profile)
    }
}

fn text(e: Errno) -> String {
    crate::error::io_text(&std::io::Error::from(e))
}

/// Device and inode of an open file.
fn id_of(fd: impl AsFd) -> (u64, u64) {
    rustix::fs::fstat(fd).map_or((0, 0), |st| (st.st_dev, st.st_ino))
}

/// Open `path` one component at a time from `/`, following a symlink only in a directory
/// `uid` (or root) owns and no one else may write (`path_resolution(7)` done by hand).
fn walk(path: &Path, uid: u32) -> Result<Walked, Walk> {
    // Most paths hold no symlink: the kernel walks them whole, refusing any link on the way
    // (`RESOLVE_NO_SYMLINKS`), in two calls instead of one per component (SPEC B1).
    if let Some(w) = whole(path) {
        return Ok(w);
    }
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let root = rustix::fs::open("/", dir_flags, Mode::empty()).map_err(Walk::Os)?;
    // The directories from / to where the walk is, each with its real path.
    let mut stack: Vec<(PathBuf, OwnedFd)> = vec![(PathBuf::from("/"), root)];
    let mut pending: VecDeque<OsString> = parts(path);
    let mut followed = Vec::new();
    let step = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | ResolveFlags::BENEATH;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            if stack.len() > 1 {
                stack.pop();
            }
            continue;
        }
        let (at, dir) = stack.last().expect("the walk starts at /");
        let fd = openat2(dir, name.as_os_str(), step, Mode::empty(), how).map_err(Walk::Os)?;
        let st = rustix::fs::fstat(&fd).map_err(Walk::Os)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
            let here = at.join(&name);
            if pending.is_empty() {
                let parent = id_of(dir);
                return Ok(Walked { fd, real: here, parent, followed });
            }
            // A directory to go on in (anything else fails the next openat2 with ENOTDIR).
            stack.push((here, fd));
            continue;
        }
        // Through the descriptor: the entry may have been swapped since it was opened.
        let target = PathBuf::from(OsString::from_vec(
            rustix::fs::readlinkat(&fd, "", Vec::new()).map_err(Walk::Os)?.into_bytes(),
        ));
        let f = Followed { dir: at.clone(), link: at.join(&name), target: target.clone() };
        let held = rustix::fs::fstat(dir).map_err(Walk::Os)?;
        if held.st_uid != 0 && held.st_uid != uid {
            let why = format!("in {}, owned by uid {}", at.display(), held.st_uid);
            return Err(Walk::Untrusted(f, why));
        }
        if held.st_mode & 0o022 != 0 {
            let why = format!("in {}, which group or others may write", at.display());
            return Err(Walk::Untrusted(f, why));
        }
        followed.push(f);
        if followed.len() > MAX_LINKS {
            return Err(Walk::Loop);
        }
        if target.is_absolute() {
            stack.truncate(1);
        }
        for part in parts(&target).into_iter().rev() {
            pending.push_front(part);
        }
    }
    // Only `/` itself, or a path of `..` and links that ends at a directory on the stack.
    let (real, dir) = stack.pop().expect("the walk starts at /");
    let parent = stack.last().map_or_else(|| id_of(&dir), |(_, d)| id_of(d));
    Ok(Walked { fd: dir, real, parent, followed })
}

/// `path` and its directory opened by the kernel through no symlink at all; `None` when
/// there is one (or anything else fails): the walk by components then says why.
fn whole(path: &Path) -> Option<Walked> {
    let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    // Only a plain absolute path is its own real path.
    if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
        return None;
    }
    let parent = path.parent()?;
    let dir = openat2(rustix::fs::CWD, parent, flags | OFlags::DIRECTORY, Mode::empty(), how).ok()?;
    let fd = openat2(&dir, path.file_name()?, flags, Mode::empty(), how | ResolveFlags::BENEATH).ok()?;
    Some(Walked { fd, real: path.to_path_buf(), parent: id_of(&dir), followed: Vec::new() })
}

/// A path's components as names to open: `.` dropped, `..` kept, the root dropped.
fn parts(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
