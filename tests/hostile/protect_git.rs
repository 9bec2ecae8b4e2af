//! P8: what a repository's config sends git to, beyond `.git/hooks` and `.git/config`: the
//! git directory of a submodule that is not initialised yet, `config.worktree`, and a file the
//! config includes. A payload that makes any of them has it moved aside after the run, with
//! one `snug: ` line, so the host's next git command runs nothing of the payload's. Each
//! attack runs once more with `--unprotect` as a control in the test itself: there the host's
//! git runs the payload's code, so the assertions see the protection and not a broken attack.

use crate::common::*;
use crate::hostile::args::chown_tree;
use crate::hostile::protect::{repo, sh, snug_run};
use std::path::Path;
use std::time::Duration;

/// One run of `script` in `dir` named `name`, with `--unprotect` of `lift` when given; the
/// host's `git` then runs `host` in `dir`. Whether `marker` appeared, and the run's stderr.
fn attack(who: Who, dir: &Path, name: &str, lift: Option<&Path>, script: &str, host: &[&str], marker: &Path) -> String {
    let _ = std::fs::remove_file(marker);
    let un = lift.map(|p| format!("--unprotect={}", p.display()));
    let mut args: Vec<&str> = un.iter().map(String::as_str).collect();
    args.extend(["--name", name, "--", "sh", "-c", script]);
    let o = snug_run(who, dir, &args);
    assert!(o.status.success(), "{who:?} {name}: {}", o.err);
    let _ = run_bounded(&mut cmd_as(who, dir, "git", host), Duration::from_secs(30));
    o.err
}

/// The one `snug: ` line that says `what` was moved aside, and the place it went exists (the
/// host's git may have made `what` afresh since).
fn moved_aside(who: Who, err: &str, what: &Path, name: &str) {
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("snug: ") && l.contains("moved aside")).collect();
    assert_eq!(lines.len(), 1, "{who:?}: {err}");
    assert!(lines[0].contains(&what.display().to_string()), "{who:?}: {}", lines[0]);
    let aside = what.with_file_name(format!("{}.snug-{name}", what.file_name().unwrap().to_string_lossy()));
    assert!(aside.exists(), "{who:?}: {} not moved aside", what.display());
}

/// P8: a submodule that `.gitmodules` names but that is not initialised (no
/// `.git/modules/NAME`): a git directory the payload plants there, with a post-checkout
/// hook, is moved aside, so the host's `git submodule update --init` clones afresh and runs no
/// hook of the payload's. Control: with `--unprotect` the host's update ran the planted hook.
/// Positive control once against the build before this protection: the planted directory
/// stayed and the host's `git submodule update --init` ran its hook.
#[test]
fn p8_an_uninitialised_submodules_git_dir_cannot_be_planted() {
    for who in everyone() {
        let work = workdir(who);
        let (sub, top) = (work.path().join("sub"), work.path().join("top"));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(&top).unwrap();
        chown_tree(who, work.path());
        repo(who, &sub);
        repo(who, &top);
        sh(
            who,
            &top,
            "git -c protocol.file.allow=always submodule add -q ../sub other && git commit -qm add \
             && git submodule deinit -q -f other && rm -rf .git/modules/other",
        );
        let marker = work.path().join("hook-ran");
        let plant = format!(
            "git clone -q --bare ../sub .git/modules/other && git --git-dir=.git/modules/other config core.bare false \
             && printf '#!/bin/sh\\ntouch {}\\n' > .git/modules/other/hooks/post-checkout \
             && chmod +x .git/modules/other/hooks/post-checkout",
            marker.display()
        );
        let host = ["-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init"];
        let gitdir = top.join(".git/modules/other");
        let err = attack(who, &top, "p8sm", None, &plant, &host, &marker);
        moved_aside(who, &err, &gitdir, "p8sm");
        assert!(!marker.exists(), "{who:?}: the host's git ran the planted hook");
        sh(who, &top, "git submodule deinit -q -f other && rm -rf .git/modules/other");
        attack(who, &top, "p8sm2", Some(&gitdir), &plant, &host, &marker);
        assert!(marker.exists(), "{who:?}: control: the host's git did not run the planted hook");
    }
}

/// P8: `config.worktree`, which git reads as config once `extensions.worktreeConfig` is on: one
/// the payload makes while the extension is off is moved aside, so turning it on later runs
/// no fsmonitor of the payload's; while the extension is on, it cannot be written at all. An
/// included config file (`include.path = ../.gitconfig`, in DIR) made by the payload is moved
/// aside, and an existing one is read-only. Controls: with `--unprotect` the host's `git
/// status` ran the payload's fsmonitor. Positive control once against the build before this
/// protection: both files stayed, and the host's `git status` ran the fsmonitor.
#[test]
fn p8_worktree_config_and_included_config_are_protected() {
    for who in everyone() {
        let work = workdir(who);
        let dir = work.path();
        chown_tree(who, dir);
        repo(who, dir);
        let marker = dir.join("fsmonitor-ran");
        let evil =
            |file: &str| format!("printf '[core]\\n\\tfsmonitor = \"touch {}; false\"\\n' >> {file}", marker.display());
        let wt = dir.join(".git/config.worktree");
        let err = attack(who, dir, "p8wt", None, &evil(".git/config.worktree"), &["status"], &marker);
        moved_aside(who, &err, &wt, "p8wt");
        sh(who, dir, "git config extensions.worktreeConfig true");
        let _ = run_bounded(&mut cmd_as(who, dir, "git", &["status"]), Duration::from_secs(30));
        assert!(!marker.exists(), "{who:?}: the host's git ran the payload's config.worktree");
        let o = snug_run(who, dir, &["--", "sh", "-c", &evil(".git/config.worktree")]);
        assert!(!o.status.success() && !wt.exists(), "{who:?}: config.worktree written with the extension on");
        attack(who, dir, "p8wt2", Some(&wt), &evil(".git/config.worktree"), &["status"], &marker);
        assert!(marker.exists(), "{who:?}: control: config.worktree did not reach the host's git");
        std::fs::remove_file(&wt).unwrap();

        sh(who, dir, "git config include.path ../.gitconfig");
        let inc = dir.join(".gitconfig");
        let err = attack(who, dir, "p8inc", None, &evil(".gitconfig"), &["status"], &marker);
        moved_aside(who, &err, &inc, "p8inc");
        assert!(!marker.exists(), "{who:?}: the host's git ran the payload's included config");
        sh(who, dir, "printf '[user]\\n' > .gitconfig");
        let o = snug_run(who, dir, &["--", "sh", "-c", &evil(".gitconfig")]);
        assert!(!o.status.success(), "{who:?}: an existing included config was writable");
        std::fs::remove_file(&inc).unwrap();
        attack(who, dir, "p8inc2", Some(&inc), &evil(".gitconfig"), &["status"], &marker);
        assert!(marker.exists(), "{who:?}: control: the included config did not reach the host's git");
    }
}

/// P8: a payload that knows the run's name (`--name ci` in a script) takes every numbered
/// name `commondir` would be moved aside to (`.snug-NAME`, `-2` … `-99`), then writes
/// `.git/commondir` to a git directory whose fsmonitor runs a command: it is still moved
/// aside (to a name no payload can guess), with its `snug: ` line, and the host's `git
/// status` runs nothing. Positive control: against the build before, commondir stayed, no
/// line was printed, and the host's git ran the fsmonitor.
#[test]
fn p8_moving_aside_survives_every_numbered_name_taken() {
    for who in everyone() {
        let work = workdir(who);
        let dir = work.path();
        repo(who, dir);
        let marker = dir.join("fsmonitor-ran");
        let script = format!(
            "c=.git/commondir.snug-p8taken; : > $c; i=2; while [ $i -le 99 ]; do : > $c-$i; i=$((i+1)); done; \
             git init -q --bare evil.git; printf '[core]\\n\\tfsmonitor = touch {}\\n' >> evil.git/config; \
             echo ../evil.git > .git/commondir",
            marker.display()
        );
        let err = attack(who, dir, "p8taken", None, &script, &["status"], &marker);
        assert!(!dir.join(".git/commondir").exists(), "{who:?}: commondir stayed: {err}");
        assert!(!marker.exists(), "{who:?}: the host's git ran the payload's fsmonitor");
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("commondir")).collect();
        assert!(
            lines.len() == 1 && lines[0].starts_with("snug: ") && lines[0].contains("moved aside"),
            "{who:?}: {err}"
        );
    }
}
