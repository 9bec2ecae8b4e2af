//! Protected paths (SPEC P8): at the root of DIR and of every `rw` grant, what the host later
//! runs code from (git's hooks and config, `.envrc`, an editor's tasks, snug's own
//! `.snug.toml`) is read-only to the payload.
//!
//! - An existing protected path is bound read-only onto itself, after every policy mount.
//! - Each directory between the root and a protected path is bound onto itself, so that it is
//!   a mount point, which rename(2) refuses with EBUSY: `mv .git .git.old` would otherwise
//!   move a directory that merely has mounts below it, and a new `.git/hooks` would follow.
//! - A missing one gets a placeholder (an empty directory, or an empty file inside `.git`)
//!   bound read-only, made before the run and removed after it ([`placeholder`]); except
//!   `.git` itself, `commondir` and `.gitmodules`, where a placeholder breaks git or shows in
//!   it: what the payload made there is moved aside after the run ([`aside`]).
//! - A symlink at a protected path cannot be bound over: it is watched like a missing
//!   `.git`, and what it names is protected too when it lies in a writable root.
//!
//! Nothing here follows a symlink below a root ([`probe`]).

pub mod aside;
mod git;
mod git_config;
pub mod placeholder;
mod probe;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use crate::error::{failure, POLICY};
use crate::policy::{Mount, MountKind, Policy};
use probe::{Kind, Refused};

/// [`Mount::profile`] of a protected path's read-only bind.
pub const PROTECTED: &str = "(protected)";
/// [`Mount::profile`] of a placeholder's read-only bind.
pub const PLACEHOLDER: &str = "(placeholder)";
/// [`Mount::profile`] of a directory bound onto itself so that it cannot be renamed.
pub const PINNED: &str = "(pinned)";

/// What to do at a protected path that does not exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Missing {
    /// An empty directory, bound read-only for the run.
    Dir,
    /// An empty file, bound read-only for the run (inside `.git`, where a directory would
    /// break git and git status shows nothing).
    File,
    /// Nothing (a placeholder would break git): what the payload makes there is moved aside.
    Aside,
    /// Nothing at all (a symlink's target, whose link is watched).
    Nothing,
}

impl From<snug_core::protect::Missing> for Missing {
    fn from(m: snug_core::protect::Missing) -> Missing {
        match m {
            snug_core::protect::Missing::Dir => Missing::Dir,
            snug_core::protect::Missing::File => Missing::File,
            snug_core::protect::Missing::Aside => Missing::Aside,
        }
    }
}

/// A path watched through the run: what was there (device, inode), `None` for nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    /// The path on the host (the same inside).
    pub path: PathBuf,
    /// What was there before the run.
    pub was: Option<probe::Stamp>,
    /// The writable root it lies in.
    root: PathBuf,
}

/// The protection of one run: its mounts, placeholders and watches.
#[derive(Clone, Debug, Default)]
pub struct Protection {
    /// bwrap mounts after the policy's ([`Policy::protected`]).
    pub mounts: Vec<Mount>,
    /// Existing protected paths, bound read-only.
    pub bound: Vec<PathBuf>,
    /// Placeholders to make before the run.
    pub placeholders: Vec<Placeholder>,
    /// Paths moved aside after the run when the payload changed them.
    pub watched: Vec<Watch>,
    /// Protected paths lifted by `unprotect`/`--unprotect`.
    pub lifted: Vec<PathBuf>,
}

/// A placeholder for a missing protected path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placeholder {
    /// Where (the same path inside).
    pub path: PathBuf,
    /// An empty directory, else an empty file.
    pub dir: bool,
    /// The writable root it lies in.
    root: PathBuf,
}

/// One writable root: an `rw` bind of a directory onto itself.
struct Root {
    path: PathBuf,
    fd: OwnedFd,
}

/// Builds a [`Protection`].
struct Planner<'a> {
    policy: &'a Policy,
    roots: Vec<Root>,
    out: Protection,
    seen: Vec<PathBuf>,
}

/// The protection for `policy`: looks at each writable root on the host, makes nothing.
///
/// # Errors
/// [`POLICY`] (77) naming the path: a symlink below a root where protected paths lie, or a
/// grant at or inside a protected path (`--unprotect` it to grant it).
pub fn plan(policy: &Policy) -> anyhow::Result<Protection> {
    let mut roots: Vec<Root> = Vec::new();
    for m in &policy.mounts {
        if m.kind != MountKind::Rw || m.src.as_ref() != Some(&m.dest) || !m.dest.is_absolute() {
            continue;
        }
        if !std::fs::metadata(&m.dest).is_ok_and(|md| md.is_dir()) {
            continue;
        }
        if let Some(fd) = probe::open_root(&m.dest) {
            roots.push(Root { path: m.dest.clone(), fd });
        }
    }
    let mut p = Planner { policy, roots, out: Protection::default(), seen: Vec::new() };
    for i in 0..p.roots.len() {
        let root = p.roots[i].path.clone();
        for (name, missing) in snug_core::protect::AT_ROOT {
            if let Found::Symlink(target) = p.candidate(&root.join(name), missing.into())? {
                p.candidate(&target, Missing::Nothing)?;
            }
        }
        p.dot_git(&root)?;
    }
    p.finish()
}

/// What a candidate turned out to be.
enum Found {
    /// Nothing to do (outside every root, lifted, decided by another mount, no parent).
    Nothing,
    /// Protected (bound, or a placeholder, or watched while missing).
    Done,
    /// An existing regular file, bound: its path.
    File(PathBuf),
    /// A symlink, watched: the absolute path it names (lexically).
    Symlink(PathBuf),
}

impl Planner<'_> {
    /// The deepest root holding `abs` lexically, with `abs` relative to it.
    fn locate(&self, abs: &Path) -> Option<(usize, PathBuf)> {
        let (i, r) = self
            .roots
            .iter()
            .enumerate()
            .filter(|(_, r)| abs.starts_with(&r.path) && abs != r.path)
            .max_by_key(|(_, r)| r.path.components().count())?;
        Some((i, abs.strip_prefix(&r.path).ok()?.to_path_buf()))
    }

    /// Protect the path `abs`.
    fn candidate(&mut self, abs: &Path, missing: Missing) -> anyhow::Result<Found> {
        let Some((i, rel)) = self.locate(abs) else { return self.outside(abs) };
        if self.seen.iter().any(|s| s == abs) {
            return Ok(Found::Nothing);
        }
        self.seen.push(abs.to_path_buf());
        if self.policy.unprotect.iter().any(|u| abs.starts_with(u)) {
            self.out.lifted.push(abs.to_path_buf());
            return Ok(Found::Nothing);
        }
        let root = self.roots[i].path.clone();
        if let Some(m) = self.policy.mounts.iter().find(|m| m.dest.starts_with(abs) && m.dest != root) {
            let why = format!("{} is a protected path and {} grants", abs.display(), m.profile);
            return Err(failure(POLICY, format!("{why} {}: add --unprotect {}", m.dest.display(), abs.display())));
        }
        // A read-only or tmpfs mount between the root and the path leaves nothing of the host
        // writable there; a writable one (`--rw DIR/.git`) lifts nothing.
        let deepest = self.policy.mounts.iter().filter(|m| abs.starts_with(&m.dest)).max_by_key(|m| depth(&m.dest));
        if deepest.is_some_and(|m| m.dest != root && m.kind != MountKind::Rw) {
            return Ok(Found::Nothing);
        }
        let mut kind = probe::probe(&self.roots[i].fd, &rel).map_err(|e| refused(abs, e))?;
        if matches!(missing, Missing::Dir | Missing::File) && placeholder::is_placeholder(&self.roots[i].fd, &rel, kind)
        {
            kind = Kind::Missing; // a placeholder of another run, or one a killed run left
        }
        let watch = |was| Watch { path: abs.to_path_buf(), was, root: root.clone() };
        Ok(match (kind, missing) {
            (Kind::NoParent, Missing::Aside) => {
                // The payload could make the directories above as well: the first missing one
                // is watched, so that what it makes there is moved aside whole.
                let mut first = abs.to_path_buf();
                while let Some(parent) = first.parent().filter(|p| *p != root) {
                    let Ok(rel) = parent.strip_prefix(&root) else { break };
                    match probe::probe(&self.roots[i].fd, rel) {
                        Ok(Kind::Missing | Kind::NoParent) => first = parent.to_path_buf(),
                        _ => break,
                    }
                }
                if !self.out.watched.iter().any(|w| w.path == first) {
                    self.out.watched.push(Watch { path: first, was: None, root: root.clone() });
                }
                Found::Done
            }
            (Kind::NoParent, _) | (Kind::Missing, Missing::Nothing) => Found::Nothing,
            (Kind::Missing, Missing::Aside) => {
                self.out.watched.push(watch(None));
                Found::Done
            }
            (Kind::Missing, m) => {
                let (path, dir) = (abs.to_path_buf(), m == Missing::Dir);
                self.out.placeholders.push(Placeholder { path, dir, root: root.clone() });
                Found::Done
            }
            (Kind::Symlink(..), _) => {
                self.out.watched.push(watch(probe::stamp(&self.roots[i].fd, &rel)));
                match probe::link_target(&self.roots[i].fd, &rel) {
                    Some(t) => Found::Symlink(normalise(&abs.parent().unwrap_or(&root).join(t))),
                    None => Found::Done,
                }
            }
            (Kind::Dir(..), _) => {
                self.out.bound.push(abs.to_path_buf());
                Found::Done
            }
            (Kind::File(..), _) => {
                self.out.bound.push(abs.to_path_buf());
                Found::File(abs.to_path_buf())
            }
        })
    }

    /// A path outside every writable root is read-only or hidden already, unless it reaches
    /// into one through a symlink: that is refused.
    fn outside(&self, abs: &Path) -> anyhow::Result<Found> {
        if let Ok(real) = std::fs::canonicalize(abs) {
            if real != abs && self.locate(&real).is_some() {
                let why = "it reaches a writable directory through a symlink";
                return Err(failure(POLICY, format!("{}: a protected path, but {why}", abs.display())));
            }
        }
        Ok(Found::Nothing)
    }

    /// The mounts: each protected path and placeholder read-only, each directory between its
    /// root and it bound onto itself, and the policy mounts below those again (a bind of a
    /// directory onto itself covers what was mounted below it).
    fn finish(mut self) -> anyhow::Result<Protection> {
        let mut leaves: Vec<(PathBuf, &'static str)> = self.out.bound.iter().map(|p| (p.clone(), PROTECTED)).collect();
        leaves.extend(self.out.placeholders.iter().map(|p| (p.path.clone(), PLACEHOLDER)));
        // A protected path inside another is covered by it (a bind onto an ancestor would
        // make the outer one writable again).
        let all: Vec<PathBuf> = leaves.iter().map(|(p, _)| p.clone()).collect();
        leaves.retain(|(p, _)| !all.iter().any(|q| q != p && p.starts_with(q)));
        let mut mounts: BTreeMap<Vec<PathBuf>, Mount> = BTreeMap::new();
        let key = |p: &Path| p.components().map(|c| PathBuf::from(c.as_os_str())).collect::<Vec<_>>();
        let mut pinned: Vec<PathBuf> = Vec::new();
        for (leaf, label) in &leaves {
            let outer = self.outer_root(leaf);
            let mut a = leaf.parent();
            while let Some(dir) = a.filter(|d| d.starts_with(&outer) && *d != outer) {
                pinned.push(dir.to_path_buf());
                a = dir.parent();
            }
            let m =
                Mount { kind: MountKind::Ro, src: Some(leaf.clone()), dest: leaf.clone(), profile: label.to_string() };
            mounts.insert(key(leaf), m);
        }
        for dir in &pinned {
            let m =
                Mount { kind: MountKind::Rw, src: Some(dir.clone()), dest: dir.clone(), profile: PINNED.to_string() };
            mounts.entry(key(dir)).or_insert(m);
        }
        for m in &self.policy.mounts {
            if pinned.iter().any(|d| m.dest.starts_with(d) && m.dest != *d) {
                mounts.entry(key(&m.dest)).or_insert_with(|| m.clone());
            }
        }
        self.out.mounts = mounts.into_values().collect();
        self.out.watched.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(self.out)
    }

    /// The outermost root that `leaf`'s root is reached through by `rw` binds onto themselves
    /// (DIR for a grant inside DIR), so that the directories down to the grant are pinned too.
    fn outer_root(&self, leaf: &Path) -> PathBuf {
        let Some((i, _)) = self.locate(leaf) else { return leaf.to_path_buf() };
        let mut outer = self.roots[i].path.clone();
        while let Some(parent) = outer.parent() {
            let deepest =
                self.policy.mounts.iter().filter(|m| parent.starts_with(&m.dest)).max_by_key(|m| depth(&m.dest));
            match deepest {
                Some(m) if self.roots.iter().any(|r| r.path == m.dest) => outer = m.dest.clone(),
                _ => break,
            }
        }
        outer
    }
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

/// `path` with `.` and `..` resolved lexically (only right where no component is a symlink:
/// [`probe`] checks that below a root).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn refused(abs: &Path, e: Refused) -> anyhow::Error {
    match e {
        Refused::Symlink => failure(
            POLICY,
            format!(
                "{}: a symlink lies on the way to this protected path: replace it, or --unprotect it",
                abs.display()
            ),
        ),
        Refused::Os(e) => {
            failure(crate::error::OS_ERROR, format!("{}: {}", abs.display(), crate::error::strerror(e.raw_os_error())))
        }
    }
}

/// `--dry-run`'s account of the protection (SPEC P8, O1): text lines, or a JSON value.
pub fn dry_run(p: &Protection) -> (String, serde_json::Value) {
    use std::fmt::Write as _;
    let q = |p: &Path| crate::quote::quote(&p.to_string_lossy()).into_owned();
    let mut text = String::from("protected (read-only to the payload; --unprotect PATH lifts one):\n");
    for b in &p.bound {
        let _ = writeln!(text, "  {}", q(b));
    }
    for h in &p.placeholders {
        let what = if h.dir { "an empty directory" } else { "an empty file" };
        let _ = writeln!(text, "  {}  (missing: {what} in its place during the run)", q(&h.path));
    }
    for w in &p.watched {
        let what = if w.was.is_some() { "a symlink" } else { "missing" };
        let _ = writeln!(text, "  {}  ({what}: what the payload puts there is moved aside after the run)", q(&w.path));
    }
    for l in &p.lifted {
        let _ = writeln!(text, "  {}  (unprotected)", q(l));
    }
    let paths = |v: &mut dyn Iterator<Item = &PathBuf>| v.map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>();
    let value = serde_json::json!({
        "bound": paths(&mut p.bound.iter()),
        "placeholders": paths(&mut p.placeholders.iter().map(|h| &h.path)),
        "watched": paths(&mut p.watched.iter().map(|w| &w.path)),
        "unprotected": paths(&mut p.lifted.iter()),
    });
    (text, value)
}
