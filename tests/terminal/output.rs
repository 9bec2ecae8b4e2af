//! Output through the sandbox's terminal (SPEC T14): every byte reaches the caller's
//! terminal, however fast the payload exits.

use crate::common::{marker, Who};
use crate::pty::{scripts, PROMPT};
use crate::{bwrap_path, caller, parallel, snug_line};
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
