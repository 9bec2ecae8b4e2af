//! What DIR may be (SPEC P9): a directory, and not the home directory, an ancestor of it, or
//! `/`. DIR is writable under the defaults, so a run there would make all of the home (its
//! `~/.ssh/authorized_keys`, its `~/.bashrc`) writable without a word.

use std::path::Path;

use crate::error::{failure, USAGE};
use crate::host::{Entry, Host};

/// Refuse `target` (canonical DIR, as given: `dir`) when it is not a directory or when it is
/// `home` (normalised), an ancestor of it, or `/`.
///
/// # Errors
/// [`USAGE`] (64) naming DIR, with a line saying to choose a project directory.
pub(super) fn check(target: &Path, dir: &Path, home: &Path, host: &dyn Host) -> anyhow::Result<()> {
    // HOME as written and as it resolves (a home under a symlinked /home).
    let real = host.canonicalize(home).ok();
    let covers = |h: &Path| h.starts_with(target);
    if target == Path::new("/") || covers(home) || real.as_deref().is_some_and(covers) {
        let is_home = target == home || real.as_deref() == Some(target);
        let what = if is_home { "is your home directory" } else { "holds your home directory" };
        return Err(failure(
            USAGE,
            format!(
                "DIR {} {what}, and DIR is writable in the sandbox: choose a project directory \
                 (cd into one, or name it: snug ~/src/project -- CMD); snug(1) says how to show more of the home \
                 deliberately, read-only where it can",
                target.display()
            ),
        ));
    }
    if host.stat(target) != Entry::Dir {
        let hint = crate::hints::dir_hint(dir);
        return Err(failure(USAGE, format!("DIR {}: not a directory{hint}", dir.display())));
    }
    Ok(())
}
