//! The system seam: the fixed descriptor numbers, the encoding of every small message snug
//! passes between its processes, and the raw calls, each behind a safe function. Outside
//! this module `unsafe` appears only in fork→exec child bodies (`signal-safety(7)`).

pub mod codec;
pub mod errno;
pub mod fd;
pub mod fds;
pub mod poll;
pub mod process;
pub mod signal;
