//! Output through the sandbox's terminal (SPEC T14): every byte reaches the caller's
//! terminal, however fast the payload exits.

use crate::common::{marker, Who};
use crate::pty::{scripts, PROMPT};
use crate::terminal::{bwrap_path, caller, parallel, snug_line, writing};
use std::path::Path;
use std::time::{Duration, Instant};

/// Lines the payload writes: about 19 KB with the pty's CR LF, more than the caller's
/// terminal takes while nobody reads it (about 2,700 of these lines, measured), less than that
/// plus what the sandbox's pty and snug's bridge hold, so the payload writes them all and exits.
const LINES: u32 = 4_000;

/// The payload: waits for ARGV1 (the go file), then writes the lines and exits at once.
fn burst() -> String {
    format!("while [ ! -e \"$1\" ]; do sleep 0.01; done\nseq 1 {LINES}\nexit 0\n")
}

/// T14: a payload writes its last output while the caller's terminal takes none (nobody reads
/// it, as with a slow terminal or ^S) and exits at once; the sandbox ends with that output
/// still in snug's hands. Once the caller's terminal reads again, every line shows, in order,
/// before the prompt, and snug exits 0. Positive control: fails without the final drain
/// (`Bridge::drain` returning at once; snug built so and run with `SNUG_UNDER_TEST`), as root
/// and as the user: "2457 of 4000 lines shown, last 2457" (root), 2744 to 2834 in other runs,
/// snug having exited with the rest of the output unwritten.
#[test]
fn t14_output_held_when_the_sandbox_ends_is_drained_to_the_last_byte() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T14 drain");
        let m = marker();
        let s = scripts::write(dir.path(), "burst.sh", &burst());
        let go = dir.path().join(format!("go-{m}"));
        t.line(&snug_line(&format!("sh {s} {} {m}", go.display())));
        let bwrap = t.pid_of(&bwrap_path());
        // From here on nothing reads the caller's terminal until the sandbox is gone.
        std::fs::write(&go, "").expect("write the go file");
        let proc_dir = format!("/proc/{bwrap}");
        let end = Instant::now() + Duration::from_secs(10);
        while Path::new(&proc_dir).exists() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5)); // Kept: the test may not read meanwhile
        }
        eprintln!("T14 {who:?}: sandbox ended while nothing read: {}", !Path::new(&proc_dir).exists());
        t.expect(PROMPT);
        let rc = t.rc();
        let text = t.text();
        let shown: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if shown != (1..=LINES).collect::<Vec<_>>() {
            let last = shown.last().copied().unwrap_or(0);
            let gap = shown.iter().zip(1..).find(|(n, i)| **n != *i).map(|(n, i)| (i, *n));
            t.fail(&format!("{who:?}: {} of {LINES} lines shown, last {last}, first gap {gap:?}", shown.len()));
        }
        assert_eq!(rc, 0, "{who:?}: snug's status");
    };
    parallel(&row, &[]);
}

/// Lines of the held-back payload: about 3.9 MB with the pty's CR LF, sixty times what snug's
/// bridge may hold (64 KiB), so a bridge that buffered without bound would take it all.
const HELD: u32 = 500_000;

/// T14's back-pressure: while nothing reads the caller's terminal, the payload's writes block
/// once snug's bridge holds its 64 KiB (snug stays small and the payload waits, as it would
/// on the caller's terminal itself); once the terminal reads again, every line shows in order.
/// Positive control: fails against snug built with the bridge reading the master whatever it
/// holds (`to_tty.len() < CHUNK` made `true` in `poll_fds` and `on_ready`, run with
/// `SNUG_UNDER_TEST`), as root and as the user: "seq ended while nothing read".
#[test]
fn t14_a_terminal_that_reads_nothing_holds_the_payload_back() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T14 back-pressure");
        let m = marker();
        let body = format!("while [ ! -e \"$1\" ]; do sleep 0.01; done\nexec seq 1 {HELD}\n");
        let s = scripts::write(dir.path(), "held.sh", &body);
        let go = dir.path().join(format!("go-{m}"));
        t.line(&snug_line(&format!("sh {s} {} {m}", go.display())));
        let payload = crate::terminal::own_pid(&mut t, &format!("sh {s}"));
        let snug = t.snug_pid();
        // From here on nothing reads the caller's terminal until the payload is seen held.
        std::fs::write(&go, "").expect("write the go file");
        let (end, mut since) = (Instant::now() + Duration::from_secs(20), None::<Instant>);
        let held = loop {
            let now = Instant::now();
            if !Path::new(&format!("/proc/{payload}")).exists() || now >= end {
                break false;
            }
            // Held: asleep in write(2) for 500 ms on end, sampled every 5 ms.
            since = if writing(payload) { since.or(Some(now)) } else { None };
            if since.is_some_and(|s| now - s >= Duration::from_millis(500)) {
                break true;
            }
            std::thread::sleep(Duration::from_millis(5)); // Kept: the test may not read meanwhile
        };
        let hwm = crate::common::read_text(Path::new(&format!("/proc/{snug}/status")))
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .unwrap_or_default()
            .to_string();
        eprintln!("T14 {who:?}: payload held {held}; snug's {hwm}");
        if !held {
            t.fail(&format!("{who:?}: seq ended while nothing read (or was never held in write(2))"));
        }
        t.expect(PROMPT);
        let rc = t.rc();
        let text = t.text();
        let mut want = 1..=HELD;
        let in_order = text.lines().filter_map(|l| l.trim().parse::<u32>().ok()).all(|n| want.next() == Some(n));
        if !in_order || want.next().is_some() {
            t.fail(&format!("{who:?}: not every line of 1..={HELD} shown in order"));
        }
        assert_eq!(rc, 0, "{who:?}: snug's status");
    };
    parallel(&row, &[]);
}

/// Lines the paused payload writes: `seq 1 12000`, about 60 KB (73 KB with the pty's CR LF),
/// less than snug's bridge and the sandbox's pty hold together, so it writes them all and
/// exits while the caller's terminal is paused.
const PAUSED: u32 = 12_000;

/// Start the paused row's payload at `t`: it waits for the go file, then writes [`PAUSED`]
/// lines and exits. Returns once keys reach it, with ^S typed and the go file written, the
/// moment of ^S and snug's pid, after the sandbox has ended.
fn paused_run(t: &mut crate::pty::Term, dir: &Path) -> (Instant, i32) {
    let m = marker();
    let body = format!("echo paused-ready\nwhile [ ! -e \"$1\" ]; do sleep 0.01; done\nseq 1 {PAUSED}\n");
    let s = scripts::write(dir, "paused.sh", &body);
    let go = dir.join(format!("go-{m}"));
    t.line(&snug_line(&format!("sh {s} {} {m}", go.display())));
    t.expect("paused-ready");
    crate::terminal::in_front(t, &format!("sh {s}"));
    let bwrap = t.pid_of(&bwrap_path());
    let snug = t.snug_pid();
    t.send("\x13");
    let paused = Instant::now();
    std::fs::write(&go, "").expect("write the go file");
    if !t.until(Duration::from_secs(10), || !Path::new(&format!("/proc/{bwrap}")).exists()) {
        t.fail("the sandbox did not end while paused");
    }
    (paused, snug)
}

/// T14: the caller's terminal paused with ^S for 5 s while the payload writes about 60 KB and
/// exits: after ^Q every line arrives, in order, before the prompt, and snug exits 0.
/// Positive control: against snug whose drain gave up after 2 s, root and user: "snug ended
/// while the caller's terminal was paused".
#[test]
fn t14_output_paused_for_5_s_arrives_to_the_last_byte_after_ctrl_q() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T14 paused 5 s");
        let (paused, snug) = paused_run(&mut t, dir.path());
        t.sleep(Duration::from_secs(5).saturating_sub(paused.elapsed())); // the row: paused 5 s
        if !Path::new(&format!("/proc/{snug}")).exists() {
            t.fail("snug ended while the caller's terminal was paused");
        }
        t.send("\x11");
        t.expect(PROMPT);
        let rc = t.rc();
        let text = t.text();
        let shown: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if shown != (1..=PAUSED).collect::<Vec<_>>() {
            t.fail(&format!("{} of {PAUSED} lines shown", shown.len()));
        }
        assert_eq!(rc, 0, "{who:?}: snug's status");
    };
    parallel(&row, &[]);
}

/// T14: a TERM ends the drain of a paused terminal: snug exits within 3 s of it, without
/// waiting for ^Q. Regression guard for the drain without a time limit (the old drain ended
/// after 2 s by itself).
#[test]
fn t14_a_term_ends_the_drain_of_a_paused_terminal() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T14 TERM while draining");
        let (_, snug) = paused_run(&mut t, dir.path());
        crate::common::kill(snug as u32, libc::SIGTERM);
        if !t.until(Duration::from_secs(3), || !Path::new(&format!("/proc/{snug}")).exists()) {
            t.fail("snug still drains 3 s after a TERM");
        }
        t.send("\x11");
        t.expect(PROMPT);
    };
    parallel(&row, &[]);
}
