//! Job control at the caller's terminal when snug itself gets the key (T5, T12), a job
//! moved to the front without a SIGCONT (T1), a wrapper sharing snug's group (T5), and a
//! script's loop of snug runs ended by a key (R3, T2).

use crate::common::{marker, reap_leftovers, Who};
use crate::pty::{scripts, Term, CTRL_C, CTRL_Z, PROMPT};
use crate::terminal_caller::{caller, parallel, snug_line};
use std::time::Duration;

/// Ticks 0.3 s apart, many of them; the marker rides in a comment.
fn ticker(m: &str) -> String {
    format!("sh -c 'i=0; while [ $i -lt 200 ]; do i=$((i+1)); echo tick$i; sleep 0.3; done # {m}'")
}

/// After a ^Z that snug itself received: "Stopped", and the next tick shows only after `bg`.
fn stopped_then_bg_runs(t: &mut Term, m: &str) {
    t.send(CTRL_Z);
    t.expect("Stopped");
    t.expect(PROMPT);
    t.line("bg");
    t.expect(PROMPT);
    // The first `bg` must continue the job: new ticks come without a second one.
    if !t.wait_for("tick", Duration::from_secs(5)) {
        reap_leftovers(m);
        t.fail("the first `bg` after ^Z did not continue the sandbox");
    }
    t.line("kill %1");
    t.expect(PROMPT);
    reap_leftovers(m);
}

/// T5/T12: `snug … &`, then `fg` (bash gives a running job the terminal without a SIGCONT),
/// then ^Z: the terminal's TSTP reaches snug's own group, snug stops the sandbox and itself;
/// the first `bg` continues both. Also for a pipeline (`snug … | cat`, T13: the sandbox does
/// not hold the foreground, so snug gets the ^Z). Positive control: fails without the
/// fix, as root and as the user: init reported the stop of its own SIGSTOP, and
/// snug, continued by `bg`, acted on that stale report and stopped the job again, so the
/// first `bg` or `fg` was swallowed (3 of 3 runs).
#[test]
fn t5_t12_first_bg_after_a_ctrl_z_snug_received() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "& fg ^Z bg");
        let m = marker();
        t.line(&format!("{} &", snug_line(&ticker(&m))));
        t.expect("tick1\n");
        t.line("fg");
        t.expect("tick");
        stopped_then_bg_runs(&mut t, &m);
        let m = marker();
        t.line(&format!("{} | cat", snug_line(&ticker(&m))));
        t.expect("tick1\n");
        stopped_then_bg_runs(&mut t, &m);
    };
    parallel(&row, &[]);
}

/// T1/T5: `snug … &` then `fg` at once: the job is in front while it runs (bash moved it
/// without a SIGCONT); when the payload then reads the terminal, snug hands it the
/// terminal instead of stopping the job, and a typed line reaches it. Positive control:
/// fails without the fix: "Stopped" and the line went to the caller's bash
/// ("hello: command not found"), 3 of 3 runs.
#[test]
fn t1_fg_of_a_running_job_hands_over_the_terminal() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "& fg cat");
        let m = marker();
        // The payload reads only once the test saw `fg` take effect and said so with a file
        // (bounded: 10 s in steps of 10 ms).
        let late_cat = "echo waiting\ni=0\nwhile [ ! -e go-$1 ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done\n\
                        echo reading\nexec cat\n";
        let s = scripts::write(dir.path(), "late-cat.sh", late_cat);
        t.line(&format!("{} &", snug_line(&format!("sh {s} {m}"))));
        // The sandbox runs, in the background: snug decided not to hand it the terminal.
        t.expect("waiting");
        let snug = t.snug_pid();
        t.line("fg");
        if !t.until(Duration::from_secs(10), || crate::pty::stat(snug).is_some_and(|s| s.tpgid == s.pgrp)) {
            t.fail("`fg` did not give snug's job the terminal");
        }
        std::fs::write(dir.path().join(format!("go-{m}")), "").expect("write go file");
        t.expect("reading");
        t.line("hello-from-the-caller");
        t.expect("hello-from-the-caller\nhello-from-the-caller");
        if t.seen("Stopped") || t.seen("command not found") {
            t.fail("the running job brought to the front did not get the terminal");
        }
        t.send(CTRL_C);
        t.expect(PROMPT);
        reap_leftovers(&m);
    };
    parallel(&row, &[]);
}

/// T5 through a wrapper that shares snug's process group (make, `sh -c 'snug …; …'`): ^Z
/// stops the whole job, `fg` resumes it, the wrapper goes on. snug stops its group with the
/// job-control signal: the group is not orphaned, as the wrapper's parent, the caller's
/// shell, is in the session in another group. Positive control: fails without the
/// fix, which looked only at snug's own parent, took the group for orphaned
/// and stopped snug alone with SIGSTOP: the wrapper ran on and no "Stopped" came (found by
/// hand with a Makefile recipe).
#[test]
fn t5_ctrl_z_through_a_wrapper_in_snugs_group() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "wrapper ^Z");
        let m = marker();
        let s = scripts::write(dir.path(), "wrapped.sh", "echo ready; sleep 2; echo resumed\n");
        let snug = crate::common::snug();
        t.line(&format!("sh -c '{} -- sh {s} {m}; echo wrapped-$?'", snug.display()));
        t.expect("ready");
        crate::pty::rows::sleep_in_front(&mut t);
        t.send(CTRL_Z);
        t.expect("Stopped");
        t.expect(PROMPT);
        t.line("fg");
        t.expect("resumed");
        t.expect("wrapped-0");
        t.expect(PROMPT);
        reap_leftovers(&m);
    };
    parallel(&row, &[]);
}

/// R3/T2 through a non-interactive shell that shares snug's group (a script's loop, `make`):
/// ^C ends the loop at its first run, as it ends a loop of plain commands, and so does ^\
/// (tried with dash: bash always ignores SIGQUIT). The script's shell ends its loop only when
/// its child died of the signal *and* it got the signal itself; the sandbox holds the
/// foreground, so snug sends the key to its own group too, as the terminal would have without
/// snug. In-test control: the same loop of plain `sh -c … sleep`. Positive control: fails
/// without the fix, root and user: the script's shell got no SIGINT and ran
/// iteration 2 (with bash and with dash).
#[test]
fn r3_a_key_ends_a_scripts_loop_of_snug_runs() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "loop ^C");
        let m = marker();
        let snug = crate::common::snug();
        let runs = [
            format!("{} -- sh -c 'echo ready; sleep 30' sh {m}", snug.display()),
            format!("sh -c 'echo ready; sleep 30' sh {m}"),
        ];
        for (shell, key, rc) in [("bash", CTRL_C, 130), ("dash", CTRL_C, 130), ("dash", "\x1c", 131)] {
            for run in &runs {
                let s = scripts::write(
                    dir.path(),
                    "loop.sh",
                    &format!("for i in 1 2 3; do {run}; echo iter-$i-$?; done; echo loop-end\n"),
                );
                t.line(&format!("{shell} {s}"));
                t.expect("ready");
                crate::pty::rows::sleep_in_front(&mut t);
                let before = t.text().len();
                t.send(key);
                t.expect(PROMPT);
                let after = t.text()[before..].to_string();
                assert!(
                    !after.contains("iter-") && !after.contains("loop-end"),
                    "{who:?} {shell} {run}: the loop went on: {after}"
                );
                assert_eq!(t.rc(), rc, "{who:?} {shell} {run}: the script did not die of the key");
                reap_leftovers(&m);
            }
        }
    };
    parallel(&row, &[]);
}

/// T5 (issue: ^Z hung for good where no job-control shell started snug, as in `tmux
/// new-window 'snug -- tr a-z A-Z'` or `ssh -t host snug -- …`): snug leads its own session,
/// so its process group is orphaned and the kernel discards a ^Z for the same command run there
/// without snug. With snug, the payload goes on after ^Z (a line typed after it comes back in
/// capitals) and ^C ends the run by SIGINT, as without snug. Positive control: the build
/// before stopped itself with SIGSTOP, which nothing there continues: "TWO" never came.
#[test]
fn t5_ctrl_z_in_an_orphaned_group_is_discarded_as_without_snug() {
    use std::os::unix::process::ExitStatusExt;
    for who in crate::common::everyone() {
        let dir = crate::common::workdir(who);
        let mut l = crate::pty::leader::Leader::start(who, dir.path(), &["-q", "--", "tr", "a-z", "A-Z"]);
        l.send(b"one\n");
        assert!(l.wait_for("ONE", Duration::from_secs(15)), "{who:?}: {:?}", l.text());
        l.send(CTRL_Z.as_bytes());
        assert!(l.wait_for("^Z", Duration::from_secs(5)), "{who:?}: {:?}", l.text());
        l.send(b"two\n");
        assert!(l.wait_for("TWO", Duration::from_secs(5)), "{who:?}: the payload stopped for good: {:?}", l.text());
        l.send(CTRL_C.as_bytes());
        let st = l.wait(Duration::from_secs(5));
        assert_eq!(st.and_then(|s| s.signal()), Some(libc::SIGINT), "{who:?}: {:?}", l.text());
    }
}
