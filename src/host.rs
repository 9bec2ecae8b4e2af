//! The host as the plan side (profiles, policy) sees it: snug's environment, a few stat(2)
//! questions and reading profile files. A trait so that tests (and golden files) use a fixed
//! fake host instead of the machine they run on. It imports only [`crate::passwd`].

use std::io;
use std::path::{Path, PathBuf};

/// snug's own environment, skipping variables that are not UTF-8 (they are not passed in).
pub fn host_env() -> Vec<(String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect()
}

/// The home directory in the passwd entry of the real uid ([`crate::passwd::by_uid`]), for
/// a caller that unset HOME (`env -i snug …`).
pub fn passwd_home() -> Option<String> {
    let user = crate::passwd::by_uid(rustix::process::getuid().as_raw())?;
    user.dir.into_os_string().into_string().ok()
}

/// What a path is on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Nothing there (or a dangling symlink, for [`Host::stat`]).
    Missing,
    /// A directory.
    Dir,
    /// Anything else that exists: file, socket, device…
    File,
    /// A symlink and its target as readlink(2) returns it (only from [`Host::lstat`]).
    Symlink(PathBuf),
}

/// The questions policy resolution (`policy::resolve`) asks the host.
pub trait Host {
    /// lstat(2): the entry itself; a symlink is reported, not followed.
    fn lstat(&self, path: &Path) -> Entry;
    /// stat(2): symlinks followed; never [`Entry::Symlink`].
    fn stat(&self, path: &Path) -> Entry;
    /// realpath(3): absolute, no symlinks, no `.`/`..` (relative paths start at the cwd).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// Contents of a profile file, `Ok(None)` when it does not exist.
    fn read(&self, path: &Path) -> io::Result<Option<String>>;
}

/// The real machine.
pub struct RealHost;

impl Host for RealHost {
    fn lstat(&self, path: &Path) -> Entry {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(path) {
                Ok(target) => Entry::Symlink(target),
                Err(_) => Entry::File,
            },
            Ok(m) if m.is_dir() => Entry::Dir,
            Ok(_) => Entry::File,
            Err(_) => Entry::Missing,
        }
    }

    fn stat(&self, path: &Path) -> Entry {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Entry::Dir,
            Ok(_) => Entry::File,
            Err(_) => Entry::Missing,
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn read(&self, path: &Path) -> io::Result<Option<String>> {
        match read_profile_file(path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The largest profile file snug reads (SPEC P4), in bytes.
pub const MAX_PROFILE_BYTES: u64 = 1024 * 1024;

/// Read a profile file that must be a regular file of at most [`MAX_PROFILE_BYTES`]
/// (SPEC P4). Opened with `O_NONBLOCK`, so a FIFO cannot hang the open (`fifo(7)`); what it
/// is gets checked with `fstat` on the open descriptor, so a symlink to /dev/zero or a device
/// is refused before a byte is read; the read itself stops one byte past the bound.
///
/// # Errors
/// The open's error, or `InvalidData` saying what is wrong with the file.
pub fn read_profile_file(path: &Path) -> io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        "a directory"
    } else {
        ""
    };
    if !what.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("not a regular file ({what})")));
    }
    let too_big = || io::Error::new(io::ErrorKind::InvalidData, format!("larger than {MAX_PROFILE_BYTES} bytes"));
    if meta.len() > MAX_PROFILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_PROFILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_PROFILE_BYTES {
        return Err(too_big()); // it grew while being read
    }
    String::from_utf8(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8"))
}

/// A fixed in-memory host for tests and golden files: the same answers on every machine.
#[cfg(test)]
#[derive(Default)]
pub struct FakeHost {
    entries: std::collections::BTreeMap<PathBuf, Fake>,
    cwd: PathBuf,
}

#[cfg(test)]
enum Fake {
    Dir,
    File(String),
    Link(PathBuf),
}

#[cfg(test)]
impl FakeHost {
    /// An empty host whose cwd is `/`.
    pub fn new() -> FakeHost {
        FakeHost { cwd: PathBuf::from("/"), ..FakeHost::default() }
    }

    /// A directory (and its parents).
    pub fn dir(mut self, path: &str) -> FakeHost {
        let mut p = PathBuf::from(path);
        loop {
            self.entries.entry(p.clone()).or_insert(Fake::Dir);
            if !p.pop() {
                return self;
            }
        }
    }

    /// A file with `text` (its parents become directories).
    pub fn file(self, path: &str, text: &str) -> FakeHost {
        let mut host = self.dir(parent_of(path));
        host.entries.insert(PathBuf::from(path), Fake::File(text.to_string()));
        host
    }

    /// A symlink `path -> target`.
    pub fn link(self, path: &str, target: &str) -> FakeHost {
        let mut host = self.dir(parent_of(path));
        host.entries.insert(PathBuf::from(path), Fake::Link(PathBuf::from(target)));
        host
    }

    /// Relative paths are resolved from `cwd`.
    pub fn cwd(mut self, cwd: &str) -> FakeHost {
        self.cwd = PathBuf::from(cwd);
        self
    }

    /// A typical Debian host with merged /usr, `/home/u` and a project `/home/u/proj`.
    pub fn debian() -> FakeHost {
        let mut h = FakeHost::new().dir("/usr/bin").dir("/usr/lib").dir("/usr/lib64");
        h = h.link("/bin", "usr/bin").link("/sbin", "usr/sbin").link("/lib", "usr/lib");
        h = h.link("/lib64", "usr/lib64").dir("/home/u/proj/sub").dir("/tmp").dir("/dev");
        h = h.link("/etc/resolv.conf", "../run/systemd/resolve/stub-resolv.conf");
        for f in ["passwd", "group", "nsswitch.conf", "hosts", "ld.so.cache", "ld.so.conf"] {
            h = h.file(&format!("/etc/{f}"), "");
        }
        h.dir("/etc/ld.so.conf.d").dir("/etc/alternatives").dir("/etc/ssl/certs")
    }

    fn follow(&self, path: &Path, depth: u32) -> Option<&Fake> {
        match self.entries.get(path)? {
            Fake::Link(t) if depth < 8 => {
                let next = path.parent().unwrap_or(Path::new("/")).join(t);
                self.follow(&next, depth + 1)
            }
            Fake::Link(_) => None,
            other => Some(other),
        }
    }
}

#[cfg(test)]
fn parent_of(path: &str) -> &str {
    Path::new(path).parent().and_then(|p| p.to_str()).unwrap_or("/")
}

#[cfg(test)]
impl Host for FakeHost {
    fn lstat(&self, path: &Path) -> Entry {
        match self.entries.get(path) {
            None => Entry::Missing,
            Some(Fake::Dir) => Entry::Dir,
            Some(Fake::File(_)) => Entry::File,
            Some(Fake::Link(t)) => Entry::Symlink(t.clone()),
        }
    }

    fn stat(&self, path: &Path) -> Entry {
        match self.follow(path, 0) {
            None | Some(Fake::Link(_)) => Entry::Missing,
            Some(Fake::Dir) => Entry::Dir,
            Some(Fake::File(_)) => Entry::File,
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        // Enough for tests: lexical `.`/`..`, no symlinks in the middle of a path.
        let mut out = PathBuf::from("/");
        for c in self.cwd.join(path).components() {
            match c {
                std::path::Component::ParentDir => {
                    out.pop();
                }
                std::path::Component::Normal(n) => out.push(n),
                _ => {}
            }
        }
        match self.stat(&out) {
            Entry::Missing => Err(io::Error::from(io::ErrorKind::NotFound)),
            _ => Ok(out),
        }
    }

    fn read(&self, path: &Path) -> io::Result<Option<String>> {
        match self.follow(path, 0) {
            Some(Fake::File(text)) => Ok(Some(text.clone())),
            Some(_) => Err(io::Error::other("is a directory")),
            None => Ok(None),
        }
    }
}
