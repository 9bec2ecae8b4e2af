//! The project root (SPEC P10, R1): started from a subdirectory of a project, a run behaves
//! as started at its root, as git, cargo and direnv look upward. Walking up from the current
//! directory, the first directory holding `.snug.toml` or `.git` is the root, unless the walk
//! first reaches `$HOME` (or an ancestor of it, `/` included), another filesystem (`st_dev`
//! changes, as git's GIT_DISCOVERY_ACROSS_FILESYSTEM default), or the marker lies in a
//! directory that someone else could have planted it in: owned by another user than the
//! caller, root or the current directory's owner, or writable by group or others (a `/tmp/.git`
//! must not make `/tmp` writable: git's CVE-2022-24765 is the same case). Such a directory
//! ends the walk; DIR is then `.`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::quote::quote;

/// The files that mark a project's root, in the order they are looked for.
pub const MARKERS: [&str; 2] = [crate::project::FILE, ".git"];

/// What stat(2) says of a directory on the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// `st_dev`: the filesystem.
    pub dev: u64,
    /// `st_uid`: the owner.
    pub uid: u32,
    /// `st_mode`'s permission bits.
    pub mode: u32,
}

/// The project root a run started here without DIR would take (`None`: the current
/// directory), so that `snug allow` in a subdirectory allows the file that run applies.
pub fn from_here() -> Option<PathBuf> {
    choose(false, false, &crate::host::host_env()).dir()
}

/// How DIR was chosen, for `--dry-run` (SPEC P10: "which root and why").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The DIR operand, taken as given.
    Given,
    /// `--here`: DIR is `.`.
    Here,
    /// A project root: `root` holds `marker`, `levels` directories above the current one.
    Root {
        /// The root, canonical.
        root: PathBuf,
        /// The marker found there ([`MARKERS`]).
        marker: &'static str,
        /// 0 when the current directory is the root.
        levels: usize,
    },
    /// No root: DIR is `.`; why the walk ended.
    None(String),
}

impl Choice {
    /// The DIR this choice gives (`None`: the current directory).
    pub fn dir(&self) -> Option<PathBuf> {
        match self {
            Choice::Root { root, .. } => Some(root.clone()),
            _ => None,
        }
    }

    /// One line for `--dry-run`'s `root:` field.
    pub fn describe(&self) -> String {
        match self {
            Choice::Given => "the DIR operand, as given".to_string(),
            Choice::Here => "--here: the current directory".to_string(),
            Choice::Root { root, marker, levels: 0 } => {
                format!("{} (holds {marker}; the current directory)", quote(&root.to_string_lossy()))
            }
            Choice::Root { root, marker, levels } => {
                let up = if *levels == 1 { "1 level".to_string() } else { format!("{levels} levels") };
                format!(
                    "{} (holds {marker}, {up} above the current directory; --here keeps .)",
                    quote(&root.to_string_lossy())
                )
            }
            Choice::None(why) => format!("none: {why}; DIR is ."),
        }
    }
}

/// Choose DIR for a run (SPEC P10, R1): the operand when given, `.` under `--here`, else the
/// project root above the current directory ([`walk`] on the real filesystem).
pub fn choose(given: bool, here: bool, host_env: &[(String, String)]) -> Choice {
    if given {
        return Choice::Given;
    }
    if here {
        return Choice::Here;
    }
    let Some(home) = host_env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| Path::new(v)).filter(|h| h.is_absolute())
    else {
        return Choice::None("HOME is not an absolute path".to_string());
    };
    // HOME as the walk compares it: canonical, so a symlinked home still stops the walk.
    let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    let Ok(cwd) = std::env::current_dir() else {
        return Choice::None("the current directory has no path".to_string());
    };
    let uid = rustix::process::getuid().as_raw();
    let stat = |p: &Path| std::fs::metadata(p).ok().map(|m| Meta { dev: m.dev(), uid: m.uid(), mode: m.mode() });
    // lstat: a marker that is a symlink still marks (git's `.git` file or link); it is
    // never followed here.
    let has = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    walk(&cwd, &home, uid, &stat, &has)
}

/// The walk of [`choose`] from `cwd` (canonical) for caller `uid` with home `home`; `stat`
/// and `has` (whether a path exists, not followed) are the filesystem.
pub fn walk(
    cwd: &Path,
    home: &Path,
    uid: u32,
    stat: &dyn Fn(&Path) -> Option<Meta>,
    has: &dyn Fn(&Path) -> bool,
) -> Choice {
    let Some(here) = stat(cwd) else {
        return Choice::None("the current directory cannot be read".to_string());
    };
    for (levels, d) in cwd.ancestors().enumerate() {
        if home.starts_with(d) {
            let what = if d == home { "$HOME" } else { "an ancestor of $HOME" };
            return Choice::None(format!("no .snug.toml or .git below {what} ({})", d.display()));
        }
        let Some(m) = stat(d) else {
            return Choice::None(format!("{} cannot be read", d.display()));
        };
        if m.dev != here.dev {
            return Choice::None(format!("no .snug.toml or .git on this filesystem (it ends at {})", d.display()));
        }
        let Some(marker) = MARKERS.into_iter().find(|n| has(&d.join(n))) else { continue };
        let trusted_owner = m.uid == uid || m.uid == 0 || m.uid == here.uid;
        if !trusted_owner {
            return Choice::None(format!("{} holds {marker} but belongs to uid {}: ignored", d.display(), m.uid));
        }
        if m.mode & 0o022 != 0 {
            let why = "but others may write to it: ignored";
            return Choice::None(format!("{} holds {marker} {why}", d.display()));
        }
        return Choice::Root { root: d.to_path_buf(), marker, levels };
    }
    Choice::None("no .snug.toml or .git above".to_string())
}

/// Why the current directory may not give DIR (SPEC P7, P10): the caller reached it through a
/// symlink (the shell's `$PWD`, which names the same directory, holds one) that a sandbox
/// could have planted: one in a directory owned by someone other than root or the caller, or
/// writable by group or others, or inside a project (a root [`walk`] finds above the link),
/// where any run of it could have put it. Following such a link would make its target, say
/// `~/.config`, the next run's writable DIR while the caller's prompt shows the project. A
/// `$PWD` that names another directory, or none, is not the caller's view and is ignored.
pub fn planted_link(host_env: &[(String, String)]) -> Option<String> {
    let pwd = Path::new(host_env.iter().find(|(k, _)| k == "PWD").map(|(_, v)| v.as_str())?);
    let here = std::env::current_dir().ok()?;
    let lexical =
        pwd.components().all(|c| matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_)));
    if pwd == here || !pwd.is_absolute() || !lexical {
        return None;
    }
    let same = |a: &std::fs::Metadata, b: &std::fs::Metadata| a.dev() == b.dev() && a.ino() == b.ino();
    if !same(&std::fs::metadata(pwd).ok()?, &std::fs::metadata(&here).ok()?) {
        return None;
    }
    let uid = rustix::process::getuid().as_raw();
    let home = host_env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| PathBuf::from(v))?;
    let home = std::fs::canonicalize(&home).unwrap_or(home);
    let stat = |p: &Path| std::fs::metadata(p).ok().map(|m| Meta { dev: m.dev(), uid: m.uid(), mode: m.mode() });
    let has = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    let mut at = PathBuf::from("/");
    for part in pwd.components().skip(1) {
        let link = at.join(part);
        if std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()) {
            let parent = std::fs::canonicalize(&at).ok()?;
            let m = stat(&parent)?;
            let planted = if m.uid != uid && m.uid != 0 || m.mode & 0o022 != 0 {
                Some("a directory others may write to".to_string())
            } else {
                match walk(&parent, &home, uid, &stat, &has) {
                    Choice::Root { root, .. } => Some(format!("the project {}", quote(&root.to_string_lossy()))),
                    _ => None,
                }
            };
            if let Some(place) = planted {
                let to = std::fs::read_link(&link).unwrap_or_default();
                return Some(format!(
                    "the current directory is reached through the symlink {} (-> {}) in {place}, which a sandbox \
                     could have planted; snug follows no such link: cd {} (where it leads), or give DIR",
                    quote(&link.to_string_lossy()),
                    quote(&to.to_string_lossy()),
                    quote(&here.to_string_lossy())
                ));
            }
        }
        at = link;
    }
    None
}

/// Where the payload starts (SPEC R1): the current directory when it lies in DIR `target`
/// and the sandbox shows it (`shows`: no tmpfs hides it), else DIR.
pub fn start_dir(target: &Path, shows: &dyn Fn(&Path) -> bool) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    (cwd != target && cwd.starts_with(target) && shows(&cwd)).then_some(cwd)
}

/// The dry-run plan with the root's line (SPEC P10): `root:` in text; `dir` (DIR, `dir`
/// canonical) and `root` in JSON.
pub fn with_root(text: String, dir: &Path, choice: &Choice, json: bool) -> String {
    if !json {
        return text + &format!("root:     {}\n", choice.describe());
    }
    let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str::<serde_json::Value>(&text) else {
        return text;
    };
    map.insert("dir".into(), dir.to_string_lossy().into());
    map.insert("root".into(), choice.describe().into());
    serde_json::to_string_pretty(&map).unwrap_or(text) + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A fake tree: each directory's (dev, uid, mode), and the markers present.
    fn tree(dirs: &[(&str, u64, u32, u32)], marks: &[&str]) -> (HashMap<PathBuf, Meta>, Vec<PathBuf>) {
        let d = dirs.iter().map(|(p, dev, uid, mode)| (PathBuf::from(p), Meta { dev: *dev, uid: *uid, mode: *mode }));
        (d.collect(), marks.iter().map(PathBuf::from).collect())
    }

    fn walk_in(cwd: &str, uid: u32, dirs: &[(&str, u64, u32, u32)], marks: &[&str]) -> Choice {
        let (d, m) = tree(dirs, marks);
        walk(Path::new(cwd), Path::new("/home/u"), uid, &|p| d.get(p).copied(), &|p| m.iter().any(|x| x == p))
    }

    const BASE: [(&str, u64, u32, u32); 4] =
        [("/", 1, 0, 0o755), ("/srv", 1, 0, 0o755), ("/tmp", 1, 0, 0o1777), ("/home/u", 1, 1000, 0o755)];

    fn with(extra: &[(&'static str, u64, u32, u32)]) -> Vec<(&'static str, u64, u32, u32)> {
        BASE.iter().chain(extra).copied().collect()
    }

    #[test]
    fn p10_first_marker_upward_is_the_root() {
        let dirs =
            with(&[("/srv/p", 1, 1000, 0o755), ("/srv/p/src", 1, 1000, 0o755), ("/srv/p/src/a", 1, 1000, 0o755)]);
        let c = walk_in("/srv/p/src/a", 1000, &dirs, &["/srv/p/.git"]);
        assert_eq!(c, Choice::Root { root: "/srv/p".into(), marker: ".git", levels: 2 });
        // .snug.toml nearer wins over a .git further up.
        let c = walk_in("/srv/p/src/a", 1000, &dirs, &["/srv/p/.git", "/srv/p/src/.snug.toml"]);
        assert_eq!(c, Choice::Root { root: "/srv/p/src".into(), marker: ".snug.toml", levels: 1 });
    }

    #[test]
    fn p10_never_home_or_above() {
        let dirs = with(&[("/home/u/p", 1, 1000, 0o755)]);
        let c = walk_in("/home/u/p", 1000, &dirs, &["/home/u/.git"]);
        assert!(matches!(c, Choice::None(ref w) if w.contains("$HOME")), "{c:?}");
        let c = walk_in("/srv", 1000, &dirs, &["/.git"]);
        assert!(matches!(c, Choice::None(_)), "{c:?}");
    }

    #[test]
    fn p10_planted_marker_in_a_shared_or_foreign_directory_is_ignored() {
        let dirs = with(&[("/tmp/w", 1, 1000, 0o755)]);
        let c = walk_in("/tmp/w", 1000, &dirs, &["/tmp/.git"]);
        assert!(matches!(c, Choice::None(ref w) if w.contains("others may write")), "{c:?}");
        let dirs = with(&[("/srv/x", 1, 4242, 0o755), ("/srv/x/w", 1, 1000, 0o755)]);
        let c = walk_in("/srv/x/w", 1000, &dirs, &["/srv/x/.snug.toml"]);
        assert!(matches!(c, Choice::None(ref w) if w.contains("uid 4242")), "{c:?}");
        // The current directory's owner is trusted: root working in a CI checkout of uid 1001.
        let dirs = with(&[("/srv/x", 1, 1001, 0o755), ("/srv/x/w", 1, 1001, 0o755)]);
        let c = walk_in("/srv/x/w", 0, &dirs, &["/srv/x/.git"]);
        assert!(matches!(c, Choice::Root { .. }), "{c:?}");
    }

    #[test]
    fn p10_stops_at_a_filesystem_boundary() {
        let dirs = with(&[("/srv/p", 1, 1000, 0o755), ("/srv/p/mnt", 2, 1000, 0o755)]);
        let c = walk_in("/srv/p/mnt", 1000, &dirs, &["/srv/p/.git"]);
        assert!(matches!(c, Choice::None(ref w) if w.contains("filesystem")), "{c:?}");
    }
}
