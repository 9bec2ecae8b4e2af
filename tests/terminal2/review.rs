//! Rows an adversarial review of this round found broken (issue 10), each kept as a test.

use crate::common::{marker, reap_leftovers, Who};
use crate::pty::{scripts, Term, CTRL_C, CTRL_Z, PROMPT};
use crate::{caller, parallel, snug_line};
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
/// not hold the foreground, so snug gets the ^Z). Positive control: fails on main@dfb2ca6 (before
/// this fix), as root and as the user: init reported the stop of its own SIGSTOP, and
/// snug, continued by `bg`, acted on that stale report and stopped the job again, so the
/// first `bg` or `fg` was swallowed (reproduced 3 of 3 by the adversarial review).
#[test]
fn t5_t12_first_bg_after_a_ctrl_z_snug_received() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "review: & fg ^Z bg");
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
/// fails on main@dfb2ca6 (before this fix): "Stopped" and the line went to the caller's bash
/// ("hello: command not found"), 3 of 3 in the review.
#[test]
fn t1_fg_of_a_running_job_hands_over_the_terminal() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "review: & fg cat");
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

/// Payload: open ptys of the sandbox's own devpts until one has the caller's pty number N
/// (bwrap's devpts numbers from 0, like the host's), then change its settings and size.
const OWN_PTY: &str = r#"import os, sys, termios, struct, fcntl
n = int(sys.argv[1])
keep = []
while True:
    m, s = os.openpty()
    keep.append((m, s))
    if os.ttyname(s) == f"/dev/pts/{n}" or len(keep) > n + 4:
        break
try:
    a = termios.tcgetattr(s)
    termios.tcsetattr(s, termios.TCSANOW, a)
    fcntl.ioctl(m, termios.TIOCSWINSZ, struct.pack("HHHH", 7, 9, 0, 0))
    print("own-pty", os.ttyname(s), "ok", flush=True)
except (OSError, termios.error) as e:
    print("own-pty", os.ttyname(s), "refused", e, flush=True)
"#;

/// T11: a pty of the sandbox's own is not the caller's terminal, even when its number is
/// the caller's: a background payload may change its settings and size. Positive control:
/// fails on main@dfb2ca6 (before this fix), which compared TIOCGDEV numbers only: the
/// sandbox's pts/N counted as the caller's, and the payload hung in a stop-and-restart loop
/// (no `own-pty` line within 12 s, root and user).
#[test]
fn t11_a_sandbox_pty_with_the_callers_number_is_not_the_callers() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "review: own pty");
        let m = marker();
        let s = scripts::write(dir.path(), "own-pty.py", OWN_PTY);
        t.line("tty");
        t.expect("/dev/pts/");
        t.expect("\n");
        let n: u32 = t
            .text()
            .rsplit("/dev/pts/")
            .next()
            .and_then(|r| r.lines().next())
            .and_then(|d| d.trim().parse().ok())
            .unwrap_or(0);
        t.line(&format!("{} &", snug_line(&format!("python3 {s} {n} {m}"))));
        t.expect("own-pty /dev/pts/");
        t.expect("\n");
        let text = t.text();
        let line = text.lines().rev().find(|l| l.contains("own-pty /dev")).unwrap_or_default().to_string();
        reap_leftovers(&m);
        assert!(line.contains(&format!("/dev/pts/{n} ok")), "{who:?}: {line:?} in {text}");
    };
    parallel(&row, &[]);
}

/// The caller's terminal's exclusive mode as its shell sees it (TIOCGEXCL, `ioctl_tty(2)`),
/// and whether the caller (as the test user, whom TIOCEXCL binds; root is exempt) can open
/// `/dev/tty`: `gexcl=0 open=ok` when all is well.
const GEXCL: &str = "import fcntl, struct, os\nv = struct.unpack('i', fcntl.ioctl(0, 0x80045440, b'\\0' * 4))[0]\ntry:\n    os.close(os.open('/dev/tty', os.O_RDWR))\n    o = 'ok'\nexcept OSError as e:\n    o = e.errno\nprint(f'gexcl={v} open={o}', flush=True)\n";

/// T11: TIOCEXCL from the sandbox (on fds 0–2 and `/dev/tty`, never undone) does not put the
/// caller's terminal in exclusive mode: exclusive mode would outlive snug and make the
/// caller's own opens of /dev/tty fail with EBUSY. The sandbox's terminal is a pty of its
/// own, so the ioctl may succeed there; after snug, the caller's terminal is not exclusive
/// and opens. Positive controls: without a launcher the same probe leaves the caller's
/// terminal exclusive (in-test, `gexcl=1`, then undone with TIOCNXCL); on main@dfb2ca6 the
/// row fails (TIOCEXCL was not trapped and reached the caller's terminal).
#[test]
fn t11_exclusive_mode_is_refused() {
    let probe = "import fcntl, termios, os\nfds = [0, 1, 2, os.open('/dev/tty', os.O_RDWR)]\nn = 0\nfor fd in fds:\n    try:\n        fcntl.ioctl(fd, termios.TIOCEXCL)\n        n += 1\n    except OSError as e:\n        print('excl-refused', e.errno, flush=True)\nprint(f'excl-done {n}', flush=True)\n";
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "review: TIOCEXCL");
        let s = scripts::write(dir.path(), "excl.py", probe);
        let g = scripts::write(dir.path(), "gexcl.py", GEXCL);
        t.line(&snug_line(&format!("python3 {s}")));
        t.expect("excl-done ");
        t.expect(PROMPT);
        t.line(&format!("python3 {g}"));
        t.expect("gexcl=");
        t.expect(PROMPT);
        assert!(t.text().contains("gexcl=0 open=ok"), "{who:?}: {}", t.text());
    };
    let control = || {
        let (mut t, dir) = caller(Who::Root, "review: TIOCEXCL control");
        let s = scripts::write(dir.path(), "excl.py", probe);
        let g = scripts::write(dir.path(), "gexcl.py", GEXCL);
        t.line(&format!("python3 {s}"));
        t.expect("excl-done 4");
        t.expect(PROMPT);
        t.line(&format!("python3 {g}"));
        t.expect("gexcl=");
        t.expect(PROMPT);
        let set = t.text().contains("gexcl=1");
        t.line("python3 -c 'import fcntl, termios; fcntl.ioctl(0, termios.TIOCNXCL)'");
        t.expect(PROMPT);
        assert!(set, "control: {}", t.text());
    };
    parallel(&row, &[&control]);
}

/// T5 through a wrapper that shares snug's process group (make, `sh -c 'snug …; …'`): ^Z
/// stops the whole job, `fg` resumes it, the wrapper goes on. snug stops its group with the
/// job-control signal: the group is not orphaned, as the wrapper's parent, the caller's
/// shell, is in the session in another group. Positive control: fails on main@4fd6d55
/// (before this fix), which looked only at snug's own parent, took the group for orphaned
/// and stopped snug alone with SIGSTOP: the wrapper ran on and no "Stopped" came (found by
/// hand with a Makefile recipe).
#[test]
fn t5_ctrl_z_through_a_wrapper_in_snugs_group() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "review: wrapper ^Z");
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
/// snug. In-test control: the same loop of plain `sh -c … sleep`. Positive control: fails on
/// main@a064dfc (before this fix), root and user: the script's shell got no SIGINT and ran
/// iteration 2 (found by the adversarial review with bash and dash).
#[test]
fn r3_a_key_ends_a_scripts_loop_of_snug_runs() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "review: loop ^C");
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
