//! Job control through snug (SPEC T5–T8): stops, `fg`, `bg`, job control inside the sandbox,
//! the terminal handed back on every way out, background starts.

use crate::common::{alive, marker, reap_leftovers, Who};
use crate::pty::{scripts, stat, Term, CTRL_C, CTRL_Z, PROMPT};
use crate::{bwrap_line, caller, in_front, own_pid, parallel, reading_stdin, sleep_in_front, snug_line, the_pid};
use std::path::Path;
use std::time::{Duration, Instant};

/// ^Z (or the payload's own stop) → the caller's shell shows a stopped job and its prompt.
fn stopped(t: &mut Term) {
    t.expect("Stopped");
    t.expect(PROMPT);
}

/// Wait until snug is stopped, then check the signal that stopped it, as `jobs -l` names it
/// (bash's short notice says just "Stopped" for every stop signal).
fn snug_stopped_by(t: &mut Term, snug: i32, signal: &str) {
    if !t.until(Duration::from_secs(8), || stat(snug).is_some_and(|s| s.state == 'T')) {
        t.fail("snug did not stop");
    }
    t.line("jobs -l");
    t.expect(signal);
    t.expect(PROMPT);
}

/// T5: ^Z stops the whole sandbox and snug with it; `fg` resumes it in the foreground, `bg`
/// in the background; nothing runs while it is stopped. Control: under `bwrap
/// --new-session` ^Z stops only the wrapper, so the payload prints `resumed` while its job
/// shows as stopped. Positive control by mutation for `bg` (the CONT to the sandbox removed: the
/// `Order::Continue(how)` of `Supervisor::resume`, src/supervise/jobs.rs): without it,
/// `resumed` never comes after `fg` (the row fails there) nor after `bg` (checked with the
/// same binary).
#[test]
fn t5_ctrl_z_fg_bg() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T5 ^Z");
        t5_row(&mut t, dir.path(), &snug_line(""));
    };
    let control = || {
        let (mut t, dir) = caller(Who::Root, "T5 control: bwrap --new-session");
        let sleeper = scripts::write(dir.path(), "sleep.sh", scripts::SLEEP_THEN_RESUMED);
        t.line(&bwrap_line(dir.path(), "--new-session", &format!("sh {sleeper} 2")));
        t.expect("ready");
        t.send(CTRL_Z);
        stopped(&mut t);
        if !t.wait_for("resumed", Duration::from_secs(3)) {
            t.fail("control: the payload did not run on while its job was stopped");
        }
        t.line("fg");
        t.expect(PROMPT);
    };
    parallel(&row, &[&control]);
}

/// T5: a payload stopped by its own `kill(0, SIGTSTP)`, by SIGSTOP, by SIGTTIN (reading
/// the terminal after `bg`) or by SIGTTOU (changing the terminal from the background)
/// makes snug a stopped job, stopped by the same signal; `fg` resumes it. Control: under
/// `bwrap --new-session` a self-stop is never reported and the caller hangs.
#[test]
fn t5_payload_stops_itself() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T5 self-stops");
        for (name, body, signal) in
            [("tstp.sh", scripts::SELF_STOP, "Stopped  "), ("stop.sh", scripts::SELF_SIGSTOP, "Stopped (signal)")]
        {
            let s = scripts::write(dir.path(), name, body);
            t.line(&snug_line(&format!("sh {s}")));
            stopped(&mut t);
            let snug = t.snug_pid();
            snug_stopped_by(&mut t, snug, signal);
            t.reject("resumed");
            t.line("fg");
            t.expect("resumed");
            t.expect(PROMPT);
            assert_eq!(t.rc(), 0, "{name}, fg");
        }
        // ^Z, bg, and the payload reads the terminal: SIGTTIN stops it again; fg feeds it.
        let reader = scripts::write(dir.path(), "read.sh", scripts::READ_LINE);
        t.line(&snug_line(&format!("sh {reader} 1")));
        in_front(&mut t, &format!("sh {reader} 1"));
        sleep_in_front(&mut t);
        t.send(CTRL_Z);
        stopped(&mut t);
        let snug = t.snug_pid();
        t.line("bg");
        // Printed after the CONT, so snug has left the ^Z's stop; the next stop is SIGTTIN's.
        t.expect("reading");
        snug_stopped_by(&mut t, snug, "Stopped (tty input)");
        t.line("fg");
        in_front(&mut t, &format!("sh {reader} 1"));
        t.line("line-for-payload");
        t.expect("got:line-for-payload");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0, "SIGTTIN, fg");
        // Started in the background, the payload sets the terminal's modes: SIGTTOU.
        let stty = scripts::write(dir.path(), "stty.sh", scripts::SET_TERMINAL);
        t.line(&format!("{} &", snug_line(&format!("sh {stty}"))));
        let snug = t.snug_pid();
        snug_stopped_by(&mut t, snug, "Stopped (tty output)");
        t.reject("stty-done");
        t.line("fg");
        t.expect("stty-done");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0, "SIGTTOU, fg");
    };
    let control = || {
        let (mut t, dir) = caller(Who::Root, "T5 control: bwrap --new-session");
        let selfstop = scripts::write(dir.path(), "selfstop.sh", scripts::SELF_STOP);
        t.line(&bwrap_line(dir.path(), "--new-session", &format!("sh {selfstop}")));
        if t.wait_for("Stopped", Duration::from_secs(2)) {
            t.fail("control: a self-stop under bwrap --new-session was reported");
        }
        t.send(CTRL_C);
        t.expect(PROMPT);
    };
    parallel(&row, &[&control]);
}

/// An interactive bash for inside the sandbox, whose prompt shows as [`inner_prompt`].
const INNER_BASH: &str = "env 'PS1=\\u@in> ' bash --norc --noprofile -i";

/// The inner bash's prompt: `\u@in> ` typed, `USER@in> ` shown, so the terminal's echo of
/// the command line (or the caller's job notice) never matches it.
fn inner_prompt(who: Who) -> String {
    format!("{}@in> ", crate::pty::user_name(who))
}

/// The T5 row at `t` in `dir`; `launcher` is what precedes the payload on the line (`snug --`,
/// or a wrapper that execs snug and `--`).
pub fn t5_row(t: &mut Term, dir: &Path, launcher: &str) {
    let sleeper = scripts::write(dir, "sleep.sh", scripts::SLEEP_THEN_RESUMED);
    // ^Z once the payload runs, then fg; nothing runs while stopped.
    t.line(&format!("{launcher} sh {sleeper} 1"));
    t.expect("ready");
    sleep_in_front(t);
    t.send(CTRL_Z);
    stopped(t);
    // Kept: a check that something does NOT happen: unstopped, the payload would print `resumed`
    // 1 s after `ready`; this waits 1.8 s.
    t.sleep(Duration::from_millis(1800));
    t.reject("resumed");
    t.line("fg");
    t.expect("resumed");
    t.expect(PROMPT);
    assert_eq!(t.rc(), 0, "fg");
    // ^Z, then bg; collect with wait.
    t.line(&format!("{launcher} sh {sleeper} 2"));
    t.expect("ready");
    sleep_in_front(t);
    t.send(CTRL_Z);
    stopped(t);
    t.line("bg");
    t.line("wait %1");
    t.expect("resumed");
    t.expect(PROMPT);
    assert_eq!(t.rc(), 0, "bg; wait");
}

/// T6: job control inside the sandbox: an interactive bash in snug stops, lists, resumes
/// and interrupts its own jobs, snug stays, and `kill -CONT` to its own group or 0 works.
/// Control: under `bwrap --new-session` the inner bash has no job control, ^Z stops the
/// wrapper and the inner prompt never comes back. Positive control by mutation for a
/// filter that denies kill: with `libc::SYS_kill` added to `denied()` in src/seccomp.rs the
/// row fails already at `fg` (the inner bash cannot SIGCONT its job; ^C then finds it
/// stopped and the inner prompt never returns), before the `kill -CONT` checks.
#[test]
fn t6_job_control_inside() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "T6");
        let m = marker();
        let inner = inner_prompt(who);
        t.line(&snug_line(INNER_BASH));
        t.expect(&inner);
        let snug = t.snug_pid();
        t.line(&format!("sleep {m}"));
        in_front(&mut t, &format!("sleep {m}"));
        t.send(CTRL_Z);
        t.expect("Stopped");
        t.expect(&inner);
        t.line("jobs");
        t.expect(&format!("Stopped                 sleep {m}"));
        t.line("fg");
        t.expect(&format!("sleep {m}"));
        in_front(&mut t, &format!("sleep {m}"));
        t.send(CTRL_C);
        t.expect(&inner);
        if !crate::common::until(Duration::from_secs(2), || !alive(&format!("sleep {m}"))) {
            t.fail("the inner job outlived ^C");
        }
        t.line("echo ok-$((6*7))");
        t.expect("ok-42");
        t.line("kill -CONT 0; echo \"k0=$?\"");
        t.expect("k0=0");
        t.line("kill -CONT -$$; echo \"kg=$?\"");
        t.expect("kg=0");
        if !stat(snug).is_some_and(|s| s.state != 'T' && s.state != 'Z') {
            t.fail("snug is not running");
        }
        t.line("exit");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0);
    };
    let control = || {
        let (mut t, dir) = caller(Who::Root, "T6 control: bwrap --new-session");
        let m = marker();
        let inner = inner_prompt(Who::Root);
        t.line(&bwrap_line(dir.path(), "--new-session", INNER_BASH));
        t.expect(&inner);
        t.line(&format!("sleep {m}"));
        // Not in front: the inner shell's session has no terminal; running is what counts.
        the_pid(&mut t, &format!("sleep {m}"));
        t.send(CTRL_Z);
        if t.wait_for(&inner, Duration::from_secs(2)) {
            t.fail("control: the inner shell under bwrap --new-session got ^Z");
        }
        reap_leftovers(&format!("sleep {m}"));
    };
    parallel(&row, &[&control]);
}

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
