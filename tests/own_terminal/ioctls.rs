//! Ioctls (T11): no ioctl family a sandbox process aims at its terminal reaches the caller's.

use crate::common::Who;
use crate::own_terminal::{armed, caller, caller_stty, collect, parallel, snug_line};
use crate::pty::{scripts, PROMPT};
use std::time::Duration;

/// Every ioctl family a background sandbox process could aim at the caller's terminal, on
/// fds 0–2 and /dev/tty, repeated until `ARGV1.stop`: settings, size, line discipline,
/// carrier, flow, flush, foreground, and the VT ones (which fail on a pty, as they must not
/// reach a console either). `ARGV1.armed` after the first round.
const IOCTLS: &str = r#"import fcntl, os, signal, struct, sys, termios
for s in (signal.SIGTTOU, signal.SIGTTIN, signal.SIGTSTP, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
path = sys.argv[1]
fds = [0, 1, 2]
try: fds.append(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
except OSError: pass
KDSKBMODE, KDSETMODE, TIOCSSOFTCAR = 0x4B45, 0x4B3A, 0x541A
n = 0
while not os.path.exists(path + ".stop"):
    for fd in fds:
        for req, arg in ((termios.TIOCSWINSZ, struct.pack("HHHH", 3, 9, 0, 0)), (TIOCSSOFTCAR, struct.pack("i", 1)),
                         (termios.TIOCSETD, struct.pack("i", 0)), (KDSKBMODE, 0), (KDSETMODE, 1),
                         (termios.TIOCSPGRP, struct.pack("i", os.getpgrp()))):
            try: fcntl.ioctl(fd, req, arg)
            except Exception: pass
        try:
            a = termios.tcgetattr(fd); a[3] &= ~(termios.ECHO | termios.ICANON); termios.tcsetattr(fd, termios.TCSANOW, a)
        except Exception: pass
        for f in (lambda: termios.tcflush(fd, termios.TCIFLUSH), lambda: termios.tcflow(fd, termios.TCOOFF)):
            try: f()
            except Exception: pass
    n += 1
    if n == 1: open(path + ".armed", "w").close()
"#;

/// Count SIGWINCH in the caller's foreground job: prints `winch=N` when ARGV1 appears.
const WINCH_COUNTER: &str = r#"import os, signal, sys, time
n = 0
def h(s, f):
    global n; n += 1
signal.signal(signal.SIGWINCH, h)
print("counting", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
print(f"winch={n}", flush=True)
"#;

/// T11 (why 3, 4): a background run whose process aims every ioctl family (settings, size,
/// TIOCSSOFTCAR, line discipline, flow, flush, foreground, KDSKBMODE, KDSETMODE) at each of
/// fds 0–2 and /dev/tty in a loop, started with `</dev/tty` and stdout redirected: the
/// caller's `stty -g` and `stty size` stay as they were, during the attack and after it, and
/// the caller's foreground job gets no SIGWINCH. Positive control (the shared-terminal
/// build): the attacker's echo-off and -icanon reached the caller's terminal, so `stty` no
/// longer answered, as root and as the user.
#[test]
fn t11_no_ioctl_family_reaches_the_callers_terminal() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T11 ioctls");
        let s = scripts::write(dir.path(), "ioctls.py", IOCTLS);
        let w = scripts::write(dir.path(), "winch.py", WINCH_COUNTER);
        let file = dir.path().join("ioctl");
        let before = caller_stty(&mut t);
        t.line(&format!("{} </dev/tty >/dev/null &", snug_line(&format!("python3 {s} {}", file.display()))));
        armed(&mut t, &file);
        t.wait_for(PROMPT, Duration::from_secs(2));
        let during = caller_stty(&mut t);
        let done = dir.path().join("winch-done");
        t.line(&format!("python3 {w} {}", done.display()));
        t.expect("counting");
        // Kept: a window in which a stray TIOCSWINSZ would signal the foreground job.
        t.sleep(Duration::from_millis(500));
        std::fs::write(&done, "").expect("done file");
        t.expect("winch=");
        t.expect("\n");
        let winch_zero = t.text().contains("winch=0\n");
        t.wait_for(PROMPT, Duration::from_secs(2));
        let _ = collect(&file);
        let after = caller_stty(&mut t);
        if during != before || after != before || !winch_zero {
            t.fail(&format!("stty before {before}, during {during}, after {after}; no SIGWINCH: {winch_zero}"));
        }
        t.line("wait");
        t.expect(PROMPT);
    };
    parallel(&row, &[]);
}
