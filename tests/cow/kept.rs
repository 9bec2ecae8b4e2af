//! W1's refusals, W5 (the kept changes survive SIGKILL, belong to the user, no sandbox sees
//! them) and W6 (ordinary tools on the copy).

use super::{code, each, ready_then_wait, wait_for, Case, LIMIT};
use crate::common::{as_words, kill, start, Who};
use std::os::unix::fs::PermissionsExt;

/// W1: a state directory inside DIR is refused with 69 and the variable to set, and
/// nothing is made in DIR; changes kept under a name make `--cow --name` of it 64.
#[test]
fn w1_refusals_state_inside_dir_and_name_kept() {
    each(&|who| {
        let c = Case::new(who);
        let inside = c.dir().join("state");
        let mut cmd = c.snug(&["--cow", "--", "touch", "x"]);
        cmd.env("XDG_STATE_HOME", &inside);
        let out = crate::common::run_bounded(&mut cmd, LIMIT);
        assert_eq!(code(&out), 69, "{who:?}: {}", out.err);
        assert!(out.err.starts_with("snug: ") && out.err.contains("XDG_STATE_HOME"), "{who:?}: {}", out.err);
        assert!(!inside.exists() && !c.dir().join("x").exists(), "{who:?}: wrote DIR");
        let first = c.run(&["--cow", "--name", "same", "--", "touch", "x"]);
        assert_eq!(code(&first), 0, "{who:?}: {}", first.err);
        let again = c.run(&["--cow", "--name", "same", "--", "touch", "y"]);
        assert_eq!(code(&again), 64, "{who:?}: {}", again.err);
        assert!(again.err.contains("snug discard same"), "{who:?}: {}", again.err);
    });
}

/// W1: a state directory on overlayfs cannot hold the upper layer: 69 naming overlayfs,
/// and DIR is not written.
#[test]
fn w1_state_on_overlayfs_is_69() {
    each(&|who| {
        let c = Case::new(who);
        let layers = crate::common::workdir(who);
        let (lo, up, wk, at) = ["lo", "up", "wk", "at"].map(|n| layers.path().join(n)).into();
        for d in [&lo, &up, &wk, &at] {
            std::fs::create_dir(d).unwrap();
        }
        c.own(layers.path());
        let snug = crate::common::snug_for(who);
        let script = format!(
            "mount -t overlay overlay -o lowerdir={},upperdir={},workdir={} {} && cd {} && \
             XDG_STATE_HOME={} {}{} --cow -- touch x",
            lo.display(),
            up.display(),
            wk.display(),
            at.display(),
            c.dir().display(),
            at.display(),
            as_words(who),
            snug.display()
        );
        let out =
            crate::common::run_bounded(std::process::Command::new("unshare").args(["-m", "sh", "-c", &script]), LIMIT);
        assert_eq!(code(&out), 69, "{who:?}: {}", out.err);
        assert!(out.err.contains("overlayfs"), "{who:?}: {}", out.err);
        assert!(!c.dir().join("x").exists(), "{who:?}: wrote DIR");
    });
}

/// W5: SIGKILL of snug mid-run leaves what the payload wrote kept (0700, the user's):
/// `diff` lists it, no other sandbox sees it, `discard` removes it.
#[test]
fn w5_sigkill_keeps_changes_until_discard() {
    each(&|who| {
        let c = Case::new(who);
        let script = format!("echo before > written; {}", ready_then_wait());
        let run = start(&mut c.cow("w5", &script));
        wait_for(&c.side().join("ready"));
        kill(run.pid, libc::SIGKILL);
        let _ = run.finish(LIMIT);
        assert!(!c.dir().join("written").exists(), "{who:?}: reached DIR");
        let kept = c.kept().join("w5");
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{who:?}");
        let stat = c.run(&["diff", "w5", "--stat"]);
        assert!(stat.out.lines().any(|l| l == "A written"), "{who:?}: {}\n{}", stat.out, stat.err);
        // Another sandbox with the state directory's parent bound sees nothing of it.
        let st = c.state.path().to_str().unwrap().to_string();
        let look = c.run(&["--ro", &st, "--", "ls", "-A", &format!("{st}/snug")]);
        assert!(!look.out.contains("cow"), "{who:?}: a sandbox sees the kept changes: {}", look.out);
        assert!(std::fs::read_dir(c.state.path().join("snug")).unwrap().count() > 0, "control: it is there");
        assert_eq!(code(&c.run(&["discard", "w5"])), 0);
        assert!(!kept.exists(), "{who:?}: discard left it");
    });
}

/// W5: a kept run whose DIR is gone still lists (saying so), shows its changes, and
/// discards.
#[test]
fn w5_dir_gone_still_lists_and_discards() {
    each(&|who| {
        let c = Case::new(who);
        let out = c.cow("w5g", "echo x > made").output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let moved = c.side().join("moved");
        std::fs::rename(c.dir(), &moved).unwrap();
        let list = crate::common::run_bounded(c.snug(&["diff"]).current_dir(c.side()), LIMIT);
        assert!(list.out.contains("w5g") && list.out.contains("(DIR is gone)"), "{who:?}: {}", list.out);
        let stat = crate::common::run_bounded(c.snug(&["diff", "w5g", "--stat"]).current_dir(c.side()), LIMIT);
        assert!(stat.out.contains("A made"), "{who:?}: {}", stat.out);
        let gone = crate::common::run_bounded(c.snug(&["discard", "w5g"]).current_dir(c.side()), LIMIT);
        assert_eq!(code(&gone), 0, "{who:?}: {}", gone.err);
        assert!(!c.kept().join("w5g").exists(), "{who:?}");
        std::fs::rename(&moved, c.dir()).unwrap();
    });
}

/// W6: git status and commit, a C build with make, and an mmap write behave as on a plain
/// DIR; applied, the host's repository has the commit and the build's output.
#[test]
fn w6_git_make_and_mmap_on_the_copy() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("main.c", "int main(void) { return 0; }\n");
        c.seed("Makefile", "prog: main.c\n\tcc -o prog main.c\n");
        c.seed("mm", "aaaa\n");
        let git = "git -c user.name=t -c user.email=t@example.org -c init.defaultBranch=main";
        let init = format!("{}sh -c '{git} init -q . && {git} add -A && {git} commit -qm one'", as_words(who));
        let ok = std::process::Command::new("sh").args(["-c", &init]).current_dir(c.dir()).status().unwrap();
        assert!(ok.success(), "{who:?}: git init");
        let script = format!(
            "set -e; echo int two\\; >> main.c; {git} status --short | grep -q main.c; {git} commit -qam two; make -s; \
             /usr/bin/python3 -c \"import mmap; f=open('mm','r+b'); m=mmap.mmap(f.fileno(), 0); m[0:4]=b'bbbb'; m.flush()\"; \
             cat mm"
        );
        let out = c.cow_with("w6", &["-p", "@sys"], &script).output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "bbbb\n", "{who:?}: mmap write not seen");
        let out = c.run(&["apply", "w6"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        let log = format!("{}{git} log --format=%s", as_words(who));
        let log = std::process::Command::new("sh").args(["-c", &log]).current_dir(c.dir()).output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&log.stdout),
            "two\none\n",
            "{who:?}: {}",
            String::from_utf8_lossy(&log.stderr)
        );
        assert!(c.dir().join("prog").exists(), "{who:?}: no build output");
        assert_eq!(std::fs::read_to_string(c.dir().join("mm")).unwrap(), "bbbb\n");
    });
}

/// W6: rename(2) of a directory that existed before the run works as root (redirect_dir);
/// as a user the kernel's overlay refuses it with EXDEV (no fuse-overlayfs here), which
/// `doctor` says. The applied rename shows on the host as root.
#[test]
fn w6_rename_of_an_existing_directory() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("d/f", "f\n");
        let py = "import os\ntry:\n os.rename('d', 'e'); print('ok')\nexcept OSError as e:\n print(e.errno)";
        let out = c.cow("w6r", &format!("/usr/bin/python3 -c \"{py}\"")).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let doctor = crate::common::run_bounded(&mut crate::common::snug_cmd(who, c.dir(), &["doctor"]), LIMIT);
        match who {
            Who::Root => {
                assert_eq!(said, "ok", "root: {}", String::from_utf8_lossy(&out.stderr));
                assert_eq!(code(&c.run(&["apply", "w6r"])), 0);
                assert!(c.dir().join("e/f").exists() && !c.dir().join("d").exists(), "root: rename not applied");
                assert!(doctor.out.contains("--cow") && doctor.out.contains("redirect_dir"), "{}", doctor.out);
            }
            Who::User => {
                assert_eq!(said, libc::EXDEV.to_string(), "user: {}", String::from_utf8_lossy(&out.stderr));
                assert!(doctor.out.contains("--cow") && doctor.out.contains("EXDEV"), "{}", doctor.out);
            }
        }
    });
}

/// W5: while the `--cow` run is still going, `snug apply` and `snug discard` of its name are
/// refused (64, the run named) and `snug diff` lists it as running; its later writes are kept,
/// and once it has ended both work. Positive control once against the build before: `apply`
/// exited 0 under the live payload, whose next write then failed ("Directory nonexistent"),
/// and the run ended saying its kept changes could not be read.
#[test]
fn w5_apply_and_discard_wait_for_the_run_to_end() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("f", "0\n");
        let script = format!("echo one > f; {}; echo two > g", ready_then_wait());
        let run = start(&mut c.cow("w5live", &script));
        wait_for(&c.side().join("ready"));
        for verb in ["apply", "discard"] {
            let out = c.run(&[verb, "w5live"]);
            assert_eq!(code(&out), 64, "{who:?} {verb}: {}", out.err);
            assert!(out.err.starts_with("snug: ") && out.err.contains("still running"), "{who:?}: {}", out.err);
        }
        let list = c.run(&["diff"]);
        assert!(list.out.lines().any(|l| l.starts_with("w5live\t") && l.contains("(running)")), "{}", list.out);
        assert_eq!(std::fs::read_to_string(c.dir().join("f")).unwrap(), "0\n", "{who:?}: applied under the run");
        std::fs::write(c.side().join("go"), "").unwrap();
        assert_eq!(code(&run.finish(LIMIT)), 0);
        let out = c.run(&["apply", "w5live"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert_eq!(std::fs::read_to_string(c.dir().join("g")).unwrap(), "two\n", "{who:?}: the later write");
    });
}
