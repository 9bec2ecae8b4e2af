//! A report put in place whole (SPEC O10): written to a new file next to the path, then
//! renamed over it (`rename(2)` replaces what is there, a symbolic link included, without
//! following it), so that a reader sees the old content or the new, never a mix, and nothing
//! a payload left at the path stands.

use rustix::fs::{AtFlags, FallocateFlags, FileType, Mode, OFlags};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

/// Space reserved in the first record's file (`fallocate(2)` with `FALLOC_FL_KEEP_SIZE`), so
/// a full disk shows before the payload starts. A report with [`crate::report::MAX_SIGNALS`]
/// signals stays well below it.
pub const RESERVE: u64 = 64 * 1024;

/// Why putting the report in place failed, in words for the `snug: ` line.
pub type Why = String;

/// What is at `name` in `dir` when it is neither absent, a regular file nor a symbolic link
/// (both of which the rename replaces): `a directory`, `a FIFO`, …
pub fn not_a_file(dir: &OwnedFd, name: &OsStr) -> Option<&'static str> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile | FileType::Symlink => None,
        FileType::Directory => Some("a directory"),
        FileType::Fifo => Some("a FIFO"),
        FileType::Socket => Some("a socket"),
        _ => Some("a device"),
    }
}

/// Write `text` into a new file in `dir` and rename it over `name`; with `reserve`, first
/// reserve [`RESERVE`] bytes in it (a full disk fails here, before anything runs).
///
/// # Errors
/// The failing step in words (its errno's text); the new file is removed then.
pub fn put(dir: &OwnedFd, name: &OsStr, text: &str, reserve: bool) -> Result<(), Why> {
    let errno = |e: rustix::io::Errno| crate::error::strerror(e.raw_os_error());
    let (tmp, fd) = create(dir, name).map_err(errno)?;
    let filled = || -> Result<(), Why> {
        if reserve {
            match rustix::fs::fallocate(&fd, FallocateFlags::KEEP_SIZE, 0, RESERVE) {
                Err(e) if e == rustix::io::Errno::NOSPC || e == rustix::io::Errno::DQUOT => return Err(errno(e)),
                _ => {}
            }
        }
        let mut file = std::fs::File::from(fd);
        file.write_all(text.as_bytes()).map_err(|e| crate::error::strerror(e.raw_os_error().unwrap_or(libc::EIO)))?;
        rustix::fs::renameat(dir, &tmp, dir, name).map_err(errno)
    };
    let done = filled();
    if done.is_err() {
        let _ = rustix::fs::unlinkat(dir, &tmp, AtFlags::empty());
    }
    done
}

/// A new file `.NAME.snug-PID-N` in `dir`, made with `O_EXCL` (never one that was there),
/// mode 0666 less the umask, as the report always was.
fn create(dir: &OwnedFd, name: &OsStr) -> Result<(OsString, OwnedFd), rustix::io::Errno> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut last = rustix::io::Errno::EXIST;
    for n in 0..100 {
        let mut tmp = OsString::from(".");
        tmp.push(OsStr::from_bytes(&name.as_bytes()[..name.len().min(200)]));
        tmp.push(format!(".snug-{}-{n}", std::process::id()));
        match rustix::fs::openat(dir, &tmp, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => return Ok((tmp, fd)),
            Err(e) if e == rustix::io::Errno::EXIST => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}
