//! `snug exec` at a terminal (SPEC L3): a pty of its own, so job control inside works.

use crate::common::{everyone, marker, workdir, Who};
use crate::pty::rows::front_of_its_terminal;
use crate::pty::{Term, CTRL_C, CTRL_Z, PROMPT};
use crate::{Live, READY};
use std::time::Duration;

/// L3 (T6 for exec): at the caller's terminal, `snug exec NAME -- bash -i` gets job control:
/// `sleep`, ^Z → Stopped, `fg`, ^C ends the job and the inner prompt returns; on exit the
/// caller's terminal is back in its own mode (T7: its shell reads the next line). Positive
/// control (one-time mutation): without `TIOCSCTTY` in init's child (src/init/exec.rs) the
/// inner bash says "no job control in this shell" and ^Z never shows "Stopped".
#[test]
fn l3_exec_bash_with_job_control_through_a_pty() {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || row(who));
        }
    });
}

fn row(who: Who) {
    let dir = workdir(who);
    let run = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
    run.ready(dir.path(), "running");
    let mut t = Term::start(who, dir.path(), &format!("L3 exec bash -i {who:?}"));
    let inner = format!("{}@ex> ", crate::pty::user_name(who));
    let snug = crate::common::snug_for(who);
    t.line(&format!("{} exec {} -- env 'PS1=\\u@ex> ' bash --norc --noprofile -i", snug.display(), run.name));
    if !t.wait_for(&inner, READY) {
        t.fail("no inner prompt");
    }
    t.reject("no job control");
    let m = marker();
    t.line(&format!("sleep {m}"));
    front_of_its_terminal(&mut t, &format!("sleep {m}"));
    t.send(CTRL_Z);
    t.expect("Stopped");
    t.expect(&inner);
    t.line("fg");
    t.expect(&format!("sleep {m}"));
    front_of_its_terminal(&mut t, &format!("sleep {m}"));
    t.send(CTRL_C);
    t.expect(&inner);
    if !crate::common::until(Duration::from_secs(3), || !crate::common::alive(&format!("sleep {m}"))) {
        t.fail("the inner job outlived ^C");
    }
    t.line("test -t 0 && echo tty-$((6*7)); exit 3");
    t.expect("tty-42");
    t.expect(PROMPT);
    assert_eq!(t.rc(), 3, "exec's status is the inner shell's");
    t.line("read x; echo \"got:$x\"");
    t.line("typed");
    t.expect("got:typed");
    t.expect(PROMPT);
    let _ = std::process::Command::new(crate::common::snug()).args(["stop", "--now", &run.name]).status();
}
