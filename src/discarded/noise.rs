//! What the end-of-run summary leaves out (SPEC O11, O8).
//!
//! Left out: writes nobody misses, which every run of some tool makes: shell and REPL
//! history, pytest's and V8's (node, Chromium) temporary files, cargo's own bookkeeping
//! beside its caches. Counting them would print the summary after nearly every run.
//!
//! What is never suggested as a grant is in [`super::login`].

use std::path::Path;

/// Files (relative to `$HOME`) whose loss nobody minds.
const HOME_NOISE: [&str; 17] = [
    ".bash_history",
    ".zsh_history",
    ".sh_history",
    ".history",
    ".python_history",
    ".node_repl_history",
    ".sqlite_history",
    ".psql_history",
    ".mysql_history",
    ".irb_history",
    ".rediscli_history",
    ".lesshst",
    ".viminfo",
    ".wget-hsts",
    ".cargo/.package-cache",
    ".cargo/.package-cache-mutate",
    ".cargo/.global-cache",
];

/// Name prefixes of directories or files directly in `/tmp` that tools make for themselves.
const TMP_NOISE: [&str; 6] =
    ["pytest-of-", "v8-compile-cache", "node-compile-cache", ".org.chromium.", ".com.google.Chrome.", "jiti"];

/// Whether the discarded file at sandbox path `file` is noise (not counted): `home` is the
/// sandbox's `$HOME`.
pub(super) fn ignored(file: &Path, home: &Path) -> bool {
    if let Ok(rel) = file.strip_prefix(home) {
        return HOME_NOISE.iter().any(|n| rel == Path::new(n));
    }
    let Ok(rel) = file.strip_prefix("/tmp") else { return false };
    let first = rel.components().next().and_then(|c| c.as_os_str().to_str()).unwrap_or_default();
    TMP_NOISE.iter().any(|p| first.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o11_noise_is_not_counted() {
        let home = Path::new("/home/u");
        for f in [
            "/home/u/.bash_history",
            "/home/u/.cargo/.global-cache",
            "/tmp/pytest-of-u/p0/x",
            "/tmp/v8-compile-cache-0/a",
        ] {
            assert!(ignored(Path::new(f), home), "{f}");
        }
        for f in ["/home/u/.cache/pip/x", "/tmp/out.txt", "/home/u/.bash_history.bak"] {
            assert!(!ignored(Path::new(f), home), "{f}");
        }
    }
}
