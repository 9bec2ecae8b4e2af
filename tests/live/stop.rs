//! `snug stop`, `snug signal` (SPEC L2) and `--jobs` (L4).

use crate::common::{code, everyone, marker, workdir};
use crate::live::{ms, run, Live};
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

/// L2 (G5 through stop): `stop` of a payload with `trap "echo T; exit 7" TERM` behind a
/// blocking child: the handler runs (T), the run exits 7, `stop` says so and returns at once
/// (no grace to wait out). Positive control: the same payload without the trap is reported
/// as killed by SIGTERM, so "exited 7" is the handler's doing.
#[test]
fn l2_stop_runs_the_handler_and_reports_exit_7() {
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        let script = format!("trap 'echo T; exit 7' TERM; echo ready; sleep {m}");
        let mut a = Live::start(who, dir.path(), &[], &["sh", "-c", &script]);
        a.ready(dir.path(), "running");
        a.said("ready\n");
        let (st, out, err, took) = run(who, dir.path(), &["stop", &a.name]);
        println!("L2 {who:?}: stop returned after {} ms (issue: within 200)", ms(took));
        assert!(st.success(), "{who:?}: {err}");
        // How it ended, when snug saw the grace start before the payload's end.
        let note = out.trim().strip_prefix(&format!("{}: exited 7", a.name));
        assert!(note.is_some_and(|n| n.is_empty() || n == " (the payload ended within the grace)"), "{who:?}: {out}");
        assert!(took < Duration::from_millis(900), "{who:?}: stop took {} ms: it waited for a grace", ms(took));
        assert_eq!(a.end(Duration::from_secs(5)).code(), Some(7));
        assert_eq!(a.stdout(), "ready\nT\n", "{who:?}");

        let mut c = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
        c.ready(dir.path(), "running");
        let (_, out, _, _) = run(who, dir.path(), &["stop", &c.name]);
        assert!(out.trim().starts_with(&format!("{}: killed by SIGTERM", c.name)), "control: {out}");
        assert_eq!(c.end(Duration::from_secs(5)).signal(), Some(libc::SIGTERM));
    }
}

/// L2 (G3 through stop): a payload that ignores TERM gets the whole grace; `stop` returns
/// when the run is gone, 1.0–1.2 s later, and reports SIGTERM. `stop --now` tears down at
/// once (G4). Positive control: `--now` on the same payload returns well before the grace,
/// so the timing assertion tells the two apart.
#[test]
fn l2_stop_of_an_ignoring_payload_waits_for_the_grace() {
    for who in everyone() {
        let dir = workdir(who);
        let payload = |m: &str| vec!["sh".to_string(), "-c".into(), format!("trap '' TERM; echo ready; sleep {m}")];
        let p = payload(&marker());
        let mut a = Live::start(who, dir.path(), &[], &p.iter().map(String::as_str).collect::<Vec<_>>());
        a.ready(dir.path(), "running");
        a.said("ready\n");
        let (st, out, _, took) = run(who, dir.path(), &["stop", &a.name]);
        println!("L2 {who:?}: stop of an ignoring payload took {} ms (SPEC: 1000-1100)", ms(took));
        assert!(st.success() && out.contains("killed by SIGTERM"), "{who:?}: {out}");
        assert!((900..=1600).contains(&took.as_millis()), "{who:?}: {} ms", ms(took));
        assert_eq!(a.end(Duration::from_secs(5)).signal(), Some(libc::SIGTERM));

        let p = payload(&marker());
        let mut c = Live::start(who, dir.path(), &[], &p.iter().map(String::as_str).collect::<Vec<_>>());
        c.ready(dir.path(), "running");
        let (st, out, _, took) = run(who, dir.path(), &["stop", "--now", &c.name]);
        println!("L2 {who:?}: stop --now took {} ms", ms(took));
        assert!(st.success() && out.contains("killed by SIGTERM"), "{out}");
        assert!(took < Duration::from_millis(700), "control: --now took {} ms", ms(took));
        c.end(Duration::from_secs(5));
    }
}

/// L2 (G6 through signal): `snug signal NAME USR1` relays USR1 once without a grace: the
/// payload's handler runs and the run ends as the payload does. `snug signal NAME TERM`
/// starts the grace like a kill (state grace in `ps`). Positive control: an unknown
/// signal name is a usage error and reaches nothing (the run is still running after it).
#[test]
fn l2_signal_relays_as_a_kill_would() {
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        let script = format!("trap 'echo U' USR1; trap '' TERM; echo R; while :; do sleep {m}; done");
        let mut a = Live::start(who, dir.path(), &[], &["sh", "-c", &script]);
        a.ready(dir.path(), "running");
        a.said("R\n");
        let (st, _, err, _) = run(who, dir.path(), &["signal", &a.name, "NOPE"]);
        assert_eq!(code(st), 64, "{err}");
        a.ready(dir.path(), "running");
        let (st, _, err, _) = run(who, dir.path(), &["signal", &a.name, "SIGUSR1"]);
        assert!(st.success(), "{err}");
        assert!(crate::common::until(Duration::from_secs(5), || a.stdout() == "R\nU\n"), "{who:?}: {:?}", a.stdout());
        a.ready(dir.path(), "running");
        let sent = Instant::now();
        run(who, dir.path(), &["signal", &a.name, "15"]);
        a.ready(dir.path(), "grace");
        assert_eq!(a.end(Duration::from_secs(5)).signal(), Some(libc::SIGTERM));
        println!("L2 {who:?}: run gone {} ms after `snug signal NAME 15`", ms(sent.elapsed()));
    }
}

/// L4: `--jobs wait` with `sh -c 'sleep 0.5 & exit 3'` exits 3, once the background job is
/// done (>= 0.5 s); meanwhile `ps` says jobs. Positive control: the default (`kill`, R5)
/// exits 3 well before 0.5 s.
#[test]
fn l4_jobs_wait_outlives_the_main_process() {
    for who in everyone() {
        let dir = workdir(who);
        let t0 = Instant::now();
        let (st, _, err, _) = run(who, dir.path(), &["--jobs", "wait", "--", "sh", "-c", "sleep 0.5 & exit 3"]);
        let took = t0.elapsed();
        println!("L4 {who:?}: --jobs wait exited after {} ms", ms(took));
        assert_eq!(code(st), 3, "{who:?}: {err}");
        assert!(took >= Duration::from_millis(500), "{who:?}: {} ms", ms(took));
        let t0 = Instant::now();
        let (st, _, _, _) = run(who, dir.path(), &["--", "sh", "-c", "sleep 0.5 & exit 3"]);
        assert!(code(st) == 3 && t0.elapsed() < Duration::from_millis(450), "control: {} ms", ms(t0.elapsed()));

        // State jobs, and stop still applies (G2 through the grace).
        let m = marker();
        let mut a = Live::start(who, dir.path(), &["--jobs", "wait"], &["sh", "-c", &format!("sleep {m} & exit 5")]);
        a.ready(dir.path(), "jobs");
        let (_, out, _, _) = run(who, dir.path(), &["stop", &a.name]);
        assert!(out.contains("exited 5"), "{who:?}: {out}");
        assert_eq!(a.end(Duration::from_secs(5)).code(), Some(5));
        assert!(crate::common::survivors(&format!("sleep {m}"), Instant::now()).is_empty());
    }
}

/// L4: `--jobs grace`: at the main process's exit what is left gets TERM, so a background
/// job's TERM handler runs, and the run exits with the main process's status; one that
/// ignores TERM is killed after the 1.0 s grace. Positive control: with the default
/// (`kill`) the handler never runs.
#[test]
fn l4_jobs_grace_lets_a_background_handler_run() {
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        // The main process exits once the background job has set its trap and said so with
        // a file in DIR (bounded: 10 s in steps of 10 ms).
        let after = |file: &str| {
            format!(
                "i=0; while [ ! -e {file} ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; rm -f {file}; exit 4"
            )
        };
        let bg = format!("bg-{m}");
        let script = format!("(trap 'echo BG; exit 0' TERM; touch {bg}; sleep {m} & wait) & {}", after(&bg));
        let (st, out, err, _) = run(who, dir.path(), &["--jobs", "grace", "--", "sh", "-c", &script]);
        assert_eq!((code(st), out.as_str()), (4, "BG\n"), "{who:?}: {err}");
        let t0 = Instant::now();
        let ig = format!("ig-{m}");
        let ignoring = format!("(trap '' TERM; touch {ig}; sleep {m}) & {}", after(&ig));
        let (st, _, _, _) = run(who, dir.path(), &["--jobs", "grace", "--", "sh", "-c", &ignoring]);
        let took = t0.elapsed();
        println!("L4 {who:?}: --jobs grace with an ignoring job: {} ms", ms(took));
        // The whole run holds the 1.0 s grace (before, 0.3 s of the main's own sleep + the
        // grace, asserted as >= 1.2 s).
        assert!(code(st) == 4 && took >= Duration::from_millis(1000), "{who:?}: {} ms", ms(took));
        assert!(crate::common::survivors(&format!("sleep {m}"), Instant::now()).is_empty());
        let (st, out, _, _) = run(who, dir.path(), &["--", "sh", "-c", &script]);
        assert_eq!((code(st), out.as_str()), (4, ""), "control");
    }
}

/// O5 with L2: a run ended by `snug stop` is reported as `ended_by: stop` under its name,
/// also when the payload's handler exits 0 (an operator's stop is never a plain success), and
/// with `--now`. Positive control: the same payload sent TERM with `kill` reads
/// `relayed_handled`, so `stop` is told apart from any other TERM.
#[test]
fn o5_l2_stop_is_reported_as_stop() {
    for who in everyone() {
        let dir = workdir(who);
        let report = |name: &str| -> serde_json::Value {
            let text = std::fs::read_to_string(dir.path().join(format!("{name}.json"))).expect("report written");
            serde_json::from_str(&text).expect("one JSON object")
        };
        for how in ["stop", "stop --now", "kill"] {
            let m = marker();
            let name = format!("report-{m}");
            let file = format!("{name}.json");
            let payload = format!("trap 'exit 0' TERM; echo ready; sleep {m} & wait");
            let mut a = Live::start(who, dir.path(), &["--report", &file], &["sh", "-c", &payload]);
            a.ready(dir.path(), "running");
            a.said("ready\n");
            match how {
                "kill" => crate::common::kill(a.child.id(), libc::SIGTERM),
                _ => {
                    let mut args = vec!["stop"];
                    if how.ends_with("--now") {
                        args.push("--now");
                    }
                    args.push(&a.name);
                    let (st, _, err, _) = run(who, dir.path(), &args);
                    assert!(st.success(), "{who:?} {how}: {err}");
                }
            }
            a.end(Duration::from_secs(5));
            let r = report(&name);
            let want = if how == "kill" { "relayed_handled" } else { "stop" };
            assert_eq!(r["ended_by"], want, "{who:?} {how}: {r}");
            assert_eq!(r["name"], a.name.as_str(), "{who:?} {how}: {r}");
        }
    }
}

/// L5: `stop`, `signal` and `exec` given a path that is no run's socket (a file, a fifo, both
/// writable by everyone so that `connect(2)` gets as far as ECONNREFUSED) refuse with 64 and
/// leave it alone; the socket of a snug that is gone is still removed. Positive control: fails
/// without the fix: snug removed the file and the fifo, since `connect(2)` to a file that is no
/// socket is refused as a dead socket's is (an attacker's run found `snug stop /etc/passwd` as
/// root deleting /etc/passwd).
#[test]
fn l5_a_path_that_is_no_socket_is_never_removed() {
    use std::os::unix::fs::PermissionsExt;
    for who in everyone() {
        let dir = workdir(who);
        let file = dir.path().join("precious");
        std::fs::write(&file, "keep").unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        for p in [&file, &fifo] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o666)).unwrap();
            let p = p.to_str().unwrap();
            for args in [vec!["stop", p], vec!["signal", p, "TERM"], vec!["exec", p, "--", "true"]] {
                let (st, _, err, _) = run(who, dir.path(), &args);
                assert_eq!(st.code(), Some(64), "{who:?} {args:?}: {err}");
                assert!(err.contains("not a live sandbox's socket"), "{who:?} {args:?}: {err}");
            }
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep", "{who:?}");
        assert!(fifo.exists(), "{who:?}: the fifo was removed");
        // Nothing at the path: no run there, 64 as for a name (it was 71, "No such file").
        let missing = dir.path().join("nothing-here.sock");
        let (st, _, err, _) = run(who, dir.path(), &["stop", missing.to_str().unwrap()]);
        assert_eq!(st.code(), Some(64), "{who:?}: {err}");
        assert!(err.starts_with("snug: no live sandbox at "), "{who:?}: {err}");

        let stale = dir.path().join("gone.sock");
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o777)).unwrap();
        let (st, _, err, _) = run(who, dir.path(), &["stop", stale.to_str().unwrap()]);
        assert_eq!(st.code(), Some(64), "{who:?}: {err}");
        assert!(!stale.exists(), "{who:?}: a dead snug's socket stays: {err}");
    }
}

/// L2, G6, O4, O5 (issue: snug counted RTMIN from the kernel's 32, so `snug signal NAME
/// RTMIN+2` delivered 34 where `kill -s RTMIN+2` delivers 36): the real-time names mean what
/// bash's `kill -s` makes of them (`kill -l NAME` in the control below), the payload's trap
/// for that number runs, and `-v` and `--report` name the signal as bash does. Positive
/// control: bash's own numbers for the names, asked in the test; fails without the fix
/// (tried once: `snug signal NAME RTMIN+2` ran the trap for 34).
#[test]
fn l2_g6_realtime_signal_names_are_bash_kill_s() {
    let names = ["RTMIN+2", "RTMIN", "RTMAX-1", "SIGRTMAX"];
    let number = |n: &str| -> String {
        let bare = n.strip_prefix("SIG").unwrap_or(n);
        let o = std::process::Command::new("bash").args(["-c", &format!("kill -l {bare}")]).output().expect("bash");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let want: Vec<String> = names.iter().map(|n| number(n)).collect();
    assert_eq!(want, ["36", "34", "63", "64"], "control: bash's numbers");
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        let traps: String = want.iter().map(|n| format!("trap 'echo {n}' {n}; ")).collect();
        let script = format!("{traps}echo ready; while :; do sleep {m} & wait; done");
        let report = format!("rt-{m}.json");
        let mut a = Live::start(who, dir.path(), &["-v", "--report", &report], &["bash", "-c", &script]);
        assert!(crate::common::until(Duration::from_secs(10), || a.stdout() == "ready\n"), "{who:?}: {}", a.stderr());
        let mut seen = String::from("ready\n");
        for (name, n) in names.iter().zip(&want) {
            let (st, _, err, _) = run(who, dir.path(), &["signal", &a.name, name]);
            assert!(st.success(), "{who:?} {name}: {err}");
            seen.push_str(&format!("{n}\n"));
            let ok = crate::common::until(Duration::from_secs(5), || a.stdout() == seen);
            assert!(ok, "{who:?}: {name} should run the trap for {n}: {:?}", a.stdout());
        }
        run(who, dir.path(), &["stop", "--now", &a.name]);
        a.end(Duration::from_secs(5));
        let log = a.stderr();
        assert!(log.contains("received SIGRTMIN+2 from process"), "{who:?}: {log}");
        assert!(log.contains("received SIGRTMAX-1 from process"), "{who:?}: {log}");
        let text = std::fs::read_to_string(dir.path().join(&report)).expect("report");
        let r: serde_json::Value = serde_json::from_str(&text).expect("report JSON");
        let got: Vec<(String, i64)> = r["signals"]
            .as_array()
            .expect("signals")
            .iter()
            .filter(|s| s["number"].as_i64().is_some_and(|n| n >= 32))
            .map(|s| (s["name"].as_str().unwrap_or("").to_string(), s["number"].as_i64().unwrap_or(0)))
            .collect();
        let expect = [("RTMIN+2", 36), ("RTMIN", 34), ("RTMAX-1", 63), ("RTMAX", 64)].map(|(n, i)| (n.to_string(), i));
        assert_eq!(got, expect, "{who:?}: {r}");
    }
}

/// L2 (issue: `snug signal NAME KILL` and `STOP` exited 0 and did nothing, the run dropping
/// what it cannot catch and relay): both are refused before anything is sent, with 64 and a
/// one-line hint (`stop --now`, TSTP), and the run goes on. Positive control: TERM, asked the
/// same way, reaches the run and ends it; without the fix, `snug signal NAME KILL`
/// exited 0 (tried once; STOP too).
#[test]
fn l2_signal_kill_and_stop_are_refused_with_a_hint() {
    for who in everyone() {
        let dir = workdir(who);
        let mut a = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
        a.ready(dir.path(), "running");
        for (sig, hint) in [
            ("KILL", format!("use snug stop --now {}", a.name)),
            ("SIGKILL", "stop --now".into()),
            ("9", "stop --now".into()),
            ("STOP", "use TSTP, which stops the sandbox with its snug".into()),
            ("sigstop", "TSTP".into()),
            ("19", "TSTP".into()),
        ] {
            let (st, out, err, _) = run(who, dir.path(), &["signal", &a.name, sig]);
            assert_eq!(code(st), 64, "{who:?} {sig}: {err}");
            assert!(out.is_empty() && err.lines().count() == 1 && err.starts_with("snug: "), "{sig}: {err}");
            assert!(err.contains("cannot be relayed") && err.contains(&hint), "{sig}: {err}");
        }
        a.ready(dir.path(), "running");
        let (st, _, err, _) = run(who, dir.path(), &["signal", &a.name, "TERM"]);
        assert!(st.success(), "control: {err}");
        assert_eq!(a.end(Duration::from_secs(5)).signal(), Some(libc::SIGTERM), "control");
    }
}

/// L2, L3 (issue: `snug --name N … & snug stop N` in a script refused the stop, 20 of 20,
/// "no live sandbox named N", and the run went on): a stop, signal or exec naming a run that
/// has not registered its name yet waits for it, and the stop ends the run as `kill -TERM`
/// would. A name no run takes is still refused with 64, within the wait. Positive control:
/// against the build before (`SNUG_UNDER_TEST`) the first stop of each pair fails with 64.
#[test]
fn l2_stop_right_after_the_start_waits_for_the_name() {
    for who in everyone() {
        let dir = workdir(who);
        for _ in 0..4 {
            let mut a = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
            let (st, out, err, _) = run(who, dir.path(), &["stop", &a.name]);
            assert!(st.success(), "{who:?}: the stop right after the start: {err}");
            assert!(out.contains("killed by SIGTERM"), "{who:?}: {out}");
            assert_eq!(a.end(Duration::from_secs(5)).signal(), Some(libc::SIGTERM), "{who:?}");
        }
        let mut b =
            Live::start(who, dir.path(), &[], &["sh", "-c", &format!("trap 'echo U' USR1; sleep {}; wait", marker())]);
        let (st, _, err, _) = run(who, dir.path(), &["signal", &b.name, "TERM"]);
        assert!(st.success(), "{who:?}: signal right after the start: {err}");
        assert_eq!(b.end(Duration::from_secs(5)).signal(), Some(libc::SIGTERM), "{who:?}");

        let (st, _, err, took) = run(who, dir.path(), &["stop", &crate::live::name()]);
        assert_eq!(st.code(), Some(64), "{who:?}: {err}");
        assert!(err.contains("no live sandbox named"), "{who:?}: {err}");
        assert!(took < Duration::from_secs(3), "{who:?}: an unknown name took {} ms", ms(took));
    }
}

/// L2: five `snug stop` of one run at once (a harness that cancels twice, or several): each
/// that reaches the run says how it ended and exits 0; one that comes after the end (the
/// second TERM tears down at once) finds no run, 64. None is left without an answer.
/// Positive control: against the build whose end closed the stops it had not read yet, 8 of
/// 8 tries had a client fail with "no answer from its snug" (71), and 4 of 6 runs here.
#[test]
fn l2_stops_at_once_each_get_the_end() {
    for who in everyone() {
        let dir = workdir(who);
        let mut a = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
        a.ready(dir.path(), "running");
        let stops: Vec<_> = (0..5)
            .map(|_| {
                let mut c = crate::live::cmd(who, dir.path(), &["stop", &a.name]);
                c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
                c.spawn().expect("snug stop")
            })
            .collect();
        let mut answered = 0;
        for (k, s) in stops.into_iter().enumerate() {
            let o = s.wait_with_output().expect("stop");
            let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            match o.status.code() {
                Some(0) => {
                    assert!(out.starts_with(&format!("{}: killed by SIGTERM", a.name)), "{who:?}: stop {k}: {out}");
                    answered += 1;
                }
                Some(64) => assert!(err.contains("no live sandbox"), "{who:?}: stop {k}: {err}"),
                c => panic!("{who:?}: stop {k}: {c:?}: {out}{err}"),
            }
        }
        assert!(answered > 0, "{who:?}: no stop was answered");
        assert_eq!(a.end(Duration::from_secs(5)).signal(), Some(libc::SIGTERM), "{who:?}");
    }
}
