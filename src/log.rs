//! `-v`: one stderr line per event with milliseconds since snug started (SPEC O4).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

static VERBOSE: AtomicBool = AtomicBool::new(false);
static START: OnceLock<Instant> = OnceLock::new();

/// Turn logging on and fix time zero.
pub fn enable() {
    START.get_or_init(Instant::now);
    VERBOSE.store(true, Ordering::Relaxed);
}

/// Whether `-v` was given.
pub fn on() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// Write `snug: [<ms> ms] <what>` to stderr when `-v` is on. Milliseconds with three
/// decimals, from the monotonic clock.
pub fn event(what: std::fmt::Arguments<'_>) {
    if on() {
        let ms = START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0;
        say_line(format_args!("snug: [{ms:9.3} ms] {what}"));
    }
}

/// `log!(...)`: [`event`] with `format_args!`; arguments are not evaluated without `-v`.
macro_rules! log {
    ($($arg:tt)*) => {
        if $crate::log::on() {
            $crate::log::event(format_args!($($arg)*))
        }
    };
}
pub(crate) use log;

/// Write one line to stderr and ignore failure: a closed or broken stderr must neither abort
/// snug (`eprintln!` panics) nor change the payload's status. Control characters in it
/// (a name, a path, a command line, what another run answered) are escaped
/// ([`crate::quote::controls_escaped`]): a `snug: ` line never drives the terminal (SPEC R4).
pub fn say_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let text = line.to_string();
    let _ = writeln!(std::io::stderr(), "{}", crate::quote::controls_escaped(&text));
}

/// `say!(...)`: [`say_line`] with `format_args!`.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::log::say_line(format_args!($($arg)*))
    };
}
pub(crate) use say;

/// Write `text` to stdout, with a final newline. Unlike `print!`, a failed write (a full
/// disk, a closed pipe) is returned, not a panic.
///
/// # Errors
/// The write or flush error.
pub fn print(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    if text.is_empty() {
        return Ok(()); // nothing to say (`snug apply` says it on stderr): no empty line
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    out.flush()
}
