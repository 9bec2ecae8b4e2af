//! Getting started (SPEC O1, O3, O7), what a new user meets first: the hint for a missing `--`,
//! the hint naming the profile for a command hidden under `$HOME`, the toolchain profiles where
//! the tool exists and where it does not, `profile show` resolving paths, the dry-run line that
//! runs when pasted, and `make install DESTDIR=…`. Real binary, real bwrap, root and user.

use crate::common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

fn snug_run(who: Who, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = snug_cmd(who, dir, args);
    c.envs(env.iter().copied());
    run_bounded(&mut c, LIMIT)
}

/// A HOME for `who` under /tmp, with `files` (path relative to HOME, executable script body).
fn fake_home(who: Who, dirs: &[&str], files: &[(&str, &str)]) -> tempfile::TempDir {
    let home = workdir(who);
    for d in dirs {
        std::fs::create_dir_all(home.path().join(d)).expect("mkdir");
    }
    for (f, body) in files {
        let p = home.path().join(f);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, body).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    if who == Who::User {
        let (uid, gid) = test_user();
        let _ = Command::new("chown").arg("-R").arg(format!("{uid}:{gid}")).arg(home.path()).status();
    }
    home
}

/// O7: a missing `--` gets one line with the right command, exit 64. Control: the same words
/// where the first one is an existing directory run as DIR, no hint.
#[test]
fn o7_missing_dashes_hint_exact_text() {
    for who in everyone() {
        let dir = workdir(who);
        let cases: [(&[&str], &str); 5] = [
            (&["make", "test"], "snug -- make test"),
            (&["make"], "snug -- make"),
            (&["ls", "-la"], "snug -- ls -la"),
            (&["-p", "@net", "make", "test"], "snug -p @net -- make test"),
            (&[".", "ls", "-l"], "snug . -- ls -l"),
        ];
        for (args, want) in cases {
            let o = snug_run(who, dir.path(), args, &[]);
            assert_eq!(o.status.code(), Some(64), "{who:?} {args:?}: {}", o.err);
            assert_eq!(o.err, format!("snug: missing -- before the command; did you mean: {want}\n"), "{who:?}");
            assert!(o.out.is_empty(), "{who:?} {args:?}: {}", o.out);
        }
        // Control: `make` is a directory here, so `snug make` is DIR=make and runs the shell.
        std::fs::create_dir(dir.path().join("make")).expect("mkdir");
        let o = snug_run(who, dir.path(), &["make"], &[("SHELL", "/bin/sh")]);
        assert!(o.status.success() && o.err.is_empty(), "{who:?}: {:?} {}", o.status, o.err);
        // Not a command anywhere: clap's own line, still one line and 64.
        let o = snug_run(who, dir.path(), &["no-such-word-snug", "x"], &[]);
        assert_eq!((o.status.code(), o.err.lines().count()), (Some(64), 1), "{who:?}: {}", o.err);
        assert!(!o.err.contains("did you mean"), "{who:?}: {}", o.err);
    }
}

/// O7: a command on the caller's PATH under `$HOME` is hidden by `@home`; the 127 line says
/// where it is and which profile shows it, and with that profile it runs. Control: the same
/// command with the suggested profile runs, so the 127 really was the hiding.
#[test]
fn o7_not_found_under_home_names_the_profile() {
    for who in everyone() {
        let home = fake_home(who, &[], &[(".cargo/bin/snugtool", "#!/bin/sh\necho tool-ran\n")]);
        let h = home.path().to_str().expect("utf8");
        let dir = workdir(who);
        let path = format!("{h}/.cargo/bin:/usr/bin:/bin");
        let env = [("HOME", h), ("PATH", path.as_str())];
        let o = snug_run(who, dir.path(), &["--", "snugtool"], &env);
        assert_eq!(o.status.code(), Some(127), "{who:?}: {}", o.err);
        let want = format!(
            "snug: snugtool: command not found in the sandbox: it is {h}/.cargo/bin/snugtool, under $HOME, \
             which the sandbox hides; add -p @rust\n"
        );
        assert_eq!(o.err, want, "{who:?}");
        let o = snug_run(who, dir.path(), &["-p", "@rust", "--", "snugtool"], &env);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        assert_eq!(o.out, "tool-ran\n", "{who:?}");
        // Not on the caller's PATH either: the plain line.
        let o = snug_run(who, dir.path(), &["--", "no-such-cmd-snug"], &env);
        assert_eq!(o.err, "snug: no-such-cmd-snug: command not found\n", "{who:?}");
    }
}

/// O7: every toolchain profile resolves where its tool is absent (HOME an empty directory):
/// nothing missing-path fatal, and `profile show` says what it skipped (read-only paths) and
/// what a run creates (the writable caches, O8).
#[test]
fn o7_toolchain_profiles_where_the_tool_is_absent() {
    for who in everyone() {
        let home = fake_home(who, &[], &[]);
        let h = home.path().to_str().expect("utf8");
        let dir = workdir(who);
        let env = [("HOME", h), ("XDG_CONFIG_HOME", h)];
        for name in ["@rust", "@python", "@node", "@go", "@git", "@shell"] {
            // Shown before the run, which creates the caches (and so some read-only parents).
            let o = snug_run(who, dir.path(), &["profile", "show", name], &env);
            assert!(o.status.success(), "{who:?} {name}: {}", o.err);
            assert!(!o.out.contains("{home}"), "{who:?} {name}: unresolved\n{}", o.out);
            let paths: Vec<&str> = o.out.lines().filter(|l| l.starts_with("  ro ")).collect();
            assert!(!paths.is_empty(), "{who:?} {name}: {}", o.out);
            for l in paths {
                assert!(l.contains(&format!(" {h}/")) && l.ends_with("(not on this host: skipped)"), "{who:?}: {l}");
            }
            for l in o.out.lines().filter(|l| l.starts_with("  rw ")) {
                assert!(l.contains(&format!(" {h}/")) && l.ends_with("(not on this host: created at the run)"), "{l}");
            }
            let o = snug_run(who, dir.path(), &["-p", name, "--", "true"], &env);
            assert!(o.status.success(), "{who:?} {name}: {:?} {}", o.status, o.err);
        }
        // All at once: PATH+ entries combine instead of conflicting.
        let all = ["-p", "@rust", "-p", "@python", "-p", "@node", "-p", "@go", "-p", "@git", "--", "printenv", "PATH"];
        let o = snug_run(who, dir.path(), &all, &env);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        assert!(o.out.starts_with(&format!("{h}/.cargo/bin:{h}/.pyenv/shims:")), "{who:?}: {}", o.out);
        assert!(o.out.trim_end().ends_with(":/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"));
    }
}

/// O7: where the tool exists (a HOME laid out as rustup and git leave it), the profile shows
/// it read-only and its caches read-write, and the payload sees the env it needs.
#[test]
fn o7_toolchain_profiles_where_the_tool_exists() {
    for who in everyone() {
        let dirs = [".rustup/toolchains", ".cargo/registry", ".cargo/git", ".config/git"];
        let home = fake_home(who, &dirs, &[(".cargo/bin/cargo", "#!/bin/sh\necho fake-cargo\n"), (".gitconfig", "")]);
        let h = home.path().to_str().expect("utf8");
        let dir = workdir(who);
        let env = [("HOME", h)];
        let script = "cargo; echo \"$CARGO_HOME $RUSTUP_HOME\"; touch ~/.cargo/registry/w && echo rw-ok; \
                      touch ~/.rustup/w 2>/dev/null || echo ro-ok; touch ~/.cargo/bin/w 2>/dev/null || echo ro-ok; \
                      cat ~/.gitconfig && touch ~/.gitconfig 2>/dev/null || echo git-ro-ok";
        let o = snug_run(who, dir.path(), &["-p", "@rust", "-p", "@git", "--", "sh", "-c", script], &env);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        assert_eq!(o.out, format!("fake-cargo\n{h}/.cargo {h}/.rustup\nrw-ok\nro-ok\nro-ok\ngit-ro-ok\n"), "{who:?}");
        assert!(home.path().join(".cargo/registry/w").exists(), "{who:?}: the cache write reached the host");
        let o = snug_run(who, dir.path(), &["profile", "show", "@rust"], &env);
        assert!(o.out.contains(&format!("  ro      {h}/.rustup\n")), "{who:?}: {}", o.out);
        assert!(o.out.contains(&format!("  rw      {h}/.cargo/registry\n")), "{who:?}: {}", o.out);
        assert!(o.out.contains(&format!("  env     PATH={h}/.cargo/bin:…")), "{who:?}: {}", o.out);
    }
}

/// O7 on this machine's real toolchains (rustup under /root/.cargo, pyenv under
/// /root/.pyenv): as root, `cargo` and pyenv's `python3` run through the profiles; without
/// them cargo is not found (control). Skipped where the toolchain is not installed.
#[test]
fn o7_real_rustup_and_pyenv() {
    if !is_root() {
        return eprintln!("skipped: the real toolchains live in /root");
    }
    let home = std::env::var("HOME").unwrap_or_default();
    let dir = workdir(Who::Root);
    let env = [("PATH", format!("{home}/.cargo/bin:{home}/.pyenv/shims:/usr/bin:/bin"))];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    if Path::new(&home).join(".cargo/bin/cargo").exists() {
        let o = snug_run(Who::Root, dir.path(), &["--", "cargo", "--version"], &env);
        assert_eq!(o.status.code(), Some(127), "control: {}", o.err);
        assert!(o.err.contains("add -p @rust"), "{}", o.err);
        let o = snug_run(Who::Root, dir.path(), &["-p", "@rust", "--", "cargo", "--version"], &env);
        assert!(o.status.success() && o.out.starts_with("cargo "), "{}{}", o.out, o.err);
    } else {
        eprintln!("skipped @rust: no {home}/.cargo/bin/cargo");
    }
    if Path::new(&home).join(".pyenv/shims/python3").exists() {
        let code = "import sys; print(sys.prefix)";
        let o = snug_run(Who::Root, dir.path(), &["-p", "@python", "--", "python3", "-c", code], &env);
        assert!(o.status.success(), "{}", o.err);
        assert!(o.out.starts_with(&format!("{home}/.pyenv/versions/")), "{}", o.out);
    } else {
        eprintln!("skipped @python: no {home}/.pyenv/shims/python3");
    }
}

/// O1: the by-hand line of `--dry-run` runs when pasted into sh. Positive control: the exact
/// line as snug runs it fails pasted (no seccomp descriptor, no channel for init), which is
/// what the old output offered as "the exact command line".
#[test]
fn o1_dry_run_line_runs_when_pasted() {
    for who in everyone() {
        let dir = workdir(who);
        let o = snug_run(who, dir.path(), &["--dry-run", "--", "sh", "-c", "echo pasted-ok; true"], &[]);
        assert!(o.status.success(), "{who:?}: {}", o.err);
        let after = |head: &str, skip: usize| {
            let mut lines = o.out.lines().skip_while(|l| !l.starts_with(head));
            lines.nth(skip).unwrap_or_default().trim_start().to_string()
        };
        let by_hand = after("by hand", 1);
        // The first indented line after the heading, however many lines the heading takes.
        let exact =
            o.out.lines().skip_while(|l| !l.starts_with("bwrap, as snug runs it")).find(|l| l.starts_with("  "));
        let exact = exact.unwrap_or_default().trim_start().to_string();
        assert!(by_hand.contains("bwrap") && exact.contains("--seccomp"), "{who:?}: {}", o.out);
        let pasted = run_bounded(&mut cmd_as(who, dir.path(), "sh", &["-c", &by_hand]), LIMIT);
        assert!(pasted.status.success(), "{who:?}: {}", pasted.err);
        assert_eq!(pasted.out, "pasted-ok\n", "{who:?}");
        let control = run_bounded(&mut cmd_as(who, dir.path(), "sh", &["-c", &exact]), LIMIT);
        assert!(!control.status.success(), "{who:?}: the exact line ran pasted");
        assert!(control.err.contains("seccomp"), "{who:?}: {}", control.err);
    }
}

/// O7: `make install DESTDIR=…` lays out the binary, the man page and three completions
/// (cargo replaced by `true`: the binary is the one this test run built).
#[test]
fn o7_make_install_lays_out_everything() {
    let dest = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // `install` depends on `build`, which installs the built binary over SNUG: a private
    // copy, so that the binary the other tests run never goes missing meanwhile (it did:
    // "cp: cannot stat …/target/static/snug" in a test beside this one).
    let own = dest.path().join("built-snug");
    std::fs::copy(snug(), &own).expect("copy snug");
    let o = run_bounded(
        Command::new("make")
            .arg("-s")
            .arg("install")
            .arg(format!("DESTDIR={}", dest.path().display()))
            .arg("PREFIX=/usr")
            .arg("CARGO=true")
            .arg(format!("SNUG={}", own.display()))
            .current_dir(root),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}{}", o.out, o.err);
    let at = |p: &str| dest.path().join(p.trim_start_matches('/'));
    let bin = std::fs::metadata(at("/usr/bin/snug")).expect("binary");
    assert!(bin.permissions().mode() & 0o111 != 0);
    let read = |p: &str| std::fs::read_to_string(at(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    assert!(read("/usr/share/man/man1/snug.1").contains(".TH snug 1"));
    assert!(read("/usr/share/bash-completion/completions/snug").contains("complete -F"));
    assert!(read("/usr/share/zsh/site-functions/_snug").starts_with("#compdef snug"));
    assert!(read("/usr/share/fish/vendor_completions.d/snug.fish").contains("complete -c snug"));
    // The installed binary is the built one and runs.
    let v = Command::new(at("/usr/bin/snug")).arg("--version").output().expect("run installed");
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("snug "));
}
