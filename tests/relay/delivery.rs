//! What reaches the payload (SPEC G1, G6, S2, D1): each relayed signal exactly once, the
//! others never, and a signal ignored at start stays ignored.

use crate::common::{everyone, kill, marker, pids_with, proc_state, until};
use crate::pty::open_pty;
use crate::relay::kit::{ms, recorder, sh, How, Run, PY};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

const INT: i32 = libc::SIGINT;
const TERM: i32 = libc::SIGTERM;
const HUP: i32 = libc::SIGHUP;
const SETTLE: Duration = Duration::from_secs(10);

#[test]
fn g1_group_and_process_signals_relayed_exactly_once() {
    for who in everyone() {
        for (sig, to_group) in [(INT, true), (HUP, true), (INT, false), (HUP, false)] {
            // The recorder exits 0 400 ms after the signal, time for a duplicate to show.
            let mark = marker();
            let mut run = Run::start(who, How::snug(), &mark, &recorder(&mark, &sig.to_string(), "0.4"));
            run.ready(&["ready"]);
            // snug leads its own group, like a job a shell started: `kill -SIG -- -PGID`.
            if to_group {
                run.signal_group(sig)
            } else {
                run.signal(sig)
            };
            let (st, _) = run.end(SETTLE);
            println!(
                "G1 {who:?}: signal {sig} to snug's {}: payload got {:?}",
                if to_group { "group" } else { "pid" },
                run.got()
            );
            assert_eq!(run.got(), vec![sig], "{who:?}: stderr: {}", run.stderr());
            assert_eq!(st.code(), Some(0), "{who:?}: {st:?}");
            assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());
        }

        // Positive control (exactly once): a naive relay sharing its group with the payload
        // delivers the group's signal twice, and the count sees both.
        let mark = marker();
        let mut ctl = Run::start(who, How::naive(), &mark, &recorder(&mark, "2", "0.4"));
        ctl.ready(&["ready"]);
        ctl.signal_group(INT);
        ctl.end(SETTLE);
        assert_eq!(ctl.got(), vec![INT, INT], "control: naive relay");

        // Positive control (relayed at all): plain bwrap relays nothing.
        let mark = marker();
        let mut ctl =
            Run::start(who, How::bwrap(&["--die-with-parent", "--new-session"]), &mark, &recorder(&mark, "2", "0.4"));
        ctl.ready(&["ready"]);
        ctl.signal_group(INT);
        ctl.end(SETTLE);
        assert!(ctl.got().is_empty(), "control: plain bwrap relayed {:?}", ctl.got());
    }
}

#[test]
fn g1_signal_during_start_up_still_reaches_the_payload() {
    // A TERM at 0-20 ms lands while snug is still starting the sandbox: before init is up,
    // before the payload is forked, or before its trap is set. Whichever, the payload gets
    // it (its trap exits 7, or it dies of it); it is never relayed into a sandbox that does
    // not hold the payload yet, which would leave the payload running to the teardown at 1 s.
    // Positive control (one-time mutation of supervise.rs): relaying with a group signal to
    // init and applying held-back relays as soon as init says hello (what snug did before the
    // relay went through init after the payload's start), the runs at 4, 6 and 8 ms ended
    // after 1003 ms: "TERM at 4 ms: gone after 1003 ms, the payload never saw it".
    for who in everyone() {
        let mut ends = Vec::new();
        for delay in (0..=20).step_by(2) {
            let mark = marker();
            // A busy loop, not `sleep`: a shell that takes the TERM between `trap` and forking
            // a foreground child runs the trap only once that child ends (the payload saw
            // the signal, but would look as if it had not). The marker rides in a comment.
            let script = sh(&format!("trap 'exit 7' TERM; while :; do :; done # {mark}"));
            let mut run = Run::start(who, How::snug(), &mark, &script);
            // Kept: the moment of the TERM is what this row varies, not a wait for readiness.
            std::thread::sleep(Duration::from_millis(delay));
            let sent = run.signal(TERM);
            let (st, at) = run.end(SETTLE);
            ends.push((delay, st.code().unwrap_or(-st.signal().unwrap_or(0)), ms(sent, at)));
            assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());
        }
        println!("G1 {who:?}: TERM at start-up (delay ms, code or -signal, ms to end): {ends:?}");
        for &(delay, code, took) in &ends {
            assert!(code == 7 || code == -TERM, "{who:?}: TERM at {delay} ms: {code}");
            assert!(took < 500, "{who:?}: TERM at {delay} ms: gone after {took} ms, the payload never saw it");
        }
    }
}

#[test]
fn d1_every_int_term_hup_relayed_with_the_grace() {
    for who in everyone() {
        for sig in [INT, TERM, HUP] {
            // The recorder never exits: the grace ends the run.
            let mark = marker();
            let mut run = Run::start(who, How::snug(), &mark, &recorder(&mark, "", "0"));
            run.ready(&["ready"]);
            let sent = run.signal(sig);
            let (st, at) = run.end(SETTLE);
            let took = ms(sent, at);
            println!(
                "D1 {who:?}: signal {sig}: payload got {:?}, snug died of {:?} {took} ms later",
                run.got(),
                st.signal()
            );
            assert_eq!(run.got(), vec![sig], "{who:?}: stderr: {}", run.stderr());
            assert_eq!(st.signal(), Some(sig), "{who:?}: {st:?}");
            assert!((900..=1300).contains(&took), "{who:?}: gone after {took} ms, want the grace (1000)");
            assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());
        }

        // Positive control: plain bwrap relays none of them.
        let mark = marker();
        let mut ctl = Run::start(who, How::bwrap(&["--die-with-parent"]), &mark, &recorder(&mark, "", "0"));
        ctl.ready(&["ready"]);
        ctl.signal(HUP);
        ctl.end(SETTLE);
        assert!(ctl.got().is_empty(), "control: plain bwrap relayed {:?}", ctl.got());
    }
}

/// ^C typed at a terminal: write it to the master.
fn type_ctrl_c(master: &OwnedFd) {
    assert_eq!(rustix::io::write(master, b"\x03").ok(), Some(1), "write ^C to the pty master");
}

/// D1, R2, T2: snug's stdout is a terminal whose foreground group is snug's, stdin /dev/null.
/// snug has a controlling terminal, so this is terminal mode (D1 is only without one), with the
/// hand-over deferred (T1: stdin is not the terminal): the sandbox gets a pty of its own, and a
/// ^C typed at the caller's terminal reaches snug's job; snug passes it on once to the
/// payload's process group with no grace (T2). The payload handles INT: it gets it exactly once
/// and keeps running (no teardown 1 s later); a TERM from a process then ends the run with the
/// grace (T4). Positive control: fails without the sandbox's own terminal (the caller's shared,
/// where this was detached mode): snug relayed the ^C with the grace and tore the payload down
/// about 1 s later. In-test control: under plain `bwrap --new-session` the payload never sees
/// the ^C.
#[test]
fn d1_terminal_ctrl_c_on_shared_stdout_reaches_the_payload_once_without_grace() {
    for who in everyone() {
        let (master, slave) = open_pty(24, 80);
        let mark = marker();
        let how = How { tty: Some(slave.as_fd()), ..How::verbose() };
        let mut run = Run::start(who, how, &mark, &recorder(&mark, "", "0"));
        run.ready(&["ready"]);
        type_ctrl_c(&master);
        assert!(until(SETTLE, || !run.got().is_empty()), "{who:?}: the ^C never reached the payload: {}", run.stderr());
        // Kept: a check that nothing follows within 1.5 s (no second INT, no grace teardown).
        std::thread::sleep(Duration::from_millis(1500));
        let err = run.stderr();
        assert_eq!(run.got(), vec![INT], "{who:?}: {err}");
        assert!(run.running(), "{who:?}: snug ended after one handled ^C: {err}");
        assert!(err.contains("mode: terminal"), "{who:?}: {err}");
        assert!(err.contains("received SIGINT from terminal"), "{who:?}: {err}");
        assert!(!err.contains("grace started"), "{who:?}: a typed ^C started the grace: {err}");
        let sent = run.signal(TERM);
        let (st, at) = run.end(SETTLE);
        let took = ms(sent, at);
        println!(
            "D1 {who:?}: terminal ^C then TERM: payload got {:?}, snug died of {:?} {took} ms after the TERM",
            run.got(),
            st.signal()
        );
        assert_eq!(run.got(), vec![INT, TERM], "{who:?}: {}", run.stderr_all());
        assert_eq!(st.signal(), Some(TERM), "{who:?}: {st:?}");
        assert!((900..=1300).contains(&took), "{who:?}: gone {took} ms after the TERM, want the grace (1000)");
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());

        // Positive control: the same ^C kills plain bwrap; the payload never sees it.
        let (master, slave) = open_pty(24, 80);
        let mark = marker();
        let how = How { tty: Some(slave.as_fd()), ..How::bwrap(&["--die-with-parent", "--new-session"]) };
        let mut ctl = Run::start(who, how, &mark, &recorder(&mark, "", "0"));
        ctl.ready(&["ready"]);
        type_ctrl_c(&master);
        ctl.end(SETTLE);
        assert!(ctl.got().is_empty(), "control: plain bwrap relayed {:?}", ctl.got());
    }
}

/// The `SigIgn` mask of a `/proc/PID/status` text (bit n-1 for signal n).
fn ignored(status: &str) -> u64 {
    let hex = status.lines().find_map(|l| l.strip_prefix("SigIgn:")).expect("SigIgn line");
    u64::from_str_radix(hex.trim(), 16).expect("hex mask")
}

#[test]
fn s2_hup_ignored_at_start_stays_ignored_payload_unsealed() {
    for who in everyone() {
        // The payload starts with nothing ignored, read by cat itself (no shell in between).
        let nohup = How { ignore: &[HUP], ..How::snug() };
        let mark = marker();
        let status = ["cat".to_string(), "/proc/self/status".into()];
        let mut run = Run::start(who, nohup, &mark, &status);
        let (st, _) = run.end(SETTLE);
        assert_eq!(st.code(), Some(0), "{who:?}: stderr: {}", run.stderr());
        let out = run.read("stdout");
        assert_eq!(ignored(&out), 0, "{who:?}: {out}");

        // Positive control: under plain bwrap the ignored SIGHUP leaks into the payload.
        let mark = marker();
        let mut ctl = Run::start(who, How { ignore: &[HUP], ..How::bwrap(&["--die-with-parent"]) }, &mark, &status);
        ctl.end(SETTLE);
        assert!(ignored(&ctl.read("stdout")) & 1 == 1, "control: {}", ctl.read("stdout"));

        // HUP to a snug that started with it ignored: not relayed, no grace.
        let mark = marker();
        let mut run = Run::start(who, nohup, &mark, &recorder(&mark, "15", "0"));
        run.ready(&["ready"]);
        run.signal(HUP);
        // Kept: a check that nothing happens (no relay, no grace) for 1.5 s after the HUP.
        std::thread::sleep(Duration::from_millis(1500));
        assert!(run.running(), "{who:?}: snug ended after an ignored HUP; stderr: {}", run.stderr());
        assert!(run.got().is_empty(), "{who:?}: payload got {:?}", run.got());
        run.signal(TERM);
        let (st, _) = run.end(SETTLE);
        assert_eq!((st.code(), run.got()), (Some(0), vec![TERM]), "{who:?}");
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());

        // Positive control: the same HUP to a snug that did not ignore it is relayed and
        // starts the grace, which the checks above would have caught.
        let mark = marker();
        let mut ctl = Run::start(who, How::snug(), &mark, &recorder(&mark, "", "0"));
        ctl.ready(&["ready"]);
        ctl.signal(HUP);
        assert!(ctl.wait(Duration::from_millis(1500)).is_some(), "control: snug still running after HUP");
        assert_eq!(ctl.got(), vec![HUP], "control");
    }
}

/// The recorder's own pid (its command line starts with the python path).
fn payload_pid(run: &Run) -> i32 {
    let pids = pids_with(&run.mark);
    pids.into_iter()
        .find(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with(PY.as_bytes())))
        .expect("payload pid")
}

#[test]
fn g6_quit_usr_winch_relayed_without_grace_stops_never() {
    let relayed = [libc::SIGUSR1, libc::SIGUSR2, libc::SIGQUIT, libc::SIGWINCH];
    let never = [libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU, libc::SIGPIPE];
    for who in everyone() {
        let mark = marker();
        let mut run = Run::start(who, How::snug(), &mark, &recorder(&mark, "15", "0"));
        run.ready(&["ready"]);
        for sig in relayed {
            run.signal(sig);
            // The next one once this one arrived (or the check below says it did not).
            until(Duration::from_secs(2), || run.got().contains(&sig));
        }
        let all = until(Duration::from_secs(2), || relayed.iter().all(|s| run.got().contains(s)));
        assert!(all, "{who:?}: payload got {:?}; stderr: {}", run.got(), run.stderr());
        // No grace. Kept: a check that well past 1 s later the payload and snug still run.
        std::thread::sleep(Duration::from_millis(1500));
        assert!(run.running(), "{who:?}: snug ended; stderr: {}", run.stderr());
        let mut got = run.got();
        got.sort();
        let mut want = relayed.to_vec();
        want.sort();
        assert_eq!(got, want, "{who:?}: each exactly once");

        // Stop signals and PIPE: never relayed. A stop signal stops the sandbox and snug with
        // it (T12) until SIGCONT; PIPE is ignored (Rust's runtime). Each stop signal is sent
        // alone, once snug runs again: a SIGCONT discards pending ones.
        for sig in never {
            run.signal(sig);
            let stops = sig != libc::SIGPIPE;
            if stops {
                until(Duration::from_secs(5), || proc_state(run.pid) == Some('T'));
            }
            let state = proc_state(run.pid);
            run.signal(libc::SIGCONT);
            if stops {
                until(Duration::from_secs(5), || proc_state(run.pid).is_some_and(|s| s != 'T'));
            }
            println!("G6 {who:?}: signal {sig} to snug: snug state {state:?}, then SIGCONT: {:?}", proc_state(run.pid));
        }
        // Kept: a check that none of them reaches the payload within 0.3 s.
        std::thread::sleep(Duration::from_millis(300));
        assert!(never.iter().all(|s| !run.got().contains(s)), "{who:?}: relayed {:?}", run.got());

        // Positive control (detector): the same signals sent to the payload itself are seen.
        let payload = payload_pid(&run);
        for sig in never {
            kill(payload as u32, sig);
        }
        let seen = until(Duration::from_secs(2), || never.iter().all(|s| run.got().contains(s)));
        assert!(seen, "control: the recorder missed signals sent to it: {:?}", run.got());

        let sent = run.signal(TERM);
        let (st, at) = run.end(SETTLE);
        assert_eq!(st.code(), Some(0), "{who:?}: {st:?}");
        assert!(ms(sent, at) < 500, "{who:?}");
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());

        // Positive control (no grace): a TERM in place of USR1 starts the grace, so snug is
        // gone before the 1.5 s check above.
        let mark = marker();
        let mut ctl = Run::start(who, How::snug(), &mark, &recorder(&mark, "", "0"));
        ctl.ready(&["ready"]);
        ctl.signal(TERM);
        let (st, _) = ctl.wait(Duration::from_millis(1500)).expect("control: snug still running 1.5 s after TERM");
        assert_eq!(st.signal(), Some(TERM), "control");
    }
}
