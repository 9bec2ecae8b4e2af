//! Where `--report` goes (SPEC O5): a file snug creates, or a descriptor the caller opened.
//! Opened before anything starts, so a report that cannot be written is known before the
//! payload runs whenever that can be known (exit 74, SPEC R4).

use std::fs::File;
use std::io::Write;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;

use crate::error::{failure, strerror, REPORT};

/// Where `--report` writes (SPEC O5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportTo {
    /// A file, created or truncated before anything starts.
    Path(PathBuf),
    /// A descriptor the caller opened (`--report fd:3 3>out.json`).
    Fd(i32),
}

/// Space reserved for the report up front (`fallocate(2)` with `FALLOC_FL_KEEP_SIZE`), so a
/// full disk shows before the payload starts. A report with [`crate::report::MAX_SIGNALS`]
/// signals stays well below it.
const RESERVE: u64 = 64 * 1024;

/// An open report destination.
#[derive(Debug)]
pub struct Sink {
    /// The file, or a close-on-exec copy of the caller's descriptor (same open file, same
    /// offset).
    file: File,
    label: String,
}

impl Sink {
    /// Create (or truncate) the file ([`open_path`]), or check that descriptor N
    /// is open for writing (`fcntl(2)` `F_GETFL`) and mark it close-on-exec, so no sandbox
    /// process inherits it. Reserves [`RESERVE`] bytes of a regular file.
    ///
    /// # Errors
    /// [`REPORT`] (74) with one line naming the destination and the reason.
    pub fn open(to: &ReportTo) -> anyhow::Result<Sink> {
        let sink = match to {
            ReportTo::Path(p) => {
                let label = p.display().to_string();
                let file = open_path(p).map_err(|e| match e {
                    Opened::Errno(n) => cannot(&label, Some(n)),
                    Opened::Refused(why) => failure(REPORT, format!("cannot write the report to {label}: {why}")),
                })?;
                Sink { file, label }
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
                Sink { file: File::from(copy), label }
            }
        };
        sink.reserve()?;
        Ok(sink)
    }

    /// Reserve room in a regular file at its current offset; ENOSPC and EDQUOT are errors,
    /// a file system without `fallocate` (EOPNOTSUPP) is not.
    fn reserve(&self) -> anyhow::Result<()> {
        if !self.file.metadata().is_ok_and(|m| m.is_file()) {
            return Ok(());
        }
        use rustix::fs::{fallocate, tell, FallocateFlags};
        let at = tell(&self.file).unwrap_or(0);
        match fallocate(&self.file, FallocateFlags::KEEP_SIZE, at, RESERVE) {
            Err(e) if e == rustix::io::Errno::NOSPC || e == rustix::io::Errno::DQUOT => {
                Err(cannot(&self.label, Some(e.raw_os_error())))
            }
            _ => Ok(()),
        }
    }

    /// The destination as the user named it, for messages.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Write the whole report.
    ///
    /// # Errors
    /// The write error (ENOSPC on a full disk or `/dev/full`, EPIPE…).
    pub fn write(&mut self, text: &str) -> std::io::Result<()> {
        self.file.write_all(text.as_bytes())?;
        self.file.flush()
    }
}

/// Descriptor `n` as the caller left it open, or `None` when it is not open
/// (`fcntl(2)` `F_GETFD`).
fn caller_fd(n: i32) -> Option<BorrowedFd<'static>> {
    crate::sys::fd::inherited(n)
}

/// Why a report path was not opened.
enum Opened {
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

/// Open (or create) the report file at `path` the way a file another user may have planted
/// must be opened (SPEC O5, X4): relative to its directory, opened first (`openat(2)`);
/// never through a symbolic link as the last component (`O_NOFOLLOW`: `ELOOP`); and an
/// existing file in a sticky world-writable directory (`/tmp`) that neither snug's user nor
/// the directory's owner owns is refused before it is truncated, as `fs.protected_regular`
/// and `fs.protected_fifos` would refuse it (`proc_sys_fs(5)`), whatever they are set to.
/// `O_NONBLOCK`: a FIFO with no reader fails now (ENXIO) instead of hanging snug before
/// anything starts; cleared once open. Created mode 0666 less the umask.
fn open_path(path: &std::path::Path) -> Result<File, Opened> {
    use rustix::fs::{Mode, OFlags};
    let name = path.file_name().ok_or(Opened::Refused("not a file name".into()))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let dir = rustix::fs::open(parent, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir, name, flags, Mode::from_raw_mode(0o666)).map_err(|e| {
        // ELOOP, or EACCES from the kernel's own sticky-directory rule: say what is there.
        let st = rustix::fs::statat(&dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
        match st.map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode)) {
            Ok(rustix::fs::FileType::Symlink) => {
                Opened::Refused("it is a symbolic link (snug does not follow one there)".into())
            }
            _ => e.into(),
        }
    })?;
    let (d, f) = (rustix::fs::fstat(&dir)?, rustix::fs::fstat(&fd)?);
    let me = rustix::process::geteuid().as_raw();
    let sticky_shared = d.st_mode & 0o1002 == 0o1002;
    if sticky_shared && f.st_uid != me && f.st_uid != d.st_uid {
        return Err(Opened::Refused(format!(
            "it belongs to uid {} in a sticky directory anyone may write to (it may have been planted there)",
            f.st_uid
        )));
    }
    if rustix::fs::FileType::from_raw_mode(f.st_mode) == rustix::fs::FileType::RegularFile {
        rustix::fs::ftruncate(&fd, 0)?;
    }
    let fl = rustix::fs::fcntl_getfl(&fd)?;
    rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)?;
    Ok(File::from(fd))
}

fn cannot(label: &str, errno: Option<i32>) -> anyhow::Error {
    let why = strerror(errno.unwrap_or(libc::EIO));
    failure(REPORT, format!("cannot write the report to {label}: {why}"))
}
