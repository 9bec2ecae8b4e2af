//! Several programs sharing the caller's terminal in one pipeline (SPEC T16): snugs that
//! both ask on /dev/tty, and snug beside a plain `read </dev/tty`, leave `stty -g` as it was,
//! whatever order they take the terminal and give it back in.

use crate::common::Who;
use crate::pty::{scripts, Term, PROMPT};
use crate::terminal::{caller, parallel, snug_line};
use std::path::Path;
use std::time::Duration;

/// Asks on /dev/tty as [`LINE_ASKER`] does, with its own interrupt key (^G) set on its
/// terminal first, as an editor or a REPL sets keys of its own: the snug running it then holds
/// the caller's terminal in raw settings of its own (T2 mirrors the key).
const KEYS_ASKER: &str = r#"[ "$2" = - ] || while [ ! -e "$2" ]; do sleep 0.01; done
stty intr ^G </dev/tty
exec sh "$(dirname "$0")/line.sh" "$1" - "$3"
"#;

/// Asks on /dev/tty as a shell script does (canonical mode), same arguments.
const LINE_ASKER: &str = r#"name=$1
[ "$2" = - ] || while [ ! -e "$2" ]; do sleep 0.01; done
echo "$name-asks" >/dev/tty
read x </dev/tty
echo "$name-got-$x" >/dev/tty
while [ ! -e "$3" ]; do sleep 0.01; done
"#;

/// Whether a process whose command line starts with `prefix` runs under the caller's shell.
fn runs(shell: i32, prefix: &str) -> bool {
    crate::pty::descendants(shell).into_iter().any(|p| crate::common::cmdline(p).is_some_and(|l| l.starts_with(prefix)))
}

/// One run of `left | right` (command lines taking NAME GO LEAVE): `first` ("A", the left
/// one, or "B") asks and is answered before the other asks, then the one named by `gone`
/// leaves first; each `left_cmd`/`right_cmd` names the process to wait for when it leaves.
fn one_run(t: &mut Term, dir: &Path, n: usize, (left, right): (&str, &str), first: &str, gone: &str) {
    let go = |x: &str| dir.join(format!("go-{x}-{n}"));
    let leave = |x: &str| dir.join(format!("leave-{x}-{n}"));
    let second = if first == "A" { "B" } else { "A" };
    let goes = |x: &str| if x == first { "-".to_string() } else { go(x).display().to_string() };
    let args = |x: &str| format!("{x} {} {}", goes(x), leave(x).display());
    let (l, r) = (format!("{left} {}", args("A")), format!("{right} {}", args("B")));
    t.line(&format!("{l} | {r}"));
    for (who, key) in [(first, "one"), (second, "two")] {
        if who == second {
            std::fs::write(go(second), "").expect("go file");
        }
        t.expect(&format!("{who}-asks"));
        t.send(&format!("{key}\n"));
        t.expect(&format!("{who}-got-{key}"));
    }
    let other = if gone == "A" { "B" } else { "A" };
    std::fs::write(leave(gone), "").expect("leave file");
    let cmd = if gone == "A" { &l } else { &r };
    let shell = t.shell_pid();
    if !t.until(Duration::from_secs(10), || !runs(shell, cmd)) {
        t.fail(&format!("{gone} did not leave"));
    }
    std::fs::write(leave(other), "").expect("leave file");
    t.expect(PROMPT);
}

/// T16: `snug -- keys-asker A | snug -- line-asker B`, and `line-asker A | snug -- line-asker
/// B` (a plain `read </dev/tty` beside snug), 20 runs each, the order of asking and of leaving
/// forced all four ways, five times each: `stty -g` after every run is what it was before.
/// Positive control: against snug without the shared record (each snug saved what it found),
/// root and user: "10 of 40 runs changed stty -g", the terminal left in the first taker's raw
/// settings whenever the first to ask was also the first to leave (both pipeline orders).
#[test]
fn t16_programs_sharing_the_terminal_leave_it_as_it_was() {
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "T16 shared terminal");
        let keys = scripts::write(dir.path(), "keys.sh", KEYS_ASKER);
        let line = scripts::write(dir.path(), "line.sh", LINE_ASKER);
        let before = t.stty_g();
        let pairs = [
            (snug_line(&format!("sh {keys}")), snug_line(&format!("sh {line}"))),
            (format!("sh {line}"), snug_line(&format!("sh {line}"))),
        ];
        let mut bad = Vec::new();
        let mut n = 0;
        for (left, right) in &pairs {
            for (first, gone) in [("A", "A"), ("A", "B"), ("B", "A"), ("B", "B")] {
                for _ in 0..5 {
                    n += 1;
                    one_run(&mut t, dir.path(), n, (left, right), first, gone);
                    let after = t.stty_g();
                    if after != before {
                        bad.push(format!(
                            "run {n} ({left} | {right}, {first} asked first, {gone} left first): {after}"
                        ));
                        t.line(&format!("stty {before}"));
                        t.expect(PROMPT);
                    }
                }
            }
        }
        if !bad.is_empty() {
            t.fail(&format!("{} of {n} runs changed stty -g {before}:\n{}", bad.len(), bad.join("\n")));
        }
    };
    parallel(&row, &[]);
}
