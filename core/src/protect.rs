//! The protected paths (SPEC P8): what the host later runs code from at the root of DIR
//! and of every `rw` grant. One list for both of their uses: the sandbox binds them
//! read-only (the binary's `protect` module, which also follows `.git` files, `commondir`
//! and `core.hooksPath`), and `snug diff` marks changes to them while `snug apply` of a
//! copy-on-write run writes them only when `--unprotect` names them (W4).

use std::path::{Component, Path};

/// What the sandbox gets at a protected path that does not exist yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// An empty directory, bound read-only for the run.
    Dir,
    /// An empty file, bound read-only for the run (inside `.git`, where a directory would
    /// break git and git status shows nothing).
    File,
    /// Nothing (a placeholder would break git or show in it): what the payload makes there
    /// is moved aside after the run.
    Aside,
}

/// The protected names at a root, besides `.git`. A placeholder directory at `.gitmodules`
/// makes git fetch warn and an empty file shows in git status and gets committed.
pub const AT_ROOT: [(&str, Missing); 5] = [
    (".gitmodules", Missing::Aside),
    (".envrc", Missing::Dir),
    (".vscode", Missing::Dir),
    (".idea", Missing::Dir),
    (".snug.toml", Missing::Dir),
];

/// A repository's git directory at a root (gitrepository-layout(5)).
pub const GIT: &str = ".git";
/// In a git directory: the hooks git runs.
pub const HOOKS: &str = "hooks";
/// In a git directory: its config (aliases, `core.hooksPath`, filters: all run code).
pub const CONFIG: &str = "config";
/// In a git directory: more config, which git reads when `extensions.worktreeConfig` is on.
pub const CONFIG_WORKTREE: &str = "config.worktree";
/// In a git directory: the directory whose config and hooks git uses instead.
pub const COMMONDIR: &str = "commondir";
/// In a git directory: the submodules' git directories, each with its hooks and config.
pub const MODULES: &str = "modules";

/// Protected paths relative to a root, as components; `*` stands for one component.
fn patterns() -> Vec<Vec<&'static str>> {
    let mut out: Vec<Vec<&str>> = AT_ROOT.iter().map(|(n, _)| vec![*n]).collect();
    out.extend([HOOKS, CONFIG, CONFIG_WORKTREE, COMMONDIR].map(|n| vec![GIT, n]));
    out.extend([CONFIG, HOOKS].map(|n| vec![GIT, MODULES, "*", n]));
    out
}

/// `path` (relative to DIR) matches `pattern` up to `pattern`'s length.
fn under(path: &Path, pat: &[&str]) -> bool {
    let comps: Vec<Component> = path.components().collect();
    comps.len() >= pat.len() && pat.iter().zip(&comps).all(|(p, c)| *p == "*" || c.as_os_str() == *p)
}

/// `path` lies on the way to `pattern` (a directory above it, whose removal or replacement
/// takes the protected path with it).
fn above(path: &Path, pat: &[&str]) -> bool {
    let comps: Vec<Component> = path.components().collect();
    comps.len() < pat.len() && pat.iter().zip(&comps).all(|(p, c)| *p == "*" || c.as_os_str() == *p)
}

/// Whether a change at `path` writes a protected path: it is one or lies below one, or it
/// removes or replaces (`replaces`) a directory above one.
pub fn protected(path: &Path, replaces: bool) -> bool {
    patterns().iter().any(|p| under(path, p) || (replaces && above(path, p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// W4: hooks, config and dot files are protected, their parents only when replaced;
    /// the rest of `.git` (objects, refs, index) is not, so a commit applies.
    #[test]
    fn w4_protected_paths() {
        assert!(protected(Path::new(".git/hooks/pre-commit"), false));
        assert!(protected(Path::new(".git/config"), false));
        assert!(protected(Path::new(".git/modules/sub/hooks/x"), false));
        assert!(protected(Path::new(".envrc"), false));
        assert!(protected(Path::new(".vscode/tasks.json"), false));
        assert!(protected(Path::new(".git"), true));
        assert!(!protected(Path::new(".git"), false));
        assert!(!protected(Path::new(".git/objects/ab/cdef"), false));
        assert!(!protected(Path::new(".git/refs/heads/main"), false));
        assert!(!protected(Path::new("src/.envrc"), false));
        // Replacing a directory that leads to no protected path protects nothing.
        assert!(!protected(Path::new("src"), true));
        assert!(!protected(Path::new("docs/.git"), true));
        // A protected path itself is not above itself (`under` says what it is).
        assert!(!above(Path::new(".envrc"), &[".envrc"]));
        assert!(above(Path::new(".git/modules/sub"), &[".git", "modules", "*", "hooks"]));
        assert!(protected(Path::new(".git/commondir"), false));
        assert!(protected(Path::new(".git/config.worktree"), false));
        assert!(protected(Path::new(".gitmodules"), false) && protected(Path::new(".idea/x"), false));
    }
}
