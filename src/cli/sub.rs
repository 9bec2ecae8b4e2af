//! snug's subcommands as clap defines them (SPEC O2, O3, O7, P6, L1–L3, W3, W4); what each
//! becomes is [`super::Command`].

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Subcommand;

use super::cow;

#[derive(Subcommand, Debug)]
pub(super) enum Sub {
    /// Check that this host can run snug
    Doctor,
    /// List or show profiles
    Profile {
        #[command(subcommand)]
        what: ProfileSub,
    },
    /// Allow DIR's .snug.toml as it is now (its SHA-256 is recorded); --revoke forgets it
    Allow {
        /// The project directory [default: .]
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Forget the allowance
        #[arg(long)]
        revoke: bool,
    },
    /// Print the completion script for SHELL (bash, zsh, fish)
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
    /// Print the manual page snug(1) in roff, or write every snug page into DIR
    Manpage {
        /// Write snug.1, snug-ps.1, ... into DIR instead
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// List your live sandboxes (root: everyone's)
    Ps {
        /// One JSON array
        #[arg(long)]
        json: bool,
        #[arg(long, hide = true)]
        names: bool,
    },
    /// Stop a live sandbox as `kill -TERM` of its snug would, and wait until it is gone
    Stop {
        /// The sandbox's name (see snug ps)
        name: String,
        /// Tear down at once instead of TERM and the 1.0 s grace
        #[arg(long)]
        now: bool,
    },
    /// Send a signal to a live sandbox, as if sent to its snug
    Signal {
        /// The sandbox's name (see snug ps)
        name: String,
        /// TERM, SIGUSR1, 15, RTMIN+2, ...
        sig: String,
    },
    /// Run a command inside a live sandbox
    Exec {
        /// The sandbox's name (see snug ps)
        name: String,
        /// The command [default: $SHELL, else /bin/sh]
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD", value_parser = clap::builder::OsStringValueParser::new())]
        cmd: Vec<OsString>,
    },
    #[command(flatten)]
    Cow(cow::CowSub),
}

#[derive(Subcommand, Debug)]
pub(super) enum ProfileSub {
    /// List builtin and user profiles
    List {
        #[arg(long, hide = true)]
        names: bool,
    },
    /// Show one profile as written
    Show {
        /// Profile name (@builtin or a user profile)
        name: String,
    },
}
