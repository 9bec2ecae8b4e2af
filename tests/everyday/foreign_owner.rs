//! P11: root on a DIR of another uid (a CI container job on a checkout of uid 1001, an sdist
//! extracted as root) works as without snug; the root payload keeps only CAP_CHOWN,
//! CAP_DAC_OVERRIDE and CAP_FOWNER; `--user UID[:GID]` runs it as that user; a failed run
//! in a DIR whose owners the sandbox cannot map ends with a line saying so.

use crate::common::{code, is_root, run_bounded, snug_cmd, workdir, Who};
use crate::everyday::LIMIT;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

/// A uid and gid no account here has (the checkout's owner), and the archive's owners.
const OWNER: u32 = 4242;
const TAR_UID: u32 = 4243;
const TAR_GID: u32 = 4244;

/// A checkout of [`OWNER`] in `dir`: a file, a directory, and `own.tgz`, an archive whose
/// members belong to [`TAR_UID`]:[`TAR_GID`]; everything chowned to [`OWNER`] as `chown -R`.
fn foreign_checkout(dir: &Path) {
    std::fs::write(dir.join("setup.py"), "print('hi')\n").expect("write");
    std::fs::create_dir(dir.join("pkg")).expect("mkdir");
    let src = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(src.path().join("m")).expect("mkdir");
    std::fs::write(src.path().join("m/data.txt"), "data\n").expect("write");
    let tar = Command::new("tar")
        .args(["czf", &dir.join("own.tgz").to_string_lossy(), "--numeric-owner"])
        .args([format!("--owner={TAR_UID}"), format!("--group={TAR_GID}")])
        .args(["-C", &src.path().to_string_lossy(), "m"])
        .status()
        .expect("tar");
    assert!(tar.success(), "tar czf");
    let chown = Command::new("chown").args(["-R", &format!("{OWNER}:{OWNER}")]).arg(dir).status().expect("chown");
    assert!(chown.success(), "chown -R");
}

/// P11 as root: in a DIR that `chown -R 4242` made foreign, `touch`, `python3 -m venv`,
/// `tar xzf` of an archive with owners (kept), `chown` to an owner found there and `ls -ln`
/// (the host's owners) all behave as without snug, and the host sees what they did.
/// Fails without the fix (positive control on the code before it): `touch` said "Permission
/// denied" (1), `python3 -m venv` exited 1, `tar xzf` exited 2 and `ls -ln` showed 65534.
#[test]
fn p11_root_in_a_foreign_owned_dir_works_as_without_snug() {
    if !is_root() {
        return eprintln!("skipped: root only (a user cannot give a directory to another uid)");
    }
    let dir = workdir(Who::Root);
    foreign_checkout(dir.path());
    let script = format!(
        "touch new && echo touch=ok; python3 -m venv .venv && echo venv=ok; mkdir out && \
         tar xzf own.tgz -C out && echo tar=ok; chown {TAR_UID}:{TAR_GID} new && echo chown=ok; ls -lnd . setup.py"
    );
    let o = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &["--", "sh", "-c", &script]), LIMIT);
    assert_eq!(code(o.status), 0, "{}{}", o.out, o.err);
    for step in ["touch=ok", "venv=ok", "tar=ok", "chown=ok"] {
        assert!(o.out.contains(step), "{step} missing: {}{}", o.out, o.err);
    }
    let owners: Vec<&str> = o.out.lines().filter(|l| l.ends_with(" .") || l.ends_with(" setup.py")).collect();
    assert_eq!(owners.len(), 2, "{}", o.out);
    for l in owners {
        let w: Vec<&str> = l.split_whitespace().collect();
        assert_eq!((w[2], w[3]), ("4242", "4242"), "ls -ln inside: {l}");
    }
    let meta = |p: &str| std::fs::symlink_metadata(dir.path().join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    assert_eq!((meta("out/m/data.txt").uid(), meta("out/m/data.txt").gid()), (TAR_UID, TAR_GID), "tar kept no owner");
    assert_eq!((meta("new").uid(), meta("new").gid()), (TAR_UID, TAR_GID), "chown");
    assert!(meta(".venv/bin/python3").file_type().is_symlink() && meta(".venv/pyvenv.cfg").is_file());
}

/// The capability sets of the payload's own process, from `/proc/self/status`.
fn caps(out: &str, set: &str) -> String {
    let key = format!("Cap{set}:");
    out.lines().find_map(|l| l.strip_prefix(&key)).map(|v| v.trim().to_string()).unwrap_or_default()
}

/// P11, X2 as root: the payload's effective, permitted and bounding sets are CAP_CHOWN,
/// CAP_DAC_OVERRIDE and CAP_FOWNER (0xb) and nothing else, so it can neither mount, nor
/// change its uid, nor make a user namespace (X2: turned off without bwrap's own user
/// namespace), also through an exec. Fails without the bounding set's drop in init (positive
/// control: that line removed): CapBnd was 000001ffffffffff.
#[test]
fn p11_root_payload_keeps_only_chown_dac_override_fowner() {
    if !is_root() {
        return eprintln!("skipped: root only");
    }
    let dir = workdir(Who::Root);
    let script = "grep ^Cap /proc/self/status; sh -c 'grep ^CapEff /proc/self/status' | sed s/Eff/Exec/; \
        mount -t tmpfs none /tmp 2>/dev/null && echo mounted; setpriv --reuid=1 true 2>/dev/null && echo setuid; \
        unshare -U true 2>/dev/null && echo userns; echo done";
    let o = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &["--", "sh", "-c", script]), LIMIT);
    assert!(o.out.contains("done"), "{}{}", o.out, o.err);
    for set in ["Eff", "Prm", "Bnd", "Exec"] {
        assert_eq!(caps(&o.out, set), "000000000000000b", "Cap{set}: {}", o.out);
    }
    for got in ["mounted", "setuid", "userns"] {
        assert!(!o.out.contains(got), "the root payload could: {got}\n{}", o.out);
    }
}

/// P11: `--user 4242` as root runs the payload as uid and gid 4242 with no supplementary
/// group and no capability; it writes its own DIR (files owned 4242), its private $HOME and
/// /tmp, and not another uid's file. Fails without the fix: `--user` was an unknown option (64).
#[test]
fn p11_user_runs_the_payload_as_that_user() {
    if !is_root() {
        return eprintln!("skipped: root only");
    }
    let dir = workdir(Who::Root);
    foreign_checkout(dir.path());
    let theirs = dir.path().join("theirs");
    std::fs::write(&theirs, "").expect("write");
    std::os::unix::fs::chown(&theirs, Some(TAR_UID), Some(TAR_UID)).expect("chown");
    let script = "id -u; id -g; id -G; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; \
        touch mine && echo dir=ok; touch \"$HOME/h\" /tmp/t && echo private=ok; \
        echo x >> theirs 2>/dev/null && echo theirs=written; echo done";
    let o = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &["--user", "4242", "--", "sh", "-c", script]), LIMIT);
    assert_eq!(code(o.status), 0, "{}{}", o.out, o.err);
    let lines: Vec<&str> = o.out.lines().collect();
    assert_eq!(&lines[..3], ["4242", "4242", "4242"], "{}", o.out);
    for set in ["Eff", "Prm", "Bnd"] {
        assert_eq!(caps(&o.out, set), "0000000000000000", "Cap{set}: {}", o.out);
    }
    assert!(o.out.contains("dir=ok") && o.out.contains("private=ok"), "{}{}", o.out, o.err);
    assert!(!o.out.contains("theirs=written"), "wrote another uid's file: {}", o.out);
    let mine = std::fs::metadata(dir.path().join("mine")).expect("mine");
    assert_eq!((mine.uid(), mine.gid()), (OWNER, OWNER));
    // UID:GID names the group.
    let o = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &["--user", "4242:4244", "--", "id", "-g"]), LIMIT);
    assert_eq!((code(o.status), o.out.trim()), (0, "4244"), "{}", o.err);
}

/// P11: `--user` from a caller other than root is a usage error (64), one `snug: ` line,
/// and nothing runs. Fails without the fix: 64 for an unknown option, with clap's text.
#[test]
fn p11_user_from_a_caller_other_than_root_is_64() {
    if !is_root() {
        return eprintln!("skipped: needs root to run as the test user");
    }
    let dir = workdir(Who::User);
    let o = run_bounded(&mut snug_cmd(Who::User, dir.path(), &["--user", "4242", "--", "touch", "ran"]), LIMIT);
    assert_eq!(code(o.status), 64, "{}", o.err);
    assert_eq!(o.err.lines().count(), 1, "{}", o.err);
    assert!(o.err.starts_with("snug: --user needs snug to run as root"), "{}", o.err);
    assert!(!dir.path().join("ran").exists());
}

/// P11: a failed run in a DIR holding a file of a uid the sandbox cannot map (the test
/// user's sandbox maps that user alone) ends with one `snug: ` line naming the uid; a run
/// that succeeds there says nothing, and as root (every owner mapped) a failed run says
/// nothing of owners. Fails without the fix: no line at all.
#[test]
fn p11_failed_run_names_owners_the_sandbox_cannot_map() {
    if !is_root() {
        return eprintln!("skipped: needs root to give a file to another uid");
    }
    let dir = workdir(Who::User);
    let theirs = dir.path().join("theirs");
    std::fs::write(&theirs, "").expect("write");
    std::os::unix::fs::chown(&theirs, Some(OWNER), Some(OWNER)).expect("chown");
    let o = run_bounded(&mut snug_cmd(Who::User, dir.path(), &["--", "sh", "-c", "echo x >> theirs"]), LIMIT);
    assert_ne!(code(o.status), 0, "{}", o.err);
    let said: Vec<&str> = o.err.lines().filter(|l| l.contains("cannot map")).collect();
    assert_eq!(said.len(), 1, "{}", o.err);
    assert!(said[0].starts_with("snug: ") && said[0].contains("uid 4242"), "{}", o.err);
    let o = run_bounded(&mut snug_cmd(Who::User, dir.path(), &["--", "true"]), LIMIT);
    assert!(code(o.status) == 0 && !o.err.contains("cannot map"), "{}", o.err);
    let o = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &["--", "false"]), LIMIT);
    assert!(code(o.status) == 1 && !o.err.contains("cannot map"), "{}", o.err);
}
