//! Where a placeholder would break git (`.git` itself, `commondir`) or a protected path is a
//! symlink that no bind can cover (SPEC P8): what the payload put there is moved aside after
//! the run, under a name the host's tools do not read, and snug says so in one line.

use std::path::Path;

use rustix::fs::{openat, renameat_with, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::probe;
use super::Watch;

/// Move aside what is at `w.path` now if it is not what was there before the run (`run`: the
/// run's name, in the new name); the line to print, or `None` when nothing changed.
pub fn settle(w: &Watch, run: &str) -> Option<String> {
    let rootfd = probe::open_root(&w.root)?;
    let rel = w.path.strip_prefix(&w.root).ok()?;
    let now = probe::stamp(&rootfd, rel);
    if now.is_none() || now == w.was {
        return None;
    }
    let (parent, name) = probe::split(rel);
    let pdir = probe::open_dir(&rootfd, parent).ok()??;
    let pdir = openat(&pdir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let shown = |p: &Path| crate::quote::quote(&p.to_string_lossy()).into_owned();
    // The run's name may be known to the payload (`--name ci` in a script), which can take
    // every numbered name first: past those, names no payload can guess.
    for n in 1..116 {
        let suffix = match n {
            1 => String::new(),
            2..100 => format!("-{n}"),
            _ => format!("-{:016x}", unguessable()),
        };
        let aside = format!("{}.snug-{run}{suffix}", name.to_string_lossy());
        match renameat_with(&pdir, name, &pdir, aside.as_str(), RenameFlags::NOREPLACE) {
            Ok(()) => {
                let to = w.path.with_file_name(&aside);
                let what = if w.was.is_some() { "replaced" } else { "made" };
                return Some(format!(
                    "the payload {what} {}, which the host's tools would use: moved aside to {} (--unprotect keeps it)",
                    shown(&w.path),
                    shown(&to)
                ));
            }
            Err(Errno::EXIST) => continue,
            Err(e) => {
                let why = crate::error::strerror(e.raw_os_error());
                return Some(format!("the payload made {}, and it cannot be moved aside: {why}", shown(&w.path)));
            }
        }
    }
    Some(format!("the payload made {}, and it cannot be moved aside: every name tried is taken", shown(&w.path)))
}

/// 64 random bits (`getrandom(2)`).
fn unguessable() -> u64 {
    let mut b = [0u8; 8];
    let _ = rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty());
    u64::from_ne_bytes(b)
}
