//! README "In CI", cancellation: what a job under `exec snug` sees when GitHub Actions (INT to
//! the job's process, TERM 7.5 s later) or GitLab (TERM to the job's process group) cancels
//! it, and why a payload should handle INT as it handles TERM.

use crate::common::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// The README's example: examples/ci-job.sh running a payload that cleans up on INT and TERM
/// alike. GitHub's INT (to the job's process alone) and GitLab's TERM (to its group) each
/// reach the payload once, relayed; its cleanup runs and the job ends within the 1 s grace,
/// long before GitHub's TERM at 7.5 s or any KILL. The control is a payload that handles
/// TERM only: GitHub's INT finds no handler, the payload dies of it, what it left is torn
/// down when the grace ends and the cleanup never runs (the job dies of INT: 130).
#[test]
fn o5_ci_cancellation_under_github_and_gitlab() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci-job.sh");
    for who in everyone() {
        for (runner, sig, group, traps, cleaned) in [
            ("github", libc::SIGINT, false, "INT TERM", true),
            ("gitlab", libc::SIGTERM, true, "INT TERM", true),
            ("github, TERM only", libc::SIGINT, false, "TERM", false),
        ] {
            let dir = workdir(who);
            let bin = snug_for(who);
            let path = format!("{}:/usr/bin:/bin", bin.parent().expect("bindir").display());
            // The cleanup stops the payload's background job too (a non-interactive shell's `&`
            // job ignores INT), so the sandbox empties with the payload's exit. `ready` comes
            // once the job runs `sleep`: a signal before it would find `$!` unset, or reach the
            // forked shell before its exec, which drops a pending trap's signal, and leave the
            // job to the end of the grace.
            let payload = format!(
                "trap 'kill $!; echo done > cleaned; exit 1' {traps}; sleep 20 & \
                 while [ \"$(cat /proc/$!/comm)\" != sleep ]; do :; done; touch ready; wait"
            );
            let mut c = cmd_as(who, dir.path(), "sh", &[script.to_str().unwrap(), "sh", "-c", &payload]);
            c.env("PATH", path).env("SNUG_REPORT", dir.path().join("report.json"));
            c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
            let mut job = spawn_own_group(&mut c);
            assert!(until(Duration::from_secs(15), || dir.path().join("ready").exists()), "{who:?} {runner}");
            let sent = Instant::now();
            if group {
                kill_group(job.id() as i32, sig);
            } else {
                kill(job.id(), sig);
            }
            let status = wait_bounded(&mut job, Duration::from_secs(15)).expect("the job ends");
            let took = sent.elapsed();
            eprintln!("CI {who:?} {runner}: job ended {} ms after the signal", took.as_millis());
            assert_eq!(dir.path().join("cleaned").exists(), cleaned, "{who:?} {runner}: cleanup ran?");
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
            if cleaned {
                assert_eq!(code(status), 1, "{who:?} {runner}: the payload's own status");
                assert_eq!(v["ended_by"], "relayed_handled", "{v}");
                assert!(took < Duration::from_millis(1000), "{who:?} {runner}: within the grace: {took:?}");
            } else {
                assert_eq!(code(status), 128 + libc::SIGINT, "{who:?} {runner}");
                assert_eq!(v["payload"]["signal"], "INT", "the payload died of the INT: {v}");
                assert!(took < Duration::from_secs(5), "{took:?}");
            }
        }
    }
}
