//! R4: 69 only for a missing host capability; 71 for operating-system errors at run time.

use crate::common::*;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

fn one_line(o: &Out, want: i32, what: &str) {
    assert_eq!(code(o.status), want, "{what}: {}", o.err);
    assert_eq!(o.err.lines().count(), 1, "{what}: {}", o.err);
    assert!(o.err.starts_with("snug: "), "{what}: {}", o.err);
}

/// R4: bwrap missing → 69 (the one capability case here); a DIR the user cannot enter → 71;
/// too few descriptors → 71 (fails without the fix: 70 for the descriptors and 69 for the
/// directory).
#[test]
fn r4_exit_categories() {
    let dir = workdir(Who::Root);
    let mut c = snug_cmd(Who::Root, dir.path(), &["--", "true"]);
    c.env("PATH", "/nonexistent");
    one_line(&run_bounded(&mut c, LIMIT), 69, "no bwrap");
    // Descriptors: snug needs about 18 free ones; with a limit of 12 it cannot start.
    let s = format!("ulimit -n 12; exec {} -- true", snug().display());
    one_line(&run_bounded(Command::new("bash").arg("-c").arg(s).current_dir(dir.path()), LIMIT), 71, "descriptors");
    for who in everyone() {
        if who == Who::Root {
            continue; // root enters any directory
        }
        let d = workdir(who);
        let locked = d.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        crate::hostile::args::chown_tree(who, d.path());
        std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        let o = run_bounded(&mut snug_cmd(who, d.path(), &[locked.to_str().unwrap(), "--", "true"]), LIMIT);
        one_line(&o, 71, "a DIR that cannot be entered");
    }
}

/// R4: a policy whose own mounts do not fit (the caller's /etc as DIR, read-only, leaves no
/// room for the files bwrap binds into it) is a policy error, 77, not a missing host
/// capability. With /etc as DIR snug itself refuses first: `@sys`'s `/etc/localtime` is a
/// symlink inside DIR, which a sandbox could have planted (P7). Only bwrap's own failures: with a tmpfs over /lib a static snug (`make build`)
/// still runs its init, and the payload's exec fails instead (127, its loader is missing).
/// Positive control: fails without the fix: snug said 69.
#[test]
fn r4_mounts_that_do_not_fit_are_a_policy_error() {
    for who in everyone() {
        let dir = workdir(who);
        for args in [&["/etc", "--", "true"][..], &["/etc/ssl", "--", "true"]] {
            let o = run_bounded(&mut snug_cmd(who, dir.path(), args), LIMIT);
            one_line(&o, 77, &format!("{who:?} {args:?}"));
            let p7 = o.err.contains("/etc/localtime is a symlink") && o.err.contains("inside DIR");
            assert!(o.err.contains("--dry-run") || p7, "{who:?} {args:?}: {}", o.err);
        }
    }
}

/// R4: a fork the system refuses (EAGAIN) → 71. snug runs in a pids cgroup of the test's own
/// with pids.max 1, so its clone3 of the sandbox fails; cgroup v1 hosts only (skipped
/// elsewhere), root only.
#[test]
fn r4_fork_refused_is_an_os_error() {
    if !is_root() {
        return;
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let Some(path) = own.lines().find_map(|l| l.split(":pids:").nth(1)) else {
        return eprintln!("skipped: no cgroup v1 pids hierarchy");
    };
    let cg = std::path::PathBuf::from(format!("/sys/fs/cgroup/pids{}", path.trim_end_matches('/')))
        .join(format!("snugtest-r4-{}", std::process::id()));
    if std::fs::create_dir(&cg).is_err() {
        return eprintln!("skipped: cannot create {}", cg.display());
    }
    std::fs::write(cg.join("pids.max"), "1").unwrap();
    let dir = workdir(Who::Root);
    let s = format!("echo 0 > {}/cgroup.procs && exec {} -- true", cg.display(), snug().display());
    let o = run_bounded(Command::new("sh").arg("-c").arg(s).current_dir(dir.path()), LIMIT);
    let _ = std::fs::remove_dir(&cg);
    one_line(&o, 71, "fork refused");
}
