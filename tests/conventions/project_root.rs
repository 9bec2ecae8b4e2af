//! P10, R1: started in a subdirectory of a project, a run behaves as started at its root;
//! a marker someone else could have planted never makes a shared directory DIR.

use crate::common::*;
use crate::conventions::{give, snug_run};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A fresh directory under /var/tmp (not under either caller's HOME), mode 0755, root's.
fn fresh(what: &str) -> PathBuf {
    let d = PathBuf::from(format!("/var/tmp/snug-p10-{what}-{}", marker()));
    // A run in a pid namespace of its own reuses pids, so a failed run's tree may be there.
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    d
}

/// `--dry-run --json`'s `dir` and `root` from `cwd`.
fn plan(who: Who, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let mut all = vec!["-n", "--json"];
    all.extend(args);
    all.extend(["--", "true"]);
    let o = snug_run(who, cwd, &all, env);
    assert_eq!(o.status.code(), Some(0), "{who:?} {args:?}: {}", o.err);
    let v: serde_json::Value = serde_json::from_str(&o.out).expect("json");
    let dir = v["dir"].as_str().unwrap_or_default().to_string();
    (dir, v["root"].as_str().unwrap_or_default().to_string())
}

/// P10, R1: from `proj/src/a` (the root holds `.git`), DIR is `proj`, writable; the payload
/// starts in `src/a`; the root's allowed `.snug.toml` applies with `{target}` the root; the
/// dry run names the root and the marker; `--here` and an explicit DIR keep `src/a`.
/// Fails without the fix: DIR was `src/a`, so the root's `.snug.toml` was not applied
/// (`ROOT_SEEN` empty) and the write to the root never reached the host.
#[test]
fn p10_subdirectory_runs_at_the_project_root() {
    for who in everyone() {
        let root = fresh("proj");
        let sub = root.join("src/a");
        std::fs::create_dir_all(&sub).expect("mkdir");
        std::fs::create_dir(root.join(".git")).expect("mkdir .git");
        std::fs::write(root.join(".snug.toml"), "env = { ROOT_SEEN = \"{target}\" }\n").expect("write");
        give(who, &root);
        let state = fresh("state");
        give(who, &state);
        let env = [("XDG_STATE_HOME", state.to_str().expect("utf8"))];
        let r = root.to_str().expect("utf8");
        // `snug allow` from the subdirectory allows the root's file, as a run from there
        // applies it (before: "no .snug.toml in …/src/a", exit 64).
        let o = snug_run(who, &sub, &["allow"], &env);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {}", o.err);
        assert!(o.out.contains(&format!("allowed {r}/.snug.toml")), "{who:?}: {}", o.out);

        let o = snug_run(who, &sub, &["--", "sh", "-c", "pwd; echo x > ../../written && echo $ROOT_SEEN"], &env);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {}", o.err);
        assert_eq!(o.out, format!("{}\n{r}\n", sub.display()), "{who:?}: {}", o.err);
        assert!(root.join("written").exists(), "{who:?}: the root is writable");

        let (dir, why) = plan(who, &sub, &[], &env);
        assert_eq!(dir, r, "{who:?}");
        assert!(why.contains(".snug.toml") && why.contains("2 levels above"), "{who:?}: {why}");
        let (dir, why) = plan(who, &sub, &["--here"], &env);
        assert_eq!((dir.as_str(), why.as_str()), (sub.to_str().unwrap(), "--here: the current directory"));
        let (dir, _) = plan(who, &sub, &["."], &env);
        assert_eq!(dir, sub.to_str().unwrap(), "{who:?}: an explicit DIR is taken as given");
        // R1: an explicit DIR above the current directory: the payload still starts here.
        let o = snug_run(who, &sub, &["--no-project", r, "--", "pwd"], &env);
        assert_eq!(o.out, format!("{}\n", sub.display()), "{who:?}: {}", o.err);
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&state);
    }
}

/// P10: a `.git` in a directory others may write (as a planted `/tmp/.git` is: mode 1777)
/// or one owned by another user never makes that directory DIR; nor does one in $HOME or
/// across a filesystem boundary (a tmpfs mounted inside the project). Control: the same
/// tree with a trusted root finds it (first test). With the walk's owner and mode checks
/// taken out, the shared directory holding the planted `.git` became DIR and this failed.
#[test]
fn p10_planted_or_foreign_marker_is_not_a_root() {
    for who in everyone() {
        // A shared directory, like /tmp, holding a planted .git.
        let shared = fresh("shared");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        std::fs::create_dir(shared.join(".git")).expect("mkdir");
        let work = shared.join("work");
        std::fs::create_dir(&work).expect("mkdir");
        give(who, &work);
        let (dir, why) = plan(who, &work, &[], &[]);
        assert_eq!(dir, work.to_str().unwrap(), "{who:?}: {why}");
        assert!(why.contains("others may write"), "{who:?}: {why}");
        let o = snug_run(who, &work, &["--", "sh", "-c", "echo x > ../planted"], &[]);
        assert_ne!(o.status.code(), Some(0), "{who:?}: the shared directory stays read-only");

        // Owned by an unused uid.
        let foreign = fresh("foreign");
        std::fs::create_dir(foreign.join(".git")).expect("mkdir");
        let work2 = foreign.join("work");
        std::fs::create_dir(&work2).expect("mkdir");
        give(who, &work2);
        std::os::unix::fs::chown(&foreign, Some(4242), Some(4242)).expect("chown");
        let (dir, why) = plan(who, &work2, &[], &[]);
        assert_eq!(dir, work2.to_str().unwrap(), "{who:?}: {why}");
        assert!(why.contains("uid 4242"), "{who:?}: {why}");

        // A .git in HOME: the walk stops below it.
        let home = fresh("home");
        std::fs::create_dir_all(home.join(".git")).expect("mkdir");
        std::fs::create_dir_all(home.join("p/q")).expect("mkdir");
        give(who, &home);
        let h = home.to_str().unwrap();
        let q = home.join("p/q");
        let (dir, why) = plan(who, &q, &[], &[("HOME", h)]);
        assert_eq!(dir, q.to_str().unwrap(), "{who:?}: {why}");
        assert!(why.contains("$HOME"), "{who:?}: {why}");
        for d in [shared, foreign, home] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// P10: the walk never crosses a filesystem boundary: in a tmpfs mounted inside a project,
/// DIR is the tmpfs's directory, not the project. Root only (mounting needs it; the run as
/// the test user is in the same mount namespace, through setpriv). With the `st_dev` check
/// taken out, the project above the tmpfs became DIR and this failed.
#[test]
fn p10_walk_stays_on_one_filesystem() {
    if !is_root() {
        return;
    }
    for who in everyone() {
        let root = fresh("fs");
        std::fs::create_dir(root.join(".git")).expect("mkdir");
        let mnt = root.join("mnt");
        std::fs::create_dir(&mnt).expect("mkdir");
        give(who, &root);
        let (uid, gid) = if who == Who::User { test_user() } else { (0, 0) };
        let script = format!(
            "mount -t tmpfs -o mode=755,uid={uid},gid={gid} t {m} && cd {m} && exec {w}{snug} -n --json -- true",
            m = mnt.display(),
            w = as_words(who),
            snug = snug_for(who).display()
        );
        let mut c = std::process::Command::new("unshare");
        c.args(["-m", "--propagation", "private", "sh", "-c", &script]).stdin(std::process::Stdio::null());
        let o = run_bounded(&mut c, crate::conventions::LIMIT);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {}", o.err);
        let v: serde_json::Value = serde_json::from_str(&o.out).expect("json");
        assert_eq!(v["dir"].as_str(), mnt.to_str(), "{who:?}: {}", o.out);
        assert!(v["root"].as_str().unwrap_or_default().contains("filesystem"), "{who:?}: {}", o.out);
        let _ = std::fs::remove_dir_all(&root);
    }
}
