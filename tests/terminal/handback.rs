//! The terminal handed back (SPEC T7, T8): on every way out snug leaves the caller's terminal
//! as it found it, also after the payload moved its foreground, and a background start
//! leaves the caller's input alone.

use crate::common::{marker, reap_leftovers, Who};
use crate::pty::{scripts, stat, Term, CTRL_C, PROMPT};
use crate::terminal::{bwrap_line, caller, in_front, own_pid, parallel, reading_stdin, snug_line};
use std::time::{Duration, Instant};

/// `sh -c 'LAUNCH; echo "after:$?"; echo "@g:$(stty -g):"; read x; echo "got:$x"'`: a
/// non-interactive shell that does not take the terminal back itself nor touch its
/// settings, reading after the launcher is done; it shows the settings it reads in.
fn then_read(launch: &str) -> String {
    format!("sh -c '{launch}; echo \"after:$?\"; echo \"@g:$(stty -g):\"; read x; echo \"got:$x\"'")
}

/// After `after:CODE`, type a line: the shell around snug must read it (T7), not be stopped
/// by SIGTTIN, in the settings the caller's terminal had before snug (`before`, its
/// `stty -g`), not snug's raw ones.
fn reads_next_line(t: &mut Term, code: i32, line: &str, before: &str) {
    t.expect(&format!("after:{code}"));
    let now = t.expect_g();
    if now != before {
        t.fail(&format!("the caller's terminal after snug: stty -g {now}, before {before}"));
    }
    let shell = outer_sh(t);
    let end = Instant::now() + Duration::from_secs(10);
    while stat(shell).is_none_or(|s| s.pgrp != t.foreground()) {
        if Instant::now() >= end {
            t.fail("the shell around snug is not in the terminal's foreground");
        }
        t.pump(Duration::from_millis(10));
    }
    t.line(line);
    t.expect(&format!("got:{line}"));
    t.expect(PROMPT);
}

/// The `sh -c` of [`then_read`] at `t`: the caller bash's descendant whose command line
/// starts `sh -c `.
fn outer_sh(t: &mut Term) -> i32 {
    let starts = |p: &i32| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|b| b.starts_with(b"sh\0-c\0"));
    let caller = t.shell_pid();
    let mut pid = None;
    if !t.until(Duration::from_secs(10), || {
        pid = crate::pty::descendants(caller).into_iter().find(starts);
        pid.is_some()
    }) {
        t.fail("no `sh -c` under the caller's shell");
    }
    pid.unwrap_or_default()
}

/// T7: on every way out (normal, force-quit, grace teardown) the terminal is handed back,
/// so the shell that ran snug reads the next line without a SIGTTIN stop, in the settings
/// the terminal had before snug (its `stty -g`), not snug's raw mode. In-test control: a
/// program without snug that leaves the terminal raw (`tty.setraw`) is caught by the same
/// settings check. Positive control by mutation (earlier model): with the terminal's restore
/// removed from the supervisor's way out, the first case fails: the caller shows the
/// `sh -c` job Stopped and `line-a` runs as a command.
#[test]
fn t7_terminal_handed_back() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T7");
        let m = marker();
        let before = t.stty_g();
        t.line(&then_read(&snug_line("bash -i -c true")));
        reads_next_line(&mut t, 0, "line-a", &before);
        // Force-quit (T3).
        let ignint = scripts::write(dir.path(), "ignint.sh", scripts::IGNORE_INT);
        t.line(&then_read(&snug_line(&format!("sh {ignint} {m}"))));
        t.expect("ready");
        in_front(&mut t, &format!("sh {ignint} {m}"));
        t.send(CTRL_C);
        // Kept: pacing between two key presses (a double ^C is two within 0.3 s).
        t.sleep(Duration::from_millis(100));
        t.send(CTRL_C);
        // The `sh -c` around snug got both ^C too (snug sends a typed key to its own group,
        // R3) and ends with snug as a script does when its child dies of ^C: the caller's
        // shell must get the terminal back and read the next line.
        t.expect(PROMPT);
        assert_eq!(t.rc(), 130, "{who:?}: the force-quit's wrapper");
        // Grace teardown: TERM from another process, ignored by the payload.
        let ignterm = scripts::write(dir.path(), "ignterm.sh", scripts::IGNORE_TERM);
        t.line(&then_read(&snug_line(&format!("sh {ignterm} {m}"))));
        t.expect("ready");
        let snug = t.snug_pid();
        crate::common::kill(snug as u32, libc::SIGTERM);
        reads_next_line(&mut t, 143, "line-c", &before);
        reap_leftovers(&format!("sleep {m}"));
    };
    let control = || {
        let (mut t, dir) = caller(Who::Root, "T7 control: left raw");
        let before = t.stty_g();
        let raw = scripts::write(dir.path(), "raw.py", "import tty\ntty.setraw(0)\n");
        t.line(&then_read(&format!("python3 {raw}")));
        t.expect("after:0");
        let now = t.expect_g();
        t.line("stty sane");
        if now == before {
            t.fail("control: a program leaving the terminal raw was not seen in stty -g");
        }
    };
    parallel(&row, &[&control]);
}

/// T7: the payload moved itself to a group of its own, gave that group the foreground and
/// exited: when snug ends, the foreground is still the one it had when snug started.
/// Control: plain bwrap leaves the foreground to the dead group, and the shell around it is
/// stopped by SIGTTIN.
#[test]
fn t7_foreground_back_after_the_payload_moved_it() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T7 moved");
        let before = t.stty_g();
        let steal = scripts::write(dir.path(), "steal.py", scripts::STEAL_FOREGROUND);
        t.line(&then_read(&snug_line(&format!("python3 {steal}"))));
        t.expect("stolen");
        reads_next_line(&mut t, 0, "line-d", &before);
    };
    let control = || {
        let (mut t, dir) = caller(Who::Root, "T7 control: plain bwrap");
        let steal = scripts::write(dir.path(), "steal.py", scripts::STEAL_FOREGROUND);
        t.line(&then_read(&bwrap_line(dir.path(), "", &format!("python3 {steal}"))));
        t.expect("after:0");
        // The shell reached its `read` and the kernel stopped it (SIGTTIN).
        let shell = outer_sh(&mut t);
        if !t.until(Duration::from_secs(10), || stat(shell).is_some_and(|s| s.state == 'T')) {
            t.fail("control: the shell after plain bwrap was not stopped");
        }
        t.line("line-d");
        if t.wait_for("got:line-d", Duration::from_secs(2)) {
            t.fail("control: the shell read after plain bwrap left the foreground elsewhere");
        }
    };
    parallel(&row, &[&control]);
}

/// T8: snug started in the background leaves the terminal to the caller: the payload's read
/// stops it (SIGTTIN) instead of taking the line typed for the shell, the caller's settings
/// stay as they were (`stty -g`); `fg` gives it input.
/// Control: under `bwrap --new-session` the payload reads the shell's line.
#[test]
fn t8_background_start_does_not_steal_input() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T8");
        let reader = scripts::write(dir.path(), "read.sh", scripts::READ_LINE);
        let before = t.stty_g();
        t.line(&format!("{} &", snug_line(&format!("sh {reader} 0"))));
        t.expect("[1] ");
        let snug = t.snug_pid();
        if !t.until(Duration::from_secs(5), || stat(snug).is_some_and(|s| s.state == 'T')) {
            t.fail("snug not stopped by the payload's background read");
        }
        t.line("echo shell-$((40+2))");
        t.expect("shell-42");
        t.line("jobs -l");
        t.expect("Stopped (tty input)");
        t.reject("got:");
        // snug in the background never changed the caller's terminal.
        let now = t.stty_g();
        if now != before {
            t.fail(&format!("the caller's stty -g was {before}, is {now} with snug in the background"));
        }
        t.line("fg");
        in_front(&mut t, &format!("sh {reader} 0"));
        t.line("line-for-payload");
        t.expect("got:line-for-payload");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0);
    };
    let control = || {
        let (mut t, dir) = caller(Who::Root, "T8 control: bwrap --new-session");
        let reader = scripts::write(dir.path(), "read.sh", scripts::READ_LINE);
        t.line(&format!("{} &", bwrap_line(dir.path(), "--new-session", &format!("sh {reader} 0"))));
        t.expect("[1] ");
        t.expect("reading");
        let payload = own_pid(&mut t, &format!("sh {reader} 0"));
        if !t.until(Duration::from_secs(10), || reading_stdin(payload)) {
            t.fail("control: the payload never blocked reading the terminal");
        }
        t.line("echo shell-$((40+2))");
        if !t.wait_for("got:", Duration::from_millis(1500)) && t.seen("shell-42") {
            t.fail("control: the payload in another session left the shell's line alone");
        }
    };
    parallel(&row, &[&control]);
}
