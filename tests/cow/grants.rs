//! P7 in a `--cow` run: a grant inside DIR is bound in the overlay by its path, and a symlink
//! planted there never leads the bind out of DIR.

use super::{code, each, Case, LIMIT};
use crate::common::{run_bounded, workdir};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Swap `a` and `b` atomically (`renameat2(2)` `RENAME_EXCHANGE`).
fn exchange(a: &std::path::Path, b: &std::path::Path) {
    let a = CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: two NUL-terminated paths that outlive the call.
    unsafe {
        libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE);
    }
}

/// P7, W1: a symlink planted at a grant inside DIR is refused (77), whether it is there
/// before the run or swapped in by another writer of DIR while the run starts: the grant is
/// walked again in the overlay through no symlink, and init checks the bind against that
/// walk. Each run either binds the real directory or is refused (never another exit), and
/// the place outside is never written. Positive control: with the overlay's walk left out
/// (no entries for init), bwrap followed the swapped-in link: runs ended 69 with "Can't bind
/// mount /oldroot/<the place outside> on .../sub".
#[test]
fn p7_cow_grant_inside_dir_refuses_planted_symlink() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("sub/.keep", "");
        let outside = workdir(who);
        let sub = c.dir().join("sub");
        let link = c.dir().join("link");
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        let grant = sub.to_str().unwrap().to_string();
        let args = ["--rw", grant.as_str()];
        let script = "echo x > sub/pwned 2>/dev/null; true";

        // Planted before the run: refused, nothing written.
        exchange(&sub, &link);
        let out = run_bounded(&mut c.cow_with("p7a", &args, script), LIMIT);
        assert_eq!(code(&out), 77, "{who:?}: {}", out.err);
        assert!(out.err.contains("symlink"), "{who:?}: {}", out.err);
        exchange(&sub, &link);

        // Swapped in and out while runs start: never followed.
        let stop = AtomicBool::new(false);
        let mut codes = Vec::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::SeqCst) {
                    exchange(&sub, &link);
                    std::thread::sleep(std::time::Duration::from_micros(300));
                }
            });
            for i in 0..30 {
                let out = run_bounded(&mut c.cow_with(&format!("p7r{i}"), &args, script), LIMIT);
                codes.push((code(&out), out.err));
                if outside.path().join("pwned").exists() {
                    break;
                }
            }
            stop.store(true, Ordering::SeqCst);
        });
        let bound = codes.iter().filter(|(c, _)| *c == 0).count();
        let refused = codes.iter().filter(|(c, _)| *c == 77).count();
        let other: Vec<_> = codes.iter().filter(|(c, _)| *c != 0 && *c != 77).collect();
        assert!(other.is_empty(), "{who:?}: {other:?}");
        assert!(!outside.path().join("pwned").exists(), "{who:?}: the bind followed the planted link");
        assert!(bound > 0, "{who:?}: no run bound the real directory ({refused} refused)");
    });
}
