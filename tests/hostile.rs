//! Hostile payloads and odd input. Arguments of any bytes and count (R7), closed
//! descriptors (R2), signals through descriptors (X3), hostile profile files (P4), exit
//! categories (R4), bounds (K5) and grants (P7, P9), each as root and as the unprivileged user.

mod common;

#[path = "hostile/args.rs"]
mod args;
#[path = "hostile/bounds.rs"]
mod bounds;
#[path = "hostile/exit_codes.rs"]
mod exit_codes;
#[path = "hostile/fown.rs"]
mod fown;
#[path = "hostile/freeze.rs"]
mod freeze;
#[path = "hostile/grants.rs"]
mod grants;
#[path = "hostile/limits.rs"]
mod limits;
#[path = "hostile/profiles.rs"]
mod profiles;
#[path = "hostile/protect.rs"]
mod protect;
#[path = "hostile/setid.rs"]
mod setid;
#[path = "hostile/userns.rs"]
mod userns;
