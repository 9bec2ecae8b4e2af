//! End: snug leaves as the payload did (SPEC R3): its exit code, or death by its signal.

use crate::log::log;
use snug_core::{Signal, WaitStatus};

/// How the run ended: what the supervisor found, for the functions below.
pub enum Outcome {
    /// The payload's wait status (`waitpid(2)`), or the one snug leaves with (`exit(N)`).
    Status(WaitStatus),
    /// snug dies of this signal (teardown after a grace, force-quit).
    Signal(Signal),
    /// snug's own failure.
    Fail(anyhow::Error),
}

/// Exit as a wait status (`waitpid(2)`) says: `exit(N)` for an exit, [`die_of`] for a
/// signal.
pub fn as_status(status: WaitStatus) -> ! {
    let code = match status {
        WaitStatus::Signaled { sig, .. } => die_of(sig),
        WaitStatus::Exited(code) => code,
        WaitStatus::Stopped(_) | WaitStatus::Continued => crate::error::INTERNAL,
    };
    log!("snug exits {code}");
    std::process::exit(code)
}

/// Die of `sig` so the caller sees `WIFSIGNALED` (a shell's `$?` is 128+n and its `for`
/// loop stops on ^C): core dumps off (`setrlimit(2)` RLIMIT_CORE 0), `sig` back to `SIG_DFL`
/// and unblocked, then `kill(2)` ourselves; exit 128+n if that did not end us (SPEC R3).
pub fn die_of(sig: Signal) -> ! {
    use std::io::Write;
    log!("snug dies of {}", crate::signals::signame(sig));
    let _ = std::io::stdout().flush();
    use rustix::process::{setrlimit, Resource, Rlimit};
    let _ = setrlimit(Resource::Core, Rlimit { current: Some(0), maximum: Some(0) });
    crate::signals::default(sig);
    let _ = crate::signals::kill(std::process::id() as i32, sig);
    crate::signals::unblock(sig);
    std::process::exit(128 + sig.raw())
}

/// Print what a subcommand made, as its end. A reader that went away (`snug completions bash
/// | head -1`) ends snug as it ends `cat`: by SIGPIPE, quietly; any other failed write is 71
/// (R4).
///
/// # Errors
/// 71 naming the write's error.
pub fn printed(text: String) -> anyhow::Result<Outcome> {
    match crate::log::print(&text) {
        Ok(()) => Ok(Outcome::Status(WaitStatus::Exited(0))),
        Err(e) if e.raw_os_error() == Some(libc::EPIPE) => Ok(Outcome::Signal(Signal::PIPE)),
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            let why = crate::error::strerror(errno);
            Err(crate::error::failure(crate::error::OS_ERROR, format!("cannot write to stdout: {why}")))
        }
    }
}
