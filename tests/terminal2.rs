//! Terminal mode, second round (SPEC T3 revised, T4, T10–T13; issue 10): the terminal stays
//! the caller's. Driven through real pseudo-terminals (tests/pty) with an interactive bash as
//! the caller, or with snug itself as the session's leader (tests/pty/leader.rs); every row
//! as root and as the test user, in parallel threads.
//!
//! Positive controls: each test's comment says what it observed against today's build
//! (`main@76434d3`, before issue 10), which fails the rows this round adds; where a launcher
//! without the property shows the failure in-test (plain bwrap, no launcher), that control
//! runs next to the row, as root. Rows that already hold on main are marked as regression
//! guards.
//!
//! The rows: terminal2/steal.rs and terminal2/steal_tty.rs (T11), terminal2/hangup.rs (T10,
//! T4), terminal2/detached.rs (T12 at a terminal), terminal2/repl.rs (T3),
//! terminal2/pagers.rs (T13). This file holds what they share.

mod common;
#[path = "terminal2/detached.rs"]
mod detached;
#[path = "terminal2/hangup.rs"]
mod hangup;
#[path = "terminal2/pagers.rs"]
mod pagers;
mod pty;
#[path = "terminal2/repl.rs"]
mod repl;
#[path = "terminal2/review.rs"]
mod review;
#[path = "terminal2/steal.rs"]
mod steal;
#[path = "terminal2/steal_tty.rs"]
mod steal_tty;

pub use pty::rows::{bwrap_line, caller, parallel, pids_starting, snug_line, the_pid};
