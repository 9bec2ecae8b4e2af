//! K5, O5, L2: what ended a run is said in one `snug: ` line (a bound it hit) or in `snug
//! stop`'s answer (within the grace, or torn down), besides the report.

use crate::common::*;
use crate::conventions::snug_run;
use std::time::Duration;

/// K5, O5: an OOM kill at `--memory` is one `snug: ` line naming the bound; forks refused at
/// `--max-procs` are one line when the run failed. Controls: a `kill -9` under the same
/// memory bound and the same forks under a bound they stay within say nothing. Where the
/// machine has no memory or pids cgroup (the report cannot count) the row is skipped. Without
/// the fix the OOM run's stderr held no `snug: ` line at all, only what the payload printed.
#[test]
fn k5_bound_hits_get_one_line() {
    let who = Who::Root;
    let dir = workdir(who);
    let o = snug_run(who, dir.path(), &["--memory", "64M", "--", "sh", "-c", "tail /dev/zero"], &[]);
    if o.status.code() == Some(69) {
        eprintln!("no memory cgroup here: {}", o.err);
    } else {
        let lines: Vec<&str> = o.err.lines().filter(|l| l.starts_with("snug: ")).collect();
        assert_eq!(lines.len(), 1, "{}", o.err);
        assert!(lines[0].contains("OOM killer") && lines[0].contains("memory bound of 64 MiB"), "{}", o.err);
        let o = snug_run(who, dir.path(), &["--memory", "64M", "--", "sh", "-c", "kill -9 $$"], &[]);
        assert_eq!((code(o.status), o.err.as_str()), (137, ""), "control");
    }
    let forks = "for i in 1 2 3 4 5 6 7 8; do sleep 0.2 & done; wait";
    let o = snug_run(who, dir.path(), &["--max-procs", "5", "--", "sh", "-c", forks], &[]);
    let plan = snug_run(who, dir.path(), &["-n", "--json", "--", "true"], &[]);
    let plan: serde_json::Value = serde_json::from_str(&plan.out).expect("plan");
    if !plan["bounds"]["procs_mechanism"].as_str().is_some_and(|m| m.starts_with("cgroup")) {
        eprintln!("no pids cgroup here: {plan}");
        return;
    }
    let line = o.err.lines().find(|l| l.starts_with("snug: ")).unwrap_or_default();
    assert!(line.contains("refused at the process bound of 5"), "{}", o.err);
    let o = snug_run(who, dir.path(), &["--max-procs", "50", "--", "sh", "-c", forks], &[]);
    assert_eq!((o.status.code(), o.err.as_str()), (Some(0), ""), "control");
}

/// L2: `snug stop` says whether the run ended within the grace or was torn down (when the
/// grace ran out, or at once with `--now`). Without the fix the first said only
/// "st-…: exited 0", and the other two "killed by SIGTERM" alike.
#[test]
fn l2_stop_says_within_the_grace_or_torn_down() {
    for who in everyone() {
        for (trap, now, want) in [
            ("trap 'exit 0' TERM", false, "exited 0 (the payload ended within the grace)"),
            ("trap '' TERM", false, "(the payload did not end within the grace, so snug tore the sandbox down)"),
            ("trap '' TERM", true, "(snug tore the sandbox down at once)"),
        ] {
            let dir = workdir(who);
            let name = format!("st-{}", marker());
            let script = format!("{trap}; touch ready; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done");
            let run = start(&mut snug_cmd(who, dir.path(), &["--name", &name, "--", "sh", "-c", &script]));
            let ready = dir.path().join("ready");
            assert!(until(Duration::from_secs(20), || ready.exists()), "{who:?}: not ready");
            let mut args = vec!["stop"];
            if now {
                args.push("--now");
            }
            args.push(&name);
            let o = snug_run(who, dir.path(), &args, &[]);
            let _ = run.finish(crate::conventions::LIMIT);
            assert!(o.out.starts_with(&format!("{name}: ")) && o.out.trim_end().ends_with(want), "{who:?}: {}", o.out);
        }
    }
}
