//! Relay: the one place that decides what a signal snug received does (SPEC G1–G6, T2–T5,
//! T10, T12, D1). [`answer`] is the table of every signal 1–64; [`decide`] adds the mode,
//! the origin and the grace.

use crate::mode::Mode;
use crate::signals::Delivered;

/// snug's answer to a signal by its number alone: the table, one row per group, with why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// INT, TERM, HUP: someone wants the run to end. Relayed once, with the 1.0 s grace (G1, G2).
    Grace,
    /// Every other catchable signal whose default action would end snug (QUIT, USR1, USR2,
    /// WINCH, ALRM, VTALRM, PROF, IO, PWR, XCPU, XFSZ, SYS, STKFLT, TRAP, ABRT, ILL, FPE, BUS,
    /// SEGV, the real-time signals): a message for the payload, relayed once, no grace (G6).
    /// snug never dies of them: a harness's `timeout --signal=ALRM` or an XCPU limit reaches
    /// the payload as it would without snug. A genuine fault in snug (a SEGV it causes, an
    /// abort) still ends it: the kernel unblocks and resets a synchronous fault signal
    /// (`force_sig_info_to_task`), and abort(3) unblocks SIGABRT before raising it.
    Relay,
    /// TSTP, TTIN, TTOU: job control. The whole sandbox stops, then snug (T5, T12).
    Stop,
    /// CONT: snug was continued; the sandbox continues once (T5, T12, G6).
    Continue,
    /// CHLD (snug's own children, not news for the payload), PIPE (snug's own writes), URG
    /// (out-of-band data on snug's own sockets): never relayed (G6). KILL and STOP cannot be
    /// caught.
    Never,
}

/// The table: snug's answer to signal `sig` (1–64).
pub fn answer(sig: i32) -> Answer {
    match sig {
        libc::SIGINT | libc::SIGTERM | libc::SIGHUP => Answer::Grace,
        libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU => Answer::Stop,
        libc::SIGCONT => Answer::Continue,
        libc::SIGCHLD | libc::SIGPIPE | libc::SIGURG | libc::SIGKILL | libc::SIGSTOP => Answer::Never,
        1..=64 => Answer::Relay,
        _ => Answer::Never,
    }
}

/// The signals snug catches through its signalfd (unless ignored at start, S2): every one
/// the table does not answer with [`Answer::Never`].
pub fn caught() -> Vec<i32> {
    (1..=64).filter(|s| answer(*s) != Answer::Never).collect()
}

/// What snug does with a signal it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Send it to every sandbox process; no grace (G6).
    Relay,
    /// A key the terminal gave snug's group instead of the sandbox's (the sandbox does not
    /// hold the foreground, T13): relay it once, as the terminal would have, with no grace
    /// (T2); an INT that reaches no handler counts toward the force-quit (T3).
    Key,
    /// Send it to every sandbox process and start the 1.0 s grace (G1, G2, T4, T10, D1).
    RelayWithGrace,
    /// A second INT/TERM/HUP during the grace: tear down now (G4).
    Teardown,
    /// Stop the whole sandbox, then snug (T5, T12).
    Stop,
    /// snug was continued: continue the sandbox once (T5, T12, G6).
    Resume,
    /// Never relayed.
    Drop,
}

/// Decide for `got` in `mode`, given whether a grace is running.
///
/// In terminal mode a key the caller's terminal sends snug's job while snug copies keys goes
/// to the sandbox's pty as that key before this table is asked (`on_terminal_key`, T2). One
/// that reaches the table came while the hand-over is deferred (a pipeline's pager holds
/// the terminal, T13): relayed once to the payload's group, no grace. A SIGHUP the kernel
/// sent is never a key: it goes to the session's leader alone when the terminal hangs up (T10).
pub fn decide(got: &Delivered, mode: Mode, in_grace: bool) -> Action {
    let key = got.by_terminal() && got.sig != libc::SIGHUP;
    match answer(got.sig) {
        Answer::Grace if key && matches!(mode, Mode::Terminal { .. }) => Action::Key,
        Answer::Grace if in_grace => Action::Teardown,
        Answer::Grace => Action::RelayWithGrace,
        Answer::Relay if key && matches!(mode, Mode::Terminal { .. }) => Action::Key,
        Answer::Relay => Action::Relay,
        Answer::Stop => Action::Stop,
        Answer::Continue => Action::Resume,
        Answer::Never => Action::Drop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signals::SI_KERNEL;

    fn got(sig: i32, code: i32) -> Delivered {
        Delivered { sig, code, pid: 1 }
    }

    #[test]
    fn g1_g4_process_signals_get_one_grace_then_teardown() {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert_eq!(decide(&got(sig, 0), Mode::Detached, false), Action::RelayWithGrace);
            assert_eq!(decide(&got(sig, 0), Mode::Detached, true), Action::Teardown);
            assert_eq!(decide(&got(sig, 0), Mode::Terminal { immediate: true }, false), Action::RelayWithGrace);
        }
    }

    #[test]
    fn d1_terminal_signal_in_detached_mode_starts_the_grace() {
        assert_eq!(decide(&got(libc::SIGINT, SI_KERNEL), Mode::Detached, false), Action::RelayWithGrace);
    }

    #[test]
    fn t2_t13_terminal_key_in_terminal_mode_sets_no_deadline() {
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGWINCH] {
            assert_eq!(decide(&got(sig, SI_KERNEL), Mode::Terminal { immediate: true }, false), Action::Key);
        }
    }

    #[test]
    fn t10_a_hangup_is_never_a_key() {
        let hup = got(libc::SIGHUP, SI_KERNEL);
        assert_eq!(decide(&hup, Mode::Terminal { immediate: true }, false), Action::RelayWithGrace);
        assert_eq!(decide(&hup, Mode::Terminal { immediate: true }, true), Action::Teardown);
    }

    /// G6: every signal 1–64 has a deliberate answer; none but the listed ones is dropped.
    #[test]
    fn g6_every_signal_has_an_answer() {
        for sig in 1..=64 {
            let a = answer(sig);
            match sig {
                libc::SIGINT | libc::SIGTERM | libc::SIGHUP => assert_eq!(a, Answer::Grace),
                libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU => assert_eq!(a, Answer::Stop),
                libc::SIGCONT => assert_eq!(a, Answer::Continue),
                libc::SIGCHLD | libc::SIGPIPE | libc::SIGURG | libc::SIGKILL | libc::SIGSTOP => {
                    assert_eq!(a, Answer::Never)
                }
                _ => assert_eq!(a, Answer::Relay, "signal {sig}"),
            }
        }
        for sig in [libc::SIGALRM, libc::SIGXCPU, libc::SIGSEGV, libc::SIGABRT, 34, 64] {
            assert_eq!(decide(&got(sig, 0), Mode::Detached, false), Action::Relay);
        }
        assert!(!caught().contains(&libc::SIGKILL) && caught().contains(&64) && caught().len() == 64 - 5);
    }
}
