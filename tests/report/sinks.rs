//! Where the report goes (`--report PATH`, `--report fd:N`) and what happens when it cannot
//! be written (SPEC O5, R4: exit 74).

use crate::common::{cmd_as, code, is_root, run_bounded, snug_for, workdir, Who};
use crate::report::{each, ended_by, reported, LIMIT};
use serde_json::Value;

/// O5: `--report fd:3 3>out.json` writes the report to the caller's descriptor. Control:
/// without the redirection fd 3 is not open: 74 before the payload starts (it never runs).
#[test]
fn o5_report_to_a_descriptor() {
    each(&|who: Who| {
        let dir = workdir(who);
        let snug = snug_for(who);
        let line = format!("{} --report fd:3 -- sh -c 'exit 3' 3>out.json", snug.display());
        let out = run_bounded(&mut cmd_as(who, dir.path(), "sh", &["-c", &line]), LIMIT);
        assert_eq!(code(out.status), 3, "{who:?}: {}", out.err);
        let text = std::fs::read_to_string(dir.path().join("out.json")).unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{who:?}: {e}: {text:?}"));
        assert_eq!((ended_by(&v), &v["payload"]["code"]), ("payload", &serde_json::json!(3)), "{v}");

        let line = format!("{} --report fd:3 -- touch ran", snug.display());
        let out = run_bounded(&mut cmd_as(who, dir.path(), "sh", &["-c", &line]), LIMIT);
        assert_eq!(code(out.status), 74, "{who:?}: {}", out.err);
        assert_eq!(out.err.trim(), "snug: cannot write the report to fd:3: bad file descriptor");
        assert!(!dir.path().join("ran").exists(), "{who:?}: the payload ran");
    });
}

/// R4, O5: a report path that cannot be created is one line and 74 before the payload
/// starts; `/dev/full` (known only at the end) is one line, turns an exit 0 into 74 and
/// leaves any other status alone. Control: a writable path gives exit 0 and a report.
#[test]
fn r4_unwritable_report_is_74_never_silent() {
    each(&|who: Who| {
        let dir = workdir(who);
        let snug = |args: &[&str]| {
            let mut c = crate::common::snug_cmd(who, dir.path(), args);
            run_bounded(&mut c, LIMIT)
        };
        let out = snug(&["--report", "/nonexistent-dir/r.json", "--", "touch", "ran"]);
        assert_eq!(code(out.status), 74, "{who:?}: {}", out.err);
        assert_eq!(
            out.err.trim(),
            "snug: cannot write the report to /nonexistent-dir/r.json: no such file or directory"
        );
        assert!(!dir.path().join("ran").exists(), "{who:?}: the payload ran");

        let out = snug(&["--report", "/dev/full", "--", "true"]);
        assert_eq!(code(out.status), 74, "{who:?}: {}", out.err);
        assert_eq!(out.err.trim(), "snug: cannot write the report to /dev/full: no space left on device");
        let out = snug(&["--report", "/dev/full", "--", "sh", "-c", "exit 5"]);
        assert_eq!(code(out.status), 5, "{who:?}: the payload's failure is kept");
        assert_eq!(out.err.trim(), "snug: cannot write the report to /dev/full: no space left on device");

        let (out, v) = reported(who, &["--", "true"]);
        assert_eq!((code(out.status), out.err.as_str(), ended_by(&v)), (0, "", "payload"));
    });
}

/// R4, O5: a full file system is known before the payload starts (the report's space is
/// reserved with fallocate): 74, and the payload never runs. Root only (it mounts a small
/// tmpfs in a private mount namespace). Control: the same tmpfs with room left → exit 0 and
/// a report.
#[test]
fn r4_full_disk_is_74_before_the_payload() {
    if !is_root() {
        return eprintln!("skipped: needs root to mount a tmpfs");
    }
    let dir = workdir(Who::Root);
    let d = dir.path().display();
    let snug = snug_for(Who::Root);
    for fill in [true, false] {
        let filler = if fill { "head -c 1M /dev/zero > $m/fill 2>/dev/null;" } else { "" };
        let script = format!(
            "m={d}/mnt; mkdir -p $m && mount -t tmpfs -o size=256k tmpfs $m && {filler} {} --report $m/r.json -- touch {d}/ran; rc=$?; cat $m/r.json 2>/dev/null; exit $rc",
            snug.display()
        );
        let out =
            run_bounded(&mut cmd_as(Who::Root, dir.path(), "unshare", &["--mount", "--", "sh", "-c", &script]), LIMIT);
        if fill {
            assert_eq!(code(out.status), 74, "{}", out.err);
            assert!(out.err.contains("no space left on device"), "{}", out.err);
            assert!(!dir.path().join("ran").exists(), "the payload ran");
        } else {
            assert_eq!(code(out.status), 0, "control: {}", out.err);
            let v: Value = serde_json::from_str(&out.out).expect("control: a report");
            assert_eq!(ended_by(&v), "payload");
        }
    }
}
