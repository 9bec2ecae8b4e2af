//! O7: profile and run names complete in zsh and fish as in bash: `-p @py` offers `@python`,
//! `-p @r` offers `@rust` and nothing else (no host name, no file), and `stop`/`diff` offer
//! run names. Each shell runs for real where installed (`scripts/install-deps` installs both);
//! a shell that is missing skips its half with a line saying so.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// `PATH` with the directory of the snug under test first, as the completion calls `snug`.
fn path_with_snug() -> String {
    let bin = snug();
    format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default())
}

fn has(shell: &str) -> bool {
    Command::new(shell).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// fish's own answer for `line` (`complete -C`, `complete(1)` of fish), with snug's
/// completion sourced, in `dir`.
fn fish(line: &str, dir: &Path) -> Vec<String> {
    let script = format!("source (snug completions fish | psub); or exit 9; complete -C '{line}'");
    let o = run_bounded(
        Command::new("fish").args(["--no-config", "-c", &script]).env("PATH", path_with_snug()).current_dir(dir),
        crate::conventions::LIMIT,
    );
    assert!(o.status.success(), "fish: {}", o.err);
    o.out.lines().map(|l| l.split('\t').next().unwrap_or("").to_string()).filter(|w| !w.is_empty()).collect()
}

/// O7 in fish: `-p @py` is `@python` alone, `-p @r` is `@rust` alone even beside a file
/// named `@rfile`, and `profile show @g` offers `@git` and `@go`. Control: `--ro @r` (a path)
/// does offer that file, as a path option should. Fails without the fix: `profile show @g`
/// offered nothing.
#[test]
fn o7_fish_completes_profile_prefixes() {
    if !has("fish") || snug().file_name().is_some_and(|n| n != "snug") {
        return eprintln!("skipped: no fish here, or the binary is not named snug");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("@rfile"), "").expect("write");
    assert_eq!(fish("snug -p @py", dir.path()), ["@python"]);
    assert_eq!(fish("snug -p @r", dir.path()), ["@rust"]);
    let mut g = fish("snug profile show @g", dir.path());
    g.sort();
    assert_eq!(g, ["@git", "@go"]);
    assert!(fish("snug --ro @r", dir.path()).contains(&"@rfile".to_string()), "control: a path option offers files");
}

/// zsh's completion script with `compadd` standing in for the builtin (which works only
/// inside a completion widget): what each name function offers for the words `words`.
fn zsh_offers(function: &str, words: &[&str]) -> Vec<String> {
    let script = format!(
        "source <(snug completions zsh) 2>/dev/null; compadd() {{ print -rl -- \"${{(@P)${{@[-1]}}}}\" }}; \
         words=({}); {function}",
        words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" ")
    );
    let o = run_bounded(
        Command::new("zsh").args(["-f", "-c", &script]).env("PATH", path_with_snug()),
        crate::conventions::LIMIT,
    );
    o.out.lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

/// O7 in zsh: `-p`/`--profile` and `profile show` complete with the profile names alone
/// (zsh then keeps those matching the word: `@py` → `@python`, `@r` → `@rust`), never with
/// `_default` (files, which clap's script gave: `-p @r` offered a file named `@rfile`);
/// `stop`, `signal`, `exec` with live run names, `diff`, `apply`, `discard` with kept ones.
/// Fails without the fix: `-p` completed with `_default`.
#[test]
fn o7_zsh_completes_profile_names_and_runs() {
    if !has("zsh") || snug().file_name().is_some_and(|n| n != "snug") {
        return eprintln!("skipped: no zsh here, or the binary is not named snug");
    }
    let o = run_bounded(Command::new(snug()).args(["completions", "zsh"]), crate::conventions::LIMIT);
    let spec = |start: &str| o.out.lines().find(|l| l.starts_with(start)).unwrap_or_default().to_string();
    for opt in ["'*-p+[", "'*--profile=["] {
        assert!(spec(opt).ends_with(":_snug_profiles' \\"), "{opt}: {}", spec(opt));
    }
    let names: Vec<&str> = o.out.lines().filter(|l| l.contains(":name -- ")).collect();
    assert!(names.len() >= 7 && names.iter().all(|l| !l.contains("_default")), "{names:?}");
    let profiles = zsh_offers("_snug_profiles", &["snug", "-p", "@py"]);
    let py: Vec<&str> = profiles.iter().map(String::as_str).filter(|p| p.starts_with("@py")).collect();
    let r: Vec<&str> = profiles.iter().map(String::as_str).filter(|p| p.starts_with("@r")).collect();
    assert_eq!((py, r), (vec!["@python"], vec!["@rust"]), "{profiles:?}");
    assert!(profiles.iter().all(|p| !p.contains('.')), "a host or file name among profiles: {profiles:?}");
    // The run names come from snug itself, as in bash: a live run of the test's own is offered.
    let name = format!("zsh-{}", marker());
    let dir = workdir(Who::Root);
    let mut run = spawn_own_group(&mut snug_cmd(Who::Root, dir.path(), &["--name", &name, "--", "sleep", "60"]));
    let names = || run_bounded(Command::new(snug()).args(["ps", "--names"]), crate::conventions::LIMIT).out;
    assert!(until(std::time::Duration::from_secs(20), || names().lines().any(|l| l == name)), "{name} never listed");
    let runs = zsh_offers("_snug_runs", &["snug", "stop", ""]);
    let _ = run_bounded(Command::new(snug()).args(["stop", "--now", &name]), crate::conventions::LIMIT);
    kill_if_running(&mut run);
    assert!(runs.contains(&name), "{name} not offered: {runs:?}");
    let kept = run_bounded(Command::new(snug()).args(["diff", "--names"]), crate::conventions::LIMIT).out;
    let want: Vec<String> = kept.lines().filter(|l| !l.is_empty()).map(String::from).collect();
    assert_eq!(zsh_offers("_snug_kept", &["snug", "diff", ""]), want);
}
