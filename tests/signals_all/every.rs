//! G6: every catchable signal 1–64 other than KILL, STOP, the job-control ones (TSTP, TTIN,
//! TTOU, CONT), CHLD, PIPE, URG, glibc's 32 and 33, and G1's INT, TERM and HUP (which start
//! the grace, G2) is relayed to the sandbox once, without a grace, and snug keeps running.

use crate::common::{everyone, marker};
use crate::signals_all::kit::{How, Run};
use crate::signals_all::record_all;
use std::time::Duration;

/// The signals G6 relays without a grace, in the order the test sends them.
fn g6_signals() -> Vec<i32> {
    let skip = [
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGKILL,
        libc::SIGPIPE,
        libc::SIGTERM,
        libc::SIGCHLD,
        libc::SIGCONT,
        libc::SIGSTOP,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
        libc::SIGURG,
        32,
        33,
    ];
    (1..=64).filter(|s| !skip.contains(s)).collect()
}

/// G6: the recorder payload handles each signal of [`g6_signals`]; the test sends them to
/// snug with kill(2) one at a time, waiting (up to 5 s) until the payload recorded each
/// before sending the next, and checks snug still runs after each. Then TERM ends the run as
/// G2 says: the payload's handler exits 0 within the grace, so snug exits 0. Each signal was
/// received exactly once, nothing is left.
/// Positive control: fails without the fix: snug died of the first such signal it has no
/// answer for (SIGILL, 4, sent after QUIT was relayed), the payload never saw it.
#[test]
fn g6_every_other_catchable_signal_is_relayed_once_and_snug_runs_on() {
    let sigs = g6_signals();
    for who in everyone() {
        let m = marker();
        let mut run = Run::start(who, How::snug(), &m, &record_all(&m, &sigs, "0.4", false));
        run.ready(&["ready"]);
        for &sig in &sigs {
            run.signal(sig);
            let seen = crate::common::until(Duration::from_secs(5), || run.got().contains(&sig));
            let running = run.running();
            if !seen || !running {
                let end = run.wait(Duration::from_millis(100)).map(|(st, _)| st);
                panic!(
                    "{who:?}: signal {sig}: recorded by the payload: {seen}, snug running: {running} ({end:?}); \
                     recorded so far {:?}; stderr: {}",
                    run.got(),
                    run.stderr()
                );
            }
        }
        run.signal(libc::SIGTERM);
        let (st, _) = run.end(Duration::from_secs(10));
        let got = run.got();
        let twice: Vec<i32> = sigs.iter().copied().filter(|s| got.iter().filter(|g| *g == s).count() != 1).collect();
        println!("G6 {who:?}: {} signals relayed once each; snug ended {st:?}", sigs.len());
        assert!(twice.is_empty(), "{who:?}: not received exactly once: {twice:?} (all: {got:?})");
        assert_eq!(got.iter().filter(|g| **g == libc::SIGTERM).count(), 1, "{who:?}: TERM once: {got:?}");
        assert_eq!(st.code(), Some(0), "{who:?}: G2: the payload's exit 0 after TERM: {st:?}");
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());
    }
}
