//! W4: `snug apply` refuses what changed on the host since the run started, what would
//! leave DIR or follow a symlink, protected paths, and what it never writes (device nodes,
//! FIFOs, set-id bits), each with its name.

use super::{code, each, ready_then_wait, tree, wait_for, Case, LIMIT};
use crate::common::{start, Who};
use std::os::unix::fs::PermissionsExt;

/// A host file changed mid-run is refused by name with exit 1 and nothing written;
/// `--partial` writes the rest; `--force` writes over it, and stdout stays empty. Without
/// the ctime check, apply wrote both and exited 0; before `print` skipped an empty text,
/// apply's stdout was one empty line.
#[test]
fn w4_conflicts_refused_then_partial_then_force() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("a", "a0\n");
        c.seed("b", "b0\n");
        let script = format!("echo a1 > a; echo b1 > b; {}", ready_then_wait());
        let run = start(&mut c.cow("w4c", &script));
        wait_for(&c.side().join("ready"));
        std::fs::write(c.dir().join("a"), "host\n").unwrap();
        std::fs::write(c.side().join("go"), "").unwrap();
        assert_eq!(code(&run.finish(LIMIT)), 0);
        let out = c.run(&["apply", "w4c"]);
        assert_eq!(code(&out), 1, "{who:?}: {}", out.err);
        assert!(out.err.contains("snug: apply: a: changed on the host"), "{who:?}: {}", out.err);
        assert!(!out.err.contains("apply: b:"), "{who:?}: {}", out.err);
        assert_eq!(std::fs::read_to_string(c.dir().join("b")).unwrap(), "b0\n", "{who:?}: written without --partial");
        let out = c.run(&["apply", "w4c", "--partial"]);
        assert_eq!(code(&out), 1, "{who:?}: {}", out.err);
        assert_eq!(std::fs::read_to_string(c.dir().join("b")).unwrap(), "b1\n", "{who:?}: --partial");
        assert_eq!(std::fs::read_to_string(c.dir().join("a")).unwrap(), "host\n", "{who:?}: --partial wrote a");
        let out = c.run(&["apply", "w4c", "--force"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert_eq!(out.out, "", "{who:?}: apply says what it did on stderr, nothing on stdout");
        assert_eq!(std::fs::read_to_string(c.dir().join("a")).unwrap(), "a1\n", "{who:?}: --force");
    });
}

/// A file and a directory the payload changed and the host removed mid-run are conflicts,
/// each named (and what the directory held with it), exit 1 and nothing written; `--partial`
/// writes the rest, including a file the payload renamed in a directory the host left alone
/// and a new one beside the removed file; `--force` writes them again. Positive control:
/// against the code without the removal check, the first apply exited 0 and brought `b`
/// and `d/f` back.
#[test]
fn w4_host_removal_mid_run_is_a_conflict() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("b", "orig\n");
        c.seed("d/f", "f0\n");
        c.seed("k/x", "x\n");
        let script = format!("echo sandb >> b; echo f1 > d/f; mv k/x k/y; echo n > new; {}", ready_then_wait());
        let run = start(&mut c.cow("w4g", &script));
        wait_for(&c.side().join("ready"));
        std::fs::remove_file(c.dir().join("b")).unwrap();
        std::fs::remove_dir_all(c.dir().join("d")).unwrap();
        std::fs::write(c.side().join("go"), "").unwrap();
        assert_eq!(code(&run.finish(LIMIT)), 0);
        let out = c.run(&["apply", "w4g"]);
        assert_eq!(code(&out), 1, "{who:?}: {}", out.err);
        for line in ["snug: apply: b: removed on the host", "snug: apply: d: removed on the host", "apply: d/f: "] {
            assert!(out.err.contains(line), "{who:?}: {line}: {}", out.err);
        }
        assert!(!out.err.contains("apply: k/y:") && !out.err.contains("apply: new:"), "{who:?}: {}", out.err);
        let gone = |rel: &str| std::fs::symlink_metadata(c.dir().join(rel)).is_err();
        assert!(gone("b") && gone("d") && gone("new") && gone("k/y"), "{who:?}: written without --partial");
        let out = c.run(&["apply", "w4g", "--partial"]);
        assert_eq!(code(&out), 1, "{who:?}: {}", out.err);
        assert!(gone("b") && gone("d"), "{who:?}: --partial brought back what the host removed");
        assert!(!gone("new") && !gone("k/y") && gone("k/x"), "{who:?}: --partial: {}", out.err);
        let out = c.run(&["apply", "w4g", "--force"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert_eq!(std::fs::read_to_string(c.dir().join("b")).unwrap(), "orig\nsandb\n", "{who:?}: --force");
        assert_eq!(std::fs::read_to_string(c.dir().join("d/f")).unwrap(), "f1\n", "{who:?}: --force");
    });
}

/// A symlink the run replaced by a directory holding a file is replaced, then the file
/// written inside, in one apply; asked for the file alone, apply refuses it, since the
/// symlink on its way is then not replaced first, and writes nothing where it points.
/// Positive control: against the code that refused any symlinked parent before writing, the
/// full apply exited 1 and wrote nothing.
#[test]
fn w4_symlink_replaced_by_a_directory_applies_at_once() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("real/keep", "k\n");
        std::os::unix::fs::symlink("real", c.dir().join("lnk")).unwrap();
        c.own(c.dir());
        let out = c.cow("w4l", "rm lnk && mkdir lnk && echo new > lnk/g").output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let out = c.run(&["apply", "w4l", "lnk/g", "--force", "--partial"]);
        assert_eq!(code(&out), 1, "{who:?}: {}", out.err);
        assert!(out.err.contains("lnk/g: refused"), "{who:?}: {}", out.err);
        assert!(!c.dir().join("real/g").exists(), "{who:?}: written through the symlink");
        assert!(std::fs::symlink_metadata(c.dir().join("lnk")).unwrap().is_symlink(), "{who:?}");
        let out = c.run(&["apply", "w4l"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert!(std::fs::symlink_metadata(c.dir().join("lnk")).unwrap().is_dir(), "{who:?}: lnk not replaced");
        assert_eq!(std::fs::read_to_string(c.dir().join("lnk/g")).unwrap(), "new\n", "{who:?}");
        assert!(!c.dir().join("real/g").exists(), "{who:?}: written through the symlink");
        assert!(!c.kept().join("w4l").exists(), "{who:?}: still kept after a full apply");
    });
}

/// A symlinked parent planted in DIR after the run is refused, and nothing is written where
/// it points, also with `--force` for that path alone; `--force` for the whole run replaces
/// the planted symlinks by what the run kept (a directory, a file) instead of following them
/// (a target keeps its content). Positive control: `cp` through the planted parent writes
/// where it points; with parents opened by plain path (no `RESOLVE_*` flags), apply wrote
/// through it and exited 0.
#[test]
fn w4_apply_never_follows_a_planted_symlink() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("sub/keep", "k\n");
        let out = c.cow("w4s", "echo payload > sub/f; echo payload > top").output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let elsewhere = crate::common::workdir(who);
        let victim = elsewhere.path().join("victim");
        std::fs::write(&victim, "victim\n").unwrap();
        c.own(elsewhere.path());
        std::fs::rename(c.dir().join("sub"), c.dir().join("sub.real")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), c.dir().join("sub")).unwrap();
        std::os::unix::fs::symlink(&victim, c.dir().join("top")).unwrap();
        // Control: a write through the path resolves the planted symlink.
        let ctl = std::process::Command::new("cp").arg(&victim).arg(c.dir().join("sub/ctl")).status();
        assert!(ctl.unwrap().success() && elsewhere.path().join("ctl").exists(), "control");
        let out = c.run(&["apply", "w4s"]);
        assert_eq!(code(&out), 1, "{who:?}: {}", out.err);
        assert!(out.err.contains("sub/f: refused"), "{who:?}: {}", out.err);
        let out = c.run(&["apply", "w4s", "sub/f", "--force", "--partial"]);
        assert_eq!(code(&out), 1, "{who:?}: {}", out.err);
        assert!(out.err.contains("sub/f: refused"), "{who:?}: {}", out.err);
        assert!(!elsewhere.path().join("f").exists(), "{who:?}: written through the planted symlink");
        let out = c.run(&["apply", "w4s", "--force"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert!(!elsewhere.path().join("f").exists(), "{who:?}: written through the planted symlink");
        assert!(std::fs::symlink_metadata(c.dir().join("sub")).unwrap().is_dir(), "{who:?}: sub not replaced");
        assert_eq!(std::fs::read_to_string(c.dir().join("sub/f")).unwrap(), "payload\n");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "victim\n", "{who:?}: followed top");
        assert_eq!(std::fs::read_to_string(c.dir().join("top")).unwrap(), "payload\n");
        assert!(std::fs::symlink_metadata(c.dir().join("top")).unwrap().is_file());
    });
}

/// A hand-made redirect in the upper layer that climbs out of DIR (`..`) is refused by
/// `diff` and `apply`, and nothing is written.
#[test]
fn w4_hand_made_upper_path_with_dotdot_refused() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("a", "a\n");
        let out = c.cow("w4r", "mkdir evil; echo x > evil/f; echo b > a").output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let evil = c.kept().join("w4r/upper/evil");
        let attr = if who == Who::Root { "trusted.overlay.redirect" } else { "user.overlay.redirect" };
        let set = format!("import os; os.setxattr({:?}, {attr:?}, b'/../../etc')", evil.to_str().unwrap());
        let mut py = crate::common::cmd_as(who, c.dir(), "/usr/bin/python3", &["-c", &set]);
        assert!(py.status().unwrap().success(), "{who:?}: setxattr");
        let before = tree(c.dir());
        let d = c.run(&["diff", "w4r", "--stat"]);
        assert_ne!(code(&d), 0, "{who:?}: {}", d.out);
        assert!(d.err.contains("outside DIR"), "{who:?}: {}", d.err);
        let a = c.run(&["apply", "w4r", "--force", "--partial"]);
        assert_ne!(code(&a), 0, "{who:?}: {}", a.err);
        assert!(a.err.contains("outside DIR"), "{who:?}: {}", a.err);
        assert_eq!(tree(c.dir()), before, "{who:?}: apply wrote something");
    });
}

/// FIFOs are not applied and set-id bits are dropped, each with a line; as root a device
/// node put in the upper layer by hand is not applied either. A root payload cannot make a
/// set-id file (P11), so as root the set-id bits are put on the upper layer's file by hand.
#[test]
fn w4_fifos_devices_and_set_id_bits_not_applied() {
    each(&|who| {
        let c = Case::new(who);
        let out = c.cow("w4f", "mkfifo pipe; echo s > suid; chmod 4755 suid; echo ok > plain").output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        if who == Who::Root {
            let dev = c.kept().join("w4f/upper/null");
            assert!(std::process::Command::new("mknod").arg(&dev).args(["c", "1", "3"]).status().unwrap().success());
            let suid = c.kept().join("w4f/upper/suid");
            std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
        }
        let out = c.run(&["apply", "w4f"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert!(out.err.contains("pipe: a FIFO, not applied"), "{who:?}: {}", out.err);
        assert!(out.err.contains("suid: set-id bits not applied"), "{who:?}: {}", out.err);
        assert!(!c.dir().join("pipe").exists(), "{who:?}: FIFO applied");
        let mode = std::fs::metadata(c.dir().join("suid")).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o755, "{who:?}");
        assert_eq!(std::fs::read_to_string(c.dir().join("plain")).unwrap(), "ok\n");
        if who == Who::Root {
            assert!(out.err.contains("null: a device node, not applied"), "{}", out.err);
            assert!(!c.dir().join("null").exists());
        }
    });
}

/// Protected paths are marked by `diff` and refused by `apply` (exit 1, nothing
/// written) unless `--unprotect` names them.
#[test]
fn w4_protected_paths_need_unprotect() {
    each(&|who| {
        let c = Case::new(who);
        c.seed(".git/hooks/.keep", "");
        let out =
            c.cow("w4p", "echo evil > .envrc; echo evil > .git/hooks/pre-commit; echo ok > plain").output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let stat = c.run(&["diff", "w4p", "--stat"]);
        assert!(stat.out.contains("A .envrc [protected]"), "{who:?}: {}", stat.out);
        let out = c.run(&["apply", "w4p"]);
        assert_eq!(code(&out), 1, "{who:?}: {}", out.err);
        assert!(out.err.contains(".git/hooks/pre-commit: protected"), "{who:?}: {}", out.err);
        assert!(!c.dir().join("plain").exists() && !c.dir().join(".envrc").exists(), "{who:?}");
        let out = c.run(&["apply", "w4p", "--unprotect", ".envrc", "--partial"]);
        assert_eq!(code(&out), 1, "{who:?}: {}", out.err);
        assert!(c.dir().join(".envrc").exists() && c.dir().join("plain").exists(), "{who:?}: {}", out.err);
        assert!(!c.dir().join(".git/hooks/pre-commit").exists(), "{who:?}: hook written");
    });
}

/// W4, R4 (issue: apply into a DIR the system will not let it write said "Permission denied
/// (os error 13)" and exited 1, the code of a conflict): each path the system refused is one
/// `snug: apply: PATH: REASON` line in the system's words, the kept changes stay, and the
/// exit is 71, snug's own OS error; once DIR can be written, the same apply succeeds.
/// Positive control: the build before exits 1 with "(os error 1)" in the line.
#[test]
fn w4_r4_a_write_the_system_refuses_is_71() {
    struct Immutable<'a>(&'a std::path::Path);
    impl Drop for Immutable<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("chattr").arg("-i").arg(self.0).status();
        }
    }
    each(&|who| {
        let c = Case::new(who);
        c.seed("a", "a0\n");
        let run = start(&mut c.cow("w4ro", "echo a1 > a; echo new > b"));
        assert_eq!(code(&run.finish(LIMIT)), 0);
        let guard = Immutable(c.dir());
        assert!(std::process::Command::new("chattr").arg("+i").arg(c.dir()).status().unwrap().success());
        let out = c.run(&["apply", "w4ro"]);
        assert_eq!(code(&out), 71, "{who:?}: {}", out.err);
        assert!(out.err.contains("snug: apply: b: operation not permitted\n"), "{who:?}: {}", out.err);
        assert!(!out.err.contains("os error"), "{who:?}: {}", out.err);
        assert!(out.err.lines().all(|l| l.starts_with("snug: ")), "{who:?}: {}", out.err);
        drop(guard);
        let out = c.run(&["apply", "w4ro"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert_eq!(std::fs::read_to_string(c.dir().join("b")).unwrap(), "new\n", "{who:?}");
    });
}
