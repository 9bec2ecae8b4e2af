//! The sandbox's own network (SPEC N5–N7), as pure decisions: which names, addresses and
//! ports `--net-allow` patterns allow ([`pattern`]), which private address stands for which
//! allowed name ([`pool`]), which resolved addresses a connection may go on to ([`check`]),
//! what each decision was, counted for the end of the run ([`decision`]), and which attempt a
//! refusal the kernel made on a port nobody serves answers ([`unserved`]).

pub mod check;
pub mod decision;
pub mod pattern;
pub mod pool;
pub mod unserved;

pub use decision::{Decision, Reason, Tally, Verdict};
pub use pattern::{Allowed, Pattern, PatternError};
pub use pool::Pool;
