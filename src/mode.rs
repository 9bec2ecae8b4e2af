//! Terminal or detached mode, decided once before the fork from snug's own state (SPEC T, D).

use serde::Serialize;

/// How the sandbox relates to the terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// fd 0 is snug's controlling terminal: the sandbox keeps the session and gets its own
    /// process group; `foreground` says whether snug's group held the terminal's foreground
    /// at start, so the sandbox group takes it (SPEC T1, T8).
    Terminal {
        /// snug's process group was the terminal's foreground group (tcgetpgrp(3)).
        foreground: bool,
    },
    /// fd 0 is not snug's controlling terminal: the sandbox runs in its own session (SPEC D1).
    Detached,
}

impl Mode {
    /// Look at fd 0: it is snug's controlling terminal when tcgetsid(3) on it names snug's
    /// own session (a terminal that is some other session's gives no job control to snug).
    pub fn detect() -> Mode {
        use rustix::{process, stdio::stdin, termios};
        match (termios::tcgetsid(stdin()), process::getsid(None)) {
            (Ok(tty), Ok(own)) if tty == own => {
                Mode::Terminal { foreground: termios::tcgetpgrp(stdin()).ok() == Some(process::getpgrp()) }
            }
            _ => Mode::Detached,
        }
    }

    /// One line for `--dry-run` and `-v`: the mode and why.
    pub fn describe(&self) -> &'static str {
        match self {
            Mode::Terminal { foreground: true } => {
                "terminal (fd 0 is snug's controlling terminal; the sandbox takes the foreground)"
            }
            Mode::Terminal { foreground: false } => {
                "terminal (fd 0 is snug's controlling terminal; started in the background)"
            }
            Mode::Detached => "detached (fd 0 is not snug's controlling terminal; own session)",
        }
    }

    /// The word used on init's command line and in `--json`.
    pub fn word(&self) -> &'static str {
        match self {
            Mode::Terminal { foreground: true } => "terminal-fg",
            Mode::Terminal { foreground: false } => "terminal-bg",
            Mode::Detached => "detached",
        }
    }
}
