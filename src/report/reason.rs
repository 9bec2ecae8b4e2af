//! The report's `reason`: who ended the run and why, in one line of plain words (SPEC O5).

use super::{EndedBy, Origin, Outcome, RunRecord};
use snug_core::WaitStatus;

/// `1.5 s`, `90 s`, `300 ms`.
pub(super) fn seconds(d: std::time::Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", (d.as_secs_f64() * 10.0).round() / 10.0)
    }
}

fn status(status: WaitStatus) -> String {
    match status {
        WaitStatus::Signaled { sig, .. } => format!("was killed by {}", super::json::short_name(sig)),
        _ => format!("exited with code {}", status.shell_code().unwrap_or(0)),
    }
}

impl RunRecord {
    /// The first signal that started the grace, as `TERM from pid 812` or `INT from the
    /// terminal`.
    fn first_signal(&self) -> String {
        let Some(s) = self.signals.iter().find(|s| s.action == "relay_with_grace").or(self.signals.first()) else {
            return "a signal".into();
        };
        let name = super::json::short_name(s.sig);
        match s.origin {
            Origin::Terminal => format!("{name} from the terminal"),
            Origin::Process(Some(p)) => format!("{name} from pid {p}"),
            Origin::Process(None) => format!("{name} from another pid namespace"),
            Origin::Timeout => format!("{name} at the timeout"),
        }
    }

    /// How a run that was asked to end did end, for `snug stop`'s answer and the reason
    /// (SPEC L2, O5): within the grace, or torn down when the grace ran out or at once.
    /// `None` when no grace started and nothing was torn down.
    pub fn end_note(&self) -> Option<&'static str> {
        // The payload's main process ended in the grace: what it left may still have been torn
        // down when the grace ran out, but the payload itself did end within it.
        let ended_in_grace = matches!((self.grace, self.payload), (Some(g), Some((t, _))) if t >= g);
        match (self.teardown, self.grace) {
            _ if ended_in_grace => Some("the payload ended within the grace"),
            (Some(EndedBy::GraceExpired), _) => {
                Some("the payload did not end within the grace, so snug tore the sandbox down")
            }
            (Some(_), _) => Some("snug tore the sandbox down at once"),
            (None, Some(_)) => Some("the payload ended within the grace"),
            (None, None) => None,
        }
    }

    /// Whether the sandbox hit a bound (an OOM kill, a refused fork): the end's one line
    /// (SPEC K5, O5) is then the reason.
    pub fn hit_bound(&self) -> bool {
        self.context.usage.as_ref().is_some_and(|u| u.oom_kills > Some(0) || u.refused_forks > Some(0))
    }

    /// One line in plain words: who ended the run, how the payload ended, and a bound it hit.
    pub fn reason_line(&self, ended_by: EndedBy, outcome: &Outcome) -> String {
        self.reason(ended_by, outcome)
    }

    /// One line in plain words: who ended the run, how the payload ended, and a bound it hit.
    pub(super) fn reason(&self, ended_by: EndedBy, outcome: &Outcome) -> String {
        let payload = self.payload.map(|(_, st)| status(st));
        let mut line = match ended_by {
            EndedBy::Oom => {
                format!("the kernel's OOM killer ended the payload ({})", payload.as_deref().unwrap_or("killed"))
            }
            EndedBy::Payload | EndedBy::PayloadSignal => {
                format!("the payload {}", payload.as_deref().unwrap_or("ended"))
            }
            EndedBy::RelayedHandled => format!(
                "snug relayed {} and the payload {} within the grace",
                self.first_signal(),
                payload.as_deref().unwrap_or("ended")
            ),
            EndedBy::GraceExpired => format!(
                "snug relayed {}; the payload did not end within the grace, so snug tore the sandbox down",
                self.first_signal()
            ),
            EndedBy::SecondSignal => "a second signal during the grace tore the sandbox down".into(),
            EndedBy::ForceQuit => "a second ^C that reached no handler tore the sandbox down".into(),
            EndedBy::Timeout => {
                let t = self.timeout.map(seconds).unwrap_or_default();
                let then = payload.map(|p| format!(" (the payload then {p})")).unwrap_or_default();
                format!("the timeout ({t}) ended the run{then}: exit 124")
            }
            EndedBy::Stop => match self.end_note() {
                Some(note) => format!("snug stop ended the run: {note}"),
                None => "snug stop ended the run".into(),
            },
            EndedBy::SnugError => {
                let code = match outcome {
                    Outcome::Fail(e) => format!(" (exit {})", crate::error::code_of(e)),
                    _ => String::new(),
                };
                format!("snug failed{code}: {}", self.error.as_deref().unwrap_or("see its stderr"))
            }
        };
        if let Some(u) = &self.context.usage {
            if u.oom_kills.is_some_and(|n| n > 0) {
                let bound = self.context.bounds.and_then(|(_, m)| m).map(|m| format!(" of {} MiB", m >> 20));
                line.push_str(&format!(
                    "; the sandbox hit its memory bound{} and the kernel's OOM killer killed {} process(es)",
                    bound.unwrap_or_default(),
                    u.oom_kills.unwrap_or(0)
                ));
            }
            if let Some(n) = u.refused_forks.filter(|n| *n > 0) {
                let bound = self.context.bounds.map(|(p, _)| format!(" of {p}")).unwrap_or_default();
                line.push_str(&format!("; {n} fork(s) were refused at the process bound{bound}"));
            }
        }
        line
    }
}
