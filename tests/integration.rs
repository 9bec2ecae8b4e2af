//! The integration tests, one binary with a module per concern: each test binary is a
//! fat-LTO link in the release profile `make test` builds with, and one link instead of one
//! per concern builds them in a third of the time. Every row runs the real snug
//! binary (the one `SNUG_UNDER_TEST` names, else cargo's), real bwrap and real processes, as
//! root and as the unprivileged user. One concern:
//! `cargo test --release --test integration -- relay::`.
//!
//! All modules share one process: nothing here changes the test process's own state (its
//! signal mask and dispositions, cwd, umask, environment, session); what a test needs
//! changed it changes in a child, between fork and exec (`common::prelude`) or in a script.
//! Names that must not meet another test's (network namespaces, markers) carry the pid and a
//! per-row number, unique within the process.

mod common;
mod pty;

mod conventions;
mod cow;
mod everyday;
mod getting_started;
mod hostile;
mod live;
mod net;
mod net_allow;
mod own_terminal;
mod relay;
mod report;
mod run_basics;
mod signals_all;
mod terminal;
mod terminal_caller;
mod topology;
mod topology_kill;
