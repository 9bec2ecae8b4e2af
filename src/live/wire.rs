//! The text a live run answers a `stop` with just before its snug exits (`end TEXT`), and
//! that text in words. The requests themselves and the `exec` socket's messages are
//! [`snug_core::wire`]'s.

/// How a run ended, as its `stop` callers are told: `exit N`, `signal N`, or `fail N TEXT`.
pub fn end_text(outcome: &crate::end::Outcome) -> String {
    use crate::end::Outcome;
    use snug_core::WaitStatus;
    match outcome {
        Outcome::Status(WaitStatus::Signaled { sig, .. }) => format!("signal {sig}"),
        Outcome::Status(status) => format!("exit {}", status.shell_code().unwrap_or(0)),
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
    fn l2_end_words() {
        assert_eq!(end_words("exit 7"), "exited 7");
        assert_eq!(end_words("signal 15"), "killed by SIGTERM");
        let torn = "signal 15 (the payload did not end within the grace, so snug tore the sandbox down)";
        assert_eq!(end_words(torn), format!("killed by SIGTERM {}", &torn[10..]));
    }
}
