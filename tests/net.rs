//! `-p @net` (SPEC N1–N4, O1, O2 for pasta), each row as root and as the unprivileged
//! user, with the real pasta. These machines have no internet: every server, resolver and
//! address is one the test creates (see `net/lab.rs`); rows that need a network namespace
//! need root and say so when skipped.
//!
//! Split by concern: `lab` (namespaces, servers, helpers), `egress` (N1, N3, DNS),
//! `lifecycle` (N2), `kill` (N2 with K1's SIGKILL sweep); N4 and the dry-run and doctor
//! rows are here.
//!
//! Unprivileged pasta needs /dev/net/tun mode 0666 (distributions ship that; CI's
//! `scripts/install-deps` sets it); as root the tests set it too.

use crate::common;

mod egress;
mod kill;
pub(crate) mod lab;
mod lifecycle;

use std::process::Command;
use std::time::Duration;

use common::*;
use lab::*;

const LIMIT: Duration = Duration::from_secs(20);

/// N4: `@net` with no pasta on PATH → exit 69, one `snug: ` line naming the package `passt`,
/// and the payload never ran (no fallback to no network or to the host's). Control: the same
/// PATH without `@net` runs the payload, so the PATH itself is not what fails.
#[test]
fn n4_without_pasta_exits_69_naming_passt() {
    for who in everyone() {
        let dir = workdir(who);
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("mkdir");
        std::os::unix::fs::symlink(which("bwrap"), bin.join("bwrap")).expect("symlink bwrap");
        let path = bin.to_string_lossy().into_owned();
        for (net, want) in [(true, 69), (false, 0)] {
            let mut args = vec![];
            if net {
                args.extend(["-p", "@net"]);
            }
            args.extend(["--", "echo", "payload-ran"]);
            let words = snug_words(who, &args);
            let mut c = Command::new(&words[0]);
            c.args(&words[1..]).env("PATH", &path).current_dir(dir.path());
            let (rc, out, err) = run(&mut c, LIMIT);
            assert_eq!(rc, want, "{who:?} @net={net}: {out}{err}");
            if net {
                assert!(!out.contains("payload-ran"), "{who:?}: payload ran without pasta");
                assert_eq!(err.lines().count(), 1, "{who:?}: {err}");
                assert!(err.starts_with("snug: ") && err.contains("passt"), "{who:?}: {err}");
            } else {
                assert!(out.contains("payload-ran"), "{who:?} control: {out}{err}");
            }
        }
    }
}

/// N4: pasta failing to start → exit 69 with pasta's own error line, payload never run. The
/// real failure: the unprivileged user cannot open a /dev/net/tun of mode 0600 (a node of
/// that mode bound over it in the command's own mount namespace). Root only sets it up.
#[test]
fn n4_pasta_failing_exits_69_with_its_own_line() {
    if !is_root() || skip_reason().is_some() {
        return eprintln!("skipped: needs root to set up a closed /dev/net/tun, and pasta");
    }
    let dir = workdir(Who::User);
    let node = dir.path().join("tun");
    let made = Command::new(which("mknod")).args(["-m", "0600"]).arg(&node).args(["c", "10", "200"]).status();
    assert!(made.is_ok_and(|s| s.success()), "mknod");
    let mut c = Command::new(which("unshare"));
    c.args(["-m", "sh", "-c", "mount --bind \"$0\" /dev/net/tun && exec \"$@\""]).arg(&node);
    c.args(snug_words(Who::User, &["-p", "@net", "--", "echo", "payload-ran"])).current_dir(dir.path());
    let (rc, out, err) = run(&mut c, LIMIT);
    eprintln!("{err}");
    assert_eq!(rc, 69, "{out}{err}");
    assert!(!out.contains("payload-ran"), "payload ran without a network");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("snug: pasta: Failed to open tun socket in namespace"), "{err}");
    assert!(err.contains("0666"), "no hint about /dev/net/tun: {err}");
}

/// O1 for `@net`: `--dry-run` shows pasta's command line, init's pid as `<init-pid>`, with
/// the isolating options; `--json` has it under `pasta`. Nothing starts.
#[test]
fn o1_dry_run_shows_the_pasta_command_line() {
    if which("pasta") == "pasta" {
        return eprintln!("skipped: pasta is not installed");
    }
    for who in everyone() {
        let dir = workdir(who);
        let (rc, out, err) = run(&mut snug_cmd(who, dir.path(), &["-p", "@net", "--dry-run", "--", "true"]), LIMIT);
        assert_eq!(rc, 0, "{err}");
        let line = out.lines().skip_while(|l| *l != "pasta:").nth(1).unwrap_or_default();
        for want in
            ["pasta", "--no-map-gw", "--tcp-ports none", "--tcp-ns none", "--config-net", "/proc/<init-pid>/ns/net"]
        {
            assert!(line.contains(want), "{who:?}: {want} not in {line:?}\n{out}");
        }
        let (rc, out, _) =
            run(&mut snug_cmd(who, dir.path(), &["-p", "@net", "--dry-run", "--json", "--", "true"]), LIMIT);
        assert_eq!(rc, 0);
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert!(v["pasta"].as_array().is_some_and(|a| a.iter().any(|w| w == "--no-map-gw")), "{out}");
    }
}

/// O2 for `@net`: `snug doctor` actually attaches pasta to a sandbox and says so, and shows
/// /dev/net/tun's mode.
#[test]
fn o2_doctor_attaches_pasta_and_reports_tun() {
    if let Some(why) = skip_reason() {
        return eprintln!("skipped: {why}");
    }
    for who in everyone() {
        let dir = workdir(who);
        let (rc, out, err) = run(&mut snug_cmd(who, dir.path(), &["doctor"]), LIMIT);
        assert!(rc == 0 || rc == 69, "{err}");
        let row = |name: &str| out.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_string();
        let attach = row("pasta attach");
        assert!(attach.contains(" ok "), "{who:?}: {attach}\n{out}");
        assert!(row("/dev/net/tun").contains("mode 0666"), "{who:?}\n{out}");
    }
}
