//! snug's own failures and the exit codes SPEC R4 gives them (sysexits(3) values).

use std::fmt;

/// Command line misuse (SPEC R4).
pub const USAGE: i32 = 64;
/// A host capability is missing: bwrap, user namespaces, pasta (SPEC R4).
pub const UNAVAILABLE: i32 = 69;
/// An internal error of snug (SPEC R4).
pub const INTERNAL: i32 = 70;
/// The `--report` destination cannot be written (SPEC R4, O5; sysexits' EX_IOERR).
pub const REPORT: i32 = 74;
/// A policy error: unknown profile, bad profile file, conflict (SPEC R4).
pub const POLICY: i32 = 77;
/// The run ended by `--timeout` (SPEC O6), as timeout(1) exits.
pub const TIMED_OUT: i32 = 124;
/// CMD was found but cannot be executed (SPEC R4, as sh(1) does).
pub const NOT_EXECUTABLE: i32 = 126;
/// CMD was not found (SPEC R4, as sh(1) does).
pub const NOT_FOUND: i32 = 127;

/// A failure that carries the exit code snug must end with; its message is printed as
/// one line `snug: <message>`. Any other error reaching `main` exits [`INTERNAL`].
#[derive(Debug)]
pub struct Failure {
    /// Exit code, one of the constants of this module.
    pub code: i32,
    /// One line, without the `snug: ` prefix.
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Build an [`anyhow::Error`] that ends snug with `code`.
pub fn failure(code: i32, message: impl Into<String>) -> anyhow::Error {
    Failure { code, message: message.into() }.into()
}

/// The exit code for an error that reached `main`.
pub fn code_of(err: &anyhow::Error) -> i32 {
    err.downcast_ref::<Failure>().map_or(INTERNAL, |f| f.code)
}

/// The error as one line: causes joined with `: `, newlines folded (SPEC R4).
pub fn one_line(err: &anyhow::Error) -> String {
    let text = match err.downcast_ref::<Failure>() {
        Some(f) => f.message.clone(),
        None => format!("{err:#}"),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The C library's text for `errno`, lower-case and without Rust's ` (os error N)` suffix.
pub fn strerror(errno: i32) -> String {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    text.to_lowercase()
}
