//! The relay table: what a signal snug received does (SPEC G1–G6, T2–T5, T10, T12, D1).
//! [`answer`] is the table of every signal 1–64; [`decide`] adds the mode, the origin and
//! the grace.

use crate::types::Signal;

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

/// SIGURG (`signal(7)`), the one signal of the table [`Signal`] has no name for.
const URG: Signal = Signal(23);

/// The table: snug's answer to signal `sig` (1–64, `signal(7)`).
pub fn answer(sig: Signal) -> Answer {
    match sig {
        Signal::INT | Signal::TERM | Signal::HUP => Answer::Grace,
        Signal::TSTP | Signal::TTIN | Signal::TTOU => Answer::Stop,
        Signal::CONT => Answer::Continue,
        Signal::CHLD | Signal::PIPE | URG | Signal::KILL | Signal::STOP => Answer::Never,
        Signal(1..=64) => Answer::Relay,
        _ => Answer::Never,
    }
}

/// The signals snug catches through its signalfd (unless ignored at start, S2): every one
/// the table does not answer with [`Answer::Never`].
pub fn caught() -> Vec<Signal> {
    (1..=64).map(Signal).filter(|s| answer(*s) != Answer::Never).collect()
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

impl Action {
    /// The name `--report` lists it under (README.md, "Reports").
    pub fn name(self) -> &'static str {
        match self {
            Action::Relay => "relay",
            Action::Key => "key",
            Action::RelayWithGrace => "relay_with_grace",
            Action::Teardown => "teardown",
            Action::Stop => "stop_sandbox",
            Action::Resume => "resume",
            Action::Drop => "drop",
        }
    }
}

/// Decide for `sig`, sent by the terminal (`by_terminal`, `si_code` SI_KERNEL) or not, in
/// terminal mode (`terminal`) or detached, given whether a grace is running.
///
/// In terminal mode a key the caller's terminal sends snug's job while snug copies keys goes
/// to the sandbox's pty as that key before this table is asked (T2). One that reaches the
/// table came while the hand-over is deferred (a pipeline's pager holds the terminal, T13):
/// relayed once to the payload's group, no grace. A SIGHUP the kernel sent is never a key:
/// it goes to the session's leader alone when the terminal hangs up (T10).
pub fn decide(sig: Signal, by_terminal: bool, terminal: bool, in_grace: bool) -> Action {
    let key = by_terminal && sig != Signal::HUP && terminal;
    match answer(sig) {
        Answer::Grace if key => Action::Key,
        Answer::Grace if in_grace => Action::Teardown,
        Answer::Grace => Action::RelayWithGrace,
        Answer::Relay if key => Action::Key,
        Answer::Relay => Action::Relay,
        Answer::Stop => Action::Stop,
        Answer::Continue => Action::Resume,
        Answer::Never => Action::Drop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g1_g4_process_signals_get_one_grace_then_teardown() {
        for sig in [Signal::INT, Signal::TERM, Signal::HUP] {
            assert_eq!(decide(sig, false, false, false), Action::RelayWithGrace);
            assert_eq!(decide(sig, false, false, true), Action::Teardown);
            assert_eq!(decide(sig, false, true, false), Action::RelayWithGrace);
            assert_eq!(decide(sig, false, true, true), Action::Teardown);
        }
    }

    #[test]
    fn d1_terminal_signal_in_detached_mode_starts_the_grace() {
        assert_eq!(decide(Signal::INT, true, false, false), Action::RelayWithGrace);
        assert_eq!(decide(Signal::QUIT, true, false, false), Action::Relay);
    }

    #[test]
    fn t2_t13_terminal_key_in_terminal_mode_sets_no_deadline() {
        for sig in [Signal::INT, Signal::QUIT, Signal::WINCH] {
            assert_eq!(decide(sig, true, true, false), Action::Key);
            assert_eq!(decide(sig, true, true, true), Action::Key);
        }
    }

    #[test]
    fn t10_a_hangup_is_never_a_key() {
        assert_eq!(decide(Signal::HUP, true, true, false), Action::RelayWithGrace);
        assert_eq!(decide(Signal::HUP, true, true, true), Action::Teardown);
    }

    #[test]
    fn t5_t12_job_control_and_continue_whatever_the_origin() {
        for (by_terminal, terminal, grace) in [(false, false, false), (true, true, true), (true, false, true)] {
            for sig in [Signal::TSTP, Signal::TTIN, Signal::TTOU] {
                assert_eq!(decide(sig, by_terminal, terminal, grace), Action::Stop);
            }
            assert_eq!(decide(Signal::CONT, by_terminal, terminal, grace), Action::Resume);
            assert_eq!(decide(Signal::CHLD, by_terminal, terminal, grace), Action::Drop);
        }
    }

    /// G6: every signal 1–64 has a deliberate answer; none but the listed ones is dropped.
    #[test]
    fn g6_every_signal_has_an_answer() {
        for n in 1..=64 {
            let sig = Signal(n);
            let a = answer(sig);
            match n {
                2 | 15 | 1 => assert_eq!(a, Answer::Grace),
                20..=22 => assert_eq!(a, Answer::Stop),
                18 => assert_eq!(a, Answer::Continue),
                17 | 13 | 23 | 9 | 19 => assert_eq!(a, Answer::Never),
                _ => assert_eq!(a, Answer::Relay, "signal {n}"),
            }
        }
        assert_eq!(answer(Signal(0)), Answer::Never);
        assert_eq!(answer(Signal(65)), Answer::Never);
        for n in [14, 24, 11, 6, 34, 64] {
            assert_eq!(decide(Signal(n), false, false, false), Action::Relay);
        }
        let caught = caught();
        assert!(!caught.contains(&Signal::KILL) && caught.contains(&Signal(64)) && caught.len() == 64 - 5);
        assert_eq!(caught.first(), Some(&Signal::HUP));
    }

    #[test]
    fn o5_action_names_are_the_reports() {
        let all = [
            (Action::Relay, "relay"),
            (Action::Key, "key"),
            (Action::RelayWithGrace, "relay_with_grace"),
            (Action::Teardown, "teardown"),
            (Action::Stop, "stop_sandbox"),
            (Action::Resume, "resume"),
            (Action::Drop, "drop"),
        ];
        for (a, name) in all {
            assert_eq!(a.name(), name);
        }
    }
}
