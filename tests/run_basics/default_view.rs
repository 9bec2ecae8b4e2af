//! P1: what the default sandbox grants: DIR writable, its parent and /usr read-only, a
//! private /tmp and $HOME, loopback only, only the listed variables, a /proc of its own, the
//! hostname.

use super::{ok, snug_run, LIMIT};
use crate::common::*;
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// P1: DIR is writable (the file appears on the host, owned by the caller); DIR's parent
/// and /usr are read-only, also for root inside.
#[test]
fn p1_dir_writable_parent_and_usr_read_only() {
    for who in everyone() {
        let top = workdir(who);
        // DIR below the work directory: its parent is a host directory (one directly in /tmp
        // has the private /tmp as its parent, below).
        let proj = top.path().join("proj");
        std::fs::create_dir(&proj).unwrap();
        if who == Who::User {
            let (uid, gid) = test_user();
            std::os::unix::fs::chown(&proj, Some(uid), Some(gid)).unwrap();
        }
        let dir = proj.as_path();
        let m = marker();
        let o = snug_run(who, dir, &["--", "touch", &format!("made-{m}")]);
        ok(who, &o);
        let made = std::fs::metadata(dir.join(format!("made-{m}"))).expect("file written in DIR");
        assert_eq!(made.uid(), std::fs::metadata(dir).unwrap().uid(), "{who:?}: owner");
        let parent = dir.parent().unwrap().join(format!("p1-{m}"));
        let usr = format!("/usr/p1-{m}");
        for target in [parent.to_str().unwrap(), &usr] {
            let o = snug_run(who, dir, &["--", "touch", target]);
            let exists = Path::new(target).exists();
            let _ = std::fs::remove_file(target);
            assert!(
                !o.status.success() && o.err.contains("Read-only file system") && !exists,
                "{who:?}: touch {target}: {:?} {}",
                o.status,
                o.err
            );
        }
    }
}

/// P1: with DIR directly in /tmp, /tmp is still the sandbox's own: a host file there is not
/// seen, and what the payload writes there does not reach the host (DIR's parent read-only
/// would have shown the host's /tmp, sockets included). Positive control: the build before
/// this rule listed the host file and refused the write ("Read-only file system").
#[test]
fn p1_dir_directly_in_tmp_keeps_tmp_private() {
    for who in everyone() {
        let dir = workdir(who);
        assert_eq!(dir.path().parent(), Some(Path::new("/tmp")));
        let m = marker();
        let secret = format!("/tmp/p1-host-{m}");
        std::fs::write(&secret, "host").unwrap();
        let made = format!("/tmp/p1-made-{m}");
        let script = format!("ls /tmp; touch {made} && echo wrote");
        let o = snug_run(who, dir.path(), &["--", "sh", "-c", &script]);
        let _ = std::fs::remove_file(&secret);
        let leaked = Path::new(&made).exists();
        let _ = std::fs::remove_file(&made);
        ok(who, &o);
        assert!(!o.out.contains(&format!("p1-host-{m}")), "{who:?}: the host's /tmp is seen: {}", o.out);
        assert!(o.out.contains("wrote") && !leaked, "{who:?}: {} {}", o.out, o.err);
        assert!(o.out.contains(dir.path().file_name().unwrap().to_str().unwrap()), "{who:?}: DIR is in /tmp");
    }
}

/// P1: $HOME is an empty tmpfs, writable, and gone after the run (the host's home is not
/// empty and never sees the file; a second run does not either).
#[test]
fn p1_home_is_empty_writable_and_gone_after() {
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        let script = format!("echo \"$HOME\"; ls -A \"$HOME\"; touch \"$HOME/p1-{m}\" && echo wrote");
        let o = snug_run(who, dir.path(), &["--", "sh", "-c", &script]);
        ok(who, &o);
        let home = o.out.lines().next().unwrap_or_default().to_string();
        assert_eq!(o.out, format!("{home}\nwrote\n"), "{who:?}: home not empty or not writable; {}", o.err);
        let host_home = std::fs::read_dir(&home).map(|d| d.count()).unwrap_or(0);
        assert!(host_home > 0, "{who:?}: control: the host's {home} should not be empty");
        assert!(!Path::new(&home).join(format!("p1-{m}")).exists(), "{who:?}: the file reached the host's home");
        let o = snug_run(
            who,
            dir.path(),
            &["--", "sh", "-c", &format!("ls -A \"$HOME\"; test -e \"$HOME/p1-{m}\" && echo kept")],
        );
        assert_eq!(o.out, "", "{who:?}: second run saw {:?}", o.out);
    }
}

/// P1: no network interface but `lo` (the host has more).
#[test]
fn p1_only_loopback() {
    let names = |dev: &str| -> BTreeSet<String> {
        dev.lines().skip(2).filter_map(|l| l.split(':').next()).map(|n| n.trim().to_string()).collect()
    };
    let host = names(&std::fs::read_to_string("/proc/net/dev").unwrap());
    for who in everyone() {
        let dir = workdir(who);
        let o = snug_run(who, dir.path(), &["--", "cat", "/proc/net/dev"]);
        ok(who, &o);
        assert_eq!(names(&o.out), BTreeSet::from(["lo".to_string()]), "{who:?} (host has {host:?})");
    }
}

/// P1: the environment holds only the listed variables (`env` as the payload, no shell to
/// add any). bwrap's `--chdir` also sets PWD, to DIR. A variable of the caller's does not
/// pass; a LC_* one does.
#[test]
fn p1_environment_is_only_the_listed_variables() {
    let listed = ["HOME", "USER", "LOGNAME", "PATH", "SHELL", "TERM", "LANG", "TMPDIR"];
    for who in everyone() {
        let dir = workdir(who);
        let mut c = snug_cmd(who, dir.path(), &["--", "env"]);
        c.env("SNUG_TEST_SECRET", "leak").env("LC_MESSAGES", "C");
        let o = run_bounded(&mut c, LIMIT);
        ok(who, &o);
        let vars: Vec<(&str, &str)> = o.out.lines().filter_map(|l| l.split_once('=')).collect();
        for (k, v) in &vars {
            let fine =
                listed.contains(k) || k.starts_with("LC_") || (*k == "PWD" && *v == dir.path().to_str().unwrap());
            assert!(fine, "{who:?}: unexpected {k}={v} in {:?}", o.out);
        }
        for k in ["HOME", "PATH", "LC_MESSAGES"] {
            assert!(vars.iter().any(|(n, _)| *n == k), "{who:?}: {k} missing from {:?}", o.out);
        }
    }
}

/// P1: /proc shows only the sandbox: pid 1 is snug's init, and the payload is the only other
/// process (pid 3: init's work runs on a thread of its own, which took 2; R4's stack).
#[test]
fn p1_proc_shows_only_the_sandbox() {
    for who in everyone() {
        let dir = workdir(who);
        let o = snug_run(who, dir.path(), &["--", "ls", "/proc"]);
        ok(who, &o);
        let pids: BTreeSet<u32> = o.out.lines().filter_map(|l| l.parse().ok()).collect();
        assert_eq!(pids.len(), 2, "{who:?}: {pids:?}");
        assert!(pids.contains(&1), "{who:?}: {pids:?}");
        let o = snug_run(who, dir.path(), &["--", "cat", "/proc/1/cmdline"]);
        assert!(o.out.contains("--snug-init"), "{who:?}: pid 1 is {:?}", o.out);
    }
}

/// P1: the hostname is `snug`.
#[test]
fn p1_hostname_is_snug() {
    for who in everyone() {
        let dir = workdir(who);
        let o = snug_run(who, dir.path(), &["--", "uname", "-n"]);
        ok(who, &o);
        assert_eq!(o.out, "snug\n", "{who:?}");
    }
}
