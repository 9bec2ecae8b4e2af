//! snug's own failures and the exit codes SPEC R4 gives them (sysexits(3) values).

pub mod refusal;

use std::fmt;

/// Command line misuse (SPEC R4).
pub const USAGE: i32 = 64;
/// A host capability is missing: bwrap, user namespaces, pasta (SPEC R4).
pub const UNAVAILABLE: i32 = 69;
/// An internal error of snug (SPEC R4).
pub const INTERNAL: i32 = 70;
/// An operating-system error at run time: fork or descriptors refused, a directory that
/// cannot be entered (SPEC R4; `EX_OSERR` of sysexits(3)).
pub const OS_ERROR: i32 = 71;
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

/// Turn off the backtrace `anyhow` captures with each error when `RUST_BACKTRACE=1` (or
/// `RUST_LIB_BACKTRACE=1`) is set, as it is in many a Rust developer's shell: snug prints one
/// line per failure and never a backtrace, and each capture walks the stack (an error per
/// profile of a 20,000-deep include chain made `snug profile list` take 6–8 s instead of
/// 1.6–1.9 s here). std reads the variables once and keeps the answer (`std::backtrace`),
/// so the caller's environment is given back as it was; panics keep their backtraces
/// (`RUST_BACKTRACE`). Call first, before any thread exists (`set_var` is not thread-safe).
pub fn no_backtraces() {
    const VAR: &str = "RUST_LIB_BACKTRACE";
    let before = std::env::var_os(VAR);
    std::env::set_var(VAR, "0");
    let _ = std::backtrace::Backtrace::capture(); // std decides here, and keeps it
    match before {
        Some(v) => std::env::set_var(VAR, v),
        None => std::env::remove_var(VAR),
    }
}

/// A failure that carries the exit code snug must end with; its message is printed as
/// one line `snug: <message>`. Any other error reaching `main` exits [`INTERNAL`].
#[derive(Debug, Clone)]
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

/// The exit code for an error that reached `main`: a [`Failure`]'s own, [`OS_ERROR`] when
/// the system refused a resource ([`errno_code`]), else [`INTERNAL`].
pub fn code_of(err: &anyhow::Error) -> i32 {
    if let Some(f) = err.downcast_ref::<Failure>() {
        return f.code;
    }
    let errno = err.chain().find_map(|e| e.downcast_ref::<std::io::Error>()?.raw_os_error());
    errno.map_or(INTERNAL, |e| errno_code(e, INTERNAL))
}

/// [`OS_ERROR`] for an `errno` that means the system refused a resource at run time
/// (descriptors, processes, memory: EMFILE, ENFILE, EAGAIN, ENOMEM), else `otherwise`
/// (SPEC R4).
pub fn errno_code(errno: i32, otherwise: i32) -> i32 {
    match errno {
        libc::EMFILE | libc::ENFILE | libc::EAGAIN | libc::ENOMEM => OS_ERROR,
        _ => otherwise,
    }
}

/// The exit code for bwrap's (or pasta's) last error line, from its parsed cause
/// ([`refusal::Refusal`]): [`OS_ERROR`] for a run-time refusal (a directory it
/// cannot enter, descriptors or processes refused), else [`UNAVAILABLE`] (a namespace, mount
/// or other host feature it could not get).
pub fn bwrap_code(line: &str) -> i32 {
    refusal::Refusal::parse(line).code(false)
}

/// The exit code for bwrap's last error line before the sandbox started: [`POLICY`] when
/// the policy's own mounts do not fit the host or each other (a path it binds or mounts
/// over is missing: `--tmpfs /lib` hides init, a read-only `/etc` grant leaves no room for
/// `/etc/localtime`), else as [`bwrap_code`]. 69 is for a missing host capability only (R4).
pub fn bwrap_setup_code(line: &str) -> i32 {
    refusal::Refusal::parse(line).code(true)
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

/// An I/O error's text without Rust's ` (os error N)` suffix, lower-case when it is the
/// C library's text: for one-line messages.
pub fn io_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(errno) => strerror(errno),
        None => e.to_string(),
    }
}
