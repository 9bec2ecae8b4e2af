//! T12 without a terminal: TSTP, TTIN and TTOU sent to snug stop the whole sandbox with snug,
//! CONT continues both; G6: one CONT reaches the payload once.

use crate::common::{descendants, everyone, marker, proc_state, until};
use crate::signals_all::kit::{sh, How, Run};
use crate::signals_all::record_all;
use std::time::Duration;

/// The progress counter the payload writes every 0.1 s.
fn progress(run: &Run) -> String {
    run.read("progress").trim().to_string()
}

/// The payload's shell, host pid: the marker's process whose command line starts `sh -c i=0`.
fn payload_shell(run: &Run) -> i32 {
    let mut pid = None;
    let found = until(Duration::from_secs(10), || {
        pid = run
            .left()
            .into_iter()
            .find(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with(b"sh\0-c\0i=0")));
        pid.is_some()
    });
    assert!(found, "{:?}: no payload shell; stderr: {}", run.who, run.stderr());
    pid.unwrap_or_default()
}

/// T12: snug detached running a loop that writes a counter to `progress` every 0.1 s. For
/// each of TSTP, TTIN and TTOU sent to snug: snug shows state T, so do the payload's shell
/// and every process below it (/proc/PID/stat), and `progress` does not change for 1 s;
/// `kill -CONT <snug>` → snug runs again and `progress` moves on.
/// Positive control: fails without the fix: TSTP stopped snug only; the payload's shell
/// stayed in state S and `progress` moved on while snug was stopped.
#[test]
fn t12_job_control_signals_stop_the_sandbox_without_a_terminal() {
    for who in everyone() {
        let m = marker();
        let script = format!("i=0; while :; do i=$((i+1)); echo $i > progress; sleep 0.1; done # {m}");
        let mut run = Run::start(who, How::snug(), &m, &sh(&script));
        run.ready(&["progress"]);
        let shell = payload_shell(&run);
        for (sig, name) in [(libc::SIGTSTP, "TSTP"), (libc::SIGTTIN, "TTIN"), (libc::SIGTTOU, "TTOU")] {
            run.signal(sig);
            let snug_stopped = until(Duration::from_secs(5), || proc_state(run.pid) == Some('T'));
            // dash runs `sleep` with vfork(2): when the stop hits its child between vfork and
            // exec, the shell waits for that child in state D (TASK_KILLABLE) and never reaches a
            // stop point of its own; stopped all the same, as long as everything below it is.
            let below_stopped =
                || descendants(shell).iter().all(|p| proc_state(*p) == Some('T')) && !descendants(shell).is_empty();
            let shell_stopped = until(Duration::from_secs(10), || {
                proc_state(shell) == Some('T') || (proc_state(shell) == Some('D') && below_stopped())
            });
            let before = progress(&run);
            // Kept: nothing may happen for 1 s, a check of an absence.
            std::thread::sleep(Duration::from_secs(1));
            let after = progress(&run);
            let below: Vec<(i32, Option<char>)> =
                descendants(shell).into_iter().map(|p| (p, proc_state(p))).filter(|(_, s)| *s != Some('T')).collect();
            run.signal(libc::SIGCONT);
            assert!(
                snug_stopped && shell_stopped && before == after && below.is_empty(),
                "{who:?}: {name}: snug stopped {snug_stopped}, payload shell stopped {shell_stopped} (state {:?}), \
                 progress {before} → {after} over 1 s, not stopped below the shell: {below:?}",
                proc_state(shell)
            );
            let resumed = until(Duration::from_secs(5), || progress(&run) != after && proc_state(run.pid) != Some('T'));
            assert!(resumed, "{who:?}: {name}: no progress after CONT (still {after}); snug {:?}", proc_state(run.pid));
            println!("T12 {who:?}: {name}: sandbox stopped with snug (progress held at {after}), CONT resumed it");
        }
        run.signal(libc::SIGTERM);
        run.end(Duration::from_secs(10));
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());
    }
}

/// How many separate CONTs the test sends: a duplicate can be merged by the kernel with the
/// first when both are pending before the payload runs, so one try may not show it.
const CONT_TRIES: usize = 15;

/// G6: `kill -CONT <snug>` to a running snug, [`CONT_TRIES`] times, each awaited: the payload
/// (a spinning recorder handling CONT) counts exactly one CONT per kill (it is given 0.2 s
/// after each to show a second).
/// Positive control: fails without the fix: the payload counted a second CONT for some of the
/// kills (snug's group signal and init's relay): counted after each kill, as root,
/// [1, 3, 5, 6, 7, 9, 11, 13, 15, 17, 19, 20, 22, 24, 26] (26 for 15 kills); with one kill
/// only, the duplicate showed in 1 of 3 runs ("counted [18, 18, 15]"), hence the repetitions.
#[test]
fn g6_one_cont_reaches_the_payload_once() {
    for who in everyone() {
        let m = marker();
        let mut run = Run::start(who, How::snug(), &m, &record_all(&m, &[libc::SIGCONT], "0.2", true));
        run.ready(&["ready"]);
        let conts = |run: &Run| run.got().iter().filter(|s| **s == libc::SIGCONT).count();
        let mut counts = Vec::new();
        for i in 1..=CONT_TRIES {
            run.signal(libc::SIGCONT);
            let seen = until(Duration::from_secs(5), || conts(&run) >= i);
            assert!(seen, "{who:?}: kill {i}: the payload never got the CONT; stderr: {}", run.stderr());
            // Kept: a second delivery would follow within milliseconds: watch for it for 0.2 s.
            std::thread::sleep(Duration::from_millis(200));
            counts.push(conts(&run));
        }
        // Counted before the TERM: G2 follows a relayed TERM with a CONT of its own.
        let counted = conts(&run);
        run.signal(libc::SIGTERM);
        run.end(Duration::from_secs(10));
        println!("G6 CONT {who:?}: after each of {CONT_TRIES} kills the payload had counted {counts:?}");
        assert_eq!(counted, CONT_TRIES, "{who:?}: CONTs counted after each kill: {counts:?}");
    }
}
