//! A sandbox pty is never taken for the caller's terminal (T11): not by its number, not by
//! exclusive mode.

use crate::common::{marker, reap_leftovers, Who};
use crate::pty::{scripts, PROMPT};
use crate::terminal_caller::{caller, parallel, snug_line};

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
/// fails without the fix, which compared TIOCGDEV numbers only: the
/// sandbox's pts/N counted as the caller's, and the payload hung in a stop-and-restart loop
/// (no `own-pty` line within 12 s, root and user).
#[test]
fn t11_a_sandbox_pty_with_the_callers_number_is_not_the_callers() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "own pty");
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
/// terminal exclusive (in-test, `gexcl=1`, then undone with TIOCNXCL); without the fix
/// the row fails (TIOCEXCL was not trapped and reached the caller's terminal).
#[test]
fn t11_exclusive_mode_is_refused() {
    let probe = "import fcntl, termios, os\nfds = [0, 1, 2, os.open('/dev/tty', os.O_RDWR)]\nn = 0\nfor fd in fds:\n    try:\n        fcntl.ioctl(fd, termios.TIOCEXCL)\n        n += 1\n    except OSError as e:\n        print('excl-refused', e.errno, flush=True)\nprint(f'excl-done {n}', flush=True)\n";
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "TIOCEXCL");
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
        let (mut t, dir) = caller(Who::Root, "TIOCEXCL control");
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
