//! The paths the host later runs code from, at DIR's root: `snug diff` marks changes to them
//! and `snug apply` of a copy-on-write run writes them only when `--unprotect` names them (W4).

use std::path::{Component, Path};

/// Protected paths relative to DIR; `*` stands for one component.
const PROTECTED: [&str; 10] = [
    ".git/hooks",
    ".git/config",
    ".git/commondir",
    ".git/modules/*/config",
    ".git/modules/*/hooks",
    ".gitmodules",
    ".envrc",
    ".vscode",
    ".idea",
    ".snug.toml",
];

/// `path` (relative to DIR) matches `pattern` up to `pattern`'s length.
fn under(path: &Path, pattern: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').collect();
    let comps: Vec<Component> = path.components().collect();
    comps.len() >= pat.len() && pat.iter().zip(&comps).all(|(p, c)| *p == "*" || c.as_os_str() == *p)
}

/// `path` lies on the way to `pattern` (a directory above it, whose removal or replacement
/// takes the protected path with it).
fn above(path: &Path, pattern: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').collect();
    let comps: Vec<Component> = path.components().collect();
    comps.len() < pat.len() && pat.iter().zip(&comps).all(|(p, c)| *p == "*" || c.as_os_str() == *p)
}

/// Whether a change at `path` writes a protected path: it is one or lies below one, or it
/// removes or replaces (`replaces`) a directory above one.
pub fn protected(path: &Path, replaces: bool) -> bool {
    PROTECTED.iter().any(|p| under(path, p) || (replaces && above(path, p)))
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
        assert!(!above(Path::new(".envrc"), ".envrc"));
        assert!(above(Path::new(".git/modules/sub"), ".git/modules/*/hooks"));
    }
}
