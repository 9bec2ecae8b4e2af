//! Waiting for a run's name to appear (SPEC L2, L3): `snug --name N … & snug stop N` starts
//! both at once, and a run registers its name some milliseconds into its start, with its
//! control socket. A command naming a run that nobody has registered yet waits for the name
//! a bounded time, instead of refusing a run that is just starting.

use rustix::fd::AsFd;
use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a command waits for a name to appear. A run registers within a few
/// milliseconds of its start when the machine is idle, and within some 300 ms when 32 start
/// at once on 2 CPUs (BENCH.md, B7); a name that no run takes costs this long to refuse.
pub const WAIT: Duration = Duration::from_millis(500);

/// Between two looks when no directory can be watched (the runtime directory does not exist
/// yet: the first run makes it).
const LOOK_AGAIN: Duration = Duration::from_millis(10);

/// The first of `candidates` that exists now or within `wait`, looked for again whenever a
/// name is made in one of their directories (`inotify(7)`, `IN_CREATE` and `IN_MOVED_TO`;
/// a run links its socket into place) and every [`LOOK_AGAIN`] where none can be watched.
/// `None` when none appeared in time.
pub fn first_of(candidates: &[PathBuf], wait: Duration) -> Option<PathBuf> {
    let present = || candidates.iter().find(|p| std::fs::symlink_metadata(p).is_ok()).cloned();
    if let Some(p) = present() {
        return Some(p);
    }
    let deadline = Instant::now() + wait;
    let watch = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok().filter(|fd| {
        let dirs = candidates.iter().filter_map(|p| p.parent());
        let added: Vec<bool> = dirs.map(|d| add(fd, d)).collect();
        added.iter().all(|a| *a)
    });
    loop {
        // Looked at after the watch is in place, so a name made meanwhile is not missed.
        if let Some(p) = present() {
            return Some(p);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        match &watch {
            Some(fd) => {
                if !crate::sys::poll::readable(fd, Some(left)) {
                    continue; // the deadline passed: one last look above
                }
                let mut buf = [0u8; 4096];
                while rustix::io::read(fd, &mut buf).is_ok_and(|n| n > 0) {}
            }
            None => std::thread::sleep(left.min(LOOK_AGAIN)),
        }
    }
}

fn add(fd: &impl AsFd, dir: &Path) -> bool {
    inotify::add_watch(fd, dir, WatchFlags::CREATE | WatchFlags::MOVED_TO).is_ok()
}
