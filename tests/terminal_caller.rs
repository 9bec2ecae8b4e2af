//! The terminal stays the caller's (SPEC T3, T4, T10–T13): nothing in the sandbox reads or
//! changes it, a hangup ends the run, pagers and REPLs keep their keys, job control works in
//! every topology. Driven through real pseudo-terminals (tests/pty) with an interactive bash
//! as the caller, or with snug itself as the session's leader (tests/pty/leader.rs); every row
//! as root and as the test user, in parallel threads.
//!
//! Positive controls: each test's comment says what it saw without the fix; where a launcher
//! without the property shows the failure in-test (plain bwrap, no launcher), that control
//! runs next to the row, as root. Rows that held before they were written down are marked as
//! regression guards.
//!
//! The rows: terminal_caller/steal.rs, steal_tty.rs and own_pty.rs (T11), hangup.rs (T10,
//! T4), detached.rs (T12 at a terminal), repl.rs (T3), pagers.rs (T13), job_control.rs (T1,
//! T5, T12, R3 at the caller's terminal). This file holds what they share.

use crate::pty;

mod detached;
mod hangup;
mod job_control;
mod own_pty;
mod pagers;
mod repl;
mod steal;
mod steal_tty;

pub use pty::rows::{bwrap_line, caller, parallel, pids_starting, snug_line, the_pid};
