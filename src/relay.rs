//! Relay: the one place that decides what a signal snug received does (SPEC G1–G6, T2–T4, D1).

use crate::mode::Mode;
use crate::signals::Received;

/// What snug does with a signal it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Send it to the sandbox group; no grace (G6, and a terminal's signal that the sandbox
    /// could not have got because it was not the foreground).
    Relay,
    /// Send it to the sandbox group and start the 1.0 s grace (G1, G2, T4, D1).
    RelayWithGrace,
    /// A second INT/TERM/HUP during the grace: tear down now (G4).
    Teardown,
    /// SIGCONT: snug was continued; give the terminal back to the sandbox if snug is in the
    /// foreground and continue the sandbox (T5).
    Resume,
    /// Never relayed (G6: CHLD, PIPE, TSTP, TTIN, TTOU).
    Drop,
}

/// The signals snug catches (through its signalfd) unless they were ignored at start (S2).
pub const CAUGHT: [i32; 8] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
    libc::SIGCONT,
];

/// Decide for `got` in `mode`, given whether a grace is running.
///
/// In terminal mode with the sandbox in the foreground, the terminal delivers ^C, ^\, ^Z and
/// SIGWINCH to the sandbox group directly, and snug (in a background group) never sees them:
/// nothing to filter, nothing delivered twice (T2). A terminal-generated signal that does
/// reach snug therefore found snug's group in the foreground and the sandbox not (the
/// moment before init took the terminal): relay it once, like the terminal would have, and
/// start no grace, so a REPL that answers ^C keeps running.
pub fn decide(got: &Received, mode: Mode, in_grace: bool) -> Action {
    match got.sig {
        libc::SIGINT | libc::SIGTERM | libc::SIGHUP => {
            if matches!(mode, Mode::Terminal { .. }) && got.by_terminal() {
                Action::Relay
            } else if in_grace {
                Action::Teardown
            } else {
                Action::RelayWithGrace
            }
        }
        libc::SIGQUIT | libc::SIGUSR1 | libc::SIGUSR2 | libc::SIGWINCH => Action::Relay,
        libc::SIGCONT => Action::Resume,
        _ => Action::Drop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signals::SI_KERNEL;

    fn got(sig: i32, code: i32) -> Received {
        Received { sig, code, pid: 1 }
    }

    #[test]
    fn g1_g4_process_signals_get_one_grace_then_teardown() {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert_eq!(decide(&got(sig, 0), Mode::Detached, false), Action::RelayWithGrace);
            assert_eq!(decide(&got(sig, 0), Mode::Detached, true), Action::Teardown);
            assert_eq!(decide(&got(sig, 0), Mode::Terminal { foreground: true }, false), Action::RelayWithGrace);
        }
    }

    #[test]
    fn d1_terminal_signal_in_detached_mode_starts_the_grace() {
        assert_eq!(decide(&got(libc::SIGINT, SI_KERNEL), Mode::Detached, false), Action::RelayWithGrace);
    }

    #[test]
    fn t2_terminal_signal_in_terminal_mode_sets_no_deadline() {
        assert_eq!(decide(&got(libc::SIGINT, SI_KERNEL), Mode::Terminal { foreground: true }, false), Action::Relay);
    }

    #[test]
    fn g6_relayed_without_grace_or_never() {
        for sig in [libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2, libc::SIGWINCH] {
            assert_eq!(decide(&got(sig, 0), Mode::Detached, false), Action::Relay);
        }
        for sig in [libc::SIGCHLD, libc::SIGPIPE, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU] {
            assert_eq!(decide(&got(sig, 0), Mode::Detached, false), Action::Drop);
        }
    }
}
