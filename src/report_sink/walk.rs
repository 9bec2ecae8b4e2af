//! The report's directory, resolved by snug one component at a time (SPEC O10): at the start,
//! and again at the end, after the sandbox is gone, so that a directory the payload moved or
//! replaced meanwhile is not trusted. A symbolic link on the way is followed only where it
//! sits in a directory the caller cannot write: a sandbox runs as the caller (or with less),
//! so it could have planted none there. As root every directory is writable (`access(2)`
//! with `CAP_DAC_OVERRIDE`), so no link is followed at all.

use super::Opened;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// At most this many links on one path, as the kernel's own `ELOOP` bound (`path_resolution(7)`).
const MAX_LINKS: u32 = 40;

/// A step of the walk: the root, or a name to open in the current directory.
enum Step {
    Root,
    Name(OsString),
}

fn steps(path: &Path) -> Vec<Step> {
    path.components()
        .filter_map(|c| match c {
            Component::RootDir => Some(Step::Root),
            Component::CurDir | Component::Prefix(_) => None,
            Component::ParentDir => Some(Step::Name("..".into())),
            Component::Normal(n) => Some(Step::Name(n.to_owned())),
        })
        .collect()
}

/// Whether the caller may write directory `dir` (`faccessat(2)` of `.` in it, effective ids).
/// Only a clear "no" (`EACCES`, `EROFS`) counts as not writable: any other answer fails closed.
fn writable(dir: &OwnedFd) -> bool {
    match rustix::fs::accessat(dir, ".", rustix::fs::Access::WRITE_OK, AtFlags::EACCESS) {
        Err(e) => e != rustix::io::Errno::ACCESS && e != rustix::io::Errno::ROFS,
        Ok(()) => true,
    }
}

/// Open directory `path` (absolute) as `O_PATH`, following a symbolic link only in a
/// directory the caller cannot write.
///
/// # Errors
/// The errno of the step that failed (`ENOENT`, `ENOTDIR`, `ELOOP`, …), or a refusal naming
/// the link and where it points.
pub fn open_dir(path: &Path) -> Result<OwnedFd, Opened> {
    let root = || rustix::fs::open("/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty());
    let mut dir = root()?;
    let mut todo: VecDeque<Step> = steps(path).into();
    let mut links = 0;
    while let Some(step) = todo.pop_front() {
        let name = match step {
            Step::Root => {
                dir = root()?;
                continue;
            }
            Step::Name(n) => n,
        };
        let next = rustix::fs::openat(&dir, &name, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
        match FileType::from_raw_mode(rustix::fs::fstat(&next)?.st_mode) {
            FileType::Directory => dir = next,
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(&next, "", Vec::new())?;
                let target = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(target.to_bytes()));
                if writable(&dir) {
                    return Err(Opened::Refused(format!(
                        "{} on its way is a symbolic link (to {}) in a directory a sandbox could write",
                        Path::new(&name).display(),
                        target.display()
                    )));
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(Opened::Errno(libc::ELOOP));
                }
                for s in steps(&target).into_iter().rev() {
                    todo.push_front(s);
                }
            }
            _ => return Err(Opened::Errno(libc::ENOTDIR)),
        }
    }
    Ok(dir)
}
