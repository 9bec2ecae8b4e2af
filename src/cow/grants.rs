//! Grants inside DIR in a `--cow` run (SPEC P7, W1). DIR is then the overlay in nest's mount
//! namespace, which no descriptor of snug's names, so bwrap binds those grants by their path
//! there and resolves it itself, following symlinks. snug's walk of the host's DIR
//! ([`crate::grant_fd::open`]) refuses a link planted before the run; one planted in DIR
//! after that walk (by another sandbox writing the host's DIR: overlayfs looks the lower
//! layer up as it goes) would still lead bwrap's bind anywhere. So once the overlay is
//! mounted, each such grant is walked again in the overlay itself, through nest's root
//! (`/proc/PID/root`, `proc(5)`), with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`: a symlink
//! there is refused, and what the walk found is what init checks the bind against before
//! the payload starts ([`crate::grant_fd::verify::check`]), which catches a link planted
//! between this walk and bwrap's bind.

use crate::error::{failure, OS_ERROR, POLICY};
use crate::grant_fd::verify::Expected;
use rustix::fs::{openat2, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::path::{Path, PathBuf};

/// Where each of `rels` (grants' destinations relative to DIR, bound onto themselves) sits
/// in the overlay mounted at `dir` in the mount namespace of process `pid` (nest).
///
/// # Errors
/// 77 naming the grant when a symlink lies on its way in the overlay or it is gone; 71 when
/// nest's root cannot be opened.
pub fn expected(pid: snug_core::Pid, dir: &Path, rels: &[PathBuf]) -> anyhow::Result<Vec<Expected>> {
    if rels.is_empty() {
        return Ok(Vec::new());
    }
    let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | ResolveFlags::BENEATH;
    let path_dir = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let root = format!("/proc/{pid}/root");
    let os = |e: Errno| failure(OS_ERROR, format!("--cow: cannot open the overlay through {root}: {e}"));
    let root_fd = rustix::fs::open(root.as_str(), path_dir, Mode::empty()).map_err(os)?;
    // DIR is canonical (no symlink on its way), and the same path in nest's namespace.
    let inner = dir.strip_prefix("/").unwrap_or(dir);
    let top = openat2(&root_fd, inner, path_dir, Mode::empty(), how).map_err(os)?;
    let id = |fd: &std::os::fd::OwnedFd| rustix::fs::fstat(fd).map(|st| (st.st_dev, st.st_ino));
    let mut out = Vec::new();
    for rel in rels {
        let refused = |e: Errno| {
            let why = match e {
                Errno::LOOP | Errno::XDEV => "a symlink lies on its way in DIR".to_string(),
                e => e.to_string(),
            };
            failure(
                POLICY,
                format!("{}: {why}; snug follows no link a sandbox could have planted", dir.join(rel).display()),
            )
        };
        let parent_rel = rel.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = rel.file_name().ok_or_else(|| refused(Errno::INVAL))?;
        let parent = openat2(&top, parent_rel, path_dir, Mode::empty(), how).map_err(refused)?;
        let here = openat2(&parent, name, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty(), how)
            .map_err(refused)?;
        if rustix::fs::fstat(&here).map_err(refused)?.st_mode & libc::S_IFMT == libc::S_IFLNK {
            return Err(refused(Errno::LOOP));
        }
        out.push(Expected { rel: rel.clone(), parent: id(&parent).map_err(refused)?, id: id(&here).map_err(refused)? });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P7, W1: the walk through a process's root (this one's) finds a directory inside DIR
    /// with its directory's and its own device and inode, and refuses a symlink at the grant
    /// and one on its way with 77. Positive control: with `RESOLVE_NO_SYMLINKS` left out of
    /// the walk, `m/b` was found through the link `m`.
    #[test]
    fn p7_cow_walk_refuses_symlinks_in_dir() {
        let dir = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::os::unix::fs::symlink("/", dir.join("l")).unwrap();
        std::os::unix::fs::symlink("a", dir.join("m")).unwrap();
        let pid = crate::sys::process::own();
        let found = expected(pid, &dir, &[PathBuf::from("a/b")]).unwrap();
        let st = |p: &Path| {
            std::fs::metadata(p)
                .map(|m| (std::os::unix::fs::MetadataExt::dev(&m), std::os::unix::fs::MetadataExt::ino(&m)))
                .unwrap()
        };
        assert_eq!(found[0].id, st(&dir.join("a/b")));
        assert_eq!(found[0].parent, st(&dir.join("a")));
        for rel in ["l", "m/b"] {
            let e = expected(pid, &dir, &[PathBuf::from(rel)]).unwrap_err();
            assert_eq!(crate::error::code_of(&e), POLICY, "{rel}: {e}");
        }
    }
}
