//! Job control through snug (SPEC T5–T8): stops, `fg`, `bg`, job control inside the sandbox,
//! the terminal handed back on every way out, background starts.

use crate::common::{alive, marker, reap_leftovers, Who};
use crate::pty::{scripts, stat, Term, CTRL_C, CTRL_Z, PROMPT};
use crate::terminal::{bwrap_line, caller, in_front, parallel, sleep_in_front, snug_line, the_pid};
use std::path::Path;
use std::time::Duration;

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
