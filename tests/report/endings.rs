//! One test per `ended_by` value (SPEC O5) and the timeout (O6), each with its control.

use crate::common::{code, marker, survivors, workdir, Who};
use crate::report::{each, ended_by, reported, Reported};
use std::time::{Duration, Instant};

/// A payload that writes `ready`, then loops for up to ~3 s; TERM makes it exit 0 when
/// `handle` is true, and is ignored otherwise.
fn looping(handle: bool) -> String {
    let trap = if handle { "trap 'exit 0' TERM" } else { "trap '' TERM" };
    format!("{trap}; touch ready; i=0; while [ $i -lt 60 ]; do sleep 0.05; i=$((i+1)); done; exit 0")
}

/// O5: a payload that traps TERM and exits 0 makes snug exit 0, and only the report tells
/// the harness it was cancelled. Control: the same payload left alone also exits 0, and is
/// reported as `payload`. (Mutation tried: without `record.signal` in the supervisor's
/// `on_signal`, the signalled run reads `payload` and this test fails.)
#[test]
fn o5_relayed_handled_exit_0_is_reported_as_signalled() {
    each(&|who: Who| {
        let dir = workdir(who);
        let r = Reported::start(who, dir.path(), "r", &["--", "sh", "-c", &looping(true)]);
        r.wait_ready(&dir.path().join("ready"));
        r.signal(libc::SIGTERM);
        let (out, _, v) = r.finish();
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        assert_eq!(ended_by(&v), "relayed_handled", "{who:?}: {v}");
        assert_eq!(v["payload"]["code"], 0, "{v}");
        assert_eq!(v["snug_exit"]["code"], 0, "{v}");
        let s = &v["signals"][0];
        assert_eq!((s["name"].as_str(), s["number"].as_i64()), (Some("TERM"), Some(15)), "{v}");
        assert_eq!((s["origin"].as_str(), s["relayed"].as_bool()), (Some("process"), Some(true)), "{v}");
        assert_eq!(s["pid"], std::process::id(), "the sender is this test: {v}");
        assert!(v["durations_ms"]["grace"].as_u64().is_some_and(|g| g < 1000), "{v}");

        // Control: not signalled, same exit status, another ending.
        let (out, v) = reported(who, &["--", "sh", "-c", "touch ready; exit 0"]);
        assert_eq!(code(out.status), 0);
        assert_eq!(ended_by(&v), "payload", "{who:?} control: {v}");
        assert_eq!(v["signals"].as_array().map(Vec::len), Some(0), "{v}");
    });
}

/// O5, G3: a payload that ignores TERM runs out the grace; snug dies of TERM and the report
/// counts what teardown killed. Control: the handling payload of the same shape ends within
/// the grace (relayed_handled, nothing left to kill).
#[test]
fn o5_grace_expired() {
    each(&|who: Who| {
        for handle in [false, true] {
            let dir = workdir(who);
            let r = Reported::start(who, dir.path(), "r", &["--", "sh", "-c", &looping(handle)]);
            r.wait_ready(&dir.path().join("ready"));
            r.signal(libc::SIGTERM);
            let (out, _, v) = r.finish();
            if handle {
                assert_eq!(ended_by(&v), "relayed_handled", "{who:?} control: {v}");
                assert_eq!(v["killed_at_end"], 0, "{v}");
                continue;
            }
            assert_eq!(code(out.status), 128 + libc::SIGTERM, "{who:?}: {}", out.err);
            assert_eq!(ended_by(&v), "grace_expired", "{who:?}: {v}");
            assert!(v["payload"].is_null(), "{v}");
            assert_eq!(v["snug_exit"]["signal"], "TERM", "{v}");
            assert!(v["killed_at_end"].as_u64().is_some_and(|n| n >= 1), "sh at least: {v}");
            assert!(v["durations_ms"]["grace"].as_u64().is_some_and(|g| g >= 990), "{v}");
        }
    });
}

/// O5, G4: a second TERM during the grace tears down at once. Control: the first TERM alone
/// (same payload) lets the grace run out — see also [`o5_grace_expired`]; here the run ends
/// well before the grace would have.
#[test]
fn o5_second_signal() {
    each(&|who: Who| {
        let dir = workdir(who);
        let r = Reported::start(who, dir.path(), "r", &["--", "sh", "-c", &looping(false)]);
        r.wait_ready(&dir.path().join("ready"));
        r.signal(libc::SIGTERM);
        // Kept: pacing; the second TERM comes 0.2 s into the grace (1 s), as a person's would.
        std::thread::sleep(Duration::from_millis(200));
        let second = Instant::now();
        r.signal(libc::SIGTERM);
        let (out, _, v) = r.finish();
        assert!(second.elapsed() < Duration::from_millis(700), "{who:?}: not at once");
        assert_eq!(code(out.status), 128 + libc::SIGTERM, "{who:?}: {}", out.err);
        assert_eq!(ended_by(&v), "second_signal", "{who:?}: {v}");
        let actions: Vec<&str> =
            v["signals"].as_array().into_iter().flatten().filter_map(|s| s["action"].as_str()).collect();
        assert_eq!(actions, ["relay_with_grace", "teardown"], "{v}");
        assert_eq!(v["signals"][1]["relayed"], false, "{v}");
        assert!(v["durations_ms"]["grace"].as_u64().is_some_and(|g| g < 900), "{v}");
    });
}

/// O6: `--timeout 0.5s -- sleep 5` exits 124 at 0.5–0.7 s (asserted with a margin: ≤ 1 s),
/// and a payload that handles the TERM and exits 0 within the grace still makes it 124.
/// Controls: a deadline the payload beats changes nothing (exit 0, `payload`); the report
/// lists the TERM as the timeout's, not a process's.
#[test]
fn o6_timeout_exits_124() {
    each(&|who: Who| {
        let dir = workdir(who);
        let (out, took, v) = Reported::start(who, dir.path(), "r", &["--timeout", "0.5s", "--", "sleep", "5"]).finish();
        eprintln!("O6 {who:?}: --timeout 0.5s -- sleep 5 ended after {} ms", took.as_millis());
        assert_eq!(code(out.status), 124, "{who:?}: {}", out.err);
        assert!(took >= Duration::from_millis(500) && took < Duration::from_secs(1), "{who:?}: {took:?}");
        assert_eq!(ended_by(&v), "timeout", "{v}");
        assert_eq!(v["snug_exit"]["code"], 124, "{v}");
        assert_eq!(v["payload"]["signal"], "TERM", "sleep dies of the relayed TERM: {v}");
        assert_eq!(v["timeout_ms"], 500, "{v}");
        let s = &v["signals"][0];
        assert_eq!((s["origin"].as_str(), s["action"].as_str()), (Some("timeout"), Some("relay_with_grace")), "{v}");

        let (out, v) = reported(who, &["--timeout", "300ms", "--", "sh", "-c", &looping(true)]);
        assert_eq!(code(out.status), 124, "{who:?}: exit 0 within the grace is still a timeout");
        assert_eq!((ended_by(&v), &v["payload"]["code"]), ("timeout", &serde_json::json!(0)), "{v}");

        let (out, v) = reported(who, &["--timeout", "10s", "--", "sleep", "0.2"]);
        assert_eq!(code(out.status), 0, "{who:?} control: {}", out.err);
        assert_eq!(ended_by(&v), "payload", "{v}");
    });
}

/// O5: the payload killed by SIGKILL → `payload_signal` 9, snug dies of it (R3). Control:
/// the same number as an exit code is `payload` with code 9.
#[test]
fn o5_payload_signal_kill() {
    each(&|who: Who| {
        let (out, v) = reported(who, &["--", "sh", "-c", "kill -KILL $$"]);
        assert_eq!(code(out.status), 128 + 9, "{who:?}: {}", out.err);
        assert_eq!(ended_by(&v), "payload_signal", "{v}");
        assert_eq!((v["payload"]["signal"].as_str(), v["payload"]["number"].as_i64()), (Some("KILL"), Some(9)), "{v}");
        assert_eq!(v["snug_exit"]["number"], 9, "{v}");

        let (out, v) = reported(who, &["--", "sh", "-c", "exit 9"]);
        assert_eq!(code(out.status), 9);
        assert_eq!((ended_by(&v), &v["payload"]["code"]), ("payload", &serde_json::json!(9)), "{v}");
    });
}

/// O5, R4: snug's own errors, before the payload (a bad profile: 77) and at its exec (127:
/// the payload never ran, `payload` null), carry the one-line message. Control: a command
/// that exists is `payload`.
#[test]
fn o5_snug_error() {
    each(&|who: Who| {
        let missing = format!("no-such-command-{}", marker());
        let (out, v) = reported(who, &["--", &missing]);
        assert_eq!(code(out.status), 127, "{who:?}: {}", out.err);
        assert_eq!(ended_by(&v), "snug_error", "{v}");
        assert!(v["payload"].is_null(), "{v}");
        assert_eq!(v["snug_exit"]["code"], 127, "{v}");
        assert_eq!(v["error"], format!("{missing}: command not found"), "{v}");

        let (out, v) = reported(who, &["-p", "no-such-profile", "--", "true"]);
        assert_eq!(code(out.status), 77, "{who:?}: {}", out.err);
        assert_eq!(ended_by(&v), "snug_error", "{v}");
        assert!(v["durations_ms"]["startup"].is_null(), "{v}");
        assert!(v["error"].as_str().is_some_and(|e| e.contains("no-such-profile")), "{v}");

        let (out, v) = reported(who, &["--", "true"]);
        assert_eq!(code(out.status), 0);
        assert_eq!(ended_by(&v), "payload", "{v}");
        assert!(v["error"].is_null() && v["durations_ms"]["startup"].is_u64(), "{v}");
    });
}

/// O5, R5: `killed_at_end` counts the processes the payload's end killed (init counts them
/// before its exit), and none survives. Control: a payload that leaves nothing → 0.
#[test]
fn o5_killed_at_end_counts_leftovers() {
    each(&|who: Who| {
        let m = marker();
        let (out, v) = reported(who, &["--", "sh", "-c", &format!("sleep {m} & sleep {m} & exit 0")]);
        let since = Instant::now();
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        assert_eq!(ended_by(&v), "payload", "{v}");
        assert_eq!(v["killed_at_end"], 2, "{who:?}: {v}");
        assert!(survivors(&format!("sleep {m}"), since).is_empty(), "{who:?}");

        let (_, v) = reported(who, &["--", "true"]);
        assert_eq!(v["killed_at_end"], 0, "{who:?} control: {v}");
    });
}
