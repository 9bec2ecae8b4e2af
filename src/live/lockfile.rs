//! A run's lock file, `NAME.lock` beside its control socket (SPEC L1, L2): the run's snug
//! holds a POSIX record lock on it for as long as it lives (`fcntl(2)` `F_SETLK`; the kernel
//! drops it when snug exits, SIGKILL included), and the file holds what `ps` shows that never
//! changes (name, pid, command, mode, start) as one JSON object on its first line.
//!
//! `F_GETLK` names the holder's pid without a connection. That is how `ps`, `stop`, `signal`
//! and `exec` reach a snug that cannot accept one: stopped by ^Z or TSTP (T12), it leaves
//! every client that connected and gave up in its listen backlog until it runs again, and a
//! full backlog refuses the next with `EAGAIN`. A `stop` of a stopped run, which cannot ask
//! on the socket, appends `stop PID NOW` here before it signals snug (the run's user and
//! root may write the file, as they may use the socket), and snug appends `end TEXT` just
//! before it exits, which that `stop` reads (see [`Held::requests`], [`Holder::end`]).

use rustix::fd::AsFd;
use snug_core::Pid;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Most bytes of a lock file read at once (its JSON line is a few hundred).
const MAX_READ: usize = 4096;

/// The lock file of the run whose control socket is `sock` (`NAME.sock` → `NAME.lock`).
pub fn path_for(sock: &Path) -> PathBuf {
    sock.with_extension("lock")
}

/// This run's lock, held while this value lives: its descriptor stays open, because closing
/// any descriptor of the file would drop a POSIX lock (`fcntl(2)`).
pub struct Held {
    file: std::fs::File,
    /// How far the file has been read: every line before is snug's own or was acted on.
    seen: u64,
}

impl Held {
    /// Add the end's line (`end exit 7`, [`super::wire::end_text`]) for a stop caller that
    /// could not connect: it has the file open and reads it once snug is gone.
    pub fn end(&self, text: &str) {
        let _ = (&self.file).write_all(format!("{text}\n").as_bytes());
    }

    /// The `stop PID NOW` lines appended since the last call, as (pid, now): a stop that sent
    /// TERM and CONT to snug itself while it was stopped. One `fstat(2)` when there are none
    /// (called on every round of snug's loop); a line that is not one is skipped.
    pub fn requests(&mut self) -> Vec<(i32, bool)> {
        use std::os::unix::fs::FileExt;
        let len = self.file.metadata().map_or(self.seen, |m| m.len());
        if len <= self.seen {
            return Vec::new();
        }
        let mut buf = vec![0u8; MAX_READ];
        let n = self.file.read_at(&mut buf, self.seen).unwrap_or(0);
        // Complete lines only (a writer appends one line per `write(2)`); a chunk without a
        // newline is garbage: skipped, so it cannot hold the rest back.
        let used = buf[..n].iter().rposition(|b| *b == b'\n').map_or(n, |i| i + 1);
        self.seen += used.max(1) as u64;
        let text = String::from_utf8_lossy(&buf[..used]).into_owned();
        text.lines()
            .filter_map(|l| {
                let mut w = l.strip_prefix("stop ")?.split(' ');
                Some((w.next()?.parse().ok()?, w.next()? == "1"))
            })
            .collect()
    }
}

/// Create `path` holding `info`, mode 0600, and lock it. It is written and locked under a
/// hidden name first, then linked into place (`link(2)` fails with `EEXIST` when the name is
/// taken): a lock file anyone can see is complete and locked. One left by a snug that is gone
/// (nobody holds its lock) is replaced.
///
/// # Errors
/// The failing call's error; `EEXIST` when a live snug holds `path`.
pub fn create(path: &Path, info: &str) -> std::io::Result<Held> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let made = std::fs::OpenOptions::new()
        .append(true)
        .read(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .and_then(|mut f| {
            rustix::fs::fcntl_lock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
            f.write_all(format!("{info}\n").as_bytes())?;
            Ok(f)
        });
    let linked = made.and_then(|f| {
        std::fs::hard_link(&tmp, path)
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists && remove_stale(path) {
                    return std::fs::hard_link(&tmp, path);
                }
                Err(e)
            })
            .map(|()| f)
    });
    let _ = std::fs::remove_file(&tmp);
    let seen = info.len() as u64 + 1;
    linked.map(|file| Held { file, seen })
}

fn open_ro(path: &Path) -> Option<std::fs::File> {
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let f = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path).ok()?;
    f.metadata().ok().filter(|m| m.is_file()).map(|_| f)
}

/// The pid holding a write lock on `file` (`F_GETLK`: the first lock that would block ours,
/// its `l_pid` in our pid namespace, 0 when the holder is not visible here: a snug in
/// another pid namespace, alive all the same); `None` when nobody holds one.
fn locker(file: &std::fs::File) -> Option<i32> {
    let mut lk = libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0, // the whole file
        l_pid: 0,
    };
    nix::fcntl::fcntl(file.as_fd(), nix::fcntl::FcntlArg::F_GETLK(&mut lk)).ok()?;
    (lk.l_type != libc::F_UNLCK as libc::c_short).then_some(lk.l_pid)
}

/// Remove the lock file at `path` if its snug is gone: a regular file nobody holds a lock on.
pub fn remove_stale(path: &Path) -> bool {
    let Some(f) = open_ro(path) else { return false };
    locker(&f).is_none() && std::fs::remove_file(path).is_ok()
}

/// A live run's snug found through its lock file, pinned by a pidfd.
pub struct Holder {
    /// Its pid, as `F_GETLK` named it.
    pub pid: Pid,
    /// A pidfd of it, taken while it held the lock.
    pub pidfd: rustix::fd::OwnedFd,
    /// Who owns the lock file, and is the holder's effective uid.
    pub uid: u32,
    /// What it wrote (its `pid` is `pid`).
    pub info: serde_json::Value,
    /// The lock file, open: readable after snug is gone and has removed it.
    file: std::fs::File,
}

/// The snug holding the lock file at `path`, pinned; `None` when nobody holds it or anything
/// does not fit: the file must be a regular one in a directory private to its owner (only
/// that user and root can make or lock it), the holder must run as that owner, still hold the
/// lock once pinned (so the pidfd is the holder, not a process that got its pid since), and
/// have written its own pid.
pub fn holder(path: &Path) -> Option<Holder> {
    let f = open_ro(path)?;
    let meta = f.metadata().ok()?;
    if !super::private_dir(path.parent()?, meta.uid()) {
        return None;
    }
    let pid = locker(&f).and_then(Pid::new)?; // 0: held from another pid namespace
    let pidfd = crate::pidfd::open(pid).ok()?;
    if locker(&f) != Some(pid.raw()) || euid_of(pid) != Some(meta.uid()) {
        return None;
    }
    let mut text = String::new();
    (&f).take(MAX_READ as u64).read_to_string(&mut text).ok()?;
    let info: serde_json::Value = serde_json::from_str(text.lines().next()?).ok()?;
    (info.get("pid").and_then(serde_json::Value::as_i64) == Some(i64::from(pid.raw()))).then_some(Holder {
        pid,
        pidfd,
        uid: meta.uid(),
        info,
        file: f,
    })
}

impl Holder {
    /// Whether it is stopped (^Z, TSTP, STOP): it can neither accept nor answer then.
    pub fn stopped(&self) -> bool {
        stopped(self.pid)
    }

    /// Ask snug, which is stopped, to count the run as ended by a stop (O5) and, with `now`,
    /// to send the second TERM: append `stop PID NOW` ([`Held::requests`]) to the same file
    /// (same device and inode) before signalling it. False when it could not be written.
    pub fn ask_stop(&self, path: &Path, now: bool) -> bool {
        let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        let Ok(mut w) = std::fs::OpenOptions::new().append(true).custom_flags(flags).open(path) else { return false };
        let same = |a: &std::fs::Metadata, b: &std::fs::Metadata| a.dev() == b.dev() && a.ino() == b.ino();
        match (w.metadata(), self.file.metadata()) {
            (Ok(a), Ok(b)) if same(&a, &b) => {}
            _ => return false,
        }
        w.write_all(format!("stop {} {}\n", std::process::id(), u8::from(now)).as_bytes()).is_ok()
    }

    /// The end's text (`exit 7`) once snug wrote it, just before it exited ([`Held::end`]).
    pub fn end(&self) -> Option<String> {
        use std::io::Seek;
        let mut text = String::new();
        (&self.file).seek(std::io::SeekFrom::Start(0)).ok()?;
        (&self.file).take(1 << 16).read_to_string(&mut text).ok()?;
        text.lines().find_map(|l| l.strip_prefix("end ")).map(str::to_string)
    }

    /// Whether it is still alive (its pidfd is not readable, `pidfd_open(2)`).
    pub fn alive(&self) -> bool {
        !super::socket::readable(self.pidfd.as_fd(), 0)
    }
}

/// Whether process `pid` is stopped: state `T` (stopped by a signal) or `t` (by a tracer) in
/// `/proc/PID/stat` (`proc(5)`).
pub fn stopped(pid: Pid) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    matches!(stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next()), Some('T' | 't'))
}

/// The effective uid of process `pid` (`/proc/PID/status`, `Uid:` real, effective, …).
fn euid_of(pid: Pid) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let uids = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    uids.split_whitespace().nth(1)?.parse().ok()
}
