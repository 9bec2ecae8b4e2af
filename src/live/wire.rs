//! The text a live run answers a `stop` with just before its snug exits (`end TEXT`), and
//! that text in words. The requests themselves and the `exec` socket's messages are
//! [`snug_core::wire`]'s.

/// How a run ended, as its `stop` callers are told: `exit N`, `signal N`, or `fail N TEXT`.
pub fn end_text(outcome: &crate::end::Outcome) -> String {
    use crate::end::Outcome;
    use snug_core::WaitStatus;
    match outcome {
        Outcome::Status(WaitStatus::Signaled { sig, .. }) | Outcome::Signal(sig) => format!("signal {}", sig.raw()),
        Outcome::Status(status) => format!("exit {}", status.shell_code().unwrap_or(0)),
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
        (Some("signal"), Some(n), rest) => {
            format!("killed by {}{}", crate::signals::signame(snug_core::Signal(n)), note(rest))
        }
        (Some("fail"), Some(n), rest) => format!("failed (exit {n}): {}", rest.unwrap_or("")),
        _ => format!("ended ({text})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l2_end_words() {
        use crate::end::Outcome;
        use snug_core::{Signal, WaitStatus};
        // A signal's number, not its Display ("signal 15"): with it, every stop's end read
        // "ended (signal signal 15 …)".
        assert_eq!(end_text(&Outcome::Signal(Signal::TERM)), "signal 15");
        assert_eq!(end_text(&Outcome::Status(WaitStatus::Signaled { sig: Signal::KILL, core: true })), "signal 9");
        assert_eq!(end_text(&Outcome::Status(WaitStatus::Exited(7))), "exit 7");
        assert_eq!(end_words(&end_text(&Outcome::Signal(Signal::TERM))), "killed by SIGTERM");
        assert_eq!(end_words("exit 7"), "exited 7");
        assert_eq!(end_words("signal 15"), "killed by SIGTERM");
        let torn = "signal 15 (the payload did not end within the grace, so snug tore the sandbox down)";
        assert_eq!(end_words(torn), format!("killed by SIGTERM {}", &torn[10..]));
    }
}
