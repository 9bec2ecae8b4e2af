//! O10, R4's 74: the report at a path inside DIR, where the payload can write, cannot be
//! forged or lost: whatever the payload leaves at the path is replaced by snug's report after
//! the sandbox is gone; a directory there is 74 with the report on stderr (the payload's own
//! failure still wins); a SIGKILL of snug leaves the first record; a directory on the way
//! swapped for a link is not followed; non-UTF-8 arguments come as `{"b64": …}`.
//!
//! Positive controls, each test run once against the code before O10 (a report file opened
//! and truncated at the start, written through that descriptor at the end): see each test.

use crate::common::{code, kill, snug_cmd, spawn_own_group, until, workdir, Who};
use crate::report::{each, LIMIT};
use serde_json::Value;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `snug --report report.json -- sh -c SCRIPT` as `who` in `dir`: (exit code, stderr).
fn run(who: Who, dir: &Path, script: &str) -> (i32, String) {
    let mut c = snug_cmd(who, dir, &["--report", "report.json", "--", "sh", "-c", script]);
    let out = crate::common::run_bounded(&mut c, LIMIT);
    (code(out.status), out.err)
}

fn parsed(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON ({e}): {text:?}", path.display()))
}

/// O10: a payload that writes a forgery and renames it over `report.json`, or overwrites the
/// file in place, leaves snug's report (valid JSON, `ended_by` payload, its real exit
/// status), as root and as the user. Fails before O10: the renamed forgery stood
/// (`{"ended_by":"payload","forged":true,"snug_exit":{"code":0}}`: snug's report went to the
/// unlinked file it had opened at the start).
#[test]
fn o10_payload_cannot_forge_the_report() {
    each(&|who: Who| {
        let dir = workdir(who);
        let forge =
            r#"echo '{"ended_by":"payload","snug_exit":{"code":0},"forged":true}' > f && mv f report.json; exit 3"#;
        let (c, err) = run(who, dir.path(), forge);
        assert_eq!(c, 3, "{who:?}: {err}");
        let v = parsed(&dir.path().join("report.json"));
        assert!(v.get("forged").is_none(), "{who:?}: the forgery stood: {v}");
        assert_eq!(v["payload"]["code"], 3, "{who:?}: {v}");
        assert_eq!(v["ended_by"], "payload", "{who:?}: {v}");
        let scribble = "head -c 5000 /dev/zero | tr '\\0' x > report.json; exit 0";
        let (c, err) = run(who, dir.path(), scribble);
        assert_eq!((c, err.as_str()), (0, ""), "{who:?}");
        let v = parsed(&dir.path().join("report.json"));
        assert_eq!(v["ended_by"], "payload", "{who:?}: {v}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(!left.iter().any(|n| n.as_bytes().starts_with(b".report.json.")), "{who:?}: temporary left: {left:?}");
    });
}

/// O10, R4: a payload that replaces `report.json` with a directory: exit 74 with one line
/// naming the path, and the report on stderr; when the payload itself failed (exit 5) that
/// status wins and the line is still printed. Fails before O10: exit 0, no line and no
/// report anywhere (it went to the unlinked file).
#[test]
fn o10_r4_a_directory_at_the_path_is_74_with_the_report_on_stderr() {
    each(&|who: Who| {
        let dir = workdir(who);
        let (c, err) = run(who, dir.path(), "rm -f report.json; mkdir report.json");
        assert_eq!(c, 74, "{who:?}: {err}");
        let line = err.lines().find(|l| l.starts_with("snug: ")).unwrap_or_default();
        assert_eq!(line, "snug: cannot write the report to report.json: a directory is there now, not a file");
        let json = err.lines().find(|l| l.starts_with('{')).unwrap_or_default();
        let v: Value =
            serde_json::from_str(json).unwrap_or_else(|e| panic!("{who:?}: no report on stderr ({e}): {err}"));
        assert_eq!(v["ended_by"], "payload");
        std::fs::remove_dir(dir.path().join("report.json")).expect("rmdir");
        let (c, err) = run(who, dir.path(), "rm -f report.json; mkdir report.json; exit 5");
        assert_eq!(c, 5, "{who:?}: the payload's failure wins: {err}");
        assert!(err.contains("snug: cannot write the report to report.json: a directory"), "{who:?}: {err}");
    });
}

/// O10: SIGKILL of snug while the payload runs leaves the first record at the path:
/// parseable, `ended_by` null, snug's argv, DIR and the start time. Fails before O10: the
/// file was empty (0 bytes, created and truncated at the start).
#[test]
fn o10_sigkill_leaves_the_first_record() {
    each(&|who: Who| {
        let dir = workdir(who);
        let mut c =
            snug_cmd(who, dir.path(), &["--report", "report.json", "--", "sh", "-c", "touch up; exec sleep 60"]);
        let mut child = spawn_own_group(&mut c);
        assert!(until(LIMIT, || dir.path().join("up").exists()), "{who:?}: the payload never started");
        kill(child.id(), libc::SIGKILL);
        let _ = child.wait();
        let v = parsed(&dir.path().join("report.json"));
        assert!(v["ended_by"].is_null(), "{who:?}: {v}");
        let argv: Vec<&str> = v["argv"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(argv.ends_with(&["--", "sh", "-c", "touch up; exec sleep 60"]), "{who:?}: {v}");
        let want = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(v["dir"].as_str(), want.to_str(), "{who:?}: {v}");
        assert!(v["started_at"].as_str().is_some_and(|s| s.ends_with('Z')), "{who:?}: {v}");
    });
}

/// O10: a report below a directory inside DIR, which the payload swaps for a link to a
/// directory outside it: snug does not follow the link at the end (74, the report on stderr)
/// and writes nothing where it points. Fails before O10: exit 0 (the report went to the file
/// opened at the start, in the moved directory); with the directory resolved again but links
/// followed, the report landed in the victim directory.
#[test]
fn o10_the_directory_is_resolved_again_without_a_planted_link() {
    each(&|who: Who| {
        let dir = workdir(who);
        let victim = workdir(who);
        std::fs::create_dir(dir.path().join("out")).unwrap();
        if who == Who::User {
            let (uid, gid) = crate::common::test_user();
            std::os::unix::fs::chown(dir.path().join("out"), Some(uid), Some(gid)).unwrap();
        }
        let swap = format!("mv out out.old && ln -s {} out", victim.path().display());
        let mut c = snug_cmd(who, dir.path(), &["--report", "out/r.json", "--", "sh", "-c", &swap]);
        let out = crate::common::run_bounded(&mut c, LIMIT);
        assert_eq!(code(out.status), 74, "{who:?}: {}", out.err);
        assert!(
            out.err.contains("snug: cannot write the report to out/r.json: out on its way is a symbolic link"),
            "{who:?}: {}",
            out.err
        );
        assert!(out.err.lines().any(|l| l.starts_with("{\"schema\"")), "{who:?}: no report on stderr: {}", out.err);
        let there: Vec<_> = std::fs::read_dir(victim.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(there.is_empty(), "{who:?}: written where the link points: {there:?}");
        let first = parsed(&dir.path().join("out.old/r.json"));
        assert!(first["ended_by"].is_null(), "{who:?}: the first record stays where it was: {first}");
    });
}

/// O10, R7: an argument that is not UTF-8 (`Y=\xff` to `env`) reaches the payload as its
/// bytes, and the report gives it as `{"b64": …}` in `argv` and `command`; a UTF-8 one stays
/// a plain string. Fails before O10: the report held "Y=\u{fffd}".
#[test]
fn o10_non_utf8_argv_as_b64() {
    use std::ffi::OsStr;
    each(&|who: Who| {
        let dir = workdir(who);
        let arg = OsStr::from_bytes(b"Y=\xff");
        let mut c = snug_cmd(who, dir.path(), &["--report", "report.json", "--", "env"]);
        c.arg(arg).arg("sh").arg("-c").arg("printf %s \"$Y\" > y; echo caf\u{e9}");
        let out = crate::common::run_bounded(&mut c, LIMIT);
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        assert_eq!(std::fs::read(dir.path().join("y")).unwrap(), b"\xff", "{who:?}: the bytes changed");
        let v = parsed(&dir.path().join("report.json"));
        assert_eq!(v["command"][1], serde_json::json!({"b64": "WT3/"}), "{who:?}: {v}");
        assert_eq!(v["command"][0], "env", "{who:?}: {v}");
        assert!(v["argv"].as_array().unwrap().contains(&serde_json::json!({"b64": "WT3/"})), "{who:?}: {v}");
        assert!(!v.to_string().contains('\u{fffd}'), "{who:?}: {v}");
    });
}
