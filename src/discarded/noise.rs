//! What the end-of-run summary leaves out and what it never suggests (SPEC O11, O8).
//!
//! Left out: writes nobody misses, which every run of some tool makes: shell and REPL
//! history, pytest's and V8's (node, Chromium) temporary files, cargo's own bookkeeping
//! beside its caches. Counting them would print the summary after nearly every run.
//!
//! Never suggested: a grant that lets the payload write what the host runs or reads at login
//! (`~` itself, `~/.cargo`, `~/.local` with its `bin`, shell start-up files, `~/.ssh`…). A
//! place at, above or below one of them gets no grant.

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

/// Places below `$HOME` where a grant would let the payload change what the host runs.
const HOST_RUNS: [&str; 24] = [
    ".cargo",
    ".rustup",
    ".local/bin",
    ".local/share/applications",
    ".pyenv",
    ".nvm",
    ".npmrc",
    ".ssh",
    ".gnupg",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".config/fish",
    ".config/environment.d",
    ".config/autostart",
    ".config/systemd",
    ".config/git",
    ".gitconfig",
    "bin",
];

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

/// Whether a grant of `rel` (relative to `$HOME`; empty: `$HOME` itself) would let the
/// payload write what the host runs: it is one of [`HOST_RUNS`], holds one, or lies in one.
pub(super) fn host_runs(rel: &Path) -> bool {
    rel.as_os_str().is_empty() || HOST_RUNS.iter().map(Path::new).any(|p| p.starts_with(rel) || rel.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o11_noise_and_grants_the_host_runs() {
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
        for p in ["", ".cargo", ".cargo/env", ".local", ".local/bin", ".config", ".bashrc"] {
            assert!(host_runs(Path::new(p)), "{p:?}");
        }
        for p in [".cache", ".cache/pip", ".local/share/virtualenvs", "data"] {
            assert!(!host_runs(Path::new(p)), "{p:?}");
        }
    }
}
