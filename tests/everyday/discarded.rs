//! SPEC O8: what the payload wrote in the sandbox's empty `$HOME` is summarised on stderr and
//! in the report with the grant that keeps it; a toolchain's missing cache is created and
//! what the payload puts there persists; a command that is another program inside than on
//! the caller's PATH gets a note naming the profile that shows the caller's.

use crate::common::{code, workdir, Who};
use crate::everyday::{chown_to, each, fresh_dir, run, snug_with};
use std::path::Path;

/// A tiny setuptools package in `dir/tinypkg` that pip can build offline.
fn tiny_package(who: Who, dir: &Path) -> String {
    let pkg = dir.join("tinypkg");
    std::fs::create_dir_all(pkg.join("tinysnug")).expect("mkdir");
    std::fs::write(
        pkg.join("setup.py"),
        "from setuptools import setup\nsetup(name='tinysnug', version='0.1', packages=['tinysnug'])\n",
    )
    .expect("setup.py");
    std::fs::write(pkg.join("tinysnug/__init__.py"), "X = 1\n").expect("init");
    for p in [pkg.clone(), pkg.join("setup.py"), pkg.join("tinysnug"), pkg.join("tinysnug/__init__.py")] {
        chown_to(who, &p);
    }
    pkg.to_string_lossy().into_owned()
}

/// O8: `pip install --user` under `-p @python` into the empty `$HOME` exits 0 as before, and
/// now says where its files went and that no grant is offered for them (`~/.local` holds
/// `~/.local/bin`, which the host runs: O11) but a virtual environment in DIR, on stderr and in the
/// report's `discarded`. Control: `true` wrote nothing and says nothing.
/// Fails without the fix: exit 0 and an empty stderr, the files gone unsaid (issue's item 1).
#[test]
fn o8_pip_user_install_into_the_empty_home_is_summarised() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let pkg = tiny_package(who, dir.path());
        let report = dir.path().join("r.json");
        let pip = [
            "--report",
            report.to_str().expect("utf-8"),
            "-p",
            "@python",
            "--",
            "/usr/bin/python3",
            "-m",
            "pip",
            "install",
            "--user",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            "--break-system-packages",
            "--disable-pip-version-check",
            &pkg,
        ];
        let out = run(&mut snug_with(who, dir.path(), &home, &[], &pip));
        assert_eq!(code(out.status), 0, "{who:?}: pip failed: {}{}", out.out, out.err);
        let line = out.err.lines().find(|l| l.contains("where the sandbox discards them")).unwrap_or_else(|| {
            panic!("{who:?}: no summary on stderr: {}", out.err);
        });
        // O11: never `--rw ~/.local` (it holds ~/.local/bin, on the host's PATH): a venv in DIR.
        assert!(
            line.starts_with("snug: ")
                && line.contains("~/.local")
                && line.contains("none offered")
                && line.contains("virtual environment"),
            "{line}"
        );
        assert!(!line.contains("--rw ~/.local"), "{who:?}: O11: {line}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
        let local = format!("{}/.local", home.display());
        let place = v["discarded"]["places"].as_array().and_then(|a| a.iter().find(|p| p["path"] == local.as_str()));
        let place = place.unwrap_or_else(|| panic!("{who:?}: no {local} in {}", v["discarded"]));
        assert!(
            place["files"].as_u64().unwrap_or(0) >= 2
                && place["keep"]
                    .as_str()
                    .is_some_and(|k| k.starts_with("none offered") && k.contains("virtual environment in DIR"))
        );
        assert!(!home.join(".local").exists(), "{who:?}: the sandbox's $HOME reached the host");

        let quiet = run(&mut snug_with(
            who,
            dir.path(),
            &home,
            &[],
            &["--report", report.to_str().expect("utf-8"), "--", "true"],
        ));
        assert_eq!((code(quiet.status), quiet.err.as_str()), (0, ""), "{who:?}: control");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
        assert!(v["discarded"].is_null(), "{who:?}: {}", v["discarded"]);
        let _ = std::fs::remove_dir_all(&home);
    });
}

/// O8: `-p @python` creates the missing `~/.cache/pip`, binds it writable, and what the payload
/// caches there is on the host afterwards (the next run finds it). Control: the same write to
/// another missing place under `$HOME` is discarded and reported.
/// Fails without the fix: `sh: cannot create …/.cache/pip/marker: Directory nonexistent`, exit 2,
/// no ~/.cache/pip on the host (the cache was skipped as "not on this host").
#[test]
fn o8_toolchain_creates_its_missing_cache_and_it_persists() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let write = "echo kept > ~/.cache/pip/marker && mkdir -p ~/.cache/other && echo gone > ~/.cache/other/f";
        let out = run(&mut snug_with(who, dir.path(), &home, &[], &["-p", "@python", "--", "sh", "-c", write]));
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        assert_eq!(std::fs::read_to_string(home.join(".cache/pip/marker")).ok().as_deref(), Some("kept\n"), "{who:?}");
        assert!(!home.join(".cache/other").exists(), "{who:?}");
        assert!(out.err.contains("~/.cache/other 1 file"), "{who:?}: {}", out.err);
        assert!(!out.err.contains(".cache/pip"), "{who:?}: the kept cache is not discarded: {}", out.err);
        let read = run(&mut snug_with(
            who,
            dir.path(),
            &home,
            &[],
            &["-p", "@python", "--", "sh", "-c", "cat ~/.cache/pip/marker"],
        ));
        assert_eq!(read.out, "kept\n", "{who:?}: the next run sees the cache: {}", read.err);
        let _ = std::fs::remove_dir_all(&home);
    });
}

/// O8: a caller whose PATH finds `python3` under `~/.pyenv/shims` is told that the sandbox
/// runs /usr/bin/python3 instead, and that `-p @python` shows theirs; with `-p @python` the
/// shim runs and nothing is said.
/// Fails without the fix: no note at all; /usr/bin/python3 ran silently.
#[test]
fn o8_other_program_inside_gets_a_note() {
    use std::os::unix::fs::PermissionsExt;
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let shims = home.join(".pyenv/shims");
        std::fs::create_dir_all(&shims).expect("mkdir");
        std::fs::write(shims.join("python3"), "#!/bin/sh\necho shim-ran\n").expect("shim");
        std::fs::set_permissions(shims.join("python3"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = format!("{}:/usr/bin:/bin", shims.display());
        let env = [("PATH", path.as_str())];
        let out = run(&mut snug_with(who, dir.path(), &home, &env, &["--", "python3", "-c", "print('system')"]));
        assert_eq!(out.out, "system\n", "{who:?}: {}", out.err);
        let want = format!(
            "snug: note: python3 is /usr/bin/python3 in the sandbox, not {}/python3 as on your PATH; -p @python shows yours",
            shims.display()
        );
        assert!(out.err.lines().any(|l| l == want), "{who:?}: {:?}", out.err);
        let with = run(&mut snug_with(who, dir.path(), &home, &env, &["-p", "@python", "--", "python3"]));
        assert_eq!((with.out.as_str(), with.err.contains("note:")), ("shim-ran\n", false), "{who:?}: {}", with.err);
        let _ = std::fs::remove_dir_all(&home);
    });
}

/// O8: a cache that cannot be created (the test user's `$HOME` is root's, mode 0755) does not
/// fail the run: one line names it, and the run goes on without it.
/// Fails without the fix: an empty stderr (the cache was skipped unsaid); and it failed with
/// exit 77 while a creation failure was still fatal (the first version of the fix).
#[test]
fn o8_cache_that_cannot_be_created_is_named_and_left_out() {
    if !crate::common::is_root() {
        return; // needs a HOME the runner cannot write: the test user's view of root's directory
    }
    let dir = workdir(Who::User);
    let home = fresh_dir(Who::Root, "home");
    let out = run(&mut snug_with(Who::User, dir.path(), &home, &[], &["-p", "@python", "--", "true"]));
    assert_eq!(code(out.status), 0, "{}", out.err);
    let want =
        format!("snug: cannot create the cache {}/.cache/pip: Permission denied; it is not kept\n", home.display());
    assert_eq!(out.err, want);
    let _ = std::fs::remove_dir_all(&home);
}

/// O8: with DIR outside /tmp, /tmp is the sandbox's private tmpfs, and a file left there is
/// summarised with `-p @tmp-shared` as what keeps it; a directory alone is not a file.
/// Fails without the fix: an empty stderr.
#[test]
fn o8_private_tmp_leftovers_are_summarised() {
    each(&|who: Who| {
        let dir = fresh_dir(who, "dir");
        let home = fresh_dir(who, "home");
        let write = "mkdir -p /tmp/build/obj /tmp/empty && echo 1 > /tmp/build/obj/a.o && echo 2 > /tmp/build/b.o";
        let out = run(&mut snug_with(who, &dir, &home, &[], &["--", "sh", "-c", write]));
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        let want = "snug: the payload wrote 2 files where the sandbox discards them (the private $HOME and /tmp): \
                    /tmp/build 2 files (keep: -p @tmp-shared)\n";
        assert_eq!(out.err, want, "{who:?}");
        let _ = std::fs::remove_dir_all(&home);
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// O11, O8: a payload that names a file in `$HOME` `.cache;echo PWNED>&2;#` gets a summary
/// whose suggested command, pasted into bash with that `$HOME`, creates the file of that name
/// and runs nothing else; a name that is not UTF-8 is shown as its bytes (`$'…\xff'`) and in
/// the report as `{"b64": …}`. Positive control: the summary before O11 said
/// `keep: touch ~/.cache;echo PWNED>&2;# and --rw …`, which printed PWNED when pasted.
#[test]
fn o11_a_planted_name_in_the_summary_runs_nothing_when_pasted() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let report = dir.path().join("r.json");
        let args = [
            "--report",
            report.to_str().expect("utf-8"),
            "--",
            "sh",
            "-c",
            "touch \"$HOME/.cache;echo PWNED>&2;#\" \"$HOME/$(printf 'n\\377')\"",
        ];
        let out = run(&mut snug_with(who, dir.path(), &home, &[], &args));
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        let line = out.err.lines().find(|l| l.contains("where the sandbox discards them")).unwrap_or_default();
        let start = line.find("keep: touch ").unwrap_or_else(|| panic!("{who:?}: no touch suggested: {line}"));
        let cmd = line[start + 6..].split(" and ").next().unwrap_or_default();
        assert_eq!(cmd, "touch ~/'.cache;echo PWNED>&2;#'", "{who:?}: {line}");
        let paste = tempfile::tempdir().expect("tempdir");
        let o = std::process::Command::new("bash").arg("-c").arg(cmd).env("HOME", paste.path()).output().expect("bash");
        assert!(!String::from_utf8_lossy(&o.stderr).contains("PWNED"), "{who:?}: {o:?}");
        assert!(paste.path().join(".cache;echo PWNED>&2;#").exists(), "{who:?}: another name was touched");
        assert!(line.contains("~/$'n\\xff'"), "{who:?}: {line}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
        let places = v["discarded"]["places"].as_array().cloned().unwrap_or_default();
        assert!(places.iter().any(|p| p["path"]["b64"].is_string()), "{who:?}: {places:?}");
        let _ = std::fs::remove_dir_all(&home);
    });
}
