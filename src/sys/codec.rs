//! The one encoding of every small message between snug's own processes is
//! [`snug_core::wire`]'s frame: a tag byte, then an i32 little-endian. Besides the links'
//! messages it carries the error a start-up child writes to its error pipe before
//! `execve(2)`: pure and allocation-free, so a child between fork and exec may encode
//! (`signal-safety(7)`).

pub use snug_core::wire::{frame as encode, unframe as decode};
