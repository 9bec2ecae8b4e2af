//! A renamed directory made whole in the kept changes (SPEC W3, W4). As root the overlay
//! renames a directory that was in DIR without copying it (`redirect_dir`): the upper layer
//! keeps an empty directory that points at the old name, and whatever it held stays in DIR,
//! read from there whenever the changes are read. Left so, the kept changes would follow the
//! host after the run: a host that renamed or removed the old directory, or edited a file in
//! it, would change what `snug diff` shows and `snug apply` writes, down to deleting the
//! files the payload had only moved.
//!
//! So once the run has ended, and before the changes are first read, each redirected
//! directory gets a copy of what it held in DIR (what the upper layer does not already
//! replace) and becomes opaque: a new directory of the payload's, read from the upper layer
//! alone, and no longer marked as copied up from DIR (its `origin`), which for a new name is
//! no host file that could have been removed since. The old name keeps its whiteout, so the
//! host's directory there reads as deleted, with W4's conflict rules. The cost follows what
//! was renamed; without a rename nothing is copied. Hard links inside a renamed directory
//! become separate files (the limit README gives for `--cow`).

use super::changes::{attr_of, redirect};
use crate::error::{failure, OS_ERROR};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The file in a kept run's directory that says its renames were made whole.
const FROZEN: &str = "frozen";

/// At the run's end: [`freeze`] `kept` over `dir`, and mark it done, so later reads do not
/// walk its upper layer again (SPEC B10).
///
/// # Errors
/// As [`freeze`].
pub fn at_end(kept: &super::store::Kept, dir: &Path) -> anyhow::Result<()> {
    freeze(&kept.upper(), dir, None)?;
    let _ = std::fs::write(kept.path.join(FROZEN), b"");
    Ok(())
}

/// Before a read of `kept` (`diff`, `apply`): a run that did not reach its end (SIGKILL) is
/// frozen now, late ([`freeze`]); a running one, or one done already, is left as it is.
///
/// # Errors
/// As [`freeze`].
pub fn before_read(kept: &super::store::Kept, meta: &super::store::Meta) -> anyhow::Result<()> {
    if super::store::running(kept) || kept.path.join(FROZEN).exists() {
        return Ok(());
    }
    freeze(&kept.upper(), &meta.dir, Some(meta.started_ns))?;
    let _ = std::fs::write(kept.path.join(FROZEN), b"");
    Ok(())
}

/// Make every redirected directory under `upper` (the kept upper layer over `dir`) whole and
/// opaque. A no-op where nothing was renamed, and once done (no redirect is left).
///
/// `late`: the run's start (ns since the epoch) when the run did not reach its end (SIGKILL)
/// and this is the first read since: what a renamed directory held is then read from DIR
/// only if nothing under its old name changed since the start, for the host may have
/// renamed, removed or edited it after the run, and the copy would be the host's, not the
/// run's.
///
/// # Errors
/// 71 naming the path that could not be read or written; 77 for a redirect out of DIR; 1
/// for a late freeze whose old name changed (nothing is written then).
fn freeze(upper: &Path, dir: &Path, late: Option<u128>) -> anyhow::Result<()> {
    if let Some(since) = late {
        sources(upper, Some(dir), dir, dir, &mut |renamed, source| match changed_since(source, since as i128) {
            Some(what) => Err(failure(
                1,
                format!(
                    "the run ended without its end after renaming {} to {}, and {} changed on the host since it \
                     started: what it held then is not known (snug discard drops the kept changes)",
                    source.display(),
                    renamed.display(),
                    what.display()
                ),
            )),
            None => Ok(()),
        })?;
    }
    walk(upper, Some(dir), dir, dir)
}

/// Call `each(renamed, source)` for every redirected directory under the upper directory
/// `u`, as [`walk`] finds them, before anything is written.
fn sources(
    u: &Path,
    lower: Option<&Path>,
    host: &Path,
    dir: &Path,
    each: &mut dyn FnMut(&Path, &Path) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for (p, redirected, opaque) in subdirs(u)? {
        let name = p.file_name().unwrap_or_default().to_owned();
        match redirected {
            Some((_, v)) => {
                let source = redirect(&v, lower.unwrap_or(host), dir)?;
                each(&host.join(&name), &source)?;
                // A directory moved into this one (`mv x/y z/y`) points at its own old name.
                sources(&p, Some(&source), &host.join(&name), dir, each)?;
            }
            None => {
                let below = lower.filter(|_| !opaque).map(|l| l.join(&name));
                sources(&p, below.as_deref(), &host.join(&name), dir, each)?;
            }
        }
    }
    Ok(())
}

/// The first path at or below `p` whose ctime is `since` (ns) or later, or `p` itself when it
/// is gone or cannot be read; `None` when nothing changed. Below `p`, apply's own walk
/// ([`super::plan::changed_within`]).
fn changed_since(p: &Path, since: i128) -> Option<std::path::PathBuf> {
    let Ok(m) = std::fs::symlink_metadata(p) else { return Some(p.to_path_buf()) };
    if i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()) >= since {
        return Some(p.to_path_buf());
    }
    m.is_dir().then(|| super::plan::changed_within(rustix::fs::CWD, p, since).map(|inner| p.join(inner))).flatten()
}

/// A subdirectory of the upper layer: its path, its redirect (prefix, value), if any, and
/// whether it is opaque.
type Subdir = (std::path::PathBuf, Option<(&'static str, Vec<u8>)>, bool);

/// The upper directory `u`'s subdirectories.
fn subdirs(u: &Path) -> anyhow::Result<Vec<Subdir>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(u).map_err(|e| io(u, e))? {
        let e = e.map_err(|e| io(u, e))?;
        let p = e.path();
        if e.file_type().map_err(|e| io(&p, e))?.is_dir() {
            let opaque = attr_of(&p, "opaque").is_some_and(|(_, v)| v == b"y");
            out.push((p.clone(), attr_of(&p, "redirect"), opaque));
        }
    }
    Ok(out)
}

/// Look for redirects below the upper directory `u`, whose lower directory is `lower` (`None`
/// under an opaque directory) and whose place in DIR is `host`.
fn walk(u: &Path, lower: Option<&Path>, host: &Path, dir: &Path) -> anyhow::Result<()> {
    for (p, redirected, opaque) in subdirs(u)? {
        let name = p.file_name().unwrap_or_default().to_owned();
        match redirected {
            Some((prefix, v)) => {
                let source = redirect(&v, lower.unwrap_or(host), dir)?;
                fill(&p, Some(&source), dir)?;
                let opaque =
                    rustix::fs::lsetxattr(&p, format!("{prefix}opaque"), b"y", rustix::fs::XattrFlags::empty());
                opaque.map_err(|e| io(&p, e.into()))?;
                unmark(&p, prefix)?;
            }
            None => {
                let below = lower.filter(|_| !opaque).map(|l| l.join(&name));
                walk(&p, below.as_deref(), &host.join(&name), dir)?;
            }
        }
    }
    Ok(())
}

/// Copy into the upper directory `u` what its lower directory `source` holds and `u` does not
/// replace (a name in `u`, a whiteout included, wins), and make each directory `u` already
/// has whole from its own lower the same way: its redirect's, none if it is opaque, else
/// `source`'s same name. `u` ends up needing no lower layer.
fn fill(u: &Path, source: Option<&Path>, dir: &Path) -> anyhow::Result<()> {
    // A source that is gone (removed on the host during the run) has nothing to bring.
    if let Some(entries) = source.and_then(|s| std::fs::read_dir(s).ok()) {
        for e in entries {
            let e = e.map_err(|e| io(u, e))?;
            let to = u.join(e.file_name());
            match std::fs::symlink_metadata(&to) {
                Err(_) => copy(&e.path(), &to)?,
                // A file the payload changed after the rename was copied up from the old
                // name: at its new name it is the payload's, and whether the host changed the
                // old one is asked of the old name's deletion (W4), not of this file.
                Ok(m) if !m.is_dir() => {
                    for prefix in ["trusted.overlay.", "user.overlay."] {
                        let _ = rustix::fs::lremovexattr(&to, format!("{prefix}origin"));
                    }
                }
                Ok(_) => {}
            }
        }
    }
    for (p, redirected, opaque) in subdirs(u)? {
        let name = p.file_name().unwrap_or_default().to_owned();
        let below = match &redirected {
            Some((_, v)) => Some(redirect(v, source.unwrap_or(dir), dir)?),
            None if opaque => None,
            None => source.map(|s| s.join(&name)),
        };
        fill(&p, below.as_deref(), dir)?;
        if let Some((prefix, _)) = redirected {
            unmark(&p, prefix)?;
        }
    }
    Ok(())
}

/// Remove overlayfs' `redirect` and `origin` marks from the directory `p`.
fn unmark(p: &Path, prefix: &str) -> anyhow::Result<()> {
    for name in ["redirect", "origin"] {
        match rustix::fs::lremovexattr(p, format!("{prefix}{name}")) {
            Ok(()) | Err(rustix::io::Errno::NODATA) => {}
            Err(e) => return Err(io(p, e.into())),
        }
    }
    Ok(())
}

/// `from` (in DIR) copied to `to` (in the upper layer) with its mode and owner, a directory
/// with all it holds; never following a symlink. Device nodes and sockets are left out
/// (`snug apply` writes none).
fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
    let m = std::fs::symlink_metadata(from).map_err(|e| io(from, e))?;
    let t = m.file_type();
    if t.is_dir() {
        std::fs::create_dir(to).map_err(|e| io(to, e))?;
        for e in std::fs::read_dir(from).map_err(|e| io(from, e))? {
            let e = e.map_err(|e| io(from, e))?;
            copy(&e.path(), &to.join(e.file_name()))?;
        }
    } else if t.is_symlink() {
        let target = std::fs::read_link(from).map_err(|e| io(from, e))?;
        std::os::unix::fs::symlink(target, to).map_err(|e| io(to, e))?;
    } else if t.is_file() {
        use std::os::unix::fs::OpenOptionsExt;
        let mut r = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(from);
        let mut w = std::fs::OpenOptions::new().write(true).create_new(true).open(to);
        match (&mut r, &mut w) {
            (Ok(r), Ok(w)) => drop(std::io::copy(r, w).map_err(|e| io(from, e))?),
            (Err(e), _) => return Err(io(from, std::io::Error::from(e.kind()))),
            (_, Err(e)) => return Err(io(to, std::io::Error::from(e.kind()))),
        }
    } else {
        // A FIFO, socket or device node: made alike (only root renames in place), so `diff`
        // lists it and `apply` names it as one it does not write.
        let kind = rustix::fs::FileType::from_raw_mode(m.mode());
        rustix::fs::mknodat(rustix::fs::CWD, to, kind, rustix::fs::Mode::empty(), m.rdev())
            .map_err(|e| io(to, e.into()))?;
    }
    std::os::unix::fs::lchown(to, Some(m.uid()), Some(m.gid())).map_err(|e| io(to, e))?;
    if !t.is_symlink() {
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(m.mode() & 0o7777)).map_err(|e| io(to, e))?;
    }
    Ok(())
}

fn io(p: &Path, e: std::io::Error) -> anyhow::Error {
    failure(OS_ERROR, format!("--cow: kept changes: {}: {}", p.display(), crate::error::io_text(&e)))
}
