//! P8: what the host runs code from later (git's hooks and config, `commondir`, a worktree's
//! git directory, `.envrc`, `.vscode/`) stays read-only to the payload, existing or not, also
//! after renames of the directories above it; git's everyday commands keep working; DIR holds
//! nothing extra after the run, also after a SIGKILL of snug once the next run has run.
//! Each attack runs once more with `--unprotect` as a control in the test itself: there it
//! succeeds, so the assertions see the protection and not a broken attack.

use crate::common::*;
use crate::hostile::args::chown_tree;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Every entry below `dir`: its kind and bytes (a file), target (a symlink) or nothing.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let md = std::fs::symlink_metadata(&p).unwrap();
            let what = if md.is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).unwrap())
            } else if md.is_dir() {
                todo.push(p.clone());
                "dir".to_string()
            } else {
                format!("file {:?}", std::fs::read(&p).unwrap())
            };
            out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), what);
        }
    }
    out
}

pub(super) fn sh(who: Who, dir: &Path, script: &str) {
    let o = run_bounded(&mut cmd_as(who, dir, "sh", &["-c", script]), Duration::from_secs(30));
    assert!(o.status.success(), "{script}: {}", o.err);
}

/// A repository in `dir` owned by `who`, one commit on `main`, a branch `other`.
pub(super) fn repo(who: Who, dir: &Path) {
    sh(
        who,
        dir,
        "git init -q -b main . && git config user.email t@example.org && git config user.name t \
         && echo a > f && git add f && git commit -qm one && git branch other",
    );
}

pub(super) fn snug_run(who: Who, dir: &Path, args: &[&str]) -> Out {
    let mut all = vec!["--no-project"];
    all.extend(args);
    run_bounded(&mut snug_cmd(who, dir, &all), Duration::from_secs(60))
}

/// The attacks: each line the payload prints names one that worked.
const ATTACK: &str = r#"
for f in .git/hooks/pre-commit .git/config .envrc .vscode/tasks.json .idea/workspace.xml; do
  (echo evil > "$f") 2>/dev/null && echo "WROTE $f"
done
mv .git .git.old 2>/dev/null && echo "MOVED .git"
mkdir -p .git/hooks 2>/dev/null; (echo evil > .git/hooks/post-checkout) 2>/dev/null && echo "WROTE after mv"
mv .git/hooks .git/h 2>/dev/null && echo "MOVED .git/hooks"
rm -rf .git/hooks .envrc .idea 2>/dev/null
[ -e .git/hooks ] && [ -e .envrc ] && [ -e .idea ] || echo "REMOVED"
mv .vscode x 2>/dev/null && echo "MOVED .vscode"
mkdir -p .vscode 2>/dev/null; (echo evil > .vscode/tasks.json) 2>/dev/null && echo "WROTE .vscode after mv"
true
"#;

/// P8: hooks, config, `.envrc`, `.vscode/` and `.idea/`, existing (a repository with all of
/// them) and not yet existing (a fresh repository without hooks, no `.envrc`, `.vscode`,
/// `.idea`): no write, rename or removal works, and DIR is byte for byte as before. Control:
/// with `--unprotect` of each, the same payload writes and renames them. Positive control
/// once against the build without protection: every WROTE/MOVED line printed, the host's
/// `.git/hooks/pre-commit` and `.vscode/tasks.json` held `evil`, and `.git` was `.git.old`.
#[test]
fn p8_protected_paths_refuse_writes_and_renames() {
    for who in everyone() {
        for existing in [true, false] {
            let work = workdir(who);
            let dir = work.path().join("repo");
            std::fs::create_dir(&dir).unwrap();
            chown_tree(who, work.path());
            repo(who, &dir);
            if existing {
                sh(who, &dir, "mkdir -p .vscode .idea && echo '{}' > .vscode/tasks.json && echo 'export A=1' > .envrc && echo '#!/bin/sh' > .git/hooks/pre-commit");
            } else {
                std::fs::remove_dir_all(dir.join(".git/hooks")).unwrap();
            }
            let before = snapshot(&dir);
            let o = snug_run(who, &dir, &["--", "sh", "-c", ATTACK]);
            assert!(o.status.success(), "{who:?} {existing}: {}", o.err);
            assert_eq!(o.out, "", "{who:?} existing={existing}: attacks that worked");
            assert_eq!(snapshot(&dir), before, "{who:?} existing={existing}: DIR changed");

            let d = dir.to_str().unwrap();
            let lift: Vec<String> =
                [".git", ".envrc", ".vscode", ".idea"].iter().map(|p| format!("--unprotect={d}/{p}")).collect();
            let mut args: Vec<&str> = lift.iter().map(String::as_str).collect();
            args.extend(["--", "sh", "-c", ATTACK]);
            let o = snug_run(who, &dir, &args);
            let worked: &[&str] = match existing {
                true => {
                    &["WROTE .git/hooks/pre-commit", "WROTE .git/config", "WROTE .envrc", "MOVED .git", "MOVED .vscode"]
                }
                false => &["WROTE .git/config", "WROTE .envrc", "MOVED .git", "WROTE after mv"],
            };
            for line in worked {
                assert!(o.out.contains(line), "{who:?} existing={existing}: control lacks {line}: {}{}", o.out, o.err);
            }
        }
    }
}

/// P8: git inside works on a protected repository: status, commit, checkout of a branch,
/// log, fetch from a local remote. The commands that write `.git/config` fail visibly: `git
/// config` and `git remote add` with a non-zero status, `git branch -u` and `checkout -b
/// --track` with git's "could not write config file" although they exit 0 (the docs list
/// them). The host's config is unchanged. Positive control once against the build without
/// protection: `git config` exited 0 (the first assertion on config writes failed).
#[test]
fn p8_git_everyday_commands_work_inside() {
    for who in everyone() {
        let work = workdir(who);
        let dir = work.path().join("repo");
        std::fs::create_dir(&dir).unwrap();
        chown_tree(who, work.path());
        repo(who, &dir);
        sh(who, work.path(), "git clone -q --bare repo remote.git && cd repo && git remote add origin ../remote.git && git fetch -q origin");
        let config = std::fs::read(dir.join(".git/config")).unwrap();
        let script = r#"
git status --short >/dev/null && echo STATUS-OK
echo b >> f && git commit -qam two && echo COMMIT-OK
git checkout -q other && echo CHECKOUT-OK
git log --oneline | grep -q one && echo LOG-OK
git fetch -q origin && echo FETCH-OK
git config x.y z 2>/dev/null; echo "CONFIG $?"
git remote add up ../remote.git 2>/dev/null; echo "REMOTE-ADD $?"
git branch -u origin/main; echo "BRANCH-U $?"
git checkout -q -b tr --track origin/main; echo "TRACK $?"
"#;
        let o = snug_run(who, &dir, &["--", "sh", "-c", script]);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        for ok in ["STATUS-OK", "COMMIT-OK", "CHECKOUT-OK", "LOG-OK", "FETCH-OK", "BRANCH-U 0", "TRACK 0"] {
            assert!(o.out.lines().any(|l| l == ok), "{who:?}: no {ok}: {}{}", o.out, o.err);
        }
        for failed in ["CONFIG 0", "REMOTE-ADD 0"] {
            assert!(!o.out.lines().any(|l| l == failed), "{who:?}: {failed}: {}", o.out);
        }
        assert_eq!(o.err.matches("could not write config file").count(), 4, "{who:?}: {}", o.err);
        assert_eq!(std::fs::read(dir.join(".git/config")).unwrap(), config, "{who:?}: the host's config changed");
        let log = run_bounded(&mut cmd_as(who, &dir, "git", &["log", "--oneline", "main"]), Duration::from_secs(10));
        assert!(log.out.contains("two"), "{who:?}: the commit made inside is on the host: {}", log.out);
    }
}

/// P8: `commondir` and the git directory a worktree's `.git` file names. In a worktree whose
/// main repository is granted `--rw`: its `.git` file, the named directory's config and
/// commondir, the main repository's config and hooks are read-only. In a repository without
/// `commondir`, one the payload makes (naming a git directory whose config sets
/// core.fsmonitor) is moved aside after the run with one `snug: ` line, so the host's `git
/// status` runs no fsmonitor. Control: with `--unprotect`, the host's git ran the payload's
/// fsmonitor. Positive control once against the build without protection: every write
/// worked (`.git`, the named directory's config and commondir, the main repository's config
/// and hook) and `mv` of the main repository's `.git` succeeded.
#[test]
fn p8_commondir_and_worktree_git_dir() {
    for who in everyone() {
        let work = workdir(who);
        let (main, wt) = (work.path().join("main"), work.path().join("wt"));
        std::fs::create_dir(&main).unwrap();
        chown_tree(who, work.path());
        repo(who, &main);
        sh(who, &main, "git worktree add -q ../wt other");
        let before = (snapshot(&main), snapshot(&wt));
        let g = main.join(".git/worktrees/wt");
        let script = format!(
            "for f in .git {g}/config {g}/commondir {g}/hooks/pre-commit {m}/.git/config {m}/.git/hooks/pre-commit; do \
               (echo evil > \"$f\") 2>/dev/null && echo \"WROTE $f\"; done; \
             mv {m}/.git {m}/.git.old 2>/dev/null && echo MOVED; true",
            g = g.display(),
            m = main.display()
        );
        let m = main.to_str().unwrap();
        let o = snug_run(who, &wt, &["--rw", m, "--", "sh", "-c", &script]);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        assert_eq!(o.out, "", "{who:?}: attacks that worked");
        assert_eq!((snapshot(&main), snapshot(&wt)), before, "{who:?}: changed");

        let marker = work.path().join("fsmonitor-ran");
        let plant = format!(
            "git init -q --bare evil.git 2>/dev/null; \
             printf '[core]\\n\\tfsmonitor = touch {}\\n' >> evil.git/config; echo ../evil.git > .git/commondir; true",
            marker.display()
        );
        // The evil git directory is planted in DIR, beside .git (DIR is writable).
        for lift in [false, true] {
            let _ = std::fs::remove_dir_all(main.join("evil.git"));
            let c = main.join(".git/commondir");
            let mut args = vec![];
            let un = format!("--unprotect={m}/.git/commondir");
            if lift {
                args.push(un.as_str());
            }
            args.extend(["--name", "p8cd", "--", "sh", "-c", &plant]);
            let o = snug_run(who, &main, &args);
            assert!(o.status.success(), "{who:?}: {}", o.err);
            let _ = run_bounded(&mut cmd_as(who, &main, "git", &["status"]), Duration::from_secs(10));
            if lift {
                assert!(marker.exists(), "{who:?}: control: the host's git did not run the fsmonitor");
                std::fs::remove_file(&c).unwrap();
            } else {
                assert!(!c.exists() && main.join(".git/commondir.snug-p8cd").exists(), "{who:?}: not moved aside");
                let lines: Vec<&str> = o.err.lines().filter(|l| l.contains("commondir")).collect();
                assert_eq!(lines.len(), 1, "{who:?}: {}", o.err);
                assert!(lines[0].starts_with("snug: ") && lines[0].contains("moved aside"), "{}", lines[0]);
                assert!(!marker.exists(), "{who:?}: the host's git ran the payload's fsmonitor");
            }
        }
    }
}

/// P8: a `.git` the payload makes where there was none is moved aside after the run, named
/// in one `snug: ` line; with `--unprotect` it stays. Positive control once against the build
/// without protection: `.git` stayed in DIR with the payload's hook.
#[test]
fn p8_new_git_is_moved_aside() {
    for who in everyone() {
        let work = workdir(who);
        let dir = work.path();
        let script = "git init -q . && echo evil > .git/hooks/pre-commit";
        let o = snug_run(who, dir, &["--name", "p8new", "--", "sh", "-c", script]);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        assert!(!dir.join(".git").exists() && dir.join(".git.snug-p8new/hooks/pre-commit").exists(), "{who:?}");
        assert_eq!(o.err.lines().filter(|l| l.starts_with("snug: ") && l.contains(".git")).count(), 1, "{}", o.err);
        std::fs::remove_dir_all(dir.join(".git.snug-p8new")).unwrap();
        let lift = format!("--unprotect={}/.git", dir.display());
        let o = snug_run(who, dir, &[&lift, "--", "sh", "-c", script]);
        assert!(o.status.success() && dir.join(".git/hooks/pre-commit").exists(), "{who:?}: {}", o.err);
    }
}

/// P8: the placeholders are gone after the run, and after a SIGKILL of snug (which leaves
/// them: nothing of snug's runs then) the next run sweeps them: DIR holds what it held.
/// Positive control: right after the SIGKILL the placeholders are there (asserted below);
/// with the next run not knowing them by their mode, it took them for the user's own and left
/// `.envrc`, `.idea`, `.snug.toml` and `.vscode` in DIR.
#[test]
fn p8_placeholders_go_also_after_sigkill() {
    for who in everyone() {
        let work = workdir(who);
        let dir = work.path();
        std::fs::write(dir.join("keep"), "k").unwrap();
        chown_tree(who, dir);
        let before = snapshot(dir);
        let o = snug_run(who, dir, &["--", "sh", "-c", "test -d .envrc && test -d .vscode && echo SEEN"]);
        assert_eq!(o.out.trim(), "SEEN", "{who:?}: {}", o.err);
        assert_eq!(snapshot(dir), before, "{who:?}: DIR holds more after the run");

        let mut c = snug_cmd(who, dir, &["--no-project", "--", "sh", "-c", "echo ready; exec sleep 600"]);
        c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
        let mut child = spawn_own_group(&mut c);
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        kill(child.id(), libc::SIGKILL);
        let _ = child.wait();
        assert!(dir.join(".envrc").is_dir() && dir.join(".vscode").is_dir(), "{who:?}: no placeholders left to sweep");
        let o = snug_run(who, dir, &["--", "true"]);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        assert_eq!(snapshot(dir), before, "{who:?}: DIR holds more after the next run");
    }
}

/// P8: two runs side by side in one DIR share the placeholders: the one that ends first leaves
/// them to the other, whose payload still cannot make `.envrc`; the last removes them.
/// Positive control once, with each run removing its placeholders at its end regardless of
/// the other's lock: the short run removed the `.envrc` the long run still held.
#[test]
fn p8_runs_side_by_side_share_placeholders() {
    for who in everyone() {
        let work = workdir(who);
        let dir = work.path();
        let gate = dir.join("gate");
        std::fs::create_dir(&gate).unwrap();
        chown_tree(who, dir);
        let before = snapshot(dir);
        // The long run waits until the short one has ended (the gate's file), then writes.
        let script = "echo ready; while [ ! -e gate/go ]; do sleep 0.05; done; \
                      (echo evil > .envrc) 2>/dev/null && echo WROTE; rm -f gate/go; true";
        let mut c = snug_cmd(who, dir, &["--no-project", "--", "sh", "-c", script]);
        c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
        let mut long = spawn_own_group(&mut c);
        let mut out = std::io::BufReader::new(long.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        let o = snug_run(who, dir, &["--", "true"]);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        assert!(dir.join(".envrc").is_dir(), "{who:?}: the short run removed a placeholder the long one holds");
        sh(who, dir, "touch gate/go");
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        let _ = long.wait();
        assert_eq!(rest, "", "{who:?}: the long run's payload wrote .envrc");
        assert_eq!(snapshot(dir), before, "{who:?}: DIR holds more after both runs");
    }
}

/// P8: a protected path that is a symlink (`.vscode` naming a directory outside DIR), which the
/// payload removes and makes anew as a directory with a task in it, is moved aside after the
/// run with one `snug: ` line, also when the new directory got the symlink's inode number (ext4
/// hands the `mkdir` right after an `rm` the freed one). Control: a run that leaves the symlink
/// alone moves nothing. Positive control once against the build that told them apart by
/// device and inode alone: the new `.vscode` stayed in DIR, without a line.
#[test]
fn p8_a_symlink_replaced_with_its_inode_number_is_moved_aside() {
    for who in everyone() {
        let work = workdir(who);
        let dir = work.path().join("dir");
        std::fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink("../outside", dir.join(".vscode")).unwrap();
        chown_tree(who, work.path());
        let o = snug_run(who, &dir, &["--", "sh", "-c", "readlink .vscode"]);
        assert!(o.status.success() && !o.err.contains("moved aside"), "{who:?} control: {}", o.err);
        assert!(std::fs::symlink_metadata(dir.join(".vscode")).unwrap().is_symlink(), "{who:?}: control moved it");
        let script = "rm -f .vscode && mkdir .vscode && echo evil > .vscode/tasks.json";
        let o = snug_run(who, &dir, &["--name", "p8rs", "--", "sh", "-c", script]);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        let lines: Vec<&str> = o.err.lines().filter(|l| l.starts_with("snug: ") && l.contains("moved aside")).collect();
        assert_eq!(lines.len(), 1, "{who:?}: {}", o.err);
        assert!(lines[0].contains("replaced") && lines[0].contains(".vscode"), "{who:?}: {}", lines[0]);
        assert!(std::fs::symlink_metadata(dir.join(".vscode")).is_err(), "{who:?}: the payload's .vscode stayed");
        assert!(dir.join(".vscode.snug-p8rs/tasks.json").exists(), "{who:?}: not moved aside whole");
    }
}
