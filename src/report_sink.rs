//! Where `--report` goes (SPEC O5, O10): a file at a path, or a descriptor the caller opened.
//! Checked before anything starts, so a report that cannot be written is known before the
//! payload runs whenever that can be known (exit 74, SPEC R4). At a path, a first record
//! stands from the start and the report replaces it at the end, after the sandbox is gone,
//! as a new file renamed over the path in a directory resolved again then: nothing the
//! payload wrote, renamed or planted there in between stands, and a SIGKILL of snug leaves
//! a parseable record that says the run started and never finished.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

mod replace;
pub(crate) mod walk;

use crate::error::{failure, strerror, REPORT};

/// Where `--report` writes (SPEC O5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportTo {
    /// A file, created or truncated before anything starts.
    Path(PathBuf),
    /// A descriptor the caller opened (`--report fd:3 3>out.json`).
    Fd(i32),
}

/// An open report destination.
#[derive(Debug)]
pub struct Sink {
    to: Dest,
    label: String,
}

/// How the report reaches its destination.
#[derive(Debug)]
enum Dest {
    /// Written into an open file: a close-on-exec copy of the caller's descriptor (same
    /// open file, same offset), or a FIFO or device that was at the path before anything ran.
    Held(File),
    /// Put in place at the end as a new file renamed over the path (SPEC O10), in `dir`
    /// (absolute) resolved again then ([`walk::open_dir`]).
    Replace { dir: PathBuf, name: OsString },
}

/// Why the report was not written at the end: the words for the `snug: ` line, and whether
/// the report goes to stderr instead (O10: it was meant for a file at a path).
#[derive(Debug)]
pub struct Unwritten {
    /// The reason, as the `snug: ` line gives it after the destination.
    pub why: String,
    /// The report itself belongs on stderr.
    pub to_stderr: bool,
}

impl Sink {
    /// At a path: resolve its directory ([`walk::open_dir`]), refuse a symbolic link or a
    /// planted file there ([`open_path`]), and put the first record in place (`first`: O10's
    /// "started, never finished", with space reserved for the end). At `fd:N`: check that
    /// descriptor N is open for writing (`fcntl(2)` `F_GETFL`) and mark it close-on-exec, so
    /// no sandbox process inherits it.
    ///
    /// # Errors
    /// [`REPORT`] (74) with one line naming the destination and the reason.
    pub fn open(to: &ReportTo, first: &str) -> anyhow::Result<Sink> {
        match to {
            ReportTo::Path(p) => {
                let label = p.display().to_string();
                let refuse = |e: Opened| match e {
                    Opened::Errno(n) => cannot(&label, Some(n)),
                    Opened::Refused(why) => failure(REPORT, format!("cannot write the report to {label}: {why}")),
                };
                let to = open_path(p, first).map_err(refuse)?;
                if let Dest::Held(file) = &to {
                    reserve(file).map_err(|n| cannot(&label, Some(n)))?;
                }
                Ok(Sink { to, label })
            }
            ReportTo::Fd(n) => {
                use rustix::io::{fcntl_dupfd_cloexec, fcntl_setfd, FdFlags};
                let label = format!("fd:{n}");
                let fd = caller_fd(*n).ok_or_else(|| cannot(&label, Some(libc::EBADF)))?;
                let fl = rustix::fs::fcntl_getfl(fd).map_err(|_| cannot(&label, Some(libc::EBADF)))?;
                if fl & rustix::fs::OFlags::RWMODE == rustix::fs::OFlags::RDONLY {
                    return Err(failure(REPORT, format!("cannot write the report to {label}: not open for writing")));
                }
                if *n > 2 {
                    let _ = fcntl_setfd(fd, FdFlags::CLOEXEC);
                }
                let copy = fcntl_dupfd_cloexec(fd, 10).map_err(|e| cannot(&label, Some(e.raw_os_error())))?;
                let file = File::from(copy);
                reserve(&file).map_err(|n| cannot(&label, Some(n)))?;
                Ok(Sink { to: Dest::Held(file), label })
            }
        }
    }

    /// The destination as the user named it, for messages.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Write the whole report: into the held file, or (at a path) as a new file renamed over
    /// the path, its directory resolved again now; a directory or other non-file the payload
    /// left at the path is not replaced, and is an error (SPEC O10).
    ///
    /// # Errors
    /// Why, in words (ENOSPC on a full disk or `/dev/full`, EPIPE, "a directory is there"…).
    pub fn write(&mut self, text: &str) -> Result<(), Unwritten> {
        match &mut self.to {
            Dest::Held(file) => {
                let w = file.write_all(text.as_bytes()).and_then(|()| file.flush());
                w.map_err(|e| Unwritten { why: strerror(e.raw_os_error().unwrap_or(libc::EIO)), to_stderr: false })
            }
            Dest::Replace { dir, name } => {
                let failed = |why: String| Unwritten { why, to_stderr: true };
                let fd = walk::open_dir(dir).map_err(|e| match e {
                    Opened::Errno(n) => failed(strerror(n)),
                    Opened::Refused(why) => failed(why),
                })?;
                if let Some(what) = replace::not_a_file(&fd, name) {
                    return Err(failed(format!("{what} is there now, not a file")));
                }
                replace::put(&fd, name, text, false).map_err(failed)
            }
        }
    }
}

/// Reserve room in a regular file at its current offset; ENOSPC and EDQUOT are errors
/// (their errno), a file system without `fallocate` (EOPNOTSUPP) is not.
fn reserve(file: &File) -> Result<(), i32> {
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    use rustix::fs::{fallocate, tell, FallocateFlags};
    let at = tell(file).unwrap_or(0);
    match fallocate(file, FallocateFlags::KEEP_SIZE, at, replace::RESERVE) {
        Err(e) if e == rustix::io::Errno::NOSPC || e == rustix::io::Errno::DQUOT => Err(e.raw_os_error()),
        _ => Ok(()),
    }
}

/// Descriptor `n` as the caller left it open, or `None` when it is not open
/// (`fcntl(2)` `F_GETFD`).
fn caller_fd(n: i32) -> Option<BorrowedFd<'static>> {
    crate::sys::fd::inherited(n)
}

/// Why a report path was not opened.
pub(crate) enum Opened {
    /// The call's errno.
    Errno(i32),
    /// snug's own refusal, in words.
    Refused(String),
}

impl From<rustix::io::Errno> for Opened {
    fn from(e: rustix::io::Errno) -> Opened {
        Opened::Errno(e.raw_os_error())
    }
}

/// The report's destination at `path`, checked the way a path another user or a payload
/// may have planted must be (SPEC O5, O10, X4): its directory resolved by snug
/// ([`walk::open_dir`]); a symbolic link as the last component refused; an existing file in a
/// sticky world-writable directory (`/tmp`) that neither snug's user nor the directory's
/// owner owns refused, as `fs.protected_regular` and `fs.protected_fifos` would refuse it
/// (`proc_sys_fs(5)`), whatever they are set to. A regular file or nothing there: the first
/// record `first` is put in place now ([`replace::put`]) and the report replaces it at the
/// end. A FIFO or device there (the caller's choice, made before anything ran) is opened now
/// and written at the end; `O_NONBLOCK` so that a FIFO with no reader fails now (ENXIO)
/// instead of hanging snug, cleared once open.
fn open_path(path: &Path, first: &str) -> Result<Dest, Opened> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    let abs = std::path::absolute(path).map_err(|e| Opened::Errno(e.raw_os_error().unwrap_or(libc::EINVAL)))?;
    let name = match abs.file_name() {
        Some(n) if !path.as_os_str().as_bytes().ends_with(b"/") => n.to_owned(),
        _ => return Err(Opened::Refused("not a file name".into())),
    };
    let parent = abs.parent().unwrap_or(Path::new("/")).to_path_buf();
    let dir = walk::open_dir(&parent)?;
    let st = match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Some(st),
        Err(rustix::io::Errno::NOENT) => None,
        Err(e) => return Err(e.into()),
    };
    let kind = st.as_ref().map(|st| FileType::from_raw_mode(st.st_mode));
    match kind {
        Some(FileType::Symlink) => {
            return Err(Opened::Refused("it is a symbolic link (snug does not follow one there)".into()))
        }
        Some(FileType::Directory) => return Err(Opened::Errno(libc::EISDIR)),
        _ => {}
    }
    if let Some(f) = &st {
        let d = rustix::fs::fstat(&dir)?;
        let me = rustix::process::geteuid().as_raw();
        let sticky_shared = d.st_mode & 0o1002 == 0o1002;
        if sticky_shared && f.st_uid != me && f.st_uid != d.st_uid {
            return Err(Opened::Refused(format!(
                "it belongs to uid {} in a sticky directory anyone may write to (it may have been planted there)",
                f.st_uid
            )));
        }
    }
    if matches!(kind, None | Some(FileType::RegularFile)) {
        // The caller may not write a file it does not own: ask the kernel, as the old open did.
        if kind.is_some() {
            rustix::fs::accessat(&dir, &name, rustix::fs::Access::WRITE_OK, AtFlags::EACCESS)?;
        }
        replace::put(&dir, &name, first, true).map_err(Opened::Refused)?;
        return Ok(Dest::Replace { dir: parent, name });
    }
    let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir, &name, flags, Mode::empty())?;
    let fl = rustix::fs::fcntl_getfl(&fd)?;
    rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)?;
    Ok(Dest::Held(File::from(fd)))
}

fn cannot(label: &str, errno: Option<i32>) -> anyhow::Error {
    let why = strerror(errno.unwrap_or(libc::EIO));
    failure(REPORT, format!("cannot write the report to {label}: {why}"))
}

/// Whether `a` and `b` are one destination: the same descriptor number or open file, or the
/// same path (its directory resolved). `--report` and `--events` there would interleave two
/// formats in one file, each unreadable (SPEC O5, O9).
pub fn same(a: &ReportTo, b: &ReportTo) -> bool {
    let id = |st: rustix::fs::Stat| (st.st_dev, st.st_ino);
    match (a, b) {
        (ReportTo::Fd(x), ReportTo::Fd(y)) => {
            let at = |n: i32| crate::sys::fd::inherited(n).and_then(|fd| rustix::fs::fstat(fd).ok()).map(id);
            x == y || at(*x).is_some_and(|i| Some(i) == at(*y))
        }
        (ReportTo::Path(x), ReportTo::Path(y)) => {
            let at = |p: &std::path::Path| {
                let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
                (std::fs::canonicalize(parent).ok(), p.file_name().map(|n| n.to_os_string()))
            };
            x == y || at(x) == at(y)
        }
        _ => false,
    }
}
