//! Readers (T11, R2, L3): a sandbox process that keeps every terminal descriptor it can get
//! and leaves job control reads nothing typed for the caller and changes nothing.

use crate::common::{marker, Who};
use crate::own_terminal::{armed, caller, caller_stty, nothing_read, parallel, reader_row, snug_line};
use crate::pty::{scripts, CTRL_Z, PROMPT};
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
        t.line(&format!("{} --name {name} -- sleep 60 </dev/null >/dev/null 2>&1 &", crate::common::snug().display()));
        t.expect(PROMPT);
        let snug = crate::common::snug();
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
