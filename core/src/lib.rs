//! snug's decisions, without I/O: the supervisor's and init's state machines take events
//! and return effects, so every ordering row of the behaviour contract (docs/contract.md)
//! is decided in one place and can be unit-tested (and mutation-tested) without a sandbox.
//! The binary's poll loops decode events from the kernel, call `on`, and carry out the
//! effects ([`carry`], one shape for the three); they decide nothing.

pub mod carry;
pub mod exec_client;
pub mod init;
pub mod net_allow;
pub mod orders;
pub mod protect;
pub mod supervisor;
pub mod types;
pub mod wire;

pub use types::{Errno, Pid, Signal, WaitStatus};
