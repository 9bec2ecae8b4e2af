//! Terminal or detached mode, decided once before the fork from snug's own state (SPEC T, D1).

use crate::tty::CallerTty;
use serde::Serialize;

/// How the sandbox relates to the terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// snug has a controlling terminal: the sandbox gets a pty of its own (SPEC T1).
    Terminal {
        /// The hand-over is immediate: snug's job held the caller's foreground at start and
        /// both stdin and stdout are the caller's terminal, so the payload holds the pty's
        /// foreground from the start. Otherwise it is deferred until the payload reads its
        /// terminal or changes its settings (pipelines, redirections, `&`; T1, T13).
        immediate: bool,
    },
    /// snug has no controlling terminal: the sandbox runs in its own session (SPEC D1).
    Detached,
}

impl Mode {
    /// `open("/dev/tty")`: snug has a controlling terminal exactly when it opens (`tty(4)`),
    /// whatever fds 0–2 are. The terminal comes back open for the run.
    pub fn detect() -> (Mode, Option<CallerTty>) {
        let Some(tty) = CallerTty::open() else { return (Mode::Detached, None) };
        let both = tty.stdio_mask().in_and_out();
        (Mode::Terminal { immediate: both && tty.in_front() }, Some(tty))
    }

    /// One line for `--dry-run` and `-v`: the mode and why.
    pub fn describe(&self) -> &'static str {
        match self {
            Mode::Terminal { immediate: true } => {
                "terminal (snug has a controlling terminal; the payload gets a pty of its own, in front from the start)"
            }
            Mode::Terminal { immediate: false } => {
                "terminal (snug has a controlling terminal; the payload gets a pty of its own, handed over when it reads it)"
            }
            Mode::Detached => "detached (snug has no controlling terminal; own session)",
        }
    }

    /// The word used on init's command line and in `--json`.
    pub fn word(&self) -> &'static str {
        match self {
            Mode::Terminal { immediate: true } => "terminal-fg",
            Mode::Terminal { immediate: false } => "terminal-bg",
            Mode::Detached => "detached",
        }
    }
}
