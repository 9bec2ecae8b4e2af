//! The messages on the control socket and on an `exec` socket: a tag byte and at most a
//! little data, one per packet. Anything else is garbage and gets an error reply.
//!
//! Control socket, client to run: `I` (info), `S` + i32 signal, `T` + u8 now (stop), `E`
//! (exec). Run to client: `ok`, `err TEXT`, `J` + JSON (info), `ok` with an `exec` socket
//! (`SCM_RIGHTS`), and for a stop, `end TEXT` just before the run's snug exits.
//!
//! `exec` socket, between `snug exec` and the sandbox init: at a terminal first `O` + i32 0,
//! which init answers `M` + i32 errno, 0 with a pty master opened from the sandbox's own
//! `/dev/ptmx`; then `R` + u8 flags with stdin, stdout, stderr and a memfd of CMD's argv
//! (`payload_args` layout), then `K` + i32 signal; init answers `P` + i32 pid (started),
//! `F` + i32 errno (exec failed), `Z` + i32 signal (stopped, with a pty), `X` + i32 raw wait
//! status (ended). With a pty a fifth descriptor, its slave, follows the memfd.

/// Control request: describe the run (for `ps`).
pub const INFO: u8 = b'I';
/// Control request: relay a signal as if a process had sent it to snug.
pub const SIGNAL: u8 = b'S';
/// Control request: stop (TERM, or teardown with `now`), then wait for the end.
pub const STOP: u8 = b'T';
/// Control request: an `exec` socket to the sandbox init.
pub const EXEC: u8 = b'E';
/// Exec request (to init): run CMD with these descriptors.
pub const RUN: u8 = b'R';
/// Exec request (to init): a pty master from the sandbox's `/dev/ptmx`, answered by [`MASTER`].
pub const OPEN_PTY: u8 = b'O';
/// Exec answer: an `errno`, 0 when the master comes with it (`SCM_RIGHTS`).
pub const MASTER: u8 = b'M';
/// Exec request (to init): signal CMD's process group.
pub const KILL: u8 = b'K';
/// Exec report: CMD started; its pid in the sandbox.
pub const STARTED: u8 = b'P';
/// Exec report: CMD could not be executed; the errno.
pub const FAILED: u8 = b'F';
/// Exec report: CMD ended; its raw wait status.
pub const EXITED: u8 = b'X';
/// Exec report: CMD stopped (^Z at its pty, T5); the stop signal.
pub const STOPPED: u8 = b'Z';
/// Run flag: a fifth descriptor is a pty's slave; CMD takes it as its controlling terminal.
pub const FLAG_TTY: u8 = 1;

/// A tag and an i32: one [`crate::sys::codec`] frame.
pub fn tagged(tag: u8, v: i32) -> [u8; crate::sys::codec::FRAME] {
    crate::sys::codec::encode(tag, v)
}

/// The value of a `tag` + i32 packet; `None` for any other shape.
pub fn value(bytes: &[u8], tag: u8) -> Option<i32> {
    crate::sys::codec::value_of(bytes, tag)
}

/// How a run ended, as its `stop` callers are told: `exit N`, `signal N`, or `fail N TEXT`.
pub fn end_text(outcome: &crate::end::Outcome) -> String {
    use crate::end::Outcome;
    match outcome {
        Outcome::Status(raw) if libc::WIFSIGNALED(*raw) => format!("signal {}", libc::WTERMSIG(*raw)),
        Outcome::Status(raw) => format!("exit {}", libc::WEXITSTATUS(*raw)),
        Outcome::Signal(sig) => format!("signal {sig}"),
        Outcome::Fail(e) => format!("fail {} {}", crate::error::code_of(e), crate::error::one_line(e)),
    }
}

/// [`end_text`] in words for people: `exited 7`, `killed by SIGTERM`, `failed (70): …`.
pub fn end_words(text: &str) -> String {
    let mut w = text.splitn(3, ' ');
    // After an exit or a signal, how a run asked to end did end: `(… within the grace)`.
    let note = |rest: Option<&str>| rest.map(|r| format!(" {r}")).unwrap_or_default();
    match (w.next(), w.next().and_then(|n| n.parse::<i32>().ok()), w.next()) {
        (Some("exit"), Some(n), rest) => format!("exited {n}{}", note(rest)),
        (Some("signal"), Some(n), rest) => format!("killed by {}{}", crate::signals::signame(n), note(rest)),
        (Some("fail"), Some(n), rest) => format!("failed (exit {n}): {}", rest.unwrap_or("")),
        _ => format!("ended ({text})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l2_wire_values_and_end_words() {
        assert_eq!(value(&tagged(EXITED, 0x700), EXITED), Some(0x700));
        assert_eq!(value(b"X12", EXITED), None);
        assert_eq!(end_words("exit 7"), "exited 7");
        assert_eq!(end_words("signal 15"), "killed by SIGTERM");
        let torn = "signal 15 (the payload did not end within the grace, so snug tore the sandbox down)";
        assert_eq!(end_words(torn), format!("killed by SIGTERM {}", &torn[10..]));
    }
}
