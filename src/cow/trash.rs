//! Where the kept directory of a run that changed nothing goes (SPEC W2, B10): one rename(2)
//! into `STATE/cow/.trash` instead of removing it at the run's end. On ext4 each rmdir(2)
//! costs milliseconds (some 2–4 ms each on a busy host, where the journal is shared), and a
//! kept directory holds six directories once the overlay has used it; removing them at the
//! end cost every unchanged run 20–30 ms. The trash is emptied on a thread of its own while
//! a later `--cow` run runs (never waited for), and by `snug diff`, `apply` and `discard`.
//! `.trash` is no run's name ([`crate::live::check_name`] refuses a leading `.`), so
//! `snug diff` never lists it, and it is masked with the rest of the state directory (W5).

use super::store::{self, Kept};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The trash, under `STATE/cow`.
pub const TRASH: &str = ".trash";

/// Set when this run's own kept directory is about to go to the trash: the background sweep
/// stops at its next step, so that the rename never waits on an rmdir(2) holding the trash.
static STOP: AtomicBool = AtomicBool::new(false);

/// Drop `kept`, which holds nothing the payload changed: into the trash with one rename(2),
/// or removed in place where that fails.
///
/// # Errors
/// [`store::remove`]'s, when the rename failed and so did the removal.
pub fn discard(kept: &Kept) -> anyhow::Result<()> {
    STOP.store(true, Ordering::SeqCst);
    let Some(base) = kept.path.parent() else { return store::remove(kept) };
    let trash = base.join(TRASH);
    let mut b = std::fs::DirBuilder::new();
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    let _ = b.create(&trash);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let to = trash.join(format!("{}.{}.{}", kept.name, std::process::id(), now.as_nanos()));
    match std::fs::rename(&kept.path, to) {
        Ok(()) => Ok(()),
        Err(_) => store::remove(kept),
    }
}

/// Empty the trash of `base` (`STATE/cow`) on a thread of its own, started with every signal
/// blocked so that snug's signals stay queued for its signalfd (`signalfd(2)`). Never joined:
/// snug's exit ends it between two system calls, and the next sweep goes on from there.
pub fn sweep_in_background(base: PathBuf) {
    if std::fs::symlink_metadata(base.join(TRASH)).is_err() {
        return;
    }
    let before = sigseal::set_mask(libc::SIG_BLOCK, u64::MAX).ok();
    let _ = std::thread::Builder::new().name("cow-trash".into()).stack_size(64 << 10).spawn(move || {
        empty(&base.join(TRASH), &STOP);
    });
    if let Some(mask) = before {
        let _ = sigseal::set_mask(libc::SIG_SETMASK, mask);
    }
}

/// Empty the trash of `base` now (`snug diff|apply|discard`, where nobody waits on a run).
pub fn sweep(base: &Path) {
    empty(&base.join(TRASH), &AtomicBool::new(false));
}

/// Remove what `trash` holds, never following a symlink (`symlink_metadata`), making a
/// directory the payload left unreadable (or overlayfs' `work/work`, mode 0) searchable on
/// the way down; stops at the first step after `stop` is set. False once stopped.
fn empty(trash: &Path, stop: &AtomicBool) -> bool {
    let Ok(rd) = std::fs::read_dir(trash) else { return true };
    for e in rd.flatten() {
        if !remove(&e.path(), stop) {
            return false;
        }
    }
    true
}

fn remove(p: &Path, stop: &AtomicBool) -> bool {
    if stop.load(Ordering::SeqCst) {
        return false;
    }
    let Ok(m) = std::fs::symlink_metadata(p) else { return true };
    if !m.is_dir() {
        let _ = std::fs::remove_file(p);
        return true;
    }
    if std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o700 != 0o700 {
        let _ = std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o700));
    }
    if !empty(p, stop) || stop.load(Ordering::SeqCst) {
        return false;
    }
    let _ = std::fs::remove_dir(p);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// W2, B10: a kept directory goes to the trash by rename, unreadable directories and
    /// symlinks in it included, and a sweep empties the trash without following the link
    /// (the file it names stays).
    #[test]
    fn w2_trash_takes_and_sweeps_a_kept_directory() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "k").unwrap();
        let path = base.path().join("run-1");
        std::fs::create_dir_all(path.join("upper/d")).unwrap();
        std::fs::create_dir_all(path.join("work/work")).unwrap();
        std::os::unix::fs::symlink(outside.path(), path.join("upper/d/out")).unwrap();
        std::fs::set_permissions(path.join("work/work"), std::os::unix::fs::PermissionsExt::from_mode(0o0)).unwrap();
        let kept = Kept { name: "run-1".into(), path: path.clone(), meta: None };
        discard(&kept).unwrap();
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(base.path().join(TRASH)).unwrap().count(), 1);
        sweep(base.path());
        assert_eq!(std::fs::read_dir(base.path().join(TRASH)).unwrap().count(), 0);
        assert!(outside.path().join("keep").exists());
    }

    /// B10: a sweep told to stop removes nothing more.
    #[test]
    fn b10_stopped_sweep_stops() {
        let trash = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(trash.path().join("a/b")).unwrap();
        assert!(!empty(trash.path(), &AtomicBool::new(true)));
        assert!(trash.path().join("a/b").exists());
    }
}
