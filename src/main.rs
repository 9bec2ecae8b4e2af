//! snug: run an untrusted payload under bubblewrap and own what happens when someone wants
//! it to stop. Reads top-down: parse → policy → bwrap command line → start → supervise → end.

mod bounds;
mod bwrap;
mod channel;
mod cli;
mod doctor;
mod dryrun;
mod end;
mod error;
mod fdpoll;
mod hints;
mod host;
mod init;
mod launch;
mod log;
mod manual;
mod mode;
mod net;
mod payload_args;
mod pidfd;
mod policy;
mod profiles;
mod quote;
mod relay;
mod seccomp;
mod signals;
mod start;
mod supervise;
mod terminal;

use crate::cli::Command;
use crate::supervise::Outcome;

fn main() {
    // A panic must not unwind (between fork and exec, or through init): abort, as
    // `panic = "abort"` did. Set here, not in Cargo.toml, so that `cargo build` and
    // `cargo test` share one build of every dependency (the test harness needs unwind).
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort();
    }));
    // The same binary is the sandbox init (bound at /run/snug/init).
    if std::env::args_os().nth(1).is_some_and(|a| a == init::FLAG) {
        let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
        init::main(&args[2..]);
    }
    let outcome = run();
    bounds::cleanup(); // the sandbox is gone: remove this run's cgroups (SPEC K5)
    match outcome {
        Ok(Outcome::Status(raw)) => end::as_status(raw),
        Ok(Outcome::Signal(sig)) => end::die_of(sig),
        Ok(Outcome::Fail(e)) | Err(e) => {
            log::say!("snug: {}", error::one_line(&e));
            std::process::exit(error::code_of(&e));
        }
    }
}

fn run() -> anyhow::Result<Outcome> {
    let args = match cli::parse()? {
        Command::Run(args) => args,
        Command::Doctor => std::process::exit(doctor::run()),
        Command::ProfileList => return print(profiles::list()?),
        Command::ProfileShow(name) => return print(policy::show(&name)?),
        Command::Completions(shell) => return print(manual::completions(shell)),
        Command::Manpage => return print(manual::manpage()?),
    };
    if args.verbose {
        log::enable();
    }
    let mut policy = policy::resolve(&policy::request_from_host(&args.profiles, args.no_defaults, args.dir.clone()))?;
    // Before anything starts: pasta must exist (N4); DNS may need another resolv.conf inside.
    let net = if policy.net { Some(net::Net::plan(&mut policy, args.dry_run)?) } else { None };
    let mode = mode::Mode::detect();
    let cmd = args.command();
    let argv = launch::command_line(&policy, mode)?;
    let limits = bounds::Limits {
        max_procs: args.max_procs.or(policy.max_procs).unwrap_or(bounds::DEFAULT_MAX_PROCS),
        memory: args.memory.or(policy.memory),
    };
    if args.dry_run {
        let mut extra: Vec<(&str, Vec<String>)> = vec![("payload", payload_args::lossy(&cmd))];
        extra.extend(net.iter().map(|n| ("pasta", n.dry_run_line())));
        let text = dryrun::render(mode, &policy, &argv, &extra, args.json);
        return print(with_bounds(text, &limits, args.json));
    }
    let on_init: supervise::OnInit = match net {
        Some(mut net) => Box::new(move |init| net.attach(init).map(Some)),
        None => Box::new(|_| Ok(None)),
    };
    launch::run(&argv, mode, &cmd, &policy.env, &limits, on_init)
}

/// The dry-run plan with how each bound is enforced (SPEC K5, O1) appended.
fn with_bounds(text: String, limits: &bounds::Limits, json: bool) -> String {
    let (lines, value) = bounds::plan_for_dry_run(limits);
    if !json {
        return text + &lines;
    }
    let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str::<serde_json::Value>(&text) else {
        return text;
    };
    map.insert("bounds".into(), value);
    serde_json::to_string_pretty(&map).unwrap_or(text) + "\n"
}

fn print(text: String) -> anyhow::Result<Outcome> {
    log::print(&text).map_err(|e| {
        let errno = e.raw_os_error().unwrap_or(libc::EIO);
        error::failure(error::INTERNAL, format!("cannot write to stdout: {}", error::strerror(errno)))
    })?;
    Ok(Outcome::Status(0))
}
