//! The terminals' settings (T7, T1): the caller's come back after SIGKILL of snug, and the
//! sandbox's terminal starts with them.

use crate::common::Who;
use crate::own_terminal::{caller, parallel, snug_line};
use crate::pty::PROMPT;

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
            crate::common::snug().display()
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
/// The payload sleeps in short steps: a ^C that sh catches between `echo ready` and the fork
/// of its next `sleep` runs the trap only once that sleep ends (1 in about 20 runs with one
/// `sleep 30`: init saw the foreground catch it, sh waited for the sleep that had not got it).
#[test]
fn t1_the_payload_terminal_is_a_pty_with_the_callers_settings() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "T1 settings");
        t.line("stty intr ^G; echo \"ctty=$(stat -L -c %t:%T /proc/self/fd/0)=\"");
        t.expect("ctty=");
        t.expect(PROMPT);
        t.line(&snug_line(
            "sh -c 'echo \"ptty=$(stat -L -c %t:%T /proc/self/fd/0)=\"; stty -a | grep -o \"intr = [^;]*\"; trap \"echo got-int; exit 3\" INT; echo ready; while :; do sleep 0.1; done'",
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

/// T1: `tty` (ttyname(3), what `GPG_TTY=$(tty)` and ssh use) names the sandbox's terminal
/// also when fd 1 is a pipe (`snug -- tty | cat`), and says "not a tty" for a stdin that is
/// not one. Positive control (the slave not bound at /dev/console): "not a tty" under
/// `| cat`, as root and as the user, though `test -t 0` was true.
#[test]
fn t1_tty_names_the_sandbox_terminal_whatever_fd_1_is() {
    let row = |who: Who| {
        let (mut t, _dir) = caller(who, "T1 ttyname");
        t.line(&format!("{} | cat; echo rc=$?", snug_line("sh -c 'test -t 0 && echo is-tty; tty'")));
        t.expect("is-tty");
        t.expect("/dev/console");
        t.expect("rc=0");
        t.expect(PROMPT);
        t.line(&format!("{} </dev/null | cat", snug_line("sh -c 'tty; echo rc=$?'")));
        t.expect("not a tty");
        t.expect("rc=1");
        t.expect(PROMPT);
    };
    parallel(&row, &[]);
}
