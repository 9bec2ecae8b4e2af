//! T10: a hangup ends the sandbox, whether it reached snug as the session's leader or
//! through the caller's shell; T4: INT/TERM/HUP from another process start the grace in
//! terminal mode too.

use crate::common::{self, alive, marker, survivors, workdir, Who};
use crate::pty::leader::Leader;
use crate::pty::{scripts, stat, PROMPT};
use crate::terminal_caller::{caller, parallel, snug_line, the_pid};
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

/// T10: snug leads the terminal's session (as under `ssh -t host snug …`), payload
/// `sh -c 'trap "" HUP; echo ready; exec sleep M'` (sleep inherits HUP ignored). Closing the
/// pty master hangs up the session; the kernel sends SIGHUP (SI_KERNEL) to snug alone. snug
/// must relay it with the grace: snug gone 0.9–1.5 s later, dead of SIGHUP (WIFSIGNALED,
/// signal 1), nothing with the marker left.
/// Positive control: fails without the fix: snug took the kernel's hangup for a key already
/// delivered to the sandbox and started no grace: "snug still running 4 s after the hangup;
/// left: snug, bwrap, init, `sleep M`" (as root and as the user).
#[test]
fn t10_hangup_of_snug_as_session_leader_tears_down_after_the_grace() {
    let row = |who: Who| {
        let dir = workdir(who);
        let m = marker();
        let script = format!("trap '' HUP; echo ready; exec sleep {m}");
        let mut l = Leader::start(who, dir.path(), &["--", "sh", "-c", &script]);
        if !l.wait_for("ready", Duration::from_secs(12)) {
            panic!("{who:?}: no ready; terminal: {}", l.text());
        }
        assert!(common::until(Duration::from_secs(10), || common::running(&format!("sleep {m}"))));
        let closed = l.hangup();
        let st = l.wait(Duration::from_secs(4));
        let took = closed.elapsed();
        // Each survivor's pid and the start of its command line (bwrap's is long).
        let left: Vec<String> =
            survivors(&m, Instant::now()).into_iter().map(|l| l.chars().take(60).collect()).collect();
        let Some(st) = st else {
            panic!("{who:?}: snug still running 4 s after the hangup; left: {left:?}");
        };
        eprintln!("T10 leader {who:?}: snug ended {} ms after the hangup: {st:?}", took.as_millis());
        assert_eq!(st.signal(), Some(libc::SIGHUP), "{who:?}: snug must die of SIGHUP: {st:?}");
        assert!(
            took >= Duration::from_millis(900) && took <= Duration::from_millis(1500),
            "{who:?}: snug gone {took:?} after the hangup, want 0.9–1.5 s (the grace)"
        );
        assert!(left.is_empty(), "{who:?}: left after snug: {left:?}");
    };
    parallel(&row, &[]);
}

/// T10 through the caller's shell: bash leads the session; closing the terminal makes bash
/// send SIGHUP to its jobs; snug (foreground, its payload ignoring HUP) is gone about 1 s
/// later and nothing is left. Regression guard: it held before the kernel's hangup was told
/// apart (the T4 hangup row covers the payload; this one also bounds snug itself).
#[test]
fn t10_hangup_through_the_callers_shell_ends_snug() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "T10 via bash");
        let m = marker();
        t.line(&snug_line(&format!("sh -c 'trap \"\" HUP; echo re\"\"ady; exec sleep {m}'")));
        t.expect("ready");
        the_pid(&mut t, &format!("sleep {m}"));
        let snug = t.snug_pid();
        let closed = Instant::now();
        t.hangup();
        let gone = common::until(Duration::from_secs(4), || matches!(stat(snug).map(|s| s.state), None | Some('Z')));
        let took = closed.elapsed();
        let left = survivors(&m, Instant::now());
        assert!(gone, "{who:?}: snug still running 4 s after the hangup; left: {left:?}");
        eprintln!("T10 via bash {who:?}: snug gone {} ms after the hangup", took.as_millis());
        assert!(
            took >= Duration::from_millis(800) && took <= Duration::from_millis(1600),
            "{who:?}: snug gone {took:?} after the hangup, want about 1 s"
        );
        assert!(left.is_empty(), "{who:?}: left after snug: {left:?}");
    };
    parallel(&row, &[]);
}

/// T4 (regression guard for T10's change): INT, TERM and HUP sent to snug by another
/// process while the payload holds the terminal start the grace: a payload ignoring that
/// signal is gone 0.9–1.5 s after `kill -SIG <snug>`, and the caller's `$?` is 128+SIG.
/// Regression guard: it held before the kernel's hangup was told apart, and must keep holding.
#[test]
fn t4_signals_from_a_process_start_the_grace_in_terminal_mode() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T4 grace");
        for (sig, body, name) in [
            (libc::SIGTERM, scripts::IGNORE_TERM, "ignterm.sh"),
            (libc::SIGINT, scripts::IGNORE_INT, "ignint.sh"),
            (libc::SIGHUP, scripts::IGNORE_HUP, "ignhup.sh"),
        ] {
            let m = marker();
            let s = scripts::write(dir.path(), name, body);
            t.line(&snug_line(&format!("sh {s} {m}")));
            t.expect("ready");
            the_pid(&mut t, &format!("sleep {m}"));
            let snug = t.snug_pid();
            let sent = Instant::now();
            common::kill(snug as u32, sig);
            let gone = t.until(Duration::from_secs(4), || !alive(&format!("sleep {m}")));
            let took = sent.elapsed();
            if !gone {
                t.fail(&format!("signal {sig}: the payload still runs 4 s after the kill"));
            }
            if took < Duration::from_millis(900) || took > Duration::from_millis(1500) {
                t.fail(&format!("signal {sig}: payload gone {took:?} after the kill, want 0.9–1.5 s"));
            }
            t.expect(PROMPT);
            assert_eq!(t.rc(), 128 + sig, "{who:?}: snug dies of signal {sig}");
            eprintln!("T4 {who:?}: signal {sig}: payload gone {} ms after the kill", took.as_millis());
        }
    };
    parallel(&row, &[]);
}

/// T10, G4: `exit`, `exit` at a shell with a stopped job, then the terminal closes: bash
/// sends the job TERM and CONT, and the hangup follows a few ms later. The payload's TERM
/// handler (0.3 s of cleanup) finishes as it does with no launcher in the same harness:
/// the hangup during the grace is no second signal, and it is not relayed (the kernel tells
/// a background job of none). Positive control: against the build that took the hangup for
/// the grace's second signal, the log held `TERM` without `DONE` (the handler cut at once),
/// and relaying the hangup instead killed the payload in its handler by SIGHUP.
#[test]
fn t10_g4_exit_with_a_stopped_job_lets_its_term_handler_finish() {
    let row = |who: Who| {
        let script = "trap 'echo TERM >> log; sleep 0.3; echo DONE >> log; exit 3' TERM; echo re''ady; \
                      while :; do sleep 0.2; done";
        for launcher in ["none", "snug"] {
            let (mut t, dir) = caller(who, "T10 exit with a stopped job");
            let s = scripts::write(dir.path(), "term.sh", script);
            t.line(&if launcher == "snug" { snug_line(&format!("sh {s}")) } else { format!("sh {s}") });
            t.expect("ready");
            t.send("\x1a");
            t.expect("Stopped");
            t.expect(PROMPT);
            t.line("exit");
            t.expect("stopped jobs");
            t.expect(PROMPT);
            t.line("exit");
            let log = dir.path().join("log");
            t.until(Duration::from_secs(3), || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("TERM")));
            t.hangup();
            let done = common::until(Duration::from_secs(3), || {
                std::fs::read_to_string(&log).is_ok_and(|l| l.contains("DONE"))
            });
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(done, "{who:?} {launcher}: the TERM handler did not finish: log {text:?}");
        }
    };
    parallel(&row, &[]);
}

/// T10: the window closes during the grace a `kill -TERM` of snug started, while the payload
/// holds its terminal: the payload gets SIGHUP (its trap runs, exit 5) as it does with no
/// launcher in the same harness, where the kernel gives the terminal's foreground SIGHUP.
/// Positive control: against the build that dropped the kernel's hangup during a grace
/// without hanging up the sandbox's terminal, the log held `TERM` only and the grace ran out.
#[test]
fn t10_a_hangup_during_a_kills_grace_reaches_the_payload() {
    let row = |who: Who| {
        let script = "trap 'echo TERM >> log' TERM; trap 'echo HUP >> log; exit 5' HUP; echo re''ady; \
                      while :; do sleep 0.05; done";
        for launcher in ["none", "snug"] {
            let (mut t, dir) = caller(who, "T10 hangup in a grace");
            let s = scripts::write(dir.path(), &format!("hup-{}.sh", marker()), script);
            t.line(&if launcher == "snug" { snug_line(&format!("sh {s}")) } else { format!("sh {s}") });
            t.expect("ready");
            let target = if launcher == "snug" { t.snug_pid() } else { the_pid(&mut t, &format!("sh {s}")) };
            common::kill(target as u32, libc::SIGTERM);
            let log = dir.path().join("log");
            let read = || std::fs::read_to_string(&log).unwrap_or_default();
            assert!(common::until(Duration::from_secs(3), || read().contains("TERM")), "{who:?} {launcher}: no TERM");
            t.hangup();
            let got = common::until(Duration::from_secs(3), || read().contains("HUP"));
            assert!(got, "{who:?} {launcher}: the payload got no SIGHUP: log {:?}", read());
        }
    };
    parallel(&row, &[]);
}
