//! How a run ends (SPEC G2, G3, R3, R4): everything that ended it, which of them snug
//! leaves as when several happened, and the teardown.

use super::{Outcome, Supervisor};
use crate::error::{failure, INTERNAL, NOT_EXECUTABLE, NOT_FOUND};
use crate::log::log;
use crate::report::EndedBy;

/// One way the run ends.
#[derive(Debug)]
pub enum End {
    /// The payload could not be executed; value: the `errno` of `execve(2)` (snug exits 127
    /// for ENOENT, 126 otherwise).
    ExecFailed(i32),
    /// The payload's main process ended; value: its raw wait status (`waitpid(2)`): an exit
    /// code or the signal it died of, which snug passes on (R3).
    Payload(i32),
    /// snug itself failed (init, the network, the channel).
    Failed(anyhow::Error),
    /// snug tore the sandbox down and dies of this signal (grace over, second signal, force-quit).
    TornDown(i32),
}

/// The kinds of [`End`], declared in order of precedence: when several happened, snug ends
/// as the first.
///
/// - An exec failure comes first: the payload never ran, whatever status its process left.
/// - The payload's own end wins over a teardown (G2: a payload that ended during the grace
///   is what snug reports) and over a start-up failure the end caused (a ^C that ended the
///   held payload while pasta attached also ended pasta's namespace).
/// - A failure wins over a teardown: a failure tears down too, and says why.
/// - A teardown's signal comes last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    ExecFailed,
    Payload,
    Failed,
    TornDown,
}

impl End {
    fn kind(&self) -> Kind {
        match self {
            End::ExecFailed(_) => Kind::ExecFailed,
            End::Payload(_) => Kind::Payload,
            End::Failed(_) => Kind::Failed,
            End::TornDown(_) => Kind::TornDown,
        }
    }
}

/// Everything that ended the run so far, at most one [`End`] per [`Kind`].
#[derive(Debug, Default)]
pub struct Ending {
    ends: Vec<End>,
    /// snug killed bwrap: the loop stops after this round.
    torn_down: bool,
}

impl Ending {
    /// Note how the run ends; a later end of the same kind replaces the earlier (init's last
    /// word counts).
    pub fn note(&mut self, end: End) {
        let kind = end.kind();
        self.ends.retain(|e| e.kind() != kind);
        self.ends.push(end);
    }

    /// Note `end` ([`End::TornDown`], or [`End::Failed`] for a failure) and mark the sandbox
    /// torn down; true the first time, when snug must kill bwrap. A later teardown's signal
    /// is not noted: snug dies of the one that started it.
    pub fn tear_down(&mut self, end: End) -> bool {
        let first = !self.torn_down;
        if first || !matches!(end, End::TornDown(_)) {
            self.note(end);
        }
        self.torn_down = true;
        first
    }

    /// snug tore the sandbox down.
    pub fn torn_down(&self) -> bool {
        self.torn_down
    }

    /// Init reported the payload's end.
    pub fn payload_ended(&self) -> bool {
        self.ends.iter().any(|e| e.kind() == Kind::Payload)
    }

    /// How the run ends, by [`Kind`]'s precedence; `None` when nothing said (bwrap failed
    /// before init was up, or init vanished).
    pub fn take(&mut self) -> Option<End> {
        let first = (0..self.ends.len()).min_by_key(|&i| self.ends[i].kind())?;
        Some(self.ends.swap_remove(first))
    }
}

impl Supervisor {
    /// Tear down so that snug dies of `sig`, unless something ends the run first (see
    /// [`Kind`]).
    pub(super) fn teardown(&mut self, sig: i32, why: EndedBy) {
        self.end_with(End::TornDown(sig), why);
    }

    /// snug failed: tear down and end with `e` (R4).
    pub(super) fn fail(&mut self, e: anyhow::Error) {
        self.end_with(End::Failed(e), EndedBy::SnugError);
    }

    /// Kill bwrap, pid 1 of the outer namespace, once: the kernel kills and reaps everything
    /// below before bwrap's own exit is seen (`zap_pid_ns_processes` in
    /// `kernel/pid_namespace.c`).
    fn end_with(&mut self, end: End, why: EndedBy) {
        if self.ending.tear_down(end) {
            log!("teardown");
            self.record.teardown(why, self.sandbox.as_ref().map(|s| &s.init));
            let _ = self.bwrap.signal(libc::SIGKILL);
        }
    }

    /// How snug ends: what ended the run, by the precedence of [`Kind`].
    pub(super) fn outcome(&mut self) -> Outcome {
        match self.ending.take() {
            Some(End::ExecFailed(e)) => {
                let (code, what) = if e == libc::ENOENT {
                    (NOT_FOUND, crate::hints::not_found(&self.cmd))
                } else if e == libc::ELIBACC {
                    // As sh(1) says "required file not found": 127.
                    (NOT_FOUND, "its ELF interpreter (the dynamic loader) is not in the sandbox".to_string())
                } else {
                    (NOT_EXECUTABLE, crate::error::strerror(e))
                };
                Outcome::Fail(failure(code, format!("{}: {what}", self.cmd)))
            }
            Some(End::Payload(status)) => Outcome::Status(status),
            Some(End::Failed(e)) => Outcome::Fail(e),
            Some(End::TornDown(sig)) => Outcome::Signal(sig),
            None if self.sandbox.is_none() => {
                let said = String::from_utf8_lossy(&self.bwrap_said);
                if said.trim().is_empty() {
                    if let Some(line) = crate::stack::too_small_for_bwrap() {
                        return Outcome::Fail(failure(crate::error::OS_ERROR, line));
                    }
                }
                let line =
                    said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("exited before the sandbox started");
                let line = line.strip_prefix("bwrap: ").unwrap_or(line);
                let code = crate::error::bwrap_setup_code(line);
                let hint =
                    if code == crate::error::POLICY { " (the policy's mounts do not fit: see --dry-run)" } else { "" };
                Outcome::Fail(failure(code, format!("bwrap: {line}{hint}")))
            }
            None => Outcome::Fail(failure(INTERNAL, "the sandbox ended without reporting the payload's status")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> [End; 4] {
        [
            End::ExecFailed(libc::ENOENT),
            End::Payload(7 << 8),
            End::Failed(anyhow::anyhow!("pasta")),
            End::TornDown(libc::SIGTERM),
        ]
    }

    /// The precedence, stated: exec failure > the payload's own end > snug's failure >
    /// teardown's signal, whatever the order they happened in. Positive control (tried once):
    /// `Failed` declared before `Payload` in [`Kind`] fails this test.
    #[test]
    fn outcome_precedence_exec_failed_then_payload_then_failure_then_teardown() {
        let order = [Kind::ExecFailed, Kind::Payload, Kind::Failed, Kind::TornDown];
        for first in 0..4 {
            for second in 0..4 {
                let mut ending = Ending::default();
                let mut ends = all().into_iter().map(Some).collect::<Vec<_>>();
                ending.note(ends[first].take().unwrap());
                if let Some(end) = ends[second].take() {
                    ending.note(end);
                }
                assert_eq!(ending.take().map(|e| e.kind()), Some(order[first.min(second)]), "{first} then {second}");
            }
        }
        let mut ending = Ending::default();
        for end in all().into_iter().rev() {
            ending.note(end);
        }
        let taken: Vec<Kind> = std::iter::from_fn(|| ending.take().map(|e| e.kind())).collect();
        assert_eq!(taken, order);
        assert!(Ending::default().take().is_none());
    }

    /// G2 after a teardown: the payload's status reported while bwrap was being killed wins
    /// over the teardown's signal.
    #[test]
    fn payload_status_wins_over_a_teardown_g2() {
        let mut ending = Ending::default();
        assert!(ending.tear_down(End::TornDown(libc::SIGINT)));
        ending.note(End::Payload(libc::SIGINT));
        assert!(ending.torn_down() && ending.payload_ended());
        assert!(matches!(ending.take(), Some(End::Payload(s)) if s == libc::SIGINT));
    }

    /// A teardown kills bwrap once and keeps its first signal (G3 after a second signal, T3);
    /// a failure's teardown names no signal, and a later failure replaces an earlier one.
    /// Positive control (tried once): noting every teardown's signal fails this test.
    #[test]
    fn teardown_once_first_signal_stays_last_failure_counts() {
        let mut ending = Ending::default();
        assert!(ending.tear_down(End::TornDown(libc::SIGTERM)));
        assert!(!ending.tear_down(End::TornDown(libc::SIGINT)));
        assert!(matches!(ending.take(), Some(End::TornDown(s)) if s == libc::SIGTERM));

        let mut ending = Ending::default();
        assert!(ending.tear_down(End::Failed(anyhow::anyhow!("first"))));
        assert!(!ending.tear_down(End::Failed(anyhow::anyhow!("second"))));
        assert!(ending.torn_down() && !ending.payload_ended());
        assert!(matches!(ending.take(), Some(End::Failed(e)) if e.to_string() == "second"));
        assert!(ending.take().is_none());
    }
}
