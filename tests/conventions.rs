//! Everyday use and CI (SPEC O5, O6, O7, P4, P6, K5): the report's context fields, the
//! timeout's line, the CI example script, man pages and completions, messages that say what
//! to do, and per-project policy. Real binary, real bwrap, root and user.

use crate::common;

mod build;
mod ci;
mod ci_cancel;
mod completion_prefix;
mod completion_shells;
mod end_lines;
mod manual;
mod messages;
mod project;
mod project_root;

use common::*;
use std::path::Path;
use std::time::Duration;

/// Bound for one snug run in these tests (generous: the machine is shared).
pub const LIMIT: Duration = Duration::from_secs(30);

/// `snug ARGS…` as `who` in `dir`, with `env` added, run to its end.
pub fn snug_run(who: Who, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = snug_cmd(who, dir, args);
    c.envs(env.iter().copied());
    run_bounded(&mut c, LIMIT)
}

/// Hand `path` (recursively) to `who`, so the test user can read and write it.
pub fn give(who: Who, path: &Path) {
    if who == Who::User {
        let (uid, gid) = test_user();
        let _ = std::process::Command::new("chown").arg("-R").arg(format!("{uid}:{gid}")).arg(path).status();
    }
}
