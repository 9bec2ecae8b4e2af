//! What the payload wrote where the sandbox discards it (SPEC O8): the empty tmpfs `$HOME`
//! (`@home`) and the private `/tmp`. Summarised at the end of the run on stderr (how many
//! files, the top places, the grant that keeps them) and in the report (`discarded`).
//!
//! How it is seen: once init says hello, and before the payload runs, snug opens those
//! tmpfs directories through init's root (`/proc/PID/root/…`, `proc(5)`; allowed to snug as
//! the owner of the sandbox's user namespace, or as root). An open directory keeps its mount
//! and tmpfs alive after the sandbox's mount namespace is gone (`mount_namespaces(7)`: a
//! detached mount lives on while something uses it), so the walk happens after the run,
//! when nothing in the sandbox can write any more, and adds nothing to the run's teardown.
//! The walk is bounded: [`MAX_ENTRIES`] entries, [`MAX_WALK`] of time, [`MAX_DEPTH`] levels.

mod login;
mod walk;

use std::os::unix::ffi::OsStrExt;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::policy::{MountKind, Policy};

/// At most this many directory entries are looked at; past it the count is a lower bound.
pub const MAX_ENTRIES: usize = 10_000;
/// At most this long is spent walking (monotonic clock).
pub const MAX_WALK: Duration = Duration::from_millis(20);
/// Directories deeper than this below a watched root are not entered (each level holds one
/// descriptor open while it is read).
pub const MAX_DEPTH: usize = 24;
/// Places named on the stderr line; the report lists up to [`REPORT_PLACES`].
const LINE_PLACES: usize = 3;
const REPORT_PLACES: usize = 20;

/// One watched tmpfs: where it is in the sandbox and, once open, its directory.
struct Root {
    dest: PathBuf,
    dir: Option<OwnedFd>,
}

/// The tmpfs directories of one run to look at when it ends.
pub struct Watch {
    roots: Vec<Root>,
    home: PathBuf,
    /// Mount destinations below a watched root: a bind's mountpoint bwrap made in the tmpfs
    /// (`~/.gitconfig`, DIR under `$HOME`) is not something the payload wrote.
    skip: Vec<PathBuf>,
    /// Grants the policy already has (`-p @python` is not suggested when in effect).
    profiles: Vec<String>,
    /// The toolchain profiles' writable caches for this `$HOME`, and the profile of each.
    caches: Vec<(PathBuf, &'static str)>,
}

/// One place with discarded files: a directory (or file) right below `$HOME` or `/tmp`, or a
/// toolchain cache, and the grant that would keep what is there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Place {
    /// The path inside the sandbox (the same as on the host for `$HOME`); in the report as
    /// its bytes where they are not UTF-8 (O10).
    #[serde(serialize_with = "crate::quote::text::path")]
    pub path: PathBuf,
    /// How many files (anything but a directory) are below it.
    pub files: u64,
    /// The grant that keeps them: `--rw ~/.local`, `-p @python`, `-p @tmp-shared`.
    pub keep: String,
}

/// What was discarded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Files found (anything but a directory).
    pub files: u64,
    /// False when a bound ([`MAX_ENTRIES`], [`MAX_WALK`], [`MAX_DEPTH`]) or an unreadable
    /// directory stopped the walk: `files` is then a lower bound.
    pub complete: bool,
    /// The places, most files first.
    pub places: Vec<Place>,
}

impl Watch {
    /// The discarded places of `policy`: `$HOME` and `/tmp` when each is a tmpfs.
    pub fn new(policy: &Policy) -> Watch {
        let tmpfs = |p: &Path| policy.mounts.iter().any(|m| m.dest == p && m.kind == MountKind::Tmpfs);
        let roots: Vec<Root> = [policy.home.clone(), PathBuf::from("/tmp")]
            .into_iter()
            .filter(|p| tmpfs(p))
            .map(|dest| Root { dest, dir: None })
            .collect();
        let below = |d: &Path| roots.iter().any(|r| d != r.dest && d.starts_with(&r.dest));
        let skip = policy.mounts.iter().map(|m| m.dest.clone()).filter(|d| below(d)).collect();
        let home = policy.home.to_string_lossy().into_owned();
        let mut caches = Vec::new();
        for name in crate::profiles::toolchains::WITH_CACHES {
            let rw = crate::profiles::toolchains::builtin_for(name, "", &home).map(|p| p.rw).unwrap_or_default();
            caches.extend(rw.iter().map(|e| (PathBuf::from(e.trim_start_matches('?').replace("{home}", &home)), name)));
        }
        Watch { roots, home: policy.home.clone(), skip, profiles: policy.profiles.clone(), caches }
    }

    /// Open the roots through the root of the sandbox's init, host pid `pid`, as init says
    /// hello. What cannot be opened is left out (no summary for it).
    pub fn open(&mut self, pid: snug_core::Pid) {
        use rustix::fs::{open, Mode, OFlags};
        let root = Path::new("/proc").join(pid.to_string()).join("root");
        if let Ok(root) = open(&root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) {
            self.open_in(&root);
        }
    }

    /// Open each root below `root`, resolved inside it and through no symlink (`openat2(2)`,
    /// `RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS`): the payload may already run, and could have
    /// renamed the directory above its tmpfs and put a symlink to the host's home in its
    /// place; such a root is not watched.
    fn open_in(&mut self, root: &OwnedFd) {
        use rustix::fs::{openat2, Mode, OFlags, ResolveFlags};
        let how = ResolveFlags::IN_ROOT | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        for r in &mut self.roots {
            let inner = r.dest.strip_prefix("/").unwrap_or(&r.dest);
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
            r.dir = openat2(root, inner, flags, Mode::empty(), how).ok();
        }
    }

    /// Forget the roots (init had exited when they were opened: its pid may name another).
    pub fn close(&mut self) {
        for r in &mut self.roots {
            r.dir = None;
        }
    }

    /// Walk the roots (bounded) and summarise; `None` when nothing was discarded or nothing
    /// was opened.
    pub fn summary(&self) -> Option<Summary> {
        let mut walk = walk::Walk::new(&self.skip);
        for r in &self.roots {
            if let Some(dir) = &r.dir {
                walk.root(dir, &r.dest, &|p| (!noise::ignored(p, &self.home)).then(|| self.place(p)));
            }
        }
        let (files, complete, mut counts) = walk.finish();
        if files == 0 {
            return None;
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let places = counts
            .into_iter()
            .take(REPORT_PLACES)
            .map(|((path, file), files)| Place { keep: self.keep(&path, file), path, files })
            .collect();
        Some(Summary { files, complete, places })
    }

    /// The place a discarded file at sandbox path `file` counts under: a toolchain cache that
    /// holds it, else the directory right below `$HOME` (two levels for `~/.cache/X` and
    /// `~/.config/X`, which are one tool's each) or `/tmp`; true when that is `file` itself.
    fn place(&self, file: &Path) -> (PathBuf, bool) {
        if let Some((cache, _)) = self.toolchain_cache(file) {
            return (cache, false);
        }
        let (base, rel) = match file.strip_prefix(&self.home) {
            Ok(rel) => (self.home.as_path(), rel),
            Err(_) => (Path::new("/tmp"), file.strip_prefix("/tmp").unwrap_or(file)),
        };
        let parts: Vec<_> = rel.components().collect();
        let depth = match parts.first().and_then(|c| c.as_os_str().to_str()) {
            Some(".cache" | ".config") if parts.len() > 2 => 2,
            _ => 1,
        };
        let mut out = base.to_path_buf();
        out.extend(parts.iter().take(depth));
        (out, parts.len() <= depth)
    }

    /// The toolchain profile whose writable cache holds `file`, and that cache.
    fn toolchain_cache(&self, file: &Path) -> Option<(PathBuf, &'static str)> {
        let (dir, name) = self.caches.iter().find(|(dir, _)| file.starts_with(dir))?;
        Some((dir.clone(), name))
    }

    /// The grant that keeps what is at sandbox path `place` (a file when `file`): `--rw`
    /// needs the path on the host, so a missing one is made first. Every name in it is
    /// quoted for the shell (`~/` stays outside the quotes, so it still expands), and no
    /// grant of what the host runs or reads at login is offered ([`login::unsafe_to_grant`]).
    fn keep(&self, place: &Path, file: bool) -> String {
        let path = place;
        if let Some((_, profile)) = self.toolchain_cache(path).filter(|(_, p)| !self.profiles.iter().any(|q| q == p)) {
            return match login::profile_is_safe(profile) {
                true => format!("-p {profile}"),
                false => format!("none offered: {profile}'s cache holds sources the host's next build runs"),
            };
        }
        match path.strip_prefix(&self.home) {
            Ok(rel) => {
                if let Some(why) = login::unsafe_to_grant(rel) {
                    // pip's `--user` writes ~/.local: a virtual environment in DIR keeps it.
                    let venv = if rel == Path::new(".local") {
                        "; for pip's --user: a virtual environment in DIR"
                    } else {
                        ""
                    };
                    return format!("none offered: {why}{venv}");
                }
                let tilde = format!("~/{}", crate::quote::quote_bytes(rel.as_os_str().as_bytes()));
                let make = if file { "touch" } else { "mkdir -p" };
                if path.symlink_metadata().is_ok() {
                    format!("--rw {tilde}")
                } else {
                    format!("{make} {tilde} and --rw {tilde}")
                }
            }
            Err(_) => "-p @tmp-shared".to_string(),
        }
    }
}

impl Summary {
    /// The one stderr line (without `snug: `), `$HOME` written `~`.
    pub fn line(&self, home: &Path) -> String {
        // A name that is not UTF-8 is shown quoted as its bytes, never with U+FFFD (O10).
        let shown = |p: &Path| match p.to_str() {
            Some(text) => text.to_string(),
            None => crate::quote::quote_bytes(p.as_os_str().as_bytes()).into_owned(),
        };
        let tilde = |p: &Path| match p.strip_prefix(home) {
            Ok(rest) if !rest.as_os_str().is_empty() => format!("~/{}", shown(rest)),
            _ => shown(p),
        };
        let n = |k: u64| if k == 1 { "1 file".to_string() } else { format!("{k} files") };
        let at_least = if self.complete { "" } else { "at least " };
        let shown: Vec<String> = self
            .places
            .iter()
            .take(LINE_PLACES)
            .map(|p| format!("{} {} (keep: {})", tilde(&p.path), n(p.files), p.keep))
            .collect();
        let more = self.places.len().saturating_sub(LINE_PLACES);
        let rest = if more > 0 { format!(", and {more} more") } else { String::new() };
        format!(
            "the payload wrote {at_least}{} where the sandbox discards them (the private $HOME and /tmp): {}{rest}",
            n(self.files),
            shown.join(", ")
        )
    }
}

mod noise;

#[cfg(test)]
mod tests;
