//! `snug exec` at a terminal (SPEC L3): a pty of its own, so job control inside works.

use crate::common::{everyone, marker, workdir, Who};
use crate::live::{Live, READY};
use crate::pty::rows::front_of_its_terminal;
use crate::pty::{Term, CTRL_C, CTRL_Z, PROMPT};
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

/// A live run as `who`, a caller's terminal, and the command that starts `snug exec` in it.
fn exec_at_a_terminal(who: Who, dir: &std::path::Path, label: &str) -> (Live, Term, String) {
    let run = Live::start(who, dir, &[], &["sleep", &marker()]);
    run.ready(dir, "running");
    let t = Term::start(who, dir, &format!("{label} {who:?}"));
    let exec = format!("{} exec {} --", crate::common::snug_for(who).display(), run.name);
    (run, t, exec)
}

fn stop(run: &Live) {
    let _ = std::process::Command::new(crate::common::snug()).args(["stop", "--now", &run.name]).status();
}

/// T1, L3: inside `snug exec` at a terminal, `tty` names CMD's terminal (a node of the
/// sandbox's own `/dev/pts`), a write to that name shows on the caller's terminal, and
/// `/dev/tty` opens it. Fails without the fix (CMD's pty from the host's devpts, which the
/// sandbox's `/dev/pts` does not show): "not a tty", exit 1, nothing named.
#[test]
fn t1_l3_exec_tty_names_cmds_terminal_inside() {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || {
                let dir = workdir(who);
                let (run, mut t, exec) = exec_at_a_terminal(who, dir.path(), "T1 exec tty");
                let script = r#"t=$(tty) && echo "named:$t" && echo "via-name-$((6*7))" >"$t" && echo "dev-tty-$((6*7))" >/dev/tty"#;
                t.line(&format!("{exec} sh -c '{script}'"));
                t.expect("named:/dev/pts/");
                t.expect("via-name-42");
                t.expect("dev-tty-42");
                t.expect(PROMPT);
                assert_eq!(t.rc(), 0, "{who:?}: {}", t.text());
                stop(&run);
            });
        }
    });
}

/// T14, L3: a line typed right after CMD's last output, while CMD still runs but reads
/// nothing, is the caller's shell's once CMD has exited: its shell runs it. Fails without the
/// fix (the client read the keys once CMD's pty had no foreground any more, and they went to
/// a pty nobody reads): no "typed-42" within 12 s, in 3 of 3 tries.
#[test]
fn t14_l3_exec_a_line_typed_after_cmds_output_reaches_the_callers_shell() {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || {
                let dir = workdir(who);
                let (run, mut t, exec) = exec_at_a_terminal(who, dir.path(), "T14 exec typeahead");
                t.line(&format!("{exec} sh -c 'echo ready-$((6*7)); sleep 1'"));
                t.expect("ready-42");
                t.line("echo typed-$((6*7))");
                t.expect("typed-42");
                t.expect(PROMPT);
                stop(&run);
            });
        }
    });
}

/// T14, L3: keys typed while CMD does not read yet reach it once it reads. Fails without
/// the fix (the client held the keys and never looked again: its poll had no timeout):
/// CMD waited in `read` for good, no "got-abc" within 12 s.
#[test]
fn t14_l3_exec_keys_typed_before_cmd_reads_reach_it() {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || {
                let dir = workdir(who);
                let (run, mut t, exec) = exec_at_a_terminal(who, dir.path(), "T14 exec read later");
                t.line(&format!("{exec} sh -c 'echo ready-$((6*7)); sleep 1; read x; echo got-$x'"));
                t.expect("ready-42");
                t.line("abc");
                t.expect("got-abc");
                t.expect(PROMPT);
                stop(&run);
            });
        }
    });
}

/// L3, T5 (R3 for exec): a CMD that closes every descriptor of its terminal and runs on ends
/// as it ends, not by a hangup. This is why `snug exec -- cat`, ^Z, `fg`, ^D ended 129 once
/// in a few tries: cat closes fds 0–2 before it exits, the client's pty master then reads
/// EIO, and the client closed the master, which hangs the slave up and sends the session
/// leader SIGHUP (seen in the kernel's `signal_generate` trace: SIGHUP to cat from the
/// client's context before cat's own exit). Fails without the fix: `$?` 129, "Hangup".
#[test]
fn l3_t5_exec_cmd_that_closed_its_terminal_is_not_hung_up() {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || {
                let dir = workdir(who);
                let (run, mut t, exec) = exec_at_a_terminal(who, dir.path(), "L3 exec closes its terminal");
                t.line(&format!(
                    "{exec} sh -c 'echo ready-$((6*7)); exec </dev/null >/dev/null 2>&1; sleep 1; exit 7'"
                ));
                t.expect("ready-42");
                t.expect(PROMPT);
                assert_eq!(t.rc(), 7, "{who:?}: {}", t.text());
                stop(&run);
            });
        }
    });
}

/// T1, L3 (README's limitation): in a sandbox whose `/dev/ptmx` is no pty device (here the
/// payload put `/dev/null` in its place), `snug exec` still gives CMD a terminal, one of the
/// host's, where `/dev/tty` opens and `tty` says "not a tty". Fails with the host's pty not taken in that case
/// (`open_pty` giving the error up): "snug: pty: inappropriate ioctl for device", CMD never ran.
#[test]
fn t1_l3_exec_without_a_pty_device_inside_gets_the_hosts() {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || {
                let dir = workdir(who);
                let swap = format!("ln -sf /dev/null /dev/ptmx && echo done > swapped; exec sleep {}", marker());
                let run = Live::start(who, dir.path(), &[], &["sh", "-c", &swap]);
                run.ready(dir.path(), "running");
                let swapped = dir.path().join("swapped");
                assert!(
                    crate::common::until(READY, || swapped.exists()),
                    "{who:?}: the payload never swapped /dev/ptmx"
                );
                let mut t = Term::start(who, dir.path(), &format!("T1 exec no ptmx {who:?}"));
                let exec = format!("{} exec {} --", crate::common::snug_for(who).display(), run.name);
                t.line(&format!(
                    "{exec} sh -c 'test -t 0 && test -t 1 && echo term-$((6*7)); echo dev-tty-$((6*7)) >/dev/tty; tty'"
                ));
                t.expect("term-42");
                t.expect("dev-tty-42");
                t.expect("not a tty");
                t.expect(PROMPT);
                assert_eq!(t.rc(), 1, "{who:?}: tty's status: {}", t.text());
                stop(&run);
            });
        }
    });
}
