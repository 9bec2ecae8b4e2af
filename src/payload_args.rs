//! The payload's argv, environment and closed standard descriptors, carried from snug to
//! the sandbox init in a memfd at [`ARGS_FD`] rather than on bwrap's command line (SPEC R7,
//! R2). bwrap caps its own argv at 9000 words and takes text only; a memfd carries any
//! bytes and as many as `execve(2)` accepts.
//!
//! Layout (little-endian): `b"SNUGARGS"`, `u32` closed-descriptor mask (bit n: fd n of
//! 0–2 was closed when snug started), `u64` soft RLIMIT_STACK snug started with
//! (`u64::MAX`: unlimited), `u32` flags (bit 0: the payload waits for snug's go, N3),
//! `u32` argc, then argc × (`u32` length, bytes), `u32`
//! envc, then envc × (`u32` length, `NAME=VALUE` bytes), then optionally `u32` length and
//! that many bytes: where init must find the mounts inside DIR (SPEC P7,
//! `crate::grant_fd::verify`). No NULs inside a word.

use rustix::io::Errno;
use std::ffi::{CString, OsStr, OsString};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU32, Ordering};

pub use crate::sys::fds::ARGS_FD;

const MAGIC: &[u8; 8] = b"SNUGARGS";
/// `execve(2)` takes at most this many bytes of argv and envp together on Linux
/// (`MAX_ARG_STRLEN` × 32 pages is above any stack rlimit in use); a bound on what init reads.
const MAX_BYTES: u64 = 1 << 30;

/// Which of fds 0–2 were closed when snug started (bit n for fd n), recorded before Rust's
/// runtime reopens them on /dev/null (SPEC R2).
static CLOSED_AT_START: AtomicU32 = AtomicU32::new(0);

/// Runs from `.init_array`, before Rust's runtime initialises (std reopens a closed fd 0–2
/// as /dev/null in its own start-up, so `main` is too late to see it). A constructor rather
/// than a `#[no_main]` C `main` keeps the rest of std's start-up (SIGPIPE, stack guard).
extern "C" fn record_closed() {
    let mut mask = 0;
    for fd in 0..3 {
        if !crate::sys::fd::is_open(fd) {
            mask |= 1 << fd;
        }
    }
    CLOSED_AT_START.store(mask, Ordering::Relaxed);
}

#[used]
#[link_section = ".init_array"]
static RECORD_CLOSED: extern "C" fn() = record_closed;

/// The mask [`record_closed`] saw.
pub fn closed_at_start() -> u32 {
    CLOSED_AT_START.load(Ordering::Relaxed)
}

fn put(out: &mut Vec<u8>, word: &[u8]) {
    out.extend_from_slice(&(word.len() as u32).to_le_bytes());
    out.extend_from_slice(word);
}

/// The encoded form of `argv`, `env` and `closed` (layout in the module doc).
pub fn encode<V: AsRef<OsStr>>(
    argv: &[OsString],
    env: &[(String, V)],
    closed: u32,
    stack: u64,
    (hold, checks): (bool, &[u8]),
) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&closed.to_le_bytes());
    out.extend_from_slice(&stack.to_le_bytes());
    out.extend_from_slice(&u32::from(hold).to_le_bytes());
    out.extend_from_slice(&(argv.len() as u32).to_le_bytes());
    for a in argv {
        put(&mut out, a.as_bytes());
    }
    out.extend_from_slice(&(env.len() as u32).to_le_bytes());
    for (k, v) in env {
        put(&mut out, &[k.as_bytes(), b"=", v.as_ref().as_bytes()].concat());
    }
    if !checks.is_empty() {
        put(&mut out, checks);
    }
    out
}

/// A close-on-exec memfd holding [`encode`]'s bytes, rewound, for [`ARGS_FD`].
///
/// # Errors
/// As [`memfd_bytes`].
pub fn memfd(argv: &[OsString], env: &[(String, String)]) -> anyhow::Result<OwnedFd> {
    memfd_bytes(argv, env)
}

/// [`memfd`] with values of any bytes (R7: `-e NAME` passes the caller's value as it is).
///
/// # Errors
/// As [`empty_memfd`] and [`fill`].
pub fn memfd_bytes<V: AsRef<OsStr>>(argv: &[OsString], env: &[(String, V)]) -> anyhow::Result<OwnedFd> {
    let fd = empty_memfd()?;
    fill(&fd, argv, env, (false, &[]))?;
    Ok(fd)
}

/// An empty close-on-exec memfd for [`ARGS_FD`], made before the payload's argv and
/// environment are known and [`fill`]ed once they are (init reads it only after bwrap has
/// its options, which come later, SPEC B1).
///
/// # Errors
/// `memfd_create(2)`.
pub fn empty_memfd() -> anyhow::Result<OwnedFd> {
    rustix::fs::memfd_create(c"snug-args", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(|e| anyhow::Error::new(std::io::Error::from(e)).context("memfd_create"))
}

/// Write [`encode`]'s bytes (`hold`: the payload waits for snug's go; `checks`: the mounts
/// init verifies) into `memfd` at offset 0 with `pwrite(2)`, which leaves the file
/// offset (shared with bwrap and init, who hold the same open file) at 0 for init's read.
///
/// # Errors
/// Write errors; a NUL byte in an argument is a usage error.
pub fn fill<V: AsRef<OsStr>>(
    memfd: &OwnedFd,
    argv: &[OsString],
    env: &[(String, V)],
    hold: (bool, &[u8]),
) -> anyhow::Result<()> {
    if let Some(a) = argv.iter().find(|a| a.as_bytes().contains(&0)) {
        return Err(crate::error::failure(crate::error::USAGE, format!("argument contains a NUL byte: {a:?}")));
    }
    let bytes = encode(argv, env, closed_at_start(), crate::stack::soft_limit(), hold);
    let mut done = 0;
    while done < bytes.len() {
        match rustix::io::pwrite(memfd, &bytes[done..], done as u64) {
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                return Err(anyhow::Error::new(std::io::Error::from(e)).context("writing the payload's arguments"))
            }
        }
    }
    Ok(())
}

/// What init needs to start the payload.
pub struct Spec {
    /// argv, `argv[0]` first.
    pub argv: Vec<CString>,
    /// The whole environment, `NAME=VALUE`.
    pub env: Vec<CString>,
    /// Bit n: fd n must be closed in the payload (SPEC R2).
    pub closed: u32,
    /// The soft RLIMIT_STACK the payload gets: the caller's (`u64::MAX`: unlimited); bwrap
    /// and init may have run with more ([`crate::stack::roomy_for_exec`]).
    pub stack: u64,
    /// The payload waits for snug's go before its exec (the network comes first, N3).
    pub hold: bool,
    /// Where the mounts inside DIR must sit (`crate::grant_fd::verify::decode`), or empty.
    pub checks: Vec<u8>,
}

/// A cursor over the memfd's bytes; every read is bounds-checked.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn words(&mut self) -> Option<Vec<CString>> {
        let n = self.u32()? as usize;
        let mut v = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let len = self.u32()? as usize;
            v.push(CString::new(self.take(len)?).ok()?);
        }
        Some(v)
    }
}

fn decode(bytes: &[u8]) -> Option<Spec> {
    let mut c = Cursor { bytes, at: 0 };
    if c.take(8)? != MAGIC {
        return None;
    }
    let closed = c.u32()?;
    let stack = c.u64()?;
    let hold = c.u32()? & 1 != 0;
    let argv = c.words()?;
    let env = c.words()?;
    let checks = match c.u32() {
        Some(len) => c.take(len as usize)?.to_vec(),
        None => Vec::new(),
    };
    Some(Spec { argv, env, closed, stack, hold, checks })
}

/// Read a spec from `file` and close it: a memfd [`memfd`] made, which init has at
/// [`ARGS_FD`] (`snug exec` sends one too, SPEC L3).
///
/// # Errors
/// The read's errno, or `EINVAL` for a malformed memfd.
pub fn receive_from(mut file: std::fs::File) -> Result<Spec, Errno> {
    let mut bytes = Vec::new();
    (&mut file).take(MAX_BYTES).read_to_end(&mut bytes).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    decode(&bytes).ok_or(Errno::INVAL)
}

impl Spec {
    /// The value of `name` in the payload's environment.
    pub fn var(&self, name: &str) -> Option<&[u8]> {
        self.env.iter().find_map(|e| e.as_bytes().strip_prefix(name.as_bytes())?.strip_prefix(b"="))
    }

    /// NULL-terminated pointer arrays for `execve(2)`: (argv, envp). They borrow `self`.
    pub fn pointers(&self) -> (Vec<*const libc::c_char>, Vec<*const libc::c_char>) {
        let ptrs = |v: &[CString]| v.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
        (ptrs(&self.argv), ptrs(&self.env))
    }
}

/// The payload's program: CMD itself when it has a slash, else the first match on the
/// payload's `$PATH`, as `execvp(3)` searches; the error is the `errno` snug turns into 126
/// or 127 (SPEC R4).
pub fn resolve(spec: &Spec) -> Result<CString, Errno> {
    let cmd = spec.argv.first().map(|c| c.as_bytes()).ok_or(Errno::NOENT)?;
    if cmd.contains(&b'/') {
        return CString::new(cmd).map_err(|_| Errno::INVAL);
    }
    if cmd.is_empty() {
        return Err(Errno::NOENT);
    }
    let path = spec.var("PATH").unwrap_or(b"/usr/bin:/bin");
    let mut seen_eacces = false;
    for dir in path.split(|b| *b == b':').filter(|d| !d.is_empty()) {
        let full = [dir, b"/", cmd].concat();
        let cand = CString::new(full.clone()).map_err(|_| Errno::INVAL)?;
        match rustix::fs::access(cand.as_c_str(), rustix::fs::Access::EXEC_OK) {
            Ok(()) if std::fs::metadata(std::ffi::OsStr::from_bytes(&full)).is_ok_and(|m| m.is_file()) => {
                return Ok(cand)
            }
            Err(Errno::ACCESS) => seen_eacces = true,
            _ => {}
        }
    }
    Err(if seen_eacces { Errno::ACCESS } else { Errno::NOENT })
}

/// `argv` as one line for people (`--dry-run`, logs): non-UTF-8 bytes shown as U+FFFD.
pub fn lossy(argv: &[OsString]) -> Vec<String> {
    argv.iter().map(|a| a.to_string_lossy().into_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn r7_round_trip_of_any_bytes() {
        let argv: Vec<OsString> = vec![OsString::from("sh"), OsString::from_vec(vec![0xff, b'x']), OsString::from("")];
        let env = vec![("PATH".to_string(), "/bin".to_string()), ("A".to_string(), "b=c".to_string())];
        let spec = decode(&encode(&argv, &env, 0b010, 16 << 10, (true, &[]))).expect("decodes");
        assert!(spec.hold);
        assert_eq!(spec.stack, 16 << 10);
        assert_eq!(
            spec.argv.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>(),
            [b"sh".to_vec(), vec![0xff, b'x'], vec![]]
        );
        assert_eq!(spec.var("PATH"), Some(&b"/bin"[..]));
        assert_eq!(spec.var("A"), Some(&b"b=c"[..]));
        assert_eq!(spec.closed, 0b010);
        let (a, e) = spec.pointers();
        assert_eq!((a.len(), e.len()), (4, 3));
    }

    #[test]
    fn r7_truncated_input_is_refused() {
        let bytes = encode::<String>(&[OsString::from("true")], &[], 0, u64::MAX, (false, &[]));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
    }
}
