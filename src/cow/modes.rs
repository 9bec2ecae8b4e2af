//! Directory permissions during `snug apply` (SPEC W4): a directory's mode is set after what
//! it holds, as tar(1) does, so a read-only directory the payload made (555: a Go module
//! cache, `chmod -R a-w`) still gets its contents; and a directory of the caller's that
//! lacks its owner's write or search permission is opened up while the apply writes in it,
//! its mode back at the end. Root needs neither (`CAP_DAC_OVERRIDE`).

use rustix::fs::{Mode, OFlags, ResolveFlags};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};

/// The modes to set once everything is written, by path relative to DIR ("" is DIR).
pub struct DirModes {
    set: BTreeMap<PathBuf, u32>,
    root: bool,
}

impl DirModes {
    /// For this process (root or not).
    pub fn new() -> DirModes {
        DirModes { set: BTreeMap::new(), root: rustix::process::geteuid().is_root() }
    }

    /// The directory `rel` gets `mode` at the end (a mode it is given later wins over one
    /// [`DirModes::open_up`] saved).
    pub fn later(&mut self, rel: &Path, mode: u32) {
        self.set.insert(rel.to_path_buf(), mode & 0o7777);
    }

    /// Before writing into the directory `dir` (`rel` in DIR): give its owner write and
    /// search permission when it is the caller's and lacks them; its mode returns at the end.
    ///
    /// # Errors
    /// `fstat(2)`'s or `chmod(2)`'s.
    pub fn open_up(&mut self, dir: BorrowedFd<'_>, rel: &Path) -> std::io::Result<()> {
        if self.root {
            return Ok(());
        }
        let st = rustix::fs::fstat(dir)?;
        if st.st_uid != rustix::process::geteuid().as_raw() || st.st_mode & 0o300 == 0o300 {
            return Ok(());
        }
        chmod_fd(dir, (st.st_mode & 0o7777) | 0o300)?;
        self.set.entry(rel.to_path_buf()).or_insert(st.st_mode & 0o7777);
        Ok(())
    }

    /// Set every mode, deepest first, each directory opened from DIR (`root`) the way
    /// `how` resolves; the paths that failed, with why.
    pub fn finish(self, root: BorrowedFd<'_>, how: ResolveFlags) -> Vec<(PathBuf, std::io::Error)> {
        let mut failed = Vec::new();
        for (rel, mode) in self.set.into_iter().rev() {
            let done = if rel.as_os_str().is_empty() {
                chmod_fd(root, mode)
            } else {
                rustix::fs::openat2(root, &rel, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty(), how)
                    .map_err(std::io::Error::from)
                    .and_then(|fd| chmod_fd(rustix::fd::AsFd::as_fd(&fd), mode))
            };
            if let Err(e) = done {
                failed.push((rel, e));
            }
        }
        failed
    }
}

/// chmod of the node `fd` stands for (an `O_PATH` descriptor too), through its
/// `/proc/self/fd` entry.
pub(super) fn chmod_fd(fd: BorrowedFd<'_>, mode: u32) -> std::io::Result<()> {
    std::fs::set_permissions(
        format!("/proc/self/fd/{}", fd.as_raw_fd()),
        std::os::unix::fs::PermissionsExt::from_mode(mode),
    )
}
