//! Window size in every topology (SPEC T17): stdin redirected, stdout or stdin a pipe, and
//! after a stop. The payload reports each SIGWINCH with the size its terminal has then.
//!
//! Positive control: each row was run once against snug built before init passed the
//! SIGWINCH on to the payload's group while it holds the pty's foreground (deferred mode),
//! with `SNUG_UNDER_TEST`; each comment says what it saw there.

use crate::common::Who;
use crate::pty::{scripts, Term, CTRL_Z, PROMPT};
use crate::terminal::{caller, parallel, snug_line};

/// Reports the size of its controlling terminal (`/dev/tty`, opened read-only: an open and
/// TIOCGWINSZ work from the background) on stderr at each SIGWINCH and SIGCONT; ends after
/// the fifth SIGWINCH. `os.write`, not `sys.stderr`: a handler that wrote to Python's buffered
/// stderr while a resize or a stop had interrupted a write there ended the payload with
/// "reentrant call".
const WINCH: &str = r#"import fcntl, os, signal, struct, termios
fd = os.open("/dev/tty", os.O_RDONLY)
def size():
    r, c = struct.unpack("hhhh", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))[:2]
    return f"{c}x{r}"
n = 0
def winch(*_):
    global n
    n += 1
    os.write(2, f"winch{n}={size()};\n".encode())
signal.signal(signal.SIGWINCH, winch)
signal.signal(signal.SIGCONT, lambda *_: os.write(2, f"cont={size()};\n".encode()))
os.write(2, f"winch-ready={size()};\n".encode())
while n < 5:
    signal.pause()
"#;

/// Five resizes, each reported by the payload with its new size.
fn five(t: &mut Term) {
    for i in 1..=5u16 {
        let (rows, cols) = (20 + i, 70 + i);
        t.resize(rows, cols);
        t.expect(&format!("winch{i}={cols}x{rows};"));
    }
}

/// T17: `snug -- cmd </dev/null`, `snug -- cmd | cat` and `cat | snug -- cmd` (deferred: init
/// holds the pty's foreground) each report every one of 5 resizes with the new size.
/// Positive control: against the old build no resize reached the payload in any of the
/// three, root and user: "expected \"winch1=71x21;\" within 12 s".
#[test]
fn t17_every_resize_reaches_the_payload_in_every_topology() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T17 topologies");
        let s = scripts::write(dir.path(), "winch.py", WINCH);
        let run = snug_line(&format!("python3 {s}"));
        for (n, line) in
            [format!("{run} </dev/null"), format!("{run} | cat"), format!("cat | {run}")].iter().enumerate()
        {
            t.resize(24, 80);
            t.line(line);
            t.expect("winch-ready=80x24;");
            five(&mut t);
            if n == 2 {
                t.send("\x04"); // cat's end of input, once the payload ended
            }
            t.expect(PROMPT);
            assert_eq!(t.rc(), 0, "{line}");
        }
    };
    parallel(&row, &[]);
}

/// T17 with T5: resized while stopped (^Z), the payload has the new size at `fg`, deferred
/// (`</dev/null`) and handed over (stdin and stdout the terminal). Positive control: against
/// the old build the deferred payload said "cont=80x24;" after `fg`, root and user (the size
/// from before the stop).
#[test]
fn t17_resized_while_stopped_the_payload_has_the_new_size_at_fg() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T17 fg");
        let s = scripts::write(dir.path(), "winch.py", WINCH);
        let run = snug_line(&format!("python3 {s}"));
        for (deferred, line) in [(true, format!("{run} </dev/null")), (false, run.clone())] {
            t.resize(24, 80);
            t.line(&line);
            t.expect("winch-ready=80x24;");
            if !deferred {
                crate::terminal::in_front(&mut t, &format!("python3 {s}"));
            }
            t.send(CTRL_Z);
            t.expect("Stopped");
            t.expect(PROMPT);
            t.resize(30, 90);
            t.line("fg");
            t.expect("cont=90x30;");
            // Five more sizes: the payload ends at its fifth SIGWINCH.
            for i in 1..=5u16 {
                t.resize(40 + i, 100 + i);
            }
            t.expect(PROMPT);
            assert_eq!(t.rc(), 0, "{line}");
        }
    };
    parallel(&row, &[]);
}
