//! snug: run an untrusted payload under bubblewrap and own what happens when someone wants
//! it to stop. Reads top-down: parse → policy → bwrap command line → start → supervise → end.

mod bwrap;
mod channel;
mod cli;
mod doctor;
mod dryrun;
mod end;
mod error;
mod init;
mod launch;
mod log;
mod mode;
mod pidfd;
mod policy;
mod profiles;
mod relay;
mod seccomp;
mod signals;
mod start;
mod supervise;
mod terminal;

use crate::cli::Command;
use crate::supervise::Outcome;

fn main() {
    // The same binary is the sandbox init (bound at /run/snug/init).
    if std::env::args_os().nth(1).is_some_and(|a| a == init::FLAG) {
        let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
        init::main(&args[2..]);
    }
    match run() {
        Ok(Outcome::Status(raw)) => end::as_status(raw),
        Ok(Outcome::Signal(sig)) => end::die_of(sig),
        Ok(Outcome::Fail(e)) | Err(e) => {
            eprintln!("snug: {}", error::one_line(&e));
            std::process::exit(error::code_of(&e));
        }
    }
}

fn run() -> anyhow::Result<Outcome> {
    let args = match cli::parse()? {
        Command::Run(args) => args,
        Command::Doctor => std::process::exit(doctor::run()),
        Command::ProfileList => return print(profiles::list()?),
        Command::ProfileShow(name) => return print(profiles::show(&name)?),
    };
    if args.verbose {
        log::enable();
    }
    let policy = policy::resolve(&policy::request_from_host(&args))?;
    let mode = mode::Mode::detect();
    let cmd = args.command();
    let argv = launch::command_line(&policy, mode, &cmd, args.verbose)?;
    if args.dry_run {
        return print(dryrun::render(mode, &policy, &argv, &[], args.json));
    }
    if policy.net {
        return Err(error::failure(error::UNAVAILABLE, "@net is not supported yet"));
    }
    launch::run(&argv, mode, &cmd, Box::new(|_init_pid| Ok(())))
}

fn print(text: String) -> anyhow::Result<Outcome> {
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(Outcome::Status(0))
}
