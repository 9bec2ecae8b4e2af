//! T3 (revised): a second ^C within 1 s force-quits only when the first reached no handler.

use crate::common::{self, alive, marker, reap_leftovers, Who};
use crate::pty::rows::in_front;
use crate::pty::{scripts, stat, CTRL_C, PROMPT};
use crate::terminal_caller::{caller, parallel, snug_line};
use std::time::{Duration, Instant};

/// T3: a payload that handles SIGINT (a REPL: tests/pty/scripts.rs COUNT_INT, running 5 s)
/// gets ^C ^C ^C within 0.5 s: it keeps running, counts 3, and ends on its own with `$?` 0.
/// Positive control: fails without the fix, as root and as the user: the second ^C
/// force-quit the run although the first reached the handler (terminal: `ready`, `^C^C`,
/// the caller's prompt; the third ^C went to the caller's shell).
#[test]
fn t3_a_repl_survives_three_quick_ctrl_c() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T3 REPL");
        let m = marker();
        let s = scripts::write(dir.path(), "count.py", scripts::COUNT_INT);
        let snug = crate::common::snug();
        t.line(&format!("{} -v -- python3 {s} 5 {m} 2>snug-{m}.log", snug.display()));
        t.expect("ready");
        let payload = in_front(&mut t, &format!("python3 {s} 5 {m}"));
        let first = Instant::now();
        for i in 0..3 {
            if i > 0 {
                // Kept: pacing between key presses (a person's double-tap), not a wait for state.
                std::thread::sleep(Duration::from_millis(150));
            }
            t.send(CTRL_C);
        }
        let within = first.elapsed();
        let counted = t.wait_for("ints=3", Duration::from_secs(3));
        if t.seen(PROMPT) || stat(payload).is_none() {
            reap_leftovers(&m);
            t.fail(&format!("the payload was force-quit: the caller's prompt is back after 3 ^C in {within:?}"));
        }
        if !counted {
            t.fail("the payload did not count 3 SIGINTs");
        }
        t.reject("ints=4");
        t.expect("done ints=3");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0, "{who:?}: the REPL ended on its own");
        // -v says why there is no ^C force-quit.
        let log = common::read_text(&dir.path().join(format!("snug-{m}.log")));
        assert!(log.contains("^C caught by the foreground: no force-quit"), "{who:?}: -v log: {log}");
        eprintln!("T3 REPL {who:?}: 3 ^C in {} ms, counted 3, ran to its end", within.as_millis());
    };
    parallel(&row, &[]);
}

/// T3: a payload ignoring INT (`sh -c 'trap "" INT; echo ready; sleep M'`): ^C, ^C within
/// 0.3 s → everything gone, the caller's `$?` 130 (snug dies of SIGINT).
/// Regression guard: it held before the REPL rule (T3) and must keep holding.
#[test]
fn t3_two_quick_ctrl_c_force_quit_a_payload_ignoring_int() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "T3 ignoring");
        let m = marker();
        t.line(&snug_line(&format!("sh -c 'trap \"\" INT; echo re\"\"ady; sleep {m}'")));
        t.expect("ready");
        in_front(&mut t, &format!("sleep {m}"));
        t.send(CTRL_C);
        // Kept: pacing between two key presses (a double ^C is two within 1 s).
        std::thread::sleep(Duration::from_millis(150));
        let second = Instant::now();
        t.send(CTRL_C);
        t.expect(PROMPT);
        let took = second.elapsed();
        let gone = common::until(Duration::from_secs(1), || !alive(&format!("sleep {m}")));
        reap_leftovers(&m);
        assert!(gone, "{who:?}: the payload outlived the force-quit");
        assert_eq!(t.rc(), 130, "{who:?}: snug dies of SIGINT");
        eprintln!("T3 force-quit {who:?}: prompt back {} ms after the second ^C", took.as_millis());
    };
    parallel(&row, &[]);
}
