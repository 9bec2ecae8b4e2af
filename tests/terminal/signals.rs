//! Signals through the terminal and from processes (SPEC T2, T3, T4): one ^C is one SIGINT
//! and starts no grace, two force-quit, a kill or a hangup is relayed with the grace.

use crate::common::{self, alive, marker, reap_leftovers, Who};
use crate::pty::{scripts, stat, CTRL_C, PROMPT};
use crate::terminal::{bwrap_line, caller, in_front, parallel, snug_line, the_pid};
use std::time::{Duration, Instant};

/// T2: one ^C reaches the payload once (the terminal delivers it; snug relays nothing) and
/// starts no grace: a REPL that handles it keeps running. Controls: a naive wrapper that
/// forwards the ^C it also got makes the count 2; plain bwrap dies of the ^C and takes the
/// payload with it, so nothing keeps running.
#[test]
fn t2_one_ctrl_c_one_sigint_and_the_payload_keeps_running() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T2 count");
        let m = marker();
        let s = scripts::write(dir.path(), "count.py", scripts::COUNT_INT);
        t.line(&snug_line(&format!("python3 {s} 4 {m}")));
        t.expect("ready");
        let payload = in_front(&mut t, &format!("python3 {s} 4 {m}"));
        let pressed = Instant::now();
        t.send(CTRL_C);
        t.expect("ints=1");
        // Kept: a check that a second INT does NOT come (1.5 s after the press).
        t.sleep(Duration::from_millis(1500).saturating_sub(pressed.elapsed()));
        t.reject("ints=2");
        if stat(payload).is_none() || t.seen(PROMPT) {
            t.fail("the payload did not keep running 1.5 s after one ^C");
        }
        t.expect("done ints=1");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0);
    };
    let row_trap = |who: Who| {
        let (mut t, dir) = caller(who, "T2 trap");
        let m = marker();
        let s = scripts::write(dir.path(), "trap5.sh", scripts::TRAP_INT_EXIT5);
        t.line(&snug_line(&format!("sh {s} {m}")));
        t.expect("ready");
        in_front(&mut t, &format!("sh {s} {m}"));
        t.send(CTRL_C);
        t.expect("got-int");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 5, "the payload's own exit code");
        assert!(common::until(Duration::from_secs(2), || !alive(&format!("sleep {m}"))));
    };
    let naive = || {
        let (mut t, dir) = caller(Who::Root, "T2 control: naive forwarder");
        let fwd = scripts::write(dir.path(), "fwd.py", scripts::NAIVE_FORWARDER);
        let s = scripts::write(dir.path(), "count.py", scripts::COUNT_INT);
        t.line(&format!("python3 {fwd} python3 {s} 3"));
        t.expect("ready");
        in_front(&mut t, &format!("python3 {s} 3"));
        t.send(CTRL_C);
        if !t.wait_for("ints=2", Duration::from_secs(3)) {
            t.fail("control: a wrapper forwarding the terminal's ^C did not deliver it twice");
        }
    };
    let plain = || {
        let (mut t, dir) = caller(Who::Root, "T2 control: plain bwrap");
        let m = marker();
        let s = scripts::write(dir.path(), "count.py", scripts::COUNT_INT);
        let t5 = scripts::write(dir.path(), "trap5.sh", scripts::TRAP_INT_EXIT5);
        t.line(&bwrap_line(dir.path(), "", &format!("python3 {s} 4 {m}")));
        t.expect("ready");
        in_front(&mut t, &format!("python3 {s} 4 {m}"));
        t.send(CTRL_C);
        if !t.until(Duration::from_millis(1500), || !alive(&format!("{s} 4 {m}"))) {
            t.fail("control: the payload under plain bwrap survived ^C");
        }
        t.line(&bwrap_line(dir.path(), "", &format!("sh {t5} {m}")));
        t.expect("ready");
        in_front(&mut t, &format!("sh {t5} {m}"));
        t.send(CTRL_C);
        t.expect(PROMPT);
        assert_eq!(t.rc(), 130, "control: plain bwrap dies of ^C, the payload's 5 is lost");
        reap_leftovers(&format!("sleep {m}"));
    };
    parallel(
        &|who| {
            std::thread::scope(|s| {
                s.spawn(|| row(who));
                s.spawn(|| row_trap(who));
            })
        },
        &[&naive, &plain],
    );
}

/// T3: a payload ignoring INT survives one ^C; two within 0.3 s force-quit: everything is
/// gone and snug dies of SIGINT (`$?` 130); the caller's shell is in front again (T7).
/// Controls: without snug, two ^C leave the payload running; under plain bwrap one ^C
/// already ends it.
#[test]
fn t3_two_ctrl_c_force_quit() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T3");
        let m = marker();
        let needle = format!("sleep {m}");
        let s = scripts::write(dir.path(), "ignint.sh", scripts::IGNORE_INT);
        t.line(&snug_line(&format!("sh {s} {m}")));
        t.expect("ready");
        let snug = t.snug_pid();
        in_front(&mut t, &format!("sh {s} {m}"));
        t.send(CTRL_C);
        // Kept: a check that one ^C does NOT end the payload within 1.5 s.
        t.sleep(Duration::from_millis(1500));
        if !alive(&needle) || stat(snug).is_none() || t.seen(PROMPT) {
            t.fail("one ^C ended a payload that ignores INT");
        }
        t.send(CTRL_C);
        // Kept: pacing between two key presses (a double ^C is two within 0.3 s).
        t.sleep(Duration::from_millis(100));
        let second = Instant::now();
        t.send(CTRL_C);
        t.expect(PROMPT);
        let took = second.elapsed();
        if !common::until(Duration::from_secs(1), || !alive(&needle)) {
            t.fail("the payload outlived the force-quit");
        }
        assert_eq!(t.rc(), 130, "snug dies of SIGINT");
        assert!(took < Duration::from_millis(1500), "force-quit took {took:?}");
        eprintln!("T3 {who:?}: prompt back {} ms after the second ^C", took.as_millis());
    };
    let bare = || {
        let (mut t, dir) = caller(Who::Root, "T3 control: no launcher");
        let m = marker();
        let s = scripts::write(dir.path(), "ignint.sh", scripts::IGNORE_INT);
        t.line(&format!("sh {s} {m}"));
        t.expect("ready");
        in_front(&mut t, &format!("sh {s} {m}"));
        t.send(CTRL_C);
        // Kept: pacing between two key presses.
        t.sleep(Duration::from_millis(100));
        t.send(CTRL_C);
        // Kept: a check that two ^C do NOT end the payload within 1.5 s.
        t.sleep(Duration::from_millis(1500));
        let survived = alive(&format!("sleep {m}"));
        reap_leftovers(&format!("sleep {m}"));
        assert!(survived, "control: two ^C ended a payload ignoring INT without snug");
    };
    let plain = || {
        let (mut t, dir) = caller(Who::Root, "T3 control: plain bwrap");
        let m = marker();
        let s = scripts::write(dir.path(), "ignint.sh", scripts::IGNORE_INT);
        t.line(&bwrap_line(dir.path(), "", &format!("sh {s} {m}")));
        t.expect("ready");
        in_front(&mut t, &format!("sh {s} {m}"));
        t.send(CTRL_C);
        let survived = !t.until(Duration::from_millis(1500), || !alive(&format!("sleep {m}")));
        reap_leftovers(&format!("sleep {m}"));
        assert!(!survived, "control: plain bwrap survived one ^C");
    };
    parallel(&row, &[&bare, &plain]);
}

/// T4: `kill -INT` sent to snug by another process while the payload holds the terminal is
/// relayed, once: the payload's handler runs exactly once and its exit code is snug's.
/// Control: plain bwrap dies of the same kill and the handler never runs.
#[test]
fn t4_int_from_a_process_runs_the_handler_once() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T4");
        let m = marker();
        let s = scripts::write(dir.path(), "hit.py", scripts::HIT_ONCE);
        t.line(&snug_line(&format!("python3 {s} 10 {m}")));
        t.expect("ready");
        // The payload holds its terminal (keys would reach it); the INT comes from a process.
        in_front(&mut t, &format!("python3 {s} 10 {m}"));
        let snug = t.snug_pid();
        common::kill(snug as u32, libc::SIGINT);
        t.expect("hit 1");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 3, "the payload's exit code after its handler ran");
        let runs = t.text().matches("hit ").count();
        assert_eq!(runs, 1, "handler runs:\n{}", t.text());
    };
    let plain = || {
        let (mut t, dir) = caller(Who::Root, "T4 control: plain bwrap");
        let m = marker();
        let s = scripts::write(dir.path(), "hit.py", scripts::HIT_ONCE);
        t.line(&bwrap_line(dir.path(), "", &format!("python3 {s} 10 {m}")));
        t.expect("ready");
        let bwrap = t.pid_of(&crate::terminal::bwrap_path());
        common::kill(bwrap as u32, libc::SIGINT);
        if t.wait_for("hit 1", Duration::from_secs(2)) {
            t.fail("control: plain bwrap relayed the INT");
        }
        reap_leftovers(&format!("{s} 10 {m}"));
    };
    parallel(&row, &[&plain]);
}

/// T4: closing the terminal reaches snug as the caller's shell's SIGHUP to its jobs and is
/// relayed with the grace: a payload that ignores HUP is torn down about 1 s later.
/// Control: under plain bwrap without `--die-with-parent` the payload outlives the hangup.
#[test]
fn t4_hangup_tears_down_after_the_grace() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T4 hangup");
        let m = marker();
        let needle = format!("sleep {m}");
        let s = scripts::write(dir.path(), "ignhup.sh", scripts::IGNORE_HUP);
        t.line(&snug_line(&format!("sh {s} {m}")));
        t.expect("ready");
        the_pid(&mut t, &needle);
        let closed = Instant::now();
        t.hangup();
        let gone = common::until(Duration::from_secs(5), || !alive(&needle));
        let took = closed.elapsed();
        reap_leftovers(&needle);
        assert!(gone, "{who:?}: the payload outlived the hangup by 5 s");
        assert!(
            took >= Duration::from_millis(800) && took <= Duration::from_millis(3000),
            "{who:?}: gone {took:?} after the hangup, want about 1 s"
        );
        eprintln!("T4 hangup {who:?}: payload gone {} ms after the terminal closed", took.as_millis());
    };
    let plain = || {
        let (mut t, dir) = caller(Who::Root, "T4 hangup control: plain bwrap");
        let m = marker();
        let needle = format!("sleep {m}");
        let s = scripts::write(dir.path(), "ignhup.sh", scripts::IGNORE_HUP);
        let line = bwrap_line(dir.path(), "", &format!("sh {s} {m}")).replacen("--die-with-parent ", "", 1);
        t.line(&line);
        t.expect("ready");
        the_pid(&mut t, &needle);
        t.hangup();
        // Kept: a check that the payload does NOT end within 2.5 s of the hangup.
        std::thread::sleep(Duration::from_millis(2500));
        let survived = alive(&needle);
        reap_leftovers(&needle);
        assert!(survived, "control: the payload under plain bwrap did not outlive the hangup");
    };
    parallel(&row, &[&plain]);
}
