//! T13: `snug -- CMD | pager` works as `CMD | pager` does: the pager (the caller's job, not
//! the sandbox) is never stopped, ^C still reaches the payload exactly once, X1 holds.

use crate::common::{marker, reap_leftovers, Who};
use crate::pty::{scripts, stat, CTRL_C, PROMPT};
use crate::terminal_caller::{caller, parallel, pids_starting, snug_line, the_pid};
use std::time::Duration;

/// A pager: reads 1000 lines of stdin, says `pager-waiting`, reads one line from /dev/tty
/// (the key the test types), then the rest of stdin to its end, and prints the count and
/// the key. Runs on the host, as the caller's job. ARGV1 is the test's marker.
const PAGER: &str = r#"import sys
n = 0
for _ in range(1000):
    if sys.stdin.readline():
        n += 1
print("pager-" + "waiting", flush=True)
with open("/dev/tty") as tty:
    key = tty.readline().strip()
n += sum(1 for _ in sys.stdin)
print(f"pager lines={n} key={key}", flush=True)
"#;

/// T13: `snug -- sh -c 'seq 1000; sleep 2; : M' | python3 pager.py` (the pager reads the terminal
/// while the payload still runs, as `less` does): the pager reads the typed `q`, counts
/// 1000 lines, the prompt returns, `$?` 0, and "Stopped" is never shown. X1: the payload's
/// process group is not the pager's (the caller's job).
/// Positive control: fails without the fix, as root and as the user: the sandbox held the
/// terminal's foreground, so the pager's read of /dev/tty stopped it (SIGTTIN): "[1]+
/// Stopped  snug -- sh -c 'seq 1000; …' | python3 ./pager.py", then the typed `q` went to
/// the caller's shell ("bash: q: command not found") and no count came.
#[test]
fn t13_a_pager_after_snug_is_never_stopped() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T13 pager");
        let m = marker();
        let pager = scripts::write(dir.path(), &format!("pager-{m}.py"), PAGER);
        t.line(&format!("{} | python3 {pager}", snug_line(&format!("sh -c 'seq 1000; sleep 2; : {m}'"))));
        let payload = the_pid(&mut t, &format!("sh -c seq 1000; sleep 2; : {m}"));
        let pager_pid = the_pid(&mut t, &format!("python3 {pager}"));
        let (pg_payload, pg_pager) = (stat(payload).map(|s| s.pgrp), stat(pager_pid).map(|s| s.pgrp));
        if pg_payload.is_some() && pg_payload == pg_pager {
            t.fail("X1: the payload is in the pager's process group");
        }
        t.expect("pager-waiting");
        t.line("q");
        let counted = t.wait_for("pager lines=1000 key=q", Duration::from_secs(8));
        t.wait_for(PROMPT, Duration::from_secs(5));
        let stopped = t.text().contains("Stopped");
        if stopped || !counted {
            t.line("kill -9 %1 %2 %+ 2>/dev/null; fg 2>/dev/null");
            reap_leftovers(&m);
            reap_leftovers(&format!("pager-{m}"));
            t.fail(&format!("T13: pager stopped: {stopped}, pager counted 1000 and read q: {counted}"));
        }
        assert_eq!(t.rc(), 0, "{who:?}: the pipeline's status");
        assert!(pids_starting(&format!("python3 {pager}")).is_empty());
    };
    parallel(&row, &[]);
}

/// The payload for the ^C half: its INT handler prints `got-int` to stderr and exits 4.
const TRAP4: &str = "trap 'echo got-int >&2; exit 4' INT\necho ready >&2\nsleep \"$1\"\n";

/// T13: `snug -- sh trap4.sh M | (trap '' INT; cat)` with one ^C: the payload's handler runs
/// once (`got-int` shown once) and `${PIPESTATUS[0]}` is 4.
/// Regression guard: it held while the sandbox took the foreground at once; it must
/// keep holding when the hand-over of the foreground waits until the payload needs it.
#[test]
fn t13_ctrl_c_reaches_a_piped_payload_once() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T13 ^C");
        let m = marker();
        let s = scripts::write(dir.path(), "trap4.sh", TRAP4);
        t.line(&format!(
            "{} | (trap '' INT; cat); echo \"@ps:${{PIPESTATUS[0]}}:\"",
            snug_line(&format!("sh {s} {m}"))
        ));
        t.expect("ready");
        the_pid(&mut t, &format!("sleep {m}"));
        t.send(CTRL_C);
        t.expect("got-int");
        let st = t.wait_for("@ps:4:", Duration::from_secs(6));
        t.expect(PROMPT);
        reap_leftovers(&m);
        t.reject("got-int");
        if !st {
            t.fail("the pipeline's first status is not 4");
        }
    };
    parallel(&row, &[]);
}
