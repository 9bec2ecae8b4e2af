//! Messages that say what to do (SPEC O7, K5, P4).

use crate::common::*;
use crate::conventions::{give, snug_run};
use std::process::Command;

/// O7: `-p net` names the builtin it most likely meant. Control: `-p @net` would resolve,
/// and a name with no such builtin (`-p nosuch`) gets no guess. Fails without the fix:
/// "unknown profile net: no net.toml in …" and nothing more.
#[test]
fn o7_bare_builtin_name_suggests_the_at_form() {
    for who in everyone() {
        let dir = workdir(who);
        let o = snug_run(who, dir.path(), &["-n", "-p", "net", "--", "true"], &[]);
        assert_eq!(o.status.code(), Some(77), "{who:?}: {}", o.err);
        assert!(
            o.err.starts_with("snug: unknown profile net:") && o.err.ends_with("; did you mean @net?\n"),
            "{}",
            o.err
        );
        let o = snug_run(who, dir.path(), &["-n", "-p", "nosuch", "--", "true"], &[]);
        assert_eq!(o.status.code(), Some(77), "{who:?}: {}", o.err);
        assert!(!o.err.contains("did you mean"), "control: {}", o.err);
    }
}

/// K5: `--memory` where no cgroup can hold it says how to get one. Only the test user lacks a
/// delegated cgroup here. Fails without the fix: the line stopped at "(no delegated cgroup)".
#[test]
fn k5_memory_without_a_cgroup_says_how_to_get_one() {
    if !is_root() {
        return;
    }
    let dir = workdir(Who::User);
    let o = snug_run(Who::User, dir.path(), &["--memory", "64M", "--", "true"], &[]);
    if o.status.code() == Some(0) {
        return; // this host delegates a memory cgroup to the user: nothing to say
    }
    assert_eq!(o.status.code(), Some(69), "{}", o.err);
    assert!(o.err.contains("systemd-run --user --scope -p Delegate=yes") && o.err.contains("or as root"), "{}", o.err);
    assert_eq!(o.err.lines().count(), 1, "{}", o.err);
}

/// O7: a DIR that does not exist is named as the DIR argument; one that is a program gets
/// the `--` that runs it. Control: an existing directory runs. Fails without the fix:
/// "snug: /nope: No such file or directory", "snug: /usr/bin/env: not a directory".
#[test]
fn o7_bad_dir_is_named_as_dir() {
    for who in everyone() {
        let dir = workdir(who);
        let o = snug_run(who, dir.path(), &["/nope-snug"], &[]);
        assert_eq!((o.status.code(), o.err.as_str()), (Some(64), "snug: DIR /nope-snug: No such file or directory\n"));
        let o = snug_run(who, dir.path(), &["/usr/bin/env"], &[]);
        assert_eq!(o.status.code(), Some(64), "{}", o.err);
        assert_eq!(o.err, "snug: DIR /usr/bin/env: not a directory; to run it as the command: snug -- /usr/bin/env\n");
        let o = snug_run(who, dir.path(), &[".", "--", "true"], &[]);
        assert_eq!(o.status.code(), Some(0), "control: {}", o.err);
    }
}

/// O7: a git worktree whose repository lies outside DIR gets one line naming the `--ro` that
/// shows it, and with that grant git works and the line is gone (the control). Fails without
/// the fix: no line, git said "fatal: not a git repository".
#[test]
fn o7_git_worktree_outside_dir_gets_a_hint() {
    for who in everyone() {
        let top = workdir(who);
        let main = top.path().join("a/main");
        let wt = top.path().join("b/wt");
        std::fs::create_dir_all(&main).expect("mkdir");
        std::fs::create_dir_all(wt.parent().expect("parent")).expect("mkdir");
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(["-c", "user.email=t@t", "-c", "user.name=t"])
                .args(args)
                .current_dir(&main)
                .output()
                .expect("git");
            assert!(ok.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&ok.stderr));
        };
        git(&["init", "-q"]);
        git(&["commit", "-q", "--allow-empty", "-m", "x"]);
        git(&["worktree", "add", "-q", wt.to_str().expect("utf8")]);
        give(who, top.path());
        let common = main.join(".git");
        let o = snug_run(who, &wt, &["--", "git", "-c", "safe.directory=*", "status", "--short"], &[]);
        let want = format!(
            "snug: DIR is a git worktree whose repository {} is outside it: git in the sandbox will say \
             \"not a git repository\"; add --ro {} to show it\n",
            common.display(),
            common.display()
        );
        // After git's own error: O11 says a hint only once the run failed.
        assert!(o.err.ends_with(&want), "{who:?}: {}", o.err);
        assert_ne!(o.status.code(), Some(0), "git fails without the grant: {}", o.err);
        let ro = common.to_str().expect("utf8");
        let o = snug_run(who, &wt, &["--ro", ro, "--", "git", "-c", "safe.directory=*", "status", "--short"], &[]);
        assert_eq!(o.status.code(), Some(0), "{who:?} control: {}", o.err);
        assert!(o.err.is_empty(), "{who:?} control: {}", o.err);
    }
}

/// P4: `profile list` marks every profile `-p` would refuse, with the reason: an include
/// cycle, a chain too deep, a bad key, a dangling symlink. Control: a good profile shows its
/// description. Fails without the fix: the cycle and the deep chain showed "(no
/// description)", and the dangling symlink was not listed.
#[test]
fn p4_profile_list_marks_invalid_profiles() {
    let cfg = tempfile::tempdir().expect("tempdir");
    let d = cfg.path().join("snug/profiles.d");
    std::fs::create_dir_all(&d).expect("mkdir");
    let w = |n: &str, t: &str| std::fs::write(d.join(format!("{n}.toml")), t).expect("write");
    w("cyc-a", "include = [\"cyc-b\"]\n");
    w("cyc-b", "include = [\"cyc-a\"]\n");
    for i in 0..40 {
        w(&format!("deep{i:02}"), &format!("include = [\"deep{:02}\"]\n", i + 1));
    }
    w("deep40", "description = \"end\"\n");
    w("badkey", "rox = [\"/x\"]\n");
    w("good", "description = \"a good one\"\n");
    std::os::unix::fs::symlink("/nonexistent-snug", d.join("dangling.toml")).expect("symlink");
    let mut c = Command::new(snug());
    c.args(["profile", "list"]).env("XDG_CONFIG_HOME", cfg.path());
    let o = run_bounded(&mut c, crate::conventions::LIMIT);
    assert_eq!(o.status.code(), Some(0), "{}", o.err);
    let line = |n: &str| o.out.lines().find(|l| l.trim_start().starts_with(&format!("{n} "))).unwrap_or("").to_string();
    assert!(line("cyc-a").contains("(invalid: include cycle: cyc-a -> cyc-b -> cyc-a)"), "{}", o.out);
    assert!(line("deep00").contains("(invalid:") && line("deep00").contains("deeper than 32"), "{}", o.out);
    assert!(line("badkey").contains("(invalid:") && line("badkey").contains("unknown field"), "{}", o.out);
    assert!(line("dangling").contains("(invalid: a symlink to /nonexistent-snug, which does not exist)"), "{}", o.out);
    assert!(line("good").contains("a good one"), "control: {}", o.out);
    assert!(line("deep39").contains("(no description)"), "control: a chain within the bound: {}", o.out);
}

/// R4: a subcommand whose reader went away (`snug completions bash | head -1`) ends as `cat`
/// does, by SIGPIPE and without a line; a write that fails otherwise (`> /dev/full`) is one
/// `snug: ` line and 71. The pipe's reader is closed before snug starts, so the write fails
/// every time. Positive control: the build before printed "snug: cannot write to stdout:
/// broken pipe" and exited 70, and 70 for /dev/full.
#[test]
fn r4_a_reader_gone_ends_snug_by_sigpipe_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let (r, w) = std::io::pipe().expect("pipe");
    drop(r);
    let mut c = Command::new(snug());
    c.args(["completions", "bash"]).stdout(w).stderr(std::process::Stdio::piped());
    // SAFETY: only resets a signal disposition (async-signal-safe) in the forked child.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, || {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            Ok(())
        })
    };
    let o = c.output().expect("snug");
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{:?}: {}", o.status, String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let o = Command::new(snug()).args(["completions", "bash"]).stdout(full).output().expect("snug");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(71), "{err}");
    assert!(err.starts_with("snug: cannot write to stdout") && err.lines().count() == 1, "{err}");
}
