//! The command line (SPEC R1, P2, O1–O4): `snug [OPTIONS] [DIR] [-- CMD [ARG]...]`,
//! `snug doctor`, `snug profile list`, `snug profile show NAME`.
//!
//! A DIR spelt like a subcommand is reachable with a path (`snug ./doctor`): clap only
//! takes a bare word that equals a subcommand name as that subcommand.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{error::ErrorKind, Parser};

use crate::error::{failure, USAGE};

/// What snug was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Run CMD in a sandbox (or only show how, with `--dry-run`).
    Run(Box<RunArgs>),
    /// `snug doctor`: check the host (SPEC O2).
    Doctor,
    /// `snug profile list` (SPEC O3); `--names`: only the names, one a line, for completion.
    ProfileList {
        /// Only the names (hidden: for the completion scripts, SPEC O7).
        names: bool,
    },
    /// `snug profile show NAME` (SPEC O3).
    ProfileShow(String),
    /// `snug allow [DIR] [--revoke]`: allow DIR's `.snug.toml` as it is now (SPEC P6).
    Allow {
        /// DIR; `None`: the current directory.
        dir: Option<PathBuf>,
        /// Forget the allowance instead.
        revoke: bool,
    },
    /// `snug completions SHELL`: the shell completion script (SPEC O7).
    Completions(clap_complete::Shell),
    /// `snug manpage [--dir DIR]`: snug(1) in roff, or every page written into DIR (SPEC O7).
    Manpage {
        /// Where to write every page; `None`: print snug(1).
        dir: Option<PathBuf>,
    },
    /// `snug ps [--json]`: the caller's live sandboxes (SPEC L1).
    Ps {
        /// One JSON array instead of a table.
        json: bool,
        /// Only the names, one a line (hidden: for the completion scripts, SPEC O7).
        names: bool,
    },
    /// `snug stop NAME [--now]` (SPEC L2).
    Stop {
        /// The run's name.
        name: String,
        /// Tear down at once instead of TERM and the grace.
        now: bool,
    },
    /// `snug signal NAME SIG` (SPEC L2).
    Signal {
        /// The run's name.
        name: String,
        /// The signal.
        sig: snug_core::Signal,
    },
    /// `snug exec NAME [--] [CMD…]` (SPEC L3); an empty CMD means the shell.
    Exec {
        /// The run's name.
        name: String,
        /// CMD and its arguments.
        cmd: Vec<OsString>,
    },
    /// `snug diff|apply|discard` (SPEC W3, W4).
    Cow(cow::CowCommand),
}

/// Options of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunArgs {
    /// `-p NAME`, repeatable, in order.
    pub profiles: Vec<String>,
    /// `--no-defaults`: drop `@sys @home @cwd-rw @parent-ro`.
    pub no_defaults: bool,
    /// `-n/--dry-run`: print the plan, start nothing (SPEC O1).
    pub dry_run: bool,
    /// `--json` (only with `--dry-run`): the plan as one JSON object.
    pub json: bool,
    /// `-v/--verbose`: log signal events to stderr (SPEC O4).
    pub verbose: bool,
    /// DIR; `None` means the current directory.
    pub dir: Option<PathBuf>,
    /// `--max-procs N`: most processes the sandbox holds at once (SPEC K5).
    pub max_procs: Option<u64>,
    /// `--memory SIZE` in bytes (SPEC K5).
    pub memory: Option<u64>,
    /// CMD and its arguments, after `--`, as raw bytes (SPEC R7); empty means the default shell.
    pub cmd: Vec<OsString>,
    /// `--ro`, `--rw`, `--tmpfs`, `-e` (SPEC P5).
    pub grants: Grants,
    /// `--report PATH` or `--report fd:N` (SPEC O5).
    pub report: Option<ReportTo>,
    /// `--events PATH` or `--events fd:N` (SPEC O9).
    pub events: Option<ReportTo>,
    /// `--timeout DURATION` (SPEC O6); `None` also for a duration of 0, as timeout(1).
    pub timeout: Option<Duration>,
    /// `--name NAME` (SPEC L1); `None`: a generated one.
    pub name: Option<String>,
    /// `--jobs wait|grace|kill` (SPEC L4).
    pub jobs: snug_core::init::Jobs,
    /// `--no-project`: do not apply DIR's `.snug.toml` (SPEC P6).
    pub no_project: bool,
    /// `--allow-userns`: let the payload create user namespaces (SPEC X2).
    pub allow_userns: bool,
    /// `--cow`: DIR through a copy-on-write overlay (SPEC W1).
    pub cow: bool,
    /// `--net-allow PATTERN`, repeatable (SPEC N5).
    pub net_allow: Vec<String>,
    /// `--here` and `--events` ([`more::More`]).
    pub more: more::More,
}

pub use crate::policy::Grants;

pub use crate::report_sink::ReportTo;

impl RunArgs {
    /// The payload's argv (SPEC R1): CMD, else `$SHELL` when set and not empty, else
    /// `/bin/sh`.
    pub fn command(&self) -> Vec<OsString> {
        if !self.cmd.is_empty() {
            return self.cmd.clone();
        }
        let shell = std::env::var_os("SHELL").filter(|s| !s.is_empty());
        vec![shell.unwrap_or_else(|| "/bin/sh".into())]
    }

    /// No CMD was given: the payload is the caller's shell (its prompt names the run, O8).
    pub fn default_shell(&self) -> bool {
        self.cmd.is_empty()
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "snug",
    version = more::VERSION,
    about = "Run a command in a bubblewrap sandbox: DIR writable, the rest of the system read-only or hidden",
    override_usage = "snug [OPTIONS] [DIR] [-- CMD [ARG]...]\n       snug ps [--json]\n       snug stop NAME [--now]\n       snug signal NAME SIG\n       snug exec NAME [--] [CMD [ARG]...]\n       snug diff [NAME [--stat] [PATH]...]\n       snug apply NAME [PATH]...\n       snug discard NAME\n       snug doctor\n       snug profile list\n       snug profile show NAME\n       snug allow [--revoke] [DIR]\n       snug completions bash|zsh|fish\n       snug manpage",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    sub: Option<Sub>,
    /// Add profile NAME (repeatable); builtins start with @, others are NAME.toml files
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    profiles: Vec<String>,
    /// Do not use the default profiles @sys @home @cwd-rw @parent-ro
    #[arg(long)]
    no_defaults: bool,
    /// Do not apply DIR's .snug.toml (see snug allow)
    #[arg(long)]
    no_project: bool,
    /// Print the mode, the policy and the bwrap command line; start nothing
    #[arg(short = 'n', long)]
    dry_run: bool,
    /// With --dry-run: print one JSON object
    #[arg(long)]
    json: bool,
    /// Log signal events to stderr
    #[arg(short, long)]
    verbose: bool,
    /// Most processes the sandbox may hold at once [default: 4096]; at least 3 (bwrap and init
    /// count), at most 4194304, the kernel's PID_MAX_LIMIT, the largest `pids.max` takes
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(crate::bounds::MIN_MAX_PROCS..=4_194_304))]
    max_procs: Option<u64>,
    /// Most memory the sandbox may use, e.g. 512M, 2G (needs a cgroup snug can create)
    #[arg(long, value_name = "SIZE")]
    memory: Option<String>,
    /// Name this run for snug ps/stop/signal/exec [default: generated, e.g. sleep-3fa2]
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// When the main process exits, what is left is killed (kill), gets TERM and the grace (grace), or is waited for (wait)
    #[arg(long, value_name = "HOW", value_parser = ["kill", "wait", "grace"])]
    jobs: Option<String>,
    /// Let the payload create user namespaces (for payloads that sandbox in turn: bwrap,
    /// podman, browsers); a payload run as root can then mount filesystems and write what root owns
    #[arg(long)]
    allow_userns: bool,
    #[command(flatten)]
    cow: cow::CowFlag,
    /// A network of snug's own reaching only PATTERN (repeatable): NAME, *.NAME, ADDR or CIDR,
    /// each with :PORT or :PORT-PORT [default: 443 and 80]
    #[arg(long, value_name = "PATTERN")]
    net_allow: Vec<String>,
    #[command(flatten)]
    more: more::More,
    /// The writable directory [default: the project's root above, else .]
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The command to run [default: $SHELL, else /bin/sh]
    #[arg(last = true, value_name = "CMD", value_parser = clap::builder::OsStringValueParser::new())]
    cmd: Vec<OsString>,
    // Grants, report and timeout (SPEC P5, O5, O6), kept together.
    /// Also show PATH read-only (repeatable); relative paths start at the current directory
    #[arg(long = "ro", value_name = "PATH", help_heading = "Grants")]
    ro: Vec<String>,
    /// Also show PATH read-write (repeatable)
    #[arg(long = "rw", value_name = "PATH", help_heading = "Grants")]
    rw: Vec<String>,
    /// Put an empty private tmpfs at PATH (repeatable)
    #[arg(long = "tmpfs", value_name = "PATH", help_heading = "Grants")]
    tmpfs: Vec<String>,
    /// Pass NAME with the caller's value, or set NAME=VALUE (repeatable)
    #[arg(short = 'e', long = "env", value_name = "NAME[=VALUE]", help_heading = "Grants")]
    #[arg(value_parser = clap::value_parser!(std::ffi::OsString))]
    env: Vec<std::ffi::OsString>,
    #[command(flatten)]
    protect: unprotect::Unprotect,
    /// Write one JSON object saying how the run ended to PATH, or to descriptor N with fd:N
    #[arg(long, value_name = "PATH|fd:N", help_heading = "Runs under a harness")]
    report: Option<String>,
    /// At DURATION (90s, 10m, 1h30m, 0.5s) act as on a TERM, then exit 124; 0 means none
    #[arg(long, value_name = "DURATION", help_heading = "Runs under a harness")]
    timeout: Option<String>,
}

/// Words that name a subcommand; a DIR spelt so must be written with a path (`./doctor`).
const SUBCOMMANDS: [&str; 9] = ["doctor", "profile", "allow", "completions", "manpage", "ps", "stop", "signal", "exec"];

/// Parse snug's own command line. `--help` and `--version` print and exit 0 here.
///
/// # Errors
/// A [`USAGE`] failure (exit 64) with one line, never clap's multi-line text (SPEC R4).
pub fn parse() -> anyhow::Result<Command> {
    parse_from(std::env::args_os())
}

/// [`parse`] over `args` (the first one is the program name).
///
/// # Errors
/// As [`parse`].
pub fn parse_from<I, T>(args: I) -> anyhow::Result<Command>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            // Help and version are answers, not errors: print them and end with 0.
            let _ = e.print();
            std::process::exit(0);
        }
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // Only `snug profile` gets here; clap would print its whole help as the error.
            return Err(failure(USAGE, "profile needs a subcommand: list, or show NAME"));
        }
        Err(e) => {
            let line = crate::hints::missing_dashes(&definition(), &args);
            return Err(failure(USAGE, line.unwrap_or_else(|| usage_line(&e.render().to_string()))));
        }
    };
    match cli.sub {
        Some(Sub::Doctor) => return Ok(Command::Doctor),
        Some(Sub::Profile { what: ProfileSub::List { names } }) => return Ok(Command::ProfileList { names }),
        Some(Sub::Profile { what: ProfileSub::Show { name } }) => return Ok(Command::ProfileShow(name)),
        Some(Sub::Allow { dir, revoke }) => return Ok(Command::Allow { dir, revoke }),
        Some(Sub::Completions { shell }) => return Ok(Command::Completions(shell)),
        Some(Sub::Manpage { dir }) => return Ok(Command::Manpage { dir }),
        Some(Sub::Ps { json, names }) => return Ok(Command::Ps { json, names }),
        Some(Sub::Stop { name, now }) => return Ok(Command::Stop { name, now }),
        Some(Sub::Signal { name, sig }) => return values::signal(name, &sig),
        Some(Sub::Exec { name, mut cmd }) => {
            if cmd.first().is_some_and(|c| c == "--") {
                cmd.remove(0);
            }
            return Ok(Command::Exec { name, cmd });
        }
        Some(Sub::Cow(sub)) => return Ok(Command::Cow(sub.command())),
        None => {}
    }
    // `snug make`: a DIR that does not exist but is a command (SPEC O7).
    if cli.cmd.is_empty() && cli.dir.as_ref().is_some_and(|d| !d.exists()) {
        if let Some(line) = crate::hints::missing_dashes(&definition(), &args) {
            return Err(failure(USAGE, line));
        }
    }
    // clap stops looking for subcommands once an option was given (`snug -v doctor`):
    // refuse the bare word rather than silently treat it as DIR.
    if let Some(word) =
        cli.dir.as_ref().and_then(|d| d.to_str()).filter(|d| SUBCOMMANDS.contains(d) || cow::WORDS.contains(d))
    {
        return Err(failure(
            USAGE,
            format!("{word} is a subcommand and takes no options; write ./{word} for a directory"),
        ));
    }
    if cli.json && !cli.dry_run {
        return Err(failure(USAGE, "--json only goes with --dry-run"));
    }
    let (env, env_bytes) = crate::policy::env_entries(cli.env)?;
    let net_allow = crate::net::own::from_command_line(cli.net_allow, &cli.profiles)?;
    Ok(Command::Run(Box::new(RunArgs {
        net_allow,
        profiles: cli.profiles,
        no_defaults: cli.no_defaults,
        dry_run: cli.dry_run,
        json: cli.json,
        verbose: cli.verbose,
        dir: cli.dir,
        max_procs: cli.max_procs,
        memory: cli.memory.as_deref().map(crate::bounds::parse_size_arg).transpose()?,
        cmd: cli.cmd,
        grants: Grants { ro: cli.ro, rw: cli.rw, tmpfs: cli.tmpfs, env, env_bytes, unprotect: cli.protect.paths },
        report: cli.report.as_deref().map(report_to).transpose()?,
        events: cli.more.events_to()?,
        timeout: cli.timeout.as_deref().map(duration).transpose()?.filter(|d| !d.is_zero()),
        name: cli.name,
        jobs: cli.jobs.as_deref().and_then(snug_core::init::Jobs::from_word).unwrap_or_default(),
        no_project: cli.no_project,
        allow_userns: cli.allow_userns,
        cow: cli.cow.cow,
        more: cli.more,
    })))
}

/// snug's command line as clap defines it: for hints, completions and the man page.
pub fn definition() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

pub mod cow;
pub mod more;
mod sub;
use sub::{ProfileSub, Sub};
mod unprotect;
mod values;
use values::{duration, report_to, usage_line};

#[cfg(test)]
mod tests;
