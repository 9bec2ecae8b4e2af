//! Relay and grace (SPEC G1–G6, D1, S2, O4), in detached mode (stdin /dev/null), each
//! row as root and as the unprivileged user, each with a positive control: the same scenario
//! under a launcher known to lack the property (plain bwrap, a naive relay, snug without the
//! trigger), asserting that the failure is observed, so a test that can no longer fail is
//! noticed on every run.
//!
//! Timing bounds are SPEC's with a margin (2 cores, tests in parallel); the measured numbers
//! are printed (`cargo test --test integration -- relay:: --nocapture`).
//!
//! Split by concern: `kit` (running snug or a control, payloads), `grace` (G2–G5, O4),
//! `delivery` (G1, G6, S2, D1).

mod delivery;
mod grace;
pub(crate) mod kit;
mod stopped;
