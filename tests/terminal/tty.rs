//! The terminal itself (SPEC T1, T2's SIGWINCH, T9/X2): who owns it, resizes, injection.

use crate::common::{marker, reap_leftovers, Who};
use crate::pty::{scripts, stat, CTRL_C, PROMPT};
use crate::terminal::{bwrap_line, caller, in_front, is_root, parallel, snug_line, the_pid};
use std::time::Duration;

/// T1: in terminal mode the payload has a terminal as its controlling terminal, in a process
/// group of its own (never snug's), and that group is the terminal's foreground; the terminal
/// is the sandbox's own pty, never the caller's (T11: the payload is in another session, with
/// another tty), and the caller's terminal's foreground stays snug's job (snug never moves it).
/// Control: under `bwrap --new-session` the payload has no controlling terminal, so `fg-yes` is
/// never printed. Positive control: fails without the sandbox's own terminal (the caller's
/// shared with the sandbox), root and user: the payload's `tty_nr` and session were the
/// caller's shell's.
#[test]
fn t1_payload_owns_the_terminal_foreground() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T1");
        let m = marker();
        let s = scripts::write(dir.path(), "t1.sh", scripts::T1);
        t.line(&snug_line(&format!("sh {s} {m}")));
        for what in ["ctty-yes", "t0-yes", "fg-yes"] {
            t.expect(what);
        }
        // The same seen from the caller's namespace.
        let payload = the_pid(&mut t, &format!("sleep {m}"));
        let snug = t.snug_pid();
        let (p, s, shell) = (stat(payload).unwrap(), stat(snug).unwrap(), stat(t.shell_pid()).unwrap());
        let fg = t.foreground();
        let own_pty = p.tty_nr != 0 && p.tty_nr != shell.tty_nr && p.session != shell.session;
        if !(p.tpgid == p.pgrp && own_pty && fg == s.pgrp && p.pgrp != s.pgrp && s.tty_nr == shell.tty_nr) {
            t.fail(&format!("payload {p:?}, snug {s:?}, shell {shell:?}, caller's foreground {fg}"));
        }
        t.send(CTRL_C);
        t.expect(PROMPT);
        assert_eq!(t.rc(), 130, "sleep dies of ^C, snug of the same signal");
        reap_leftovers(&format!("sleep {m}"));
    };
    let control = || {
        let (mut t, dir) = caller(Who::Root, "T1 control");
        let m = marker();
        let s = scripts::write(dir.path(), "t1.sh", scripts::T1);
        t.line(&bwrap_line(dir.path(), "--new-session", &format!("sh {s} {m}")));
        t.expect("stat pgrp=");
        t.expect("\n");
        // Kept: a check that `fg-yes` does NOT follow within 0.3 s.
        t.sleep(Duration::from_millis(300));
        if t.seen("fg-yes") {
            t.fail("control: bwrap --new-session kept the terminal's foreground");
        }
        t.send(CTRL_C);
        t.expect(PROMPT);
        reap_leftovers(&format!("sleep {m}"));
    };
    parallel(&row, &[&control]);
}

/// T9, X2: the payload's TIOCSTI and TIOCLINUX fail with EPERM, and nothing it tried to
/// push reaches the caller's shell. Control: under plain bwrap (no seccomp) TIOCSTI works
/// when the kernel allows it (root has CAP_SYS_ADMIN; otherwise
/// /proc/sys/dev/tty/legacy_tiocsti must be 1) and the caller's shell runs the injected
/// `echo INJ$((6*7))`; TIOCLINUX fails, but not with EPERM.
#[test]
fn t9_no_keystroke_injection() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T9");
        let s = scripts::write(dir.path(), "inject.py", scripts::INJECT);
        t.line(&snug_line(&format!("python3 {s}")));
        t.expect("sti=EPERM");
        t.expect("linux=EPERM");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0);
        t.line("echo after-$((1+1))");
        t.expect("after-2");
        if t.text().contains("INJ42") {
            t.fail("injected input reached the caller's shell");
        }
    };
    let plain = || {
        let legacy =
            std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").map(|v| v.trim() == "1").unwrap_or(true);
        let (mut t, dir) = caller(Who::Root, "T9 control: plain bwrap");
        let s = scripts::write(dir.path(), "inject.py", scripts::INJECT);
        t.line(&bwrap_line(dir.path(), "", &format!("python3 {s}")));
        t.expect("linux=");
        t.expect("\n");
        if t.text().contains("linux=EPERM") {
            t.fail("control: TIOCLINUX gave EPERM without seccomp");
        }
        if !(is_root() || legacy) {
            eprintln!("T9 control: legacy_tiocsti is 0 and not root: TIOCSTI part skipped");
            return;
        }
        if !t.wait_for("INJ42", Duration::from_secs(5)) || !t.text().contains("sti=ok") {
            t.fail("control: TIOCSTI under plain bwrap did not reach the caller's shell");
        }
    };
    parallel(&row, &[&plain]);
}

/// T2 (SIGWINCH): resizing the terminal reaches the payload once, and it reads the new
/// size. Control: under `bwrap --new-session` the payload never sees the resize.
#[test]
fn t2_sigwinch_reaches_the_payload() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "SIGWINCH");
        let s = scripts::write(dir.path(), "winch.py", scripts::WINCH);
        t.line(&snug_line(&format!("python3 {s}")));
        t.expect("ready");
        in_front(&mut t, &format!("python3 {s}"));
        t.resize(33, 97);
        t.expect("size=97x33");
        t.expect("winches=1");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 0);
    };
    let control = || {
        let (mut t, dir) = caller(Who::Root, "SIGWINCH control");
        let s = scripts::write(dir.path(), "winch.py", scripts::WINCH);
        t.line(&bwrap_line(dir.path(), "--new-session", &format!("python3 {s}")));
        // `ready` comes after the handler is set; the payload's session is not the terminal's,
        // so nothing later would let the resize reach it.
        t.expect("ready");
        t.resize(33, 97);
        if t.wait_for("size=", Duration::from_secs(2)) {
            t.fail("control: the payload in another session saw the resize");
        }
        t.send(CTRL_C);
        t.expect(PROMPT);
    };
    parallel(&row, &[&control]);
}
