//! T11 (c): while the caller's group holds the terminal's foreground, no sandbox process can
//! change the terminal's settings (`tcsetattr`) or size (TIOCSWINSZ), SIGTTOU ignored.

use crate::common::{marker, read_text, reap_leftovers, Who};
use crate::pty::{scripts, Term, PROMPT};
use crate::terminal_caller::{caller, parallel, snug_line};
use std::time::Duration;

/// The attacker: ignores SIGTTOU; for ARGV1 seconds turns the terminal's echo off
/// (`tcsetattr`) and sets its size to 5×7 (TIOCSWINSZ, `ioctl_tty(2)`) in a loop, then writes
/// how many calls succeeded to `report-ARGV2`. ARGV2 is the test's marker. (`termios.error`
/// is not an OSError: a refused `tcsetattr` must not end the attacker.)
const TTY_ATTACKER: &str = r#"import fcntl, os, signal, struct, sys, termios, time
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
attr = size = 0
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    try:
        a = termios.tcgetattr(fd)
        a[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, a)
        attr += 1
    except (OSError, termios.error):
        pass
    try:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 5, 7, 0, 0))
        size += 1
    except OSError:
        pass
with open(f"report-{sys.argv[2]}", "w") as f:
    f.write(f"tcsetattr-ok={attr} tiocswinsz-ok={size}\n")
"#;

/// What the caller's shell saw: `stty -g` before and after the attack, `stty size` after,
/// and the attacker's report.
struct Seen {
    before: String,
    after: String,
    size: String,
    report: String,
}

/// `stty -g` first; then, in one typed line (so the shell's line editor, which restores the
/// modes it saved, is not running meanwhile), the attacker started in the background by
/// `launch`, a bounded wait for its report, and `stty -g` and `stty size` again.
fn attack(t: &mut Term, dir: &std::path::Path, launch: &str, m: &str) -> Seen {
    t.line(&format!("stty -g > before-{m}"));
    t.expect(PROMPT);
    let s = scripts::write(dir, "ttyattack.py", TTY_ATTACKER);
    t.line(&format!(
        "{launch} python3 {s} 1 {m} & for i in $(seq 150); do [ -e report-{m} ] && break; sleep 0.1; done; \
         stty -g > after-{m}; stty size > size-{m}"
    ));
    let size = dir.join(format!("size-{m}"));
    if !t.until(Duration::from_secs(25), || !read_text(&size).is_empty()) {
        t.fail("the caller's shell never ran `stty size`");
    }
    reap_leftovers(&format!("ttyattack.py 1 {m}"));
    let get = |n: &str| read_text(&dir.join(format!("{n}-{m}"))).trim().to_string();
    Seen { before: get("before"), after: get("after"), size: get("size"), report: get("report") }
}

/// T11 (c): a background payload (`snug -- python3 ttyattack.py &`) ignoring SIGTTOU turns
/// echo off with `tcsetattr` and sets the size to 5×7 with TIOCSWINSZ, in a loop for 1 s: the
/// caller's `stty -g` is the same before and after, and `stty size` is still `24 80`.
/// Control (in-test, root): the same attacker with no launcher changes both.
/// Positive control: fails without the fix, as root and as the user: `stty -g` lflag 8a3b
/// before, 8a33 after (ECHO off), `stty size` "5 7"; every call succeeded (about 40,000
/// tcsetattr and as many TIOCSWINSZ in the second).
#[test]
fn t11_background_payload_cannot_change_terminal_settings_or_size() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T11 tcsetattr/TIOCSWINSZ");
        let m = marker();
        let seen = attack(&mut t, dir.path(), snug_line("").trim_end(), &m);
        let what = format!(
            "stty -g before {:?}, after {:?}; stty size {:?} (want \"24 80\"); attacker: {}",
            seen.before, seen.after, seen.size, seen.report
        );
        if seen.report.is_empty() {
            t.fail(&format!("the attacker never reported: {what}"));
        }
        if seen.before != seen.after || seen.size != "24 80" {
            t.fail(&format!("T11 (c): the caller's terminal changed: {what}"));
        }
        eprintln!("T11 (c) {who:?}: {what}");
    };
    let bare = || {
        let (mut t, dir) = caller(Who::Root, "T11 (c) control: no launcher");
        let m = marker();
        let seen = attack(&mut t, dir.path(), "", &m);
        if seen.before == seen.after || seen.size == "24 80" {
            t.fail(&format!(
                "control: the attacker without snug did not change the terminal: before {:?} after {:?} size {:?}",
                seen.before, seen.after, seen.size
            ));
        }
    };
    parallel(&row, &[&bare]);
}
