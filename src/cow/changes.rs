//! What a kept run changed (SPEC W3): the merged view (upper layer over DIR) compared with
//! DIR as it is now. A whiteout (a 0/0 character device, `overlay(5)`) or an opaque
//! directory reads as the deletion of what DIR has there; a redirected directory (a rename
//! of one that existed, root's `redirect_dir`) brings its lower contents from where it was.
//! Symlinks are read, never followed; DIR's own entries are looked at only where the upper
//! layer has something, so the cost follows the change, not DIR's size (SPEC B10).

use crate::error::{failure, OS_ERROR};
use std::ffi::OsString;
use std::fs::Metadata;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// How a path changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Not in DIR, in the merged view.
    Added,
    /// The same type, other content (a symlink: another target).
    Modified,
    /// In DIR, not in the merged view.
    Deleted,
    /// Another type (a file where a directory was, …).
    Type,
    /// The same content, other permission bits.
    Mode,
}

impl Kind {
    /// One letter for `--stat`.
    pub fn letter(self) -> char {
        match self {
            Kind::Added => 'A',
            Kind::Modified => 'M',
            Kind::Deleted => 'D',
            Kind::Type => 'T',
            Kind::Mode => 'm',
        }
    }

    /// The word, for the report.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Added => "added",
            Kind::Modified => "modified",
            Kind::Deleted => "deleted",
            Kind::Type => "type",
            Kind::Mode => "mode",
        }
    }
}

/// What a node is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink and its target, as written.
    Symlink(OsString),
    /// A device node, FIFO or socket (never applied).
    Special(&'static str),
}

impl Node {
    fn of(path: &Path, m: &Metadata) -> Node {
        let t = m.file_type();
        if t.is_dir() {
            Node::Dir
        } else if t.is_symlink() {
            Node::Symlink(std::fs::read_link(path).map(Into::into).unwrap_or_default())
        } else if t.is_file() {
            Node::File
        } else if t.is_fifo() {
            Node::Special("FIFO")
        } else if t.is_socket() {
            Node::Special("socket")
        } else {
            Node::Special("device node")
        }
    }

    /// A word for `--stat`'s type changes.
    pub fn word(&self) -> &'static str {
        match self {
            Node::File => "file",
            Node::Dir => "directory",
            Node::Symlink(_) => "symlink",
            Node::Special(w) => w,
        }
    }
}

/// One change.
#[derive(Clone, Debug)]
pub struct Change {
    /// Relative to DIR, never with `..` or a leading `/`.
    pub path: PathBuf,
    /// How it changed.
    pub kind: Kind,
    /// The new node; `None` for a deletion.
    pub new: Option<Node>,
    /// What DIR has there now; `None` when nothing.
    pub old: Option<Node>,
    /// Where the new content is read from (the upper layer, or DIR for a redirected one).
    pub source: Option<PathBuf>,
    /// The new permission bits, set-id bits included.
    pub mode: u32,
    /// The new owner (uid, gid).
    pub owner: (u32, u32),
    /// The old permission bits.
    pub old_mode: u32,
}

/// Every change of a kept run whose upper layer is `upper`, over `dir`, in path order
/// (parents before children).
///
/// # Errors
/// 71 naming a path of the upper layer that cannot be read; 77 for a redirect that
/// leaves DIR (`..`, an empty or absolute component where none belongs).
pub fn collect(upper: &Path, dir: &Path) -> anyhow::Result<Vec<Change>> {
    let mut w = Walk { dir: dir.to_path_buf(), out: Vec::new() };
    w.walk(Path::new(""), Some(upper), Some(dir.to_path_buf()), (true, true))?;
    w.out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(w.out)
}

struct Walk {
    dir: PathBuf,
    out: Vec<Change>,
}

fn lstat(p: &Path) -> Option<Metadata> {
    std::fs::symlink_metadata(p).ok()
}

fn unreadable(p: &Path, e: std::io::Error) -> anyhow::Error {
    failure(OS_ERROR, format!("cannot read {}: {}", p.display(), crate::error::io_text(&e)))
}

fn names(p: &Path) -> anyhow::Result<Vec<OsString>> {
    let rd = std::fs::read_dir(p).map_err(|e| unreadable(p, e))?;
    let mut out = Vec::new();
    for e in rd {
        out.push(e.map_err(|e| unreadable(p, e))?.file_name());
    }
    Ok(out)
}

/// overlayfs' attribute `name` (`opaque`, `redirect`) of `p`, as root or as a user wrote it.
fn attr(p: &Path, name: &str) -> Option<Vec<u8>> {
    attr_of(p, name).map(|(_, v)| v)
}

/// [`attr`] and the prefix it was found under (`trusted.overlay.` as root, `user.overlay.`).
pub(super) fn attr_of(p: &Path, name: &str) -> Option<(&'static str, Vec<u8>)> {
    ["trusted.overlay.", "user.overlay."].into_iter().find_map(|pre| {
        let mut buf = vec![0u8; 4096];
        let n = rustix::fs::lgetxattr(p, format!("{pre}{name}").as_str(), &mut buf[..]).ok()?;
        buf.truncate(n);
        Some((pre, buf))
    })
}

/// Whether the kept node at `p` was copied up from DIR: overlayfs' `origin` attribute, which
/// it gives a node it copies up from the lower layer (empty where that layer's filesystem has
/// no file handles; a file with other hard links only with its `index` feature) and never a
/// node the payload made.
pub fn copied_up(p: &Path) -> bool {
    attr(p, "origin").is_some()
}

/// A whiteout: a character device 0/0.
pub fn is_whiteout(m: &Metadata) -> bool {
    m.file_type().is_char_device() && m.rdev() == 0
}

/// Where a redirected directory's lower contents are, relative to DIR: an absolute value
/// is from the overlay's root, a relative one a name in the parent's lower directory.
pub(super) fn redirect(value: &[u8], parent_lower: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let text = String::from_utf8_lossy(value);
    let bad =
        || failure(crate::error::POLICY, format!("refused: a kept directory is redirected to {text:?}, outside DIR"));
    let (base, rest) = match text.strip_prefix('/') {
        Some(rest) => (dir.to_path_buf(), rest.to_string()),
        None if text.contains('/') => return Err(bad()),
        None => (parent_lower.to_path_buf(), text.to_string()),
    };
    if rest.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(bad());
    }
    Ok(base.join(rest))
}

impl Walk {
    /// Compare the merged directory at `rel` (upper dir `upper`, lower dir `lower`) with DIR's
    /// `rel`. `same`: `lower` is DIR's `rel` itself, so entries only there are unchanged;
    /// `real`: every directory from DIR down to `rel`'s parent is one on the host (no symlink),
    /// so DIR's entries are looked at without following any.
    fn walk(
        &mut self,
        rel: &Path,
        upper: Option<&Path>,
        lower: Option<PathBuf>,
        flags: (bool, bool),
    ) -> anyhow::Result<()> {
        let (same, real) = flags;
        let host = self.dir.join(rel);
        let real = real && lstat(&host).is_some_and(|m| m.is_dir());
        let mut all: Vec<OsString> = match upper {
            Some(u) => names(u)?,
            None => Vec::new(),
        };
        let up_names = all.clone();
        if !same {
            if let Some(l) = lower.as_deref().filter(|l| lstat(l).is_some_and(|m| m.is_dir())) {
                all.extend(names(l)?);
            }
            // What DIR has here and the merged view does not: deleted.
            if real {
                all.extend(names(&host)?);
            }
        }
        all.sort();
        all.dedup();
        for name in all {
            let r = rel.join(&name);
            let hp = self.dir.join(&r);
            let hm = if real { lstat(&hp) } else { None };
            let um = upper.map(|u| u.join(&name)).and_then(|p| lstat(&p).map(|m| (p, m)));
            let lm = if up_names.contains(&name) || same {
                None
            } else {
                lower.as_ref().map(|l| l.join(&name)).and_then(|p| lstat(&p).map(|m| (p, m)))
            };
            let merged = match (um, lm) {
                (Some((_, m)), _) if is_whiteout(&m) => None,
                (Some(u), _) => Some((u, true)),
                (None, Some(l)) => Some((l, false)),
                (None, None) => None,
            };
            let Some(((src, sm), from_upper)) = merged else {
                if let Some(hm) = hm {
                    self.push(&r, Kind::Deleted, None, &hp, &hm, None);
                }
                continue;
            };
            let node = Node::of(&src, &sm);
            if node == Node::Dir {
                let (child_lower, child_same) = if !from_upper {
                    (Some(src.clone()), false)
                } else if let Some(v) = attr(&src, "redirect") {
                    let parent_lower = lower.clone().unwrap_or_else(|| host.clone());
                    (Some(redirect(&v, &parent_lower, &self.dir)?), false)
                } else if attr(&src, "opaque").is_some_and(|v| v == b"y") {
                    (None, false)
                } else if same {
                    (Some(hp.clone()), true)
                } else {
                    (lower.as_ref().map(|l| l.join(&name)), false)
                };
                let host_dir = hm.as_ref().is_some_and(|m| m.is_dir());
                match &hm {
                    None => self.push(&r, Kind::Added, Some(&node), &src, &sm, None),
                    Some(h) if !host_dir => self.push(&r, Kind::Type, Some(&node), &src, &sm, Some((&hp, h))),
                    Some(h) if h.mode() & 0o7777 != sm.mode() & 0o7777 => {
                        self.push(&r, Kind::Mode, Some(&node), &src, &sm, Some((&hp, h)))
                    }
                    Some(_) => {}
                }
                // Under a directory DIR does not have, nothing of DIR's can be unchanged.
                let child_same = child_same && host_dir;
                self.walk(&r, from_upper.then_some(src.as_path()), child_lower, (child_same, real))?;
                continue;
            }
            let Some(h) = hm else {
                self.push(&r, Kind::Added, Some(&node), &src, &sm, None);
                continue;
            };
            let old = Node::of(&hp, &h);
            let kind = if std::mem::discriminant(&old) != std::mem::discriminant(&node) {
                Some(Kind::Type)
            } else if node != old || (node == Node::File && !same_content(&src, &hp, &sm, &h)?) {
                Some(Kind::Modified)
            } else if h.mode() & 0o7777 != sm.mode() & 0o7777 && !matches!(node, Node::Symlink(_)) {
                Some(Kind::Mode)
            } else {
                None // copied up and left as it was (touched, opened for writing)
            };
            if let Some(kind) = kind {
                self.push(&r, kind, Some(&node), &src, &sm, Some((&hp, &h)));
            }
        }
        Ok(())
    }

    fn push(
        &mut self,
        rel: &Path,
        kind: Kind,
        new: Option<&Node>,
        src: &Path,
        m: &Metadata,
        old: Option<(&Path, &Metadata)>,
    ) {
        let (old, old_mode) = match (kind, old) {
            (Kind::Deleted, _) => (Some(Node::of(src, m)), m.mode() & 0o7777),
            (_, Some((p, om))) => (Some(Node::of(p, om)), om.mode() & 0o7777),
            (_, None) => (None, 0),
        };
        let fresh = kind != Kind::Deleted;
        self.out.push(Change {
            path: rel.to_path_buf(),
            kind,
            new: new.cloned(),
            old,
            source: fresh.then(|| src.to_path_buf()),
            mode: if fresh { m.mode() & 0o7777 } else { 0 },
            owner: if fresh { (m.uid(), m.gid()) } else { (0, 0) },
            old_mode,
        });
    }
}

/// Whether two regular files hold the same bytes.
fn same_content(a: &Path, b: &Path, am: &Metadata, bm: &Metadata) -> anyhow::Result<bool> {
    use std::io::Read;
    if am.len() != bm.len() {
        return Ok(false);
    }
    let open = |p: &Path| std::fs::File::open(p).map_err(|e| unreadable(p, e));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = fa.read(&mut ba).map_err(|e| unreadable(a, e))?;
        if n == 0 {
            return Ok(true);
        }
        fb.read_exact(&mut bb[..n]).map_err(|e| unreadable(b, e))?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

/// Added, modified and deleted counts, as W2's line and the report give them (type and
/// mode changes count as modified).
pub fn counts(changes: &[Change]) -> (usize, usize, usize) {
    let n = |k: &[Kind]| changes.iter().filter(|c| k.contains(&c.kind)).count();
    (n(&[Kind::Added]), n(&[Kind::Modified, Kind::Type, Kind::Mode]), n(&[Kind::Deleted]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// W4: a redirect names a place inside DIR (absolute from DIR, or a name beside the
    /// directory); `..`, `.` or an empty component, or a relative path, is refused.
    #[test]
    fn w4_redirects_stay_inside_dir() {
        let (dir, parent) = (Path::new("/d"), Path::new("/d/p"));
        assert_eq!(redirect(b"/a/b", parent, dir).unwrap(), PathBuf::from("/d/a/b"));
        assert_eq!(redirect(b"old", parent, dir).unwrap(), PathBuf::from("/d/p/old"));
        for bad in [&b"/../etc"[..], b"/a/../../x", b"..", b"a/b", b"", b"/", b"/a//b/./c"] {
            assert!(redirect(bad, parent, dir).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
