//! How a run ends (SPEC G2, G3, R3, R4, O5): the vocabulary. An [`End`] is one thing that
//! ends the run, noted as it happens; when several happened, snug ends as the one of highest
//! precedence. [`EndedBy`] is who ended the run, as `--report` names it. (How snug itself
//! then leaves, an exit code or a signal, is the binary's `Outcome`.)

use crate::types::{Errno, Signal, WaitStatus};

/// One thing that ends the run; `E` is the binary's error type (snug's own failure).
#[derive(Debug, PartialEq, Eq)]
pub enum End<E> {
    /// The payload could not be executed; value: the `errno` of `execve(2)` (snug exits 127
    /// for ENOENT, 126 otherwise).
    ExecFailed(Errno),
    /// The payload's main process ended: an exit code or the signal it died of, which snug
    /// passes on (R3).
    Payload(WaitStatus),
    /// snug itself failed (init, the network, the channel).
    Failed(E),
    /// snug tore the sandbox down and dies of this signal (grace over, second signal, force-quit).
    TornDown(Signal),
}

impl<E> End<E> {
    /// The precedence: lower wins when several happened.
    ///
    /// - An exec failure comes first: the payload never ran, whatever status its process left.
    /// - The payload's own end wins over a teardown (G2: a payload that ended during the grace
    ///   is what snug reports) and over a start-up failure the end caused (a ^C that ended the
    ///   held payload while pasta attached also ended pasta's namespace).
    /// - A failure wins over a teardown: a failure tears down too, and says why.
    /// - A teardown's signal comes last.
    pub fn rank(&self) -> u8 {
        match self {
            End::ExecFailed(_) => 0,
            End::Payload(_) => 1,
            End::Failed(_) => 2,
            End::TornDown(_) => 3,
        }
    }
}

/// Who ended the run (`--report`'s `ended_by`, O5), decided from what happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndedBy {
    /// The payload's main process exited by itself (any code), no grace running.
    Payload,
    /// The payload's main process was killed by a signal, no grace running (a `kill -9` from
    /// anywhere, its own `abort()`, a ^C the terminal delivered).
    PayloadSignal,
    /// A relayed INT/TERM/HUP started the grace and the payload's main process ended within
    /// it, by a handler or by the signal's default action (G2).
    RelayedHandled,
    /// The grace ran out and snug tore the sandbox down (G3).
    GraceExpired,
    /// A second INT/TERM/HUP during the grace tore the sandbox down (G4).
    SecondSignal,
    /// A second ^C that reached no handler tore the sandbox down (T3).
    ForceQuit,
    /// `--timeout` expired before the payload ended (O6); snug exits 124.
    Timeout,
    /// `snug stop` (L2), with or without `--now`, before the payload's main process ended.
    Stop,
    /// snug's own failure, before or after the payload started (R4), including a payload
    /// that could not be executed (126, 127).
    SnugError,
    /// The kernel's OOM killer killed the payload's main process: the sandbox was at its
    /// `--memory` bound (K5, O5).
    Oom,
}

impl EndedBy {
    /// The report's name for it (README.md, "Reports").
    pub fn name(self) -> &'static str {
        match self {
            EndedBy::Payload => "payload",
            EndedBy::PayloadSignal => "payload_signal",
            EndedBy::RelayedHandled => "relayed_handled",
            EndedBy::GraceExpired => "grace_expired",
            EndedBy::SecondSignal => "second_signal",
            EndedBy::ForceQuit => "force_quit",
            EndedBy::Timeout => "timeout",
            EndedBy::Stop => "stop",
            EndedBy::SnugError => "snug_error",
            EndedBy::Oom => "oom",
        }
    }
}

/// Everything that ended the run so far, at most one [`End`] per rank.
#[derive(Debug)]
pub(super) struct Ends<E>(Vec<End<E>>);

impl<E> Default for Ends<E> {
    fn default() -> Self {
        Ends(Vec::new())
    }
}

impl<E> Ends<E> {
    /// Note how the run ends; a later end of the same rank replaces the earlier (init's last
    /// word counts).
    pub fn note(&mut self, end: End<E>) {
        let rank = end.rank();
        self.0.retain(|e| e.rank() != rank);
        self.0.push(end);
    }

    /// Init reported the payload's end.
    pub fn payload_ended(&self) -> bool {
        self.0.iter().any(|e| matches!(e, End::Payload(_)))
    }

    /// How the run ends, by precedence; `None` when nothing said (bwrap failed before init
    /// was up, or init vanished).
    pub fn take(&mut self) -> Option<End<E>> {
        let first = (0..self.0.len()).min_by_key(|&i| self.0[i].rank())?;
        Some(self.0.swap_remove(first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> [End<&'static str>; 4] {
        [
            End::ExecFailed(Errno(2)),
            End::Payload(WaitStatus::Exited(7)),
            End::Failed("pasta"),
            End::TornDown(Signal::TERM),
        ]
    }

    /// The precedence, stated: exec failure > the payload's own end > snug's failure >
    /// teardown's signal, whatever the order they happened in. Positive control (tried once):
    /// swapping the ranks of `Payload` and `Failed` fails this test.
    #[test]
    fn r3_r4_end_precedence_exec_failed_then_payload_then_failure_then_teardown() {
        for first in 0..4 {
            for second in 0..4 {
                let mut ends = Ends::default();
                let mut given = all().into_iter().map(Some).collect::<Vec<_>>();
                ends.note(given[first].take().unwrap());
                if let Some(end) = given[second].take() {
                    ends.note(end);
                }
                let want = all().into_iter().nth(first.min(second));
                assert_eq!(ends.take(), want, "{first} then {second}");
            }
        }
        let mut ends = Ends::default();
        for end in all().into_iter().rev() {
            ends.note(end);
        }
        let taken: Vec<_> = std::iter::from_fn(|| ends.take()).collect();
        assert_eq!(taken, all());
        assert!(Ends::<()>::default().take().is_none());
    }

    #[test]
    fn a_later_end_of_the_same_rank_replaces_the_earlier() {
        let mut ends = Ends::default();
        ends.note(End::Failed("first"));
        ends.note(End::Failed("second"));
        assert!(!ends.payload_ended());
        ends.note(End::Payload(WaitStatus::Exited(1)));
        assert!(ends.payload_ended());
        assert_eq!(ends.take(), Some(End::Payload(WaitStatus::Exited(1))));
        assert_eq!(ends.take(), Some(End::Failed("second")));
        assert_eq!(ends.take(), None);
    }

    #[test]
    fn o5_ended_by_names_are_the_reports() {
        let all = [
            (EndedBy::Payload, "payload"),
            (EndedBy::PayloadSignal, "payload_signal"),
            (EndedBy::RelayedHandled, "relayed_handled"),
            (EndedBy::GraceExpired, "grace_expired"),
            (EndedBy::SecondSignal, "second_signal"),
            (EndedBy::ForceQuit, "force_quit"),
            (EndedBy::Timeout, "timeout"),
            (EndedBy::Stop, "stop"),
            (EndedBy::SnugError, "snug_error"),
            (EndedBy::Oom, "oom"),
        ];
        for (e, name) in all {
            assert_eq!(e.name(), name);
        }
    }
}
