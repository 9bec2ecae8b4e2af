//! The sandbox's own terminal (SPEC R2, T1, T7, T11, L3): no sandbox process ever holds the
//! caller's terminal, whatever it does. Driven through real pseudo-terminals (tests/pty) with
//! an interactive bash as the caller; every row as root and as the test user, in parallel.
//!
//! Positive controls: each row was run once against the build before the sandbox had a pty
//! of its own (`SNUG_UNDER_TEST=<that build> cargo test --test own_terminal`), which shared
//! the caller's terminal with the sandbox; each comment says what it saw there.

mod common;
mod pty;

pub use common::is_root;
pub use pty::rows::{caller, parallel, snug_line};

use common::{marker, Who};
use pty::{scripts, Term, CTRL_Z, PROMPT};
use std::path::Path;
use std::time::Duration;

/// The reader: every way a sandbox process could still hold the caller's terminal. It opens
/// what it can (fds 0–2 as inherited, /dev/tty, /proc/PPID/fd/0–2), then leaves the
/// session's job control (ARGV2: `setsid` or `notty`, TIOCNOTTY), ignores TTIN/TTOU/TSTP and
/// reads everything it can until `ARGV1.stop` appears, appending it to ARGV1; it also tries
/// to change each descriptor's settings (echo off) and size. `ARGV1.armed` once it runs.
const READER: &str = r#"import fcntl, os, select, signal, struct, sys, termios, time
for s in (signal.SIGTTOU, signal.SIGTTIN, signal.SIGTSTP, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
path, how = sys.argv[1], sys.argv[2]
fds = []
for f in (0, 1, 2):
    try:
        os.fstat(f); fds.append(os.dup(f))
    except Exception: pass
for p in ["/dev/tty"] + [f"/proc/{os.getppid()}/fd/{i}" for i in (0, 1, 2)]:
    try: fds.append(os.open(p, os.O_RDWR | os.O_NOCTTY))
    except Exception: pass
if os.fork():
    os.wait()  # the payload's main process stays, or its end would end the sandbox (R5)
    sys.exit(0)
if how == "setsid":
    os.setsid()
else:
    try: fcntl.ioctl(fds[0], termios.TIOCNOTTY)
    except Exception: pass
for fd in fds:
    try:
        os.set_blocking(fd, False)
        a = termios.tcgetattr(fd); a[3] &= ~termios.ECHO; termios.tcsetattr(fd, termios.TCSANOW, a)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 5, 7, 0, 0))
    except Exception: pass
out = open(path, "ab", buffering=0)
open(path + ".armed", "w").close()
while not os.path.exists(path + ".stop"):
    r = select.select(fds, [], [], 0.05)[0]
    for fd in r:
        try:
            data = os.read(fd, 4096)
            if data: out.write(data)
        except Exception: pass
"#;

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

/// Wait until `file.armed` exists.
fn armed(t: &mut Term, file: &Path) {
    let flag = file.with_extension("armed");
    if !t.until(Duration::from_secs(15), || flag.exists()) {
        t.fail("the attacker never started");
    }
}

/// The caller's settings and size as the caller's shell sees them (`stty -g; stty size`).
fn caller_stty(t: &mut Term) -> String {
    let m = marker();
    t.line(&format!("echo st-$(stty -g)-$(stty size | tr ' ' x)-e''nd{m}"));
    let end = format!("-end{m}\n");
    if !t.wait_for(&end, Duration::from_secs(5)) {
        t.fail("stty did not answer");
    }
    let text = t.text();
    let at = text.rfind(&end).unwrap_or(0);
    let line = &text[..at];
    let start = line.rfind("st-").map_or(0, |i| i + 3);
    t.wait_for(PROMPT, Duration::from_secs(2));
    line[start..].to_string()
}

/// Type 20 lines for the caller's shell, each awaited; the numbers of those it did not run.
fn type_lines(t: &mut Term) -> Vec<u32> {
    let mut missed = Vec::new();
    for n in 1..=20 {
        t.line(&format!("echo sec''ret-{n}"));
        if !t.wait_for(&format!("secret-{n}\n"), Duration::from_secs(3)) {
            missed.push(n);
            if missed.len() >= 3 {
                break;
            }
        }
        t.wait_for(PROMPT, Duration::from_secs(2));
    }
    missed
}

/// Stop the attacker and read what it got.
fn collect(file: &Path) -> Vec<u8> {
    let _ = std::fs::write(file.with_extension("stop"), "");
    std::fs::read(file).unwrap_or_default()
}

/// One reader row: start `line` (which runs the reader on `file`), wait until it runs, then
/// [`nothing_read`].
fn reader_row(t: &mut Term, line: &str, file: &Path, before: &str) {
    t.line(line);
    armed(t, file);
    t.wait_for(PROMPT, Duration::from_secs(2));
    nothing_read(t, file, before);
}

/// Type 20 lines for the caller's shell while the reader on `file` runs: it read 0 bytes, the
/// shell ran every line, and the caller's settings are still `before`.
fn nothing_read(t: &mut Term, file: &Path, before: &str) {
    let missed = type_lines(t);
    let stolen = collect(file);
    let after = caller_stty(t);
    if !stolen.is_empty() || !missed.is_empty() || after != before {
        t.fail(&format!(
            "read {} bytes {:?}; lines the shell did not run {missed:?}; stty before {before} after {after}",
            stolen.len(),
            String::from_utf8_lossy(&stolen)
        ));
    }
}

/// T11 (why 1): `snug -- untrusted &` whose process leaves the session (`setsid`) or just the
/// terminal (`TIOCNOTTY`) and keeps every terminal descriptor it can get reads 0 bytes of 20
/// lines typed to the caller's shell, changes nothing, and the shell runs every line.
/// Positive control (the shared-terminal build): as root and as the user, the setsid'd
/// reader read 48 bytes ("echo sec''ret-2\necho sec''ret-3\n…") and the shell missed lines
/// 2–4.
#[test]
fn t11_a_background_reader_that_leaves_the_session_reads_nothing() {
    let row = |who: Who| {
        for how in ["setsid", "notty"] {
            let (mut t, dir) = caller(who, &format!("T11 {how}"));
            let s = scripts::write(dir.path(), "reader.py", READER);
            let file = dir.path().join(format!("got-{how}"));
            let before = caller_stty(&mut t);
            let line = format!("{} &", snug_line(&format!("python3 {s} {} {how}", file.display())));
            reader_row(&mut t, &line, &file, &before);
        }
    };
    parallel(&row, &[]);
}

/// T11 (why 1, after ^Z and `bg`): a foreground run moved to the background, whose reader
/// left the session, reads 0 of 20 typed lines. Positive control (the shared-terminal
/// build): after `bg` the shell never got its prompt back (the reader held the terminal).
#[test]
fn t11_a_reader_after_ctrl_z_and_bg_reads_nothing() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T11 bg");
        let s = scripts::write(dir.path(), "reader.py", READER);
        let file = dir.path().join("got");
        let before = caller_stty(&mut t);
        t.line(&snug_line(&format!("sh -c 'python3 {s} {} setsid; exec sleep 30'", file.display())));
        armed(&mut t, &file);
        t.sleep(Duration::from_millis(200)); // Kept: the sleep must be running before ^Z
        t.send(CTRL_Z);
        t.expect("Stopped");
        t.expect(PROMPT);
        t.line("bg");
        t.expect(PROMPT);
        nothing_read(&mut t, &file, &before);
        t.line("kill %1; wait");
        t.expect(PROMPT);
    };
    parallel(&row, &[]);
}

/// R2, T11 (why 2): with stdin redirected and the terminal on stdout and stderr
/// (`snug -- cmd </dev/null &`), the sandbox gets the pty on fds 1 and 2, never the caller's
/// terminal: a reader on them reads nothing and changes nothing. Positive control (the
/// shared-terminal build, which ran this detached with the caller's terminal on fds 1–2):
/// as root the reader read 34 bytes ("echo sec''ret-11\n…", lines 11–12 lost); as the user
/// it turned echo off, so `stty` no longer answered.
#[test]
fn r2_t11_the_terminal_on_stdout_only_is_the_sandboxs_own() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "R2 fd1");
        let s = scripts::write(dir.path(), "reader.py", READER);
        let file = dir.path().join("got");
        let before = caller_stty(&mut t);
        let line = format!("{} </dev/null &", snug_line(&format!("python3 {s} {} setsid", file.display())));
        reader_row(&mut t, &line, &file, &before);
    };
    parallel(&row, &[]);
}

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

/// L3, T11 (why 5): `snug exec NAME -- CMD >file` at a terminal gives CMD a pty of its own
/// as stdin, not the caller's terminal: after ^Z of the client, a reader CMD left reads 0 of
/// 20 typed lines. Positive control (the shared-terminal build): after the ^Z the caller's
/// shell never got its prompt back: CMD held the caller's terminal as stdin in its own
/// session.
#[test]
fn l3_t11_exec_with_stdout_redirected_never_gets_the_callers_terminal() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "L3 exec");
        let s = scripts::write(dir.path(), "reader.py", READER);
        let file = dir.path().join("got");
        let name = format!("ex{}", marker());
        let before = caller_stty(&mut t);
        t.line(&format!("{} --name {name} -- sleep 60 </dev/null >/dev/null 2>&1 &", common::snug().display()));
        t.expect(PROMPT);
        let snug = common::snug();
        let ready = || {
            std::process::Command::new(&snug)
                .args(["ps"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&name))
        };
        if !t.until(Duration::from_secs(10), ready) && who == Who::Root {
            t.fail("the run never showed in ps");
        }
        t.line(&format!(
            "{} exec {name} -- sh -c 'python3 {s} {} setsid; exec sleep 30' >/dev/null",
            snug.display(),
            file.display()
        ));
        armed(&mut t, &file);
        t.sleep(Duration::from_millis(200)); // Kept: the sleep must be running before ^Z
        t.send(CTRL_Z);
        t.expect("Stopped");
        t.expect(PROMPT);
        nothing_read(&mut t, &file, &before);
        t.line(&format!("kill -9 %1 %2 2>/dev/null; {} stop --now {name} >/dev/null; wait", snug.display()));
        t.expect(PROMPT);
    };
    parallel(&row, &[]);
}

/// T7 (why 6): after `kill -9` of snug, the calling script's next `read` from the terminal
/// works (it is neither stopped nor raw), and the caller's `stty -g` is what it was 100 ms
/// after the kill, also though the payload had set the terminal raw. Positive control (the
/// shared-terminal build): the terminal's foreground stayed with the dead sandbox group and
/// the script was stopped at its `read` ("[1]+ Stopped bash t7.sh"), as root and as the user.
#[test]
fn t7_after_kill_9_of_snug_the_terminal_is_the_callers_within_100_ms() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T7 kill -9");
        let script = format!(
            "stty -g > before\n\
             {} -- python3 -c 'import tty,time; tty.setraw(0); print(\"raw\", flush=True); time.sleep(30)' </dev/tty >out & p=$!\n\
             until grep -q raw out 2>/dev/null; do sleep 0.01; done\n\
             kill -9 $p; wait $p 2>/dev/null\n\
             sleep 0.1; stty -g > after\n\
             echo killed; read x; echo \"got:$x\"\n",
            common::snug().display()
        );
        std::fs::write(dir.path().join("t7.sh"), script).unwrap();
        t.line("bash t7.sh");
        t.expect("killed");
        t.line("typed-line");
        t.expect("got:typed-line");
        t.expect(PROMPT);
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
        let (before, after) = (read("before"), read("after"));
        if before.is_empty() || after != before {
            t.fail(&format!("stty before {before:?}, 100 ms after kill -9: {after:?}"));
        }
    };
    parallel(&row, &[]);
}

/// T1 (why 7): a prompt on /dev/tty works when stdin is a pipe (`cat f | snug -- fzf`, an
/// ssh or gpg passphrase prompt): the payload reads the line typed at the terminal. Positive
/// control (the shared-terminal build): detached mode, `/dev/tty` failed with ENXIO and the
/// prompt never came, as root and as the user.
#[test]
fn t1_a_dev_tty_prompt_works_with_stdin_a_pipe() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "T1 /dev/tty");
        t.line(&format!(
            "echo from-pipe | {}; echo rc=$?",
            snug_line("sh -c 'read a; printf \"prompt: \" >/dev/tty; read b </dev/tty; echo \"a=$a b=$b\"'")
        ));
        t.expect("prompt: ");
        t.line("typed");
        t.expect("a=from-pipe b=typed");
        t.expect("rc=0");
        t.expect(PROMPT);
    };
    parallel(&row, &[]);
}

/// T1, T2: the payload's terminal is not the caller's but a pty with the caller's settings:
/// `stty intr ^G` carries over and ^G is then the payload's interrupt. Positive control (the
/// shared-terminal build): the payload's stdin was the caller's own terminal (88:0 as root).
#[test]
fn t1_the_payload_terminal_is_a_pty_with_the_callers_settings() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "T1 settings");
        t.line("stty intr ^G; echo \"ctty=$(stat -L -c %t:%T /proc/self/fd/0)=\"");
        t.expect("ctty=");
        t.expect(PROMPT);
        t.line(&snug_line(
            "sh -c 'echo \"ptty=$(stat -L -c %t:%T /proc/self/fd/0)=\"; stty -a | grep -o \"intr = [^;]*\"; trap \"echo got-int; exit 3\" INT; echo ready; sleep 30'",
        ));
        t.expect("intr = ^G");
        t.expect("ready");
        let text = t.text();
        let field = |tag: &str| {
            let i = text.rfind(tag).map(|i| i + tag.len()).unwrap_or(0);
            text[i..].split('=').next().unwrap_or("").to_string()
        };
        let (ctty, ptty) = (field("ctty="), field("ptty="));
        if ctty == ptty || ptty.is_empty() {
            t.fail(&format!("caller's terminal {ctty}, payload's {ptty}"));
        }
        t.send("\x07");
        t.expect("got-int");
        t.expect(PROMPT);
        assert_eq!(t.rc(), 3);
        t.line("stty intr ^C");
        t.expect(PROMPT);
    };
    parallel(&row, &[]);
}
