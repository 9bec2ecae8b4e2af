//! The copy-on-write parts of the command line (SPEC W1–W4): `--cow`, and `snug diff`,
//! `snug apply`, `snug discard` on the changes a `--cow` run kept aside.

use std::path::PathBuf;

use clap::Subcommand;

/// The subcommands' words: a DIR spelt so must be written with a path (`./diff`).
pub(super) const WORDS: [&str; 3] = ["diff", "apply", "discard"];

/// `--cow`, flattened into the run's options.
#[derive(clap::Args, Debug)]
pub(super) struct CowFlag {
    /// Keep the payload's changes to DIR aside (see snug diff, apply, discard); DIR itself is
    /// not written during the run
    #[arg(long)]
    pub(super) cow: bool,
}

/// What `snug diff|apply|discard` asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CowCommand {
    /// `snug diff`: the kept runs, with DIR, time and counts.
    List,
    /// `snug diff --names`: the kept runs' names, one a line (for completion).
    Names,
    /// `snug diff NAME [--stat] [PATH...]`.
    Diff {
        /// The kept run's name.
        name: String,
        /// One line per change instead of the contents.
        stat: bool,
        /// Only these paths (relative to DIR) and what lies below them.
        paths: Vec<PathBuf>,
    },
    /// `snug apply NAME [PATH...] [--partial] [--force] [--unprotect PATH]`.
    Apply {
        /// The kept run's name.
        name: String,
        /// Only these paths and what lies below them.
        paths: Vec<PathBuf>,
        /// Apply what does not conflict when something does.
        partial: bool,
        /// Apply over host files changed since the run started.
        force: bool,
        /// Protected paths (.git/hooks, .envrc, ...) that may be written.
        unprotect: Vec<PathBuf>,
    },
    /// `snug discard NAME`.
    Discard {
        /// The kept run's name.
        name: String,
    },
}

/// The subcommands, flattened into snug's own.
#[derive(Subcommand, Debug)]
pub(super) enum CowSub {
    /// Show what a --cow run kept aside; without NAME, list the kept runs
    Diff {
        /// The kept run (see snug diff)
        name: Option<String>,
        /// One line per change: kind and path
        #[arg(long)]
        stat: bool,
        /// Only these paths, relative to DIR
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        #[arg(long, hide = true)]
        names: bool,
    },
    /// Write what a --cow run kept aside into its DIR, then forget it
    Apply {
        /// The kept run (see snug diff)
        name: String,
        /// Only these paths, relative to DIR
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Apply what does not conflict even when something does
        #[arg(long)]
        partial: bool,
        /// Apply over files changed on the host since the run started
        #[arg(long)]
        force: bool,
        /// Let apply write this protected path (.git/hooks, .envrc, ...); repeatable
        #[arg(long, value_name = "PATH")]
        unprotect: Vec<PathBuf>,
    },
    /// Forget what a --cow run kept aside
    Discard {
        /// The kept run (see snug diff)
        name: String,
    },
}

impl CowSub {
    /// The command it asks for.
    pub(super) fn command(self) -> CowCommand {
        match self {
            CowSub::Diff { names: true, .. } => CowCommand::Names,
            CowSub::Diff { name: None, .. } => CowCommand::List,
            CowSub::Diff { name: Some(name), stat, paths, .. } => CowCommand::Diff { name, stat, paths },
            CowSub::Apply { name, paths, partial, force, unprotect } => {
                CowCommand::Apply { name, paths, partial, force, unprotect }
            }
            CowSub::Discard { name } => CowCommand::Discard { name },
        }
    }
}
