//! T12 at a terminal: snug in detached mode (stdin not the terminal) is still a job of the
//! caller's shell; ^Z stops the whole sandbox with snug, `fg`/`bg` continue both. A job the
//! shell lists as Stopped never runs on.

use crate::common::{marker, reap_leftovers, Who};
use crate::pty::{Term, CTRL_Z, PROMPT};
use crate::terminal_caller::{caller, parallel, snug_line};
use std::time::Duration;

/// The ticking payload: tick1 … tick6, 0.3 s apart. The marker rides in a comment. The
/// typed line shows `tick$i`, never `tickN`.
fn ticker(m: &str) -> String {
    format!("sh -c 'for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.3; done # {m}'")
}

/// After tick1: ^Z → "Stopped" and the prompt; then no tick for 1.5 s.
fn stop_after_tick1(t: &mut Term) {
    t.expect("tick1\n");
    t.send(CTRL_Z);
    t.expect("Stopped");
    t.expect(PROMPT);
    // Kept: a check that no tick comes for 1.5 s (the ticker prints every 0.3 s).
    t.sleep(Duration::from_millis(1500));
    if t.seen("tick") {
        t.fail("T12: the sandbox ran on while its job was listed as Stopped");
    }
}

/// T12: `snug -- sh -c 'for …; echo tick$i …' </dev/null` typed at the caller's prompt
/// (detached mode at a terminal). ^Z after tick1 → Stopped, no tick for 1.5 s; `fg` → the
/// remaining ticks through tick6, `$?` 0. The same with `bg` (the ticks continue in the
/// background) and `wait %1` → 0.
/// Positive control: fails without the fix, as root and as the user: ^Z stopped snug only;
/// the shell printed "[1]+ Stopped" and its prompt, and tick2 … tick6 kept coming after it
/// ("the sandbox ran on while its job was listed as Stopped").
#[test]
fn t12_ctrl_z_in_detached_mode_stops_the_sandbox_fg_and_bg() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "T12 </dev/null");
        let m = marker();
        t.line(&format!("{} </dev/null", snug_line(&ticker(&m))));
        stop_after_tick1(&mut t);
        t.line("fg");
        t.expect("tick6\n");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0, "{who:?}: fg");
        t.line(&format!("{} </dev/null", snug_line(&ticker(&m))));
        stop_after_tick1(&mut t);
        t.line("bg");
        t.expect("tick6\n");
        t.line("wait %1");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0, "{who:?}: bg, wait %1");
        reap_leftovers(&m);
    };
    parallel(&row, &[]);
}

/// T12: `seq 3 | snug -- sh -c 'cat; for …'` (stdin a pipe: detached mode, a pipeline job):
/// ^Z after tick1 → Stopped, no tick for 1.5 s; `fg` → through tick6, `$?` 0.
/// Positive control: fails without the fix as the row above: "[1]+ Stopped  seq 3 | snug
/// …", then tick2 … tick6 (root and user).
#[test]
fn t12_ctrl_z_stops_snug_in_a_pipeline() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "T12 pipeline");
        let m = marker();
        let payload = format!("sh -c 'cat; for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.3; done # {m}'");
        t.line(&format!("seq 3 | {}", snug_line(&payload)));
        stop_after_tick1(&mut t);
        t.line("fg");
        t.expect("tick6\n");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0, "{who:?}: fg");
        reap_leftovers(&m);
    };
    parallel(&row, &[]);
}
