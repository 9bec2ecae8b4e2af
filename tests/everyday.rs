//! Everyday use (SPEC O8, N1, P1, R1): nothing the payload writes is lost without a word, the
//! toolchain caches persist, proxies and CA bundles reach a networked payload, and the default
//! shell says it is in a sandbox. Real bwrap, pasta, pip and a real pty; each row as root and
//! as the unprivileged user (in parallel threads).
//!
//! Split by concern: `everyday/discarded.rs` (O8), `everyday/network_env.rs` (N1, P1's TZ,
//! the `-e` hint), `everyday/shell.rs` (the prompt through a pty, `@shell`).

use crate::common;

mod discarded;
mod env_patterns;
mod exec_prompt;
mod foreign_owner;
mod network_env;
mod pyenv_venv;
mod quiet;
mod shell;

use common::{everyone, marker, run_bounded, snug_cmd, test_user, Out, Who};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Generous bound for one run that should end on its own (2 cores, tests in parallel; pip).
pub const LIMIT: Duration = Duration::from_secs(60);

/// Run `row` as everyone at once; a panic in any fails the test once all have ended.
pub fn each(row: &(dyn Fn(Who) + Sync)) {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || row(who));
        }
    });
}

/// A fresh directory under /var/tmp (which no default profile shows) owned by `who`, world
/// readable: a HOME of its own for one run, or a host place for a CA file.
pub fn fresh_dir(who: Who, what: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = PathBuf::from(format!("/var/tmp/snug-{what}-{}", marker()));
    std::fs::create_dir_all(&d).expect("mkdir");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    chown_to(who, &d);
    d
}

/// Give `path` to `who` (the test user) so its runs may write there.
pub fn chown_to(who: Who, path: &Path) {
    if who == Who::User {
        let (uid, gid) = test_user();
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
    }
}

/// `snug ARGS…` as `who` in `dir` with `HOME=home` and the extra environment `env`; the
/// proxy and CA variables of the machine the tests run on are removed first, so each test
/// says which it has.
pub fn snug_with(who: Who, dir: &Path, home: &Path, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut c = snug_cmd(who, dir, args);
    for (k, _) in std::env::vars_os() {
        let up = k.to_string_lossy().to_ascii_uppercase();
        if up.contains("PROXY")
            || up.contains("CERT")
            || up.contains("CA_")
            || up.contains("CAINFO")
            || up.contains("SSL")
        {
            c.env_remove(k);
        }
    }
    c.env("HOME", home);
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Run it to its end.
pub fn run(cmd: &mut Command) -> Out {
    run_bounded(cmd, LIMIT)
}
