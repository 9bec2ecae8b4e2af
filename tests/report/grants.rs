//! Grants on the command line (SPEC P5): `--ro`, `--rw`, `--tmpfs`, `-e`, each against a
//! control without the flag, and the errors of the profile keys naming the flag.

use crate::common::{code, marker, run_bounded, snug_cmd, test_user, workdir, Out, Who};
use crate::report::{each, LIMIT};
use std::path::{Path, PathBuf};

fn snug(who: Who, dir: &Path, args: &[&str]) -> Out {
    run_bounded(&mut snug_cmd(who, dir, args), LIMIT)
}

/// A host directory no default profile shows (/var/tmp is not bound), with a file `f`
/// holding "hello", owned by `who`.
fn host_dir(who: Who) -> PathBuf {
    let d = PathBuf::from(format!("/var/tmp/snug-grant-{}", marker()));
    std::fs::create_dir_all(&d).expect("mkdir");
    std::fs::write(d.join("f"), "hello").expect("write f");
    if who == Who::User {
        let (uid, gid) = test_user();
        for p in [d.clone(), d.join("f")] {
            std::os::unix::fs::chown(&p, Some(uid), Some(gid)).expect("chown");
        }
    }
    d
}

/// P5: `--ro` shows a hidden path read-only; `--rw` read-write (the write reaches the host).
/// Controls: without the flag the path is not there; with `--ro` the same write fails.
#[test]
fn p5_ro_and_rw() {
    each(&|who: Who| {
        let dir = workdir(who);
        let d = host_dir(who);
        let ds = d.to_str().expect("utf-8");
        let f = format!("{ds}/f");
        let write = format!("echo x > {ds}/g");
        let out = snug(who, dir.path(), &["--ro", ds, "--", "cat", &f]);
        assert_eq!((code(out.status), out.out.as_str()), (0, "hello"), "{who:?}: {}", out.err);
        let out = snug(who, dir.path(), &["--ro", ds, "--", "sh", "-c", &write]);
        assert_ne!(code(out.status), 0, "{who:?}: --ro is writable");
        assert!(!d.join("g").exists());
        let out = snug(who, dir.path(), &["--", "cat", &f]);
        assert_ne!(code(out.status), 0, "{who:?} control: {ds} visible without --ro");

        let out = snug(who, dir.path(), &["--rw", ds, "--", "sh", "-c", &write]);
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        assert_eq!(std::fs::read_to_string(d.join("g")).unwrap_or_default(), "x\n");
        let _ = std::fs::remove_dir_all(&d);
    });
}

/// P5: `--tmpfs` (a relative path, from the current directory) puts an empty private
/// directory over a visible one; nothing written there reaches the host. Control: without
/// it the directory's file shows.
#[test]
fn p5_tmpfs() {
    each(&|who: Who| {
        let dir = workdir(who);
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).expect("mkdir");
        std::fs::write(sub.join("f"), "").expect("write");
        if who == Who::User {
            let (uid, gid) = test_user();
            std::os::unix::fs::chown(&sub, Some(uid), Some(gid)).expect("chown");
        }
        let out = snug(who, dir.path(), &["--tmpfs", "sub", "--", "sh", "-c", "ls -A sub; echo y > sub/new"]);
        assert_eq!((code(out.status), out.out.as_str()), (0, ""), "{who:?}: {}", out.err);
        assert!(!sub.join("new").exists(), "{who:?}: the tmpfs write reached the host");
        let out = snug(who, dir.path(), &["--", "ls", "-A", "sub"]);
        assert_eq!(out.out.trim(), "f", "{who:?} control");
    });
}

/// P5: `-e NAME` passes the caller's value, `-e NAME=VALUE` sets one. Control: without `-e`
/// the clean environment drops the caller's variable.
#[test]
fn p5_env() {
    each(&|who: Who| {
        let dir = workdir(who);
        let echo = ["sh", "-c", "echo \"$SNUG_T_A/$SNUG_T_B\""];
        let with = |args: &[&str]| {
            let mut all = args.to_vec();
            all.push("--");
            all.extend(echo);
            let mut c = snug_cmd(who, dir.path(), &all);
            c.env("SNUG_T_A", "from caller");
            run_bounded(&mut c, LIMIT)
        };
        let out = with(&["-e", "SNUG_T_A", "-e", "SNUG_T_B=set here"]);
        assert_eq!(out.out, "from caller/set here\n", "{who:?}: {}", out.err);
        let out = with(&[]);
        assert_eq!(out.out, "/\n", "{who:?} control");
    });
}

/// P5, P3: a missing `--ro` path is a policy error naming the flag (77, one line), as a
/// missing `ro` path in a profile is; `--dry-run` shows each grant with the flag as its
/// origin, in text and JSON.
#[test]
fn p5_errors_name_the_flag_and_dry_run_shows_grants() {
    let dir = workdir(Who::Root);
    let missing = format!("/nonexistent-{}", marker());
    let out = snug(Who::Root, dir.path(), &["--ro", &missing, "--", "true"]);
    assert_eq!(code(out.status), 77, "{}", out.err);
    assert_eq!(out.err, format!("snug: --ro \"{missing}\": {missing} does not exist\n"));
    let out = snug(Who::Root, dir.path(), &["-e", "A=B=C", "-e", "=x", "--", "true"]);
    // An empty name is a usage error (R4, 64), said before any profile is read.
    assert_eq!(
        (code(out.status), out.err.as_str()),
        (64, "snug: -e '=x': the variable's name is empty (write -e NAME or -e NAME=VALUE)\n")
    );

    let d = host_dir(Who::Root);
    let ds = d.to_str().expect("utf-8");
    let args = ["-n", "--ro", ds, "--tmpfs", "/opt/scratch", "-e", "X=1"];
    let out = snug(Who::Root, dir.path(), &args);
    assert_eq!(code(out.status), 0, "{}", out.err);
    assert!(out.out.lines().any(|l| l.contains(ds) && l.trim_end().ends_with("--ro")), "{}", out.out);
    assert!(out.out.lines().any(|l| l.contains("/opt/scratch") && l.trim_end().ends_with("--tmpfs")), "{}", out.out);
    assert!(out.out.contains("  X=1\n"), "{}", out.out);
    let mut json = args.to_vec();
    json.push("--json");
    let v: serde_json::Value = serde_json::from_str(&snug(Who::Root, dir.path(), &json).out).expect("json");
    let ro = v["mounts"].as_array().into_iter().flatten().find(|m| m["dest"] == ds).cloned();
    assert_eq!(ro.map(|m| (m["kind"].clone(), m["profile"].clone())), Some(("ro".into(), "--ro".into())), "{v}");
    assert_eq!(v["env"]["X"], "1");
    let _ = std::fs::remove_dir_all(&d);
}
