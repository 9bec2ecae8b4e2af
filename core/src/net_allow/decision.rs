//! Every decision of the sandbox's own network (SPEC N7), as a record the binary can log
//! under `-v`, put in the report and emit as an event, and the tally of refusals that
//! becomes one stderr line at the end of the run.

use std::collections::BTreeMap;
use std::fmt;

/// Why something was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// A DNS question for a name no pattern allows (answered NXDOMAIN).
    NameNotAllowed,
    /// A connection to an allowed name at a port its patterns do not allow.
    PortNotAllowed,
    /// A connection to an address no pattern names (an IP literal, a stale pool address).
    AddressNotAllowed,
    /// The name resolved (on the host side) to a loopback address (N6).
    Loopback,
    /// The name resolved to a link-local address (N6).
    LinkLocal,
    /// The name resolved to a cloud metadata address (N6).
    Metadata,
    /// The name resolved to one of the host's own addresses (N6).
    HostOwn,
    /// The name did not resolve on the host side.
    NoAddress,
    /// The host side refused or could not be reached.
    Unreachable,
    /// UDP other than DNS.
    Udp,
    /// More than 1024 connections open at once (N5).
    TooManyConnections,
    /// More than 65,536 names asked in the run (N5; answered SERVFAIL).
    TooManyNames,
}

impl Reason {
    /// The words the summary line, the report and `-v` use.
    pub fn words(self) -> &'static str {
        match self {
            Reason::NameNotAllowed => "name not allowed",
            Reason::PortNotAllowed => "port not allowed",
            Reason::AddressNotAllowed => "address not allowed",
            Reason::Loopback => "resolves to loopback",
            Reason::LinkLocal => "resolves to a link-local address",
            Reason::Metadata => "resolves to a metadata address",
            Reason::HostOwn => "resolves to the host's own address",
            Reason::NoAddress => "does not resolve",
            Reason::Unreachable => "unreachable",
            Reason::Udp => "UDP not allowed",
            Reason::TooManyConnections => "more than 1024 connections at once",
            Reason::TooManyNames => "more than 65536 names",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// What was decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed: a name answered, or a connection made.
    Allowed,
    /// Refused, and why.
    Refused(Reason),
}

/// One decision: a DNS question (`port` 0) or a connection (`subject` is `NAME:PORT` or
/// `ADDR:PORT`), with the address it went to on the host side and the bytes copied each
/// way once it closed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// `dns` for a question, `tcp` or `udp` for a connection.
    pub kind: &'static str,
    /// The name, or `NAME:PORT`, `ADDR:PORT`, `[ADDR]:PORT`.
    pub subject: String,
    /// The host-side address connected to, when one was.
    pub upstream: Option<String>,
    /// What was decided.
    pub verdict: Verdict,
    /// Bytes from the payload to the host, once the connection closed.
    pub sent: u64,
    /// Bytes from the host to the payload, once the connection closed.
    pub received: u64,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.subject)?;
        if let Some(u) = &self.upstream {
            write!(f, " via {u}")?;
        }
        match &self.verdict {
            Verdict::Allowed => write!(f, ": allowed")?,
            Verdict::Refused(r) => write!(f, ": refused ({r})")?,
        }
        if self.sent != 0 || self.received != 0 {
            write!(f, ", {} bytes out, {} in", self.sent, self.received)?;
        }
        Ok(())
    }
}

/// Counts of what was decided, per subject: the report's network section and the line at
/// the end. Bounded: past [`Tally::MAX_SUBJECTS`] distinct allowed subjects, and as many
/// refused ones, further ones are counted under `others` (so many allowed names never crowd
/// a refusal out).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// (subject, refusal reason or `None` for allowed) → (count, bytes out, bytes in).
    pub entries: BTreeMap<(String, Option<Reason>), (u64, u64, u64)>,
    /// Entries folded into `others` once the map was full.
    pub others: u64,
    /// Distinct refused subjects kept.
    refused_kept: usize,
}

impl Tally {
    /// Distinct (subject, verdict) pairs kept; the rest are counted only.
    pub const MAX_SUBJECTS: usize = 1024;

    /// Count `d`.
    pub fn add(&mut self, d: &Decision) {
        let reason = match d.verdict {
            Verdict::Allowed => None,
            Verdict::Refused(r) => Some(r),
        };
        let key = (d.subject.clone(), reason);
        if !self.entries.contains_key(&key) {
            let kept = if reason.is_some() { self.refused_kept } else { self.entries.len() - self.refused_kept };
            if kept >= Self::MAX_SUBJECTS {
                self.others += 1;
                return;
            }
            self.refused_kept += usize::from(reason.is_some());
        }
        let e = self.entries.entry(key).or_default();
        e.0 += 1;
        e.1 += d.sent;
        e.2 += d.received;
    }

    /// How many refusals in all.
    pub fn refusals(&self) -> u64 {
        self.entries.iter().filter(|((_, r), _)| r.is_some()).map(|(_, c)| c.0).sum()
    }

    /// The stderr line at the end (without `snug: `), when anything was refused: each refused
    /// subject once with its count, the most frequent first.
    pub fn line(&self) -> Option<String> {
        let mut refused: Vec<(&str, Reason, u64)> =
            self.entries.iter().filter_map(|((s, r), c)| r.map(|r| (s.as_str(), r, c.0))).collect();
        if refused.is_empty() {
            return None;
        }
        refused.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
        let total: u64 = refused.iter().map(|r| r.2).sum();
        const SHOWN: usize = 10;
        let mut parts: Vec<String> = refused
            .iter()
            .take(SHOWN)
            .map(|(s, r, n)| if *n > 1 { format!("{s} ({r}) ×{n}") } else { format!("{s} ({r})") })
            .collect();
        if refused.len() > SHOWN {
            parts.push(format!("{} more in the report", refused.len() - SHOWN));
        }
        let noun = if total == 1 { "connection or name" } else { "connections and names" };
        Some(format!("refused {total} {noun}: {}; --net-allow NAME allows one", parts.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(subject: &str, verdict: Verdict) -> Decision {
        Decision { kind: "tcp", subject: subject.into(), upstream: None, verdict, sent: 0, received: 0 }
    }

    #[test]
    fn n7_each_refusal_once_with_its_count() {
        let mut t = Tally::default();
        t.add(&d("pkgs.example", Verdict::Refused(Reason::NameNotAllowed)));
        t.add(&d("203.0.113.7:443", Verdict::Refused(Reason::AddressNotAllowed)));
        t.add(&d("pkgs.example", Verdict::Refused(Reason::NameNotAllowed)));
        t.add(&d("ok.example:443", Verdict::Allowed));
        assert_eq!(t.refusals(), 3);
        assert_eq!(
            t.line().unwrap(),
            "refused 3 connections and names: pkgs.example (name not allowed) ×2, \
             203.0.113.7:443 (address not allowed); --net-allow NAME allows one"
        );
        let mut quiet = Tally::default();
        quiet.add(&d("ok.example:443", Verdict::Allowed));
        assert_eq!(quiet.line(), None);
    }

    #[test]
    fn n7_tally_is_bounded() {
        let mut t = Tally::default();
        for i in 0..Tally::MAX_SUBJECTS + 10 {
            t.add(&d(&format!("n{i}.example"), Verdict::Refused(Reason::NameNotAllowed)));
        }
        assert_eq!(t.entries.len(), Tally::MAX_SUBJECTS);
        assert_eq!(t.others, 10);
        for i in 0..Tally::MAX_SUBJECTS + 10 {
            t.add(&d(&format!("a{i}.example"), Verdict::Allowed));
        }
        t.add(&d("n0.example", Verdict::Refused(Reason::NameNotAllowed)));
        assert_eq!(t.entries.len(), 2 * Tally::MAX_SUBJECTS);
        assert_eq!(t.others, 20);
        assert_eq!(t.refusals(), Tally::MAX_SUBJECTS as u64 + 1);
    }

    #[test]
    fn n7_a_decision_reads_as_one_line() {
        let mut x = Decision {
            kind: "tcp",
            subject: "a.example:443".into(),
            upstream: Some("203.0.113.5:443".into()),
            verdict: Verdict::Allowed,
            sent: 5,
            received: 0,
        };
        assert_eq!(x.to_string(), "tcp a.example:443 via 203.0.113.5:443: allowed, 5 bytes out, 0 in");
        x.sent = 0;
        x.received = 7;
        assert_eq!(x.to_string(), "tcp a.example:443 via 203.0.113.5:443: allowed, 0 bytes out, 7 in");
        x.sent = 3;
        assert_eq!(x.to_string(), "tcp a.example:443 via 203.0.113.5:443: allowed, 3 bytes out, 7 in");
        let q = Decision {
            kind: "dns",
            subject: "x.example".into(),
            upstream: None,
            verdict: Verdict::Refused(Reason::NameNotAllowed),
            sent: 0,
            received: 0,
        };
        assert_eq!(q.to_string(), "dns x.example: refused (name not allowed)");
    }

    #[test]
    fn n7_tally_adds_the_bytes_each_way() {
        let mut t = Tally::default();
        let mut x = d("a.example:443", Verdict::Allowed);
        x.sent = 5;
        x.received = 7;
        t.add(&x);
        x.sent = 2;
        x.received = 3;
        t.add(&x);
        assert_eq!(t.entries[&("a.example:443".to_string(), None)], (2, 7, 10));
        assert_eq!(t.refusals(), 0);
    }

    #[test]
    fn n7_line_shows_ten_subjects_then_how_many_more() {
        let mut ten = Tally::default();
        for i in 0..10 {
            ten.add(&d(&format!("n{i}.example"), Verdict::Refused(Reason::NameNotAllowed)));
        }
        let line = ten.line().unwrap();
        assert!(line.starts_with("refused 10 connections and names: n0.example (name not allowed), "), "{line}");
        assert!(!line.contains("more in the report") && !line.contains('×'), "{line}");
        let mut twelve = ten.clone();
        twelve.add(&d("n10.example", Verdict::Refused(Reason::NameNotAllowed)));
        twelve.add(&d("n11.example", Verdict::Refused(Reason::NameNotAllowed)));
        let line = twelve.line().unwrap();
        assert!(line.ends_with(", 2 more in the report; --net-allow NAME allows one"), "{line}");
        let mut eleven = ten.clone();
        eleven.add(&d("n10.example", Verdict::Refused(Reason::NameNotAllowed)));
        assert!(eleven.line().unwrap().contains(", 1 more in the report;"));
        let mut one = Tally::default();
        one.add(&d("x.example", Verdict::Refused(Reason::Udp)));
        assert_eq!(
            one.line().unwrap(),
            "refused 1 connection or name: x.example (UDP not allowed); --net-allow NAME allows one"
        );
    }
}
