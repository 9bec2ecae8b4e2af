//! `snug exec NAME [--] CMD…` (SPEC L3): the client side.

use crate::supervise::Outcome;
use std::ffi::OsString;

/// Run CMD in the live sandbox `name`.
///
/// # Errors
/// Not yet.
pub fn run(_name: &str, _cmd: &[OsString]) -> anyhow::Result<Outcome> {
    Err(crate::error::failure(crate::error::INTERNAL, "exec: not yet"))
}
