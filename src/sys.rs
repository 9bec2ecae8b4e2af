//! The system seam: the fixed descriptor numbers, the frame a start-up child writes to its
//! error pipe (the core's, [`snug_core::wire`]), packets with descriptors over socket pairs,
//! the one way it starts a child that must stay
//! async-signal-safe, and the raw calls rustix has no safe form for, each behind a safe
//! function with its `// SAFETY:` reason. Outside this module `unsafe` appears only where a
//! child between clone and exec runs (`signal-safety(7)`): [`process::clone3`] and its child
//! bodies in `start`, `net::pasta`, `net::dad`, `keeper`, `doctor` and init's spawn.
//!
//! `nestproc` and `sigseal` are libraries with their own raw calls; they know nothing of snug.

pub mod codec;
pub mod cpu;
pub mod deferred;
pub mod fd;
pub mod fds;
pub mod packet;
pub mod poll;
pub mod process;
pub mod signal;
