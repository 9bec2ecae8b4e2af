//! O5, O6: the report's context fields, the timeout's line, and the README's CI job script
//! (examples/ci-job.sh) cancelled as CI runners cancel a job.

use crate::common::*;
use crate::conventions::snug_run;
use std::path::Path;
use std::time::Duration;

/// The report of a finished run in `dir`.
fn report_of(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_default()).unwrap_or(serde_json::Value::Null)
}

fn utc_now() -> String {
    let o = std::process::Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%S"]).output().expect("date");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// O5: the report gives the command line, DIR, the wall-clock start (RFC 3339), peak memory
/// and CPU time, the bounds in force and none hit, and a reason in plain words. The CPU-bound
/// payload makes cpu_ms measurable; the control is the payload's own exit code in `reason`.
/// Fails without the fix: none of command, argv, dir, started_at, usage, bounds, reason was
/// in the report.
#[test]
fn o5_report_gives_command_dir_start_usage_bounds_reason() {
    for who in everyone() {
        let dir = workdir(who);
        let before = utc_now();
        let spin = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exit 3";
        let o = snug_run(who, dir.path(), &["--report", "r.json", "--", "sh", "-c", spin], &[]);
        let after = utc_now();
        assert_eq!(o.status.code(), Some(3), "{who:?}: {}", o.err);
        let v = report_of(&dir.path().join("r.json"));
        assert_eq!(v["command"], serde_json::json!(["sh", "-c", spin]), "{v}");
        let argv: Vec<&str> = v["argv"].as_array().expect("argv").iter().filter_map(|a| a.as_str()).collect();
        assert_eq!(&argv[1..], &["--report", "r.json", "--", "sh", "-c", spin], "{v}");
        let canonical = std::fs::canonicalize(dir.path()).expect("canonical");
        assert_eq!(v["dir"].as_str(), canonical.to_str(), "{v}");
        let at = v["started_at"].as_str().expect("started_at");
        assert!(at.len() == 24 && at.ends_with('Z') && at.as_bytes()[10] == b'T', "{at}");
        assert!(before.as_str() <= &at[..19] && &at[..19] <= after.as_str(), "{before} <= {at} <= {after}");
        assert!(v["usage"]["cpu_ms"].as_u64().is_some_and(|ms| ms >= 20), "a busy loop's CPU: {v}");
        assert!(v["usage"]["peak_memory_bytes"].as_u64().is_some_and(|b| b >= 100 << 10), "{v}");
        assert_eq!(v["bounds"]["max_procs"], 4096, "{v}");
        assert_eq!(v["bounds"]["hit"], serde_json::json!([]), "{v}");
        assert_eq!(v["reason"], "the payload exited with code 3", "{v}");
    }
}

/// O5, K5: a payload the OOM killer ends is reported as `oom` with the reason saying so.
/// Control: the same bound and a payload killed by `kill -9` (not the OOM killer) hits
/// nothing. Only where a memory cgroup is available (root here). Fails without the fix: the
/// OOM kill read `payload_signal` or exit 137 and nothing more, like any SIGKILL.
#[test]
fn o5_oom_kill_is_reported() {
    let who = Who::Root;
    let dir = workdir(who);
    let o =
        snug_run(who, dir.path(), &["--report", "r.json", "--memory", "64M", "--", "sh", "-c", "tail /dev/zero"], &[]);
    if o.status.code() == Some(69) {
        eprintln!("no memory cgroup here: {}", o.err);
        return;
    }
    let v = report_of(&dir.path().join("r.json"));
    assert_eq!(v["bounds"]["hit"], serde_json::json!(["oom"]), "{v}");
    assert!(v["bounds"]["oom_kills"].as_u64().is_some_and(|n| n >= 1), "{v}");
    assert_eq!(v["bounds"]["memory"], 64 << 20, "{v}");
    assert_eq!(v["usage"]["peak_memory_of"], "sandbox", "{v}");
    assert!(
        v["reason"].as_str().is_some_and(|r| r.contains("hit its memory bound of 64 MiB") && r.contains("OOM killer")),
        "{v}"
    );
    let o = snug_run(who, dir.path(), &["--report", "r.json", "--memory", "64M", "--", "sh", "-c", "kill -9 $$"], &[]);
    assert_eq!(code(o.status), 128 + 9, "{}", o.err);
    let v = report_of(&dir.path().join("r.json"));
    assert_eq!((v["ended_by"].as_str(), &v["bounds"]["hit"]), (Some("payload_signal"), &serde_json::json!([])), "{v}");
    assert_eq!(v["reason"], "the payload was killed by KILL", "control: {v}");
}

/// O5, K5: forks refused at the process bound are reported (`procs`). Control: the same
/// payload under a bound it stays within hits nothing. Fails without the fix: nothing said
/// that a fork had been refused.
#[test]
fn o5_refused_forks_are_reported() {
    let dir = workdir(Who::Root);
    let forks = "for i in 1 2 3 4 5 6 7 8; do sleep 0.2 & done; wait";
    let o = snug_run(Who::Root, dir.path(), &["--report", "r.json", "--max-procs", "5", "--", "sh", "-c", forks], &[]);
    let v = report_of(&dir.path().join("r.json"));
    let plan = snug_run(Who::Root, dir.path(), &["-n", "--json", "--", "true"], &[]);
    let plan: serde_json::Value = serde_json::from_str(&plan.out).expect("plan");
    if !plan["bounds"]["procs_mechanism"].as_str().is_some_and(|m| m.starts_with("cgroup")) {
        eprintln!("no pids cgroup here (RLIMIT_NPROC refusals are not counted): {plan}");
        return;
    }
    assert_ne!(o.status.code(), Some(0), "a fork failed: {}", o.err);
    assert_eq!(v["bounds"]["hit"], serde_json::json!(["procs"]), "{v}");
    assert!(v["reason"].as_str().is_some_and(|r| r.contains("refused at the process bound of 5")), "{v}");
    let o = snug_run(Who::Root, dir.path(), &["--report", "r.json", "--max-procs", "50", "--", "sh", "-c", forks], &[]);
    assert_eq!(o.status.code(), Some(0), "control: {}", o.err);
    assert_eq!(report_of(&dir.path().join("r.json"))["bounds"]["hit"], serde_json::json!([]), "control");
}

/// O6: the timeout says, in one `snug: ` line, that it ended the run. Control: a run that
/// ends before its timeout says nothing. Fails without the fix: stderr was empty, exit 124.
#[test]
fn o6_timeout_says_so_on_stderr() {
    for who in everyone() {
        let dir = workdir(who);
        let o = snug_run(who, dir.path(), &["--timeout", "300ms", "--", "sleep", "5"], &[]);
        assert_eq!(o.status.code(), Some(124), "{who:?}: {}", o.err);
        assert_eq!(o.err, "snug: the timeout (300 ms) ended the run: exit 124\n", "{who:?}");
        let o = snug_run(who, dir.path(), &["--timeout", "10s", "--", "true"], &[]);
        assert_eq!((o.status.code(), o.err.as_str()), (Some(0), ""), "{who:?} control");
    }
}

/// README "In CI": examples/ci-job.sh, started in its own process group as a runner starts a
/// job and cancelled as runners cancel (TERM to the job's process group: GitLab's shell
/// executor, Buildkite; INT to the job's process alone: GitHub Actions), ends only once the
/// report is complete (grace expired: the payload ignores both). The control is the same
/// script without `exec`: its shell dies of the TERM at once, and when the job has ended the
/// report is not complete yet (snug is in its grace; the first record says `ended_by` null). Fails without `exec`: that control.
#[test]
fn o5_ci_job_script_report_is_complete_when_the_job_ends() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci-job.sh");
    let text = std::fs::read_to_string(&script).expect("examples/ci-job.sh");
    for who in everyone() {
        for (exec, sig, group) in
            [(true, libc::SIGTERM, true), (true, libc::SIGINT, false), (false, libc::SIGTERM, true)]
        {
            let dir = workdir(who);
            let job = dir.path().join("job.sh");
            let body = if exec { text.clone() } else { text.replace("\nexec snug ", "\nsnug ") };
            assert!(exec || body != text, "the control removes the exec");
            std::fs::write(&job, body).expect("write job");
            let bin = snug_for(who);
            let path = format!("{}:/usr/bin:/bin", bin.parent().expect("bindir").display());
            let payload = "trap '' TERM INT; touch ready; sleep 20";
            let mut c = cmd_as(who, dir.path(), "sh", &[job.to_str().expect("utf8"), "sh", "-c", payload]);
            c.env("PATH", path).env("SNUG_REPORT", dir.path().join("report.json")).env("SNUG_TIMEOUT", "60s");
            // Only the job's own process is waited for, as a runner does (not its pipes).
            c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
            let mut job = spawn_own_group(&mut c);
            assert!(until(Duration::from_secs(15), || dir.path().join("ready").exists()), "{who:?}: job started");
            if group {
                kill_group(job.id() as i32, sig);
            } else {
                kill(job.id(), sig);
            }
            let status = wait_bounded(&mut job, Duration::from_secs(15)).expect("the job ends");
            // The job has ended: what the runner would keep now.
            let v = report_of(&dir.path().join("report.json"));
            if exec {
                assert_eq!(code(status), 128 + sig, "{who:?}");
                assert_eq!(v["ended_by"], "grace_expired", "{who:?}: {v}");
                assert_eq!(v["signals"][0]["number"], sig, "{v}");
                assert!(v["reason"].as_str().is_some_and(|r| r.contains("did not end within the grace")), "{v}");
                assert!(v["usage"].is_object() && v["started_at"].is_string(), "{v}");
            } else {
                // At most the first record (O10), `ended_by` null: the report is not complete.
                assert!(v["ended_by"].is_null(), "{who:?} control: the report was complete when the job ended: {v}");
                // snug itself still ends on its own; wait for it so nothing outlives the test.
                let done = || report_of(&dir.path().join("report.json"))["ended_by"].is_string();
                assert!(until(Duration::from_secs(10), done));
            }
        }
    }
}
