//! snug: run an untrusted payload under bubblewrap and own what happens when someone wants
//! it to stop. Reads top-down: parse → policy → bwrap command line → start → supervise → end.

mod bwrap;
mod cli;
mod doctor;
mod dryrun;
mod error;
mod mode;
mod policy;
mod profiles;

fn main() {}
