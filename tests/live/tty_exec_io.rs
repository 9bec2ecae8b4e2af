//! `snug exec` at a terminal with CMD's output redirected, and resized (SPEC L3, T17).

use crate::common::{everyone, workdir, Who};
use crate::live::Live;
use crate::pty::{Term, PROMPT};
use std::time::Duration;

/// A live run as `who`, a caller's terminal, and the command that starts `snug exec` in it.
fn exec_at_a_terminal(who: Who, dir: &std::path::Path, label: &str) -> (Live, Term, String) {
    let run = Live::start(who, dir, &[], &["sleep", &crate::common::marker()]);
    run.ready(dir, "running");
    let t = Term::start(who, dir, &format!("{label} {who:?}"));
    let exec = format!("{} exec {} --", crate::common::snug_for(who).display(), run.name);
    (run, t, exec)
}

fn stop(run: &Live) {
    let _ = std::process::Command::new(crate::common::snug()).args(["stop", "--now", &run.name]).status();
}

/// L3, T1: `snug exec NAME -- sh -c 'read x; echo got:$x' >file` at a terminal: CMD's stdin
/// is its pty, it waits for the line, and the line typed reaches it (not the caller's shell);
/// `tty` inside names a terminal while its stdout is the file. Positive control: against the
/// build whose exec took the caller's terminal only when both stdin and stdout were it, root
/// and user: "expected \"caller$ \" within 12 s", CMD waiting for good and the line echoed by
/// the caller's terminal, left for its shell.
#[test]
fn l3_t15_exec_with_stdout_to_a_file_gets_the_line_typed() {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || {
                let dir = workdir(who);
                let (run, mut t, exec) = exec_at_a_terminal(who, dir.path(), "L3 exec >file");
                let out = dir.path().join("exec.out");
                let m = crate::common::marker();
                t.line(&format!("{exec} sh -c 'tty; read x; echo got:$x' {m} >{}", out.display()));
                let read = || std::fs::read_to_string(&out).unwrap_or_default();
                if !t.until(Duration::from_secs(10), || read().starts_with("/dev/")) {
                    t.fail(&format!("tty inside exec named no terminal: {:?}", read()));
                }
                crate::pty::rows::front_of_its_terminal(&mut t, &format!("sh -c tty; read x; echo got:$x {m}"));
                t.line("typed-line");
                t.expect(PROMPT);
                assert_eq!(t.rc(), 0, "{who:?}: {}", t.text());
                let text = read();
                if !text.contains("got:typed-line") {
                    t.fail(&format!("CMD wrote {text:?}"));
                }
                stop(&run);
            });
        }
    });
}

/// T17, L3: every one of 5 resizes reaches CMD of `snug exec` with the new size. Regression
/// guard: the build before this row was written passed it too.
#[test]
fn t17_l3_exec_every_resize_reaches_cmd() {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || {
                let dir = workdir(who);
                let (run, mut t, exec) = exec_at_a_terminal(who, dir.path(), "T17 exec");
                let script = dir.path().join("winch.sh");
                let body =
                    "trap 'echo \"winch=$(stty size);\"' WINCH\necho winch-ready\nwhile :; do sleep 0.05; done\n";
                std::fs::write(&script, body).expect("write the script");
                t.line(&format!("{exec} sh {}", script.display()));
                t.expect("winch-ready");
                crate::pty::rows::front_of_its_terminal(&mut t, &format!("sh {}", script.display()));
                for i in 1..=5u16 {
                    t.resize(20 + i, 70 + i);
                    t.expect(&format!("winch={} {};", 20 + i, 70 + i));
                }
                t.send(crate::pty::CTRL_C);
                t.expect(PROMPT);
                stop(&run);
            });
        }
    });
}
