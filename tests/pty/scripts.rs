//! The payloads of the terminal tests, written as files into the test's DIR (the payload's
//! working directory). Kept out of the typed command lines on purpose: the terminal echoes
//! what is typed, so a marker the test waits for must never be part of what it types.

use std::path::Path;

/// T1: the terminal is the controlling terminal and the payload's group is its foreground.
/// `/proc/self/stat` fields 5 (pgrp), 7 (tty_nr) and 8 (tpgid), read by `cut` in the same
/// group as the shell.
pub const T1: &str = r#"m=$1
tty >/dev/null && echo ctty-yes
test -t 0 && echo t0-yes
set -- $(cut -d' ' -f5,7,8 /proc/self/stat)
echo "stat pgrp=$1 tty_nr=$2 tpgid=$3"
[ "$2" != 0 ] && [ "$1" = "$3" ] && echo fg-yes
exec sleep "$m"
"#;

/// T2: counts SIGINTs; prints the count every 0.3 s and at the end of argv[1] seconds.
pub const COUNT_INT: &str = r#"import signal, sys, time
n = 0
def h(*_):
    global n
    n += 1
signal.signal(signal.SIGINT, h)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    time.sleep(0.3)  # kept: the payload's own pace, a count every 0.3 s
    print(f"ints={n}", flush=True)
print(f"done ints={n}", flush=True)
"#;

/// Control for T2: a naive launcher in the caller's job that forwards the SIGINT it gets
/// from the terminal to its child, which got it from the terminal too. It forwards 0.2 s
/// late (as a launcher busy elsewhere would): two SIGINTs arriving together are one pending
/// signal, and the child could not tell. The handler is set before the child starts, so the
/// child's `ready` means the forwarder is ready too.
pub const NAIVE_FORWARDER: &str = r#"import signal, subprocess, sys, time
child = None
def forward(*_):
    time.sleep(0.2)  # kept: the control's latency (see above)
    child.send_signal(signal.SIGINT)
signal.signal(signal.SIGINT, forward)
child = subprocess.Popen(sys.argv[1:])
sys.exit(child.wait())
"#;

/// T2: the payload's own INT handler decides the exit code.
pub const TRAP_INT_EXIT5: &str = "trap 'echo got-int; exit 5' INT\necho ready\nsleep \"$1\"\n";

/// T3: a payload that ignores INT.
pub const IGNORE_INT: &str = "trap '' INT\necho ready\nsleep \"$1\"\n";

/// T7: a payload that ignores TERM, so snug's grace runs out.
pub const IGNORE_TERM: &str = "trap '' TERM\necho ready\nsleep \"$1\"\n";

/// T4: a payload that ignores HUP, so only snug's grace ends it after a hangup.
pub const IGNORE_HUP: &str = "trap '' HUP\necho ready\nsleep \"$1\"\n";

/// T4: counts INTs (one line each); ends 0.8 s after the first with 3, so a second delivery
/// has time to show.
pub const HIT_ONCE: &str = r#"import os, signal, sys, time
n = 0
def h(*_):
    global n
    n += 1
    print(f"hit {n}", flush=True)
signal.signal(signal.SIGINT, h)
os.write(1, b"ready\n")  # not print: the handler's print must not find stdout's lock held
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end and n == 0:
    time.sleep(0.05)  # poll interval of a bounded wait for the first INT
time.sleep(0.8)  # kept: a window for a second delivery to show
sys.exit(3 if n else 0)
"#;

/// T5: work that a stop must pause.
pub const SLEEP_THEN_RESUMED: &str = "echo ready\nsleep \"$1\"\necho resumed\n";

/// T5: the payload stops itself (`kill(0, SIGTSTP)`), as `less` or `vim` do on ^Z.
pub const SELF_STOP: &str = "kill -TSTP 0\necho resumed\n";

/// T5: the payload stops itself with SIGSTOP, which cannot be caught or ignored.
pub const SELF_SIGSTOP: &str = "kill -STOP $$\necho resumed\n";

/// T5: changing the terminal's modes from the background (`tcsetattr(3)`) raises SIGTTOU.
pub const SET_TERMINAL: &str = "sleep 0.5\nstty echo\necho stty-done\n";

/// T5, T8: a payload that reads the terminal, after `$1` seconds; says `reading` just before.
pub const READ_LINE: &str = "sleep \"${1:-0}\"\necho reading\nread x\necho \"got:$x\"\n";

/// T7: a payload that moves to a group of its own, takes the terminal's foreground for it
/// and exits, leaving the foreground to a group that is gone.
pub const STEAL_FOREGROUND: &str = r#"import os, signal
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
os.setpgid(0, 0)
os.tcsetpgrp(0, os.getpgrp())
print("stolen", flush=True)
"#;

/// T9: TIOCSTI of a whole command line, byte by byte, then TIOCLINUX; prints the outcome
/// of each (`ioctl_tty(2)`, `ioctl_console(2)`).
pub const INJECT: &str = r#"import errno, fcntl, termios
def outcome(req, arg):
    try:
        fcntl.ioctl(0, req, arg)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
sti = "ok"
for b in b"echo INJ$((6*7))\n":
    r = outcome(termios.TIOCSTI, bytes([b]))
    if r != "ok":
        sti = r
        break
print(f"sti={sti}", flush=True)
print(f"linux={outcome(0x541C, bytes([6]))}", flush=True)
"#;

/// SIGWINCH: prints each new size the handler sees; ends 0.5 s after the first.
pub const WINCH: &str = r#"import os, signal, time
seen = []
def h(*_):
    c, r = os.get_terminal_size(0)
    seen.append(1)
    print(f"size={c}x{r}", flush=True)
signal.signal(signal.SIGWINCH, h)
os.write(1, b"ready\n")  # not print: the handler's print must not find stdout's lock held
end = time.monotonic() + 8
while time.monotonic() < end and not seen:
    time.sleep(0.05)  # poll interval of a bounded wait for the first WINCH
time.sleep(0.5)  # kept: a window for more to show
print(f"winches={len(seen)}", flush=True)
"#;

/// Write `body` as `name` into `dir`; returns `name` (the payload runs in `dir`).
pub fn write(dir: &Path, name: &str, body: &str) -> String {
    std::fs::write(dir.join(name), body).expect("write payload script");
    format!("./{name}")
}

/// R6: a kernel before 6.9, emulated as sandlock does: a seccomp filter (`seccomp(2)`, set
/// with `prctl(PR_SET_SECCOMP)` after `PR_SET_NO_NEW_PRIVS`) makes `pidfd_send_signal(2)`
/// with any flag (`PIDFD_SIGNAL_PROCESS_GROUP` is new in 6.9) fail with EINVAL, then execs
/// argv[1:] (snug), so snug, bwrap, init and the payload all run under it. x86-64 and arm64.
pub const PRE_6_9: &str = r#"import ctypes, os, platform, struct, sys
ARCH, NR = {"x86_64": (0xC000003E, 424), "aarch64": (0xC00000B7, 424)}[platform.machine()]
LD, JEQ, RET = 0x20, 0x15, 0x06
ALLOW, EINVAL = 0x7FFF0000, 0x00050000 | 22
def ins(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)
prog = b"".join([
    ins(LD, 0, 0, 4), ins(JEQ, 0, 4, ARCH),   # seccomp_data.arch
    ins(LD, 0, 0, 0), ins(JEQ, 0, 2, NR),     # seccomp_data.nr
    ins(LD, 0, 0, 40), ins(JEQ, 0, 1, 0),     # args[3] (flags), low 32 bits
    ins(RET, 0, 0, ALLOW), ins(RET, 0, 0, EINVAL),
])
# The arch mismatch jumps land on the ALLOW.
buf = ctypes.create_string_buffer(prog)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fp), 0, 0) != 0:
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
"#;
