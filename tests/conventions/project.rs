//! P6: a project's own `.snug.toml`, applied only once its user allowed that content.

use crate::common::*;
use crate::conventions::{give, snug_run};

/// P6: refused (77, with how to review and allow) before `snug allow`, applied after (its
/// env, and a profile from `profiles`), refused again after an edit (with the `diff` that
/// shows the change), skipped with `--no-project`, refused again after `--revoke`. The
/// control is the same run with `--no-project`, and a DIR without the file, which are never
/// refused. Fails without the fix: the file was ignored, the first run exited 0 with FOO
/// unset.
#[test]
fn p6_project_file_needs_allow() {
    for who in everyone() {
        let dir = workdir(who);
        let state = workdir(who);
        let st = state.path().to_str().expect("utf8");
        let d = dir.path().to_str().expect("utf8").to_string();
        let file = format!("{d}/.snug.toml");
        std::fs::write(&file, "env = { FOO = \"from-project\" }\nprofiles = [\"@tmp-shared\"]\n").expect("write");
        give(who, dir.path());
        let env = [("XDG_STATE_HOME", st)];
        let probe = ["--", "sh", "-c", "echo FOO=$FOO"];
        let run = |args: &[&str]| snug_run(who, dir.path(), args, &env);

        let o = run(&probe);
        assert_eq!(o.status.code(), Some(77), "{who:?}: {}", o.err);
        let want = format!(
            "snug: {file} is not allowed: review it (cat {file}), then snug allow {d}, or run with --no-project\n"
        );
        assert_eq!(o.err, want, "{who:?}");
        assert!(o.out.is_empty(), "nothing ran: {}", o.out);

        let o = run(&["--no-project", "--", "sh", "-c", "echo FOO=$FOO"]);
        assert_eq!((o.status.code(), o.out.as_str()), (Some(0), "FOO=\n"), "{who:?} control: {}", o.err);

        let o = run(&["allow", &d]);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {}", o.err);
        assert!(o.out.starts_with(&format!("allowed {file} (sha256 ")), "{}", o.out);
        let o = run(&probe);
        assert_eq!((o.status.code(), o.out.as_str()), (Some(0), "FOO=from-project\n"), "{who:?}: {}", o.err);
        let o = run(&["-n", "--json", "--", "true"]);
        let plan: serde_json::Value = serde_json::from_str(&o.out).expect("json");
        let profiles = plan["profiles"].to_string();
        assert!(profiles.contains("@tmp-shared") && profiles.contains(".snug.toml"), "{who:?}: {}", o.out);

        std::fs::write(&file, "env = { FOO = \"edited\" }\n").expect("write");
        give(who, dir.path());
        let o = run(&probe);
        assert_eq!(o.status.code(), Some(77), "{who:?}: {}", o.err);
        assert!(
            o.err.starts_with(&format!(
                "snug: {file} changed since you allowed it: review it (diff -u {st}/snug/allowed/"
            )),
            "{}",
            o.err
        );
        assert!(
            o.err.ends_with(&format!(".toml {file}), then snug allow {d}, or run with --no-project\n")),
            "{}",
            o.err
        );
        // The diff it names runs and shows the edit.
        let cmd = o.err.split("(diff -u ").nth(1).and_then(|r| r.split(')').next()).expect("diff command");
        let diff = std::process::Command::new("sh").arg("-c").arg(format!("diff -u {cmd}")).output().expect("diff");
        assert!(String::from_utf8_lossy(&diff.stdout).contains("+env = { FOO = \"edited\" }"), "{cmd}");

        let o = run(&["--no-project", "--", "sh", "-c", "echo FOO=$FOO"]);
        assert_eq!((o.status.code(), o.out.as_str()), (Some(0), "FOO=\n"), "{who:?}: {}", o.err);
        let o = run(&["allow", &d]);
        assert_eq!(o.status.code(), Some(0), "{}", o.err);
        assert_eq!(run(&probe).out, "FOO=edited\n", "{who:?}");
        let o = run(&["allow", "--revoke", &d]);
        assert_eq!((o.status.code(), o.out.clone()), (Some(0), format!("revoked {file}\n")), "{}", o.err);
        assert_eq!(run(&probe).status.code(), Some(77), "{who:?}: revoked");

        // Control: a DIR without the file is never refused.
        let other = workdir(who);
        let o = snug_run(who, other.path(), &probe, &env);
        assert_eq!((o.status.code(), o.out.as_str()), (Some(0), "FOO=\n"), "{who:?}: {}", o.err);
    }
}

/// P6, X4: snug's state directory (the allow records, made by `snug allow`) is hidden in
/// every sandbox, also under a bind that contains it, so a payload cannot allow a
/// `.snug.toml` it wrote itself.
/// Fails without the fix: with `--rw` of the directory holding it,
/// the payload wrote `snug/allowed/…` on the host, and the next run applied its file.
#[test]
fn p6_x4_the_state_directory_is_hidden_in_every_sandbox() {
    for who in everyone() {
        let dir = workdir(who);
        let state = workdir(who);
        give(who, state.path());
        let st = state.path().to_str().expect("utf8");
        let env = [("XDG_STATE_HOME", st)];
        std::fs::create_dir_all(state.path().join("snug")).expect("the state directory, as snug allow makes it");
        give(who, state.path());
        let script = format!("mkdir -p {st}/snug/allowed && echo forged > {st}/snug/allowed/x && echo wrote");
        let o = snug_run(who, dir.path(), &["--rw", st, "--", "sh", "-c", &script], &env);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {}", o.err);
        assert!(o.out.contains("wrote"), "{who:?}: {}", o.out);
        let forged = state.path().join("snug/allowed/x");
        assert!(!forged.exists(), "{who:?}: the payload wrote {} on the host", forged.display());
        // The control: the rest of the bind is the host's, as granted.
        let o = snug_run(who, dir.path(), &["--rw", st, "--", "sh", "-c", &format!("echo ok > {st}/visible")], &env);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {}", o.err);
        assert!(state.path().join("visible").exists(), "{who:?}: the grant itself must still work");
    }
}

/// P6, R4: `snug allow` refuses (77) a `.snug.toml` whose `profiles` or `include` names a
/// profile that does not exist (or one that includes a missing one), as the run would,
/// naming the file and the profile, and records nothing; the same file without the name is
/// allowed. Fails without the fix: `snug allow` printed "allowed …" and exited 0, and every
/// run then failed with 77.
#[test]
fn p6_allow_refuses_a_file_naming_a_missing_profile() {
    for who in everyone() {
        let dir = workdir(who);
        let state = workdir(who);
        let st = state.path().to_str().expect("utf8");
        let d = dir.path().to_str().expect("utf8").to_string();
        let file = format!("{d}/.snug.toml");
        let env = [("XDG_STATE_HOME", st)];
        for text in
            ["profiles = [\"no-such-profile-x\"]\n", "include = [\"no-such-profile-x\"]\n", "profiles = [\"@nope\"]\n"]
        {
            std::fs::write(&file, text).expect("write");
            give(who, dir.path());
            let o = snug_run(who, dir.path(), &["allow", &d], &env);
            assert_eq!(o.status.code(), Some(77), "{who:?} {text:?}: {}{}", o.out, o.err);
            assert!(o.err.starts_with(&format!("snug: {file}: unknown profile")), "{who:?}: {}", o.err);
            assert_eq!(o.err.lines().count(), 1, "{who:?}: {}", o.err);
            let recorded = std::fs::read_dir(state.path().join("snug/allowed")).map(|d| d.count()).unwrap_or(0);
            assert_eq!(recorded, 0, "{who:?}: {text:?} was recorded");
        }
        std::fs::write(&file, "profiles = [\"@tmp-shared\"]\n").expect("write");
        give(who, dir.path());
        let o = snug_run(who, dir.path(), &["allow", &d], &env);
        assert_eq!(o.status.code(), Some(0), "{who:?} control: {}", o.err);
    }
}

/// P6 (issue: `mkdir .snug.toml; snug -- true` ran without a word, though "never silently
/// applied or ignored"): a directory at `.snug.toml` is refused with 77 and how to go on, and
/// `--no-project` runs. The placeholder another run keeps there while the file is missing
/// (P8) is no policy: a second run in the same DIR meanwhile runs. Positive control: the build
/// before exits 0 for the plain directory.
#[test]
fn p6_a_directory_at_snug_toml_is_refused_a_placeholder_is_not() {
    for who in everyone() {
        let dir = workdir(who);
        let state = workdir(who);
        let env = [("XDG_STATE_HOME", state.path().to_str().expect("utf8"))];
        let file = dir.path().join(".snug.toml");
        std::fs::create_dir(&file).expect("mkdir");
        give(who, dir.path());
        let o = snug_run(who, dir.path(), &["--", "true"], &env);
        assert_eq!(o.status.code(), Some(77), "{who:?}: {}", o.err);
        let want =
            format!("snug: {}: a directory, not a policy file: remove it, or run with --no-project\n", file.display());
        assert_eq!(o.err, want, "{who:?}");
        let o = snug_run(who, dir.path(), &["--no-project", "--", "true"], &env);
        assert_eq!(o.status.code(), Some(0), "{who:?} control: {}", o.err);
        std::fs::remove_dir(&file).expect("rmdir");

        let mut first = snug_cmd(who, dir.path(), &["--", "sleep", "60"]);
        first.envs(env.iter().copied()).stdout(std::process::Stdio::null());
        let mut first = spawn_own_group(&mut first);
        assert!(until(std::time::Duration::from_secs(15), || file.is_dir()), "{who:?}: no placeholder");
        let o = snug_run(who, dir.path(), &["--", "true"], &env);
        assert_eq!(o.status.code(), Some(0), "{who:?}: beside a placeholder: {}", o.err);
        // SAFETY: a pid this test started, in the test's own pid namespace.
        unsafe { libc::kill(first.id() as i32, libc::SIGTERM) };
        let _ = first.wait();
    }
}
