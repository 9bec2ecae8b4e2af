//! The report's `network` section (SPEC N7, O5): every decision of a network of snug's own,
//! counted per subject: name or connection, allowed or refused and why, how often, bytes
//! each way. Absent (null) without `--net-allow`.

use serde::Serialize;
use snug_core::net_allow::Tally;

/// The section as serialised.
#[derive(Serialize)]
pub struct NetworkOut {
    /// How many refusals in all.
    refused: u64,
    /// One entry per (subject, verdict), refused ones first.
    decisions: Vec<Entry>,
    /// Decisions counted only, past the bound on distinct subjects.
    others: u64,
}

#[derive(Serialize)]
struct Entry {
    subject: String,
    allowed: bool,
    reason: Option<&'static str>,
    count: u64,
    bytes_out: u64,
    bytes_in: u64,
}

/// The section for `t`.
pub fn section(t: &Tally) -> NetworkOut {
    let mut decisions: Vec<Entry> = t
        .entries
        .iter()
        .map(|((subject, reason), &(count, bytes_out, bytes_in))| Entry {
            subject: subject.clone(),
            allowed: reason.is_none(),
            reason: reason.map(|r| r.words()),
            count,
            bytes_out,
            bytes_in,
        })
        .collect();
    decisions.sort_by_key(|e| e.allowed);
    NetworkOut { refused: t.refusals(), decisions, others: t.others }
}
