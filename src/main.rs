//! snug: run an untrusted payload under bubblewrap and own what happens when someone wants
//! it to stop. Reads top-down: parse → policy → bwrap command line → start → supervise → end.

mod bounds;
mod bridge;
mod bwrap;
mod channel;
mod cli;
mod cow;
mod discarded;
mod doctor;
mod dryrun;
mod end;
mod env_file;
mod error;
mod events;
mod grant_fd;
mod hints;
mod host;
mod identity;
mod init;
mod keeper;
mod launch;
mod live;
mod log;
mod manual;
mod mode;
mod net;
mod passwd;
mod payload_args;
mod pidfd;
mod policy;
mod profiles;
mod project;
mod prompt;
mod protect;
mod pty;
mod quote;
mod report;
mod report_sink;
mod root;
mod run_plan;
use run_plan::{resolve, run_started, with_bounds, with_name, with_protection, writable_inside, Resolved};
mod seccomp;
mod signals;
mod stack;
mod start;
mod supervise;
mod sys;
mod tty;

use crate::cli::Command;
use crate::end::Outcome;
use crate::report::{EndedBy, RunRecord};
use snug_core::{Signal, WaitStatus};

#[global_allocator]
static GLOBAL: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() {
    error::no_backtraces();
    // A panic must not unwind (between fork and exec, or through init): abort, as
    // `panic = "abort"` did. Set here, not in Cargo.toml, so that `cargo build` and
    // `cargo test` share one build of every dependency (the test harness needs unwind).
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort();
    }));
    // On a stack of snug's choosing, whatever `ulimit -s` says (SPEC R4). The main thread's
    // own stack grows to the soft RLIMIT_STACK (`getrlimit(2)`), so at the worker's size or
    // more (the usual 8 MiB; init always, since nest raises it for bwrap) the worker thread
    // buys nothing and costs an 8 MiB mapping and a clone per exec, twice on B1's path.
    if stack::soft_limit() >= stack::STACK_BYTES as u64 {
        work()
    }
    stack::run(work)
}

/// Everything snug does, as init or as snug; ends the process.
fn work() -> ! {
    // The same binary is the sandbox init (bound at /run/snug/init).
    if std::env::args_os().nth(1).is_some_and(|a| a == init::FLAG) {
        let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
        init::main(&args[2..]);
    }
    let mut record = RunRecord::new();
    let mut sink = None;
    let outcome = run(&mut record, &mut sink).unwrap_or_else(Outcome::Fail);
    // What the sandbox used and which bounds it hit, read before its cgroups go (O5); the
    // counters from the cgroups that count them (the sandbox's leaf, bounds::hits).
    let hits = bounds::hits();
    let hit = hits.oom_kills > Some(0) || hits.forks_refused > Some(0);
    if (sink.is_some() || events::on() || hit) && record.context().bounds.is_some() {
        let mut usage = bounds::usage();
        usage.oom_kills = hits.oom_kills.or(usage.oom_kills);
        usage.refused_forks = hits.forks_refused.or(usage.refused_forks);
        record.context().usage = Some(usage);
    }
    // K5, O5: tmpfs pages belong to no process, so at a memory bound filled through them the
    // OOM killer may take bwrap or init rather than the payload: the sandbox was killed at
    // its bound, not lost by snug. It ends as a payload the OOM killer took (R3).
    let outcome = match outcome {
        // Said by `settle`, with the bound.
        Outcome::Fail(e) if error::code_of(&e) == error::INTERNAL && hits.oom_kills > Some(0) => {
            Outcome::Signal(Signal::KILL)
        }
        o => o,
    };
    record.hits(hits);
    bounds::cleanup(); // the sandbox is gone: remove this run's cgroups (SPEC K5)
    log::log!("cgroups removed");
    live::server::cleanup(); // and its control socket (SPEC L5)
    match settle(outcome, &mut record, sink) {
        Outcome::Status(status) => end::as_status(status),
        Outcome::Signal(sig) => end::die_of(sig),
        Outcome::Fail(e) => {
            log::say!("snug: {}", error::one_line(&e));
            std::process::exit(error::code_of(&e));
        }
    }
}

/// The end of every run: who ended it, 124 after a timeout (O6), the report (O5). A report
/// that cannot be written at the end is one `snug: ` line; it turns an exit 0 into 74 (a
/// harness must not take a run it knows nothing about for a success) and leaves any other
/// end as it is (that status already says the run failed or was stopped, and is the more
/// useful one to keep).
fn settle(outcome: Outcome, record: &mut RunRecord, sink: Option<report::Sink>) -> Outcome {
    let ended_by = record.close(&outcome);
    // K5, O5: an OOM kill or refused forks get one line, the report's reason.
    // snug's own failure already has its line (with the bound's hint where it applies).
    let said = matches!(outcome, Outcome::Fail(_) | Outcome::Status(WaitStatus::Exited(0))) && ended_by != EndedBy::Oom;
    if record.hit_bound() && !said {
        log::say!("snug: {}", record.reason_line(ended_by, &outcome));
    }
    let outcome = match outcome {
        Outcome::Status(_) | Outcome::Signal(_) if ended_by == EndedBy::Timeout => {
            // O6: a timeout is snug's decision, so it says so, once, whatever -v says.
            let after = record.timeout_text().map(|t| format!(" ({t})")).unwrap_or_default();
            log::say!("snug: the timeout{after} ended the run: exit {}", error::TIMED_OUT);
            Outcome::Status(WaitStatus::Exited(error::TIMED_OUT))
        }
        o => o,
    };
    if let Outcome::Fail(e) = &outcome {
        record.error(error::one_line(e));
    }
    let json = (sink.is_some() || events::on()).then(|| record.to_json(ended_by, &outcome));
    // O9: the stream's `end` carries the report; a reader that went away is R4's 74.
    let outcome = match json.as_deref().map(events::end) {
        Some(events::Ended::Behind) => {
            log::say!("snug: the event stream's reader fell behind: its last events were not written");
            outcome
        }
        Some(events::Ended::Broken) => unwritable(outcome, "cannot write the event stream: its reader went away"),
        Some(events::Ended::Unopened(line)) => unwritable(outcome, &line),
        _ => outcome,
    };
    let (Some(mut sink), Some(json)) = (sink, json) else { return outcome };
    let Err(e) = sink.write(&json) else { return outcome };
    if e.to_stderr {
        // O10: the report is not lost when its path cannot take it.
        eprint!("{json}");
    }
    unwritable(outcome, &format!("cannot write the report to {}: {}", sink.label(), e.why))
}

/// The report or the event stream could not be written at the end (R4): an exit 0 becomes 74
/// with `line`; any other end stays, and `line` is printed.
fn unwritable(outcome: Outcome, line: &str) -> Outcome {
    match outcome {
        Outcome::Status(WaitStatus::Exited(0)) => Outcome::Fail(error::failure(error::REPORT, line.to_string())),
        o => {
            log::say!("snug: {line}");
            o
        }
    }
}

fn run(record: &mut RunRecord, sink: &mut Option<report::Sink>) -> anyhow::Result<Outcome> {
    let args = match cli::parse()? {
        Command::Run(args) => args,
        Command::Doctor => std::process::exit(doctor::run()),
        Command::ProfileList { names: false } => return end::printed(profiles::list()?),
        Command::ProfileList { names: true } => return end::printed(profiles::names()),
        Command::ProfileShow(name) => return end::printed(policy::show(&name)?),
        Command::Allow { dir, revoke } => return end::printed(project::allow(dir.or_else(root::from_here), revoke)?),
        Command::Completions(shell) => return end::printed(manual::completions(shell)),
        Command::Manpage { dir: None } => return end::printed(manual::manpage()?),
        Command::Manpage { dir: Some(d) } => return end::printed(manual::install(&d)?),
        Command::Ps { names: true, .. } => return end::printed(live::ps::names()),
        Command::Ps { json, .. } => return end::printed(live::ps::ps(json)?),
        Command::Stop { name, now } => return live::stop::stop(&name, now),
        Command::Signal { name, sig } => return live::client::signal(&name, sig),
        Command::Exec { name, cmd } => return live::exec::run(&name, &cmd),
        Command::Cow(c) => {
            let (text, code) = cow::command(c)?;
            return end::printed(text).map(|_| Outcome::Status(WaitStatus::Exited(code)));
        }
    };
    sandbox(&args, record, sink)
}

/// A run: parse → policy → bwrap's command line → start → supervise → end.
fn sandbox(args: &cli::RunArgs, record: &mut RunRecord, sink: &mut Option<report::Sink>) -> anyhow::Result<Outcome> {
    if args.verbose {
        log::enable();
    }
    // First, so that every later failure is reported (O5); `--dry-run` runs nothing and
    // writes no report.
    record.arm(args.timeout);
    record.context().argv = std::env::args_os().collect();
    if let (Some(to), false) = (&args.report, args.dry_run) {
        let dir = std::fs::canonicalize(args.dir.as_deref().unwrap_or(std::path::Path::new("."))).ok();
        record.context().dir = dir;
        *sink = Some(report::Sink::open(to, &record.first_json())?);
        record.wanted();
    }
    if let (Some(to), false) = (&args.events, args.dry_run) {
        events::open(to, args.report.as_ref(), record.start())?; // O9, opened as early as the report
    }
    let cmd = args.command();
    if let Some(n) = &args.name {
        live::check_name(n)?;
    }
    let generated = args.name.is_none();
    let mut name = args.name.clone().unwrap_or_else(|| live::generated_name(&cmd));
    record.name(&name);
    record.context().command = cmd.clone();
    let (mode, tty) = mode::Mode::detect();
    let identity = identity::Identity::of(args.more.user.as_deref(), rustix::process::geteuid().is_root())?;
    // Before `launch::begin` blocks INT/TERM/HUP: a FIFO may hold this read (env_file::read_all).
    let from_files = env_file::read_all(&args.more.env_files);
    // nest and bwrap start now, while the policy is resolved (SPEC B1); `--dry-run` starts
    // nothing.
    let mut begun = match args.dry_run {
        true => None,
        false => Some(launch::begin(mode, tty, (args.jobs, identity), args.memory.is_some(), args.allow_userns)?),
    };
    // Before the policy: a missing bwrap is 69 whatever else is wrong (R4).
    let found = begun.as_mut().map(launch::Begun::bwrap).transpose()?;
    let Resolved { mut policy, request, raw_env, net, own, root, worktree, hidden } =
        resolve(args, &cmd, &name, record, from_files)?;
    let cow_on = args.cow || policy.cow;
    // SPEC P7: every bind opened by snug, through no symlink a sandbox could have planted;
    // `--dry-run` checks the same and shows the paths.
    let mut opened = grant_fd::open(&policy, args.dry_run)?;
    let mut inside = Vec::new();
    if cow_on {
        // W1: DIR is an overlay in nest's namespace: what lies in it bwrap binds by its path
        // there, walked again in the overlay once it is mounted (P7, [`cow::grants`]).
        let in_dir =
            |o: &grant_fd::Opened| policy.mounts[o.index].src.as_ref().is_some_and(|s| s.starts_with(&policy.target));
        let (there, rest): (Vec<_>, Vec<_>) = opened.into_iter().partition(in_dir);
        inside = grant_fd::expected_inside(&policy, &there).into_iter().map(|e| e.rel).collect();
        opened = rest;
    }
    if let Some(b) = begun.as_mut() {
        b.give_grants(&opened)?; // bwrap's exec goes on while its options are built (B1)
    }
    // The rest overlaps bwrap's exec (B1): bwrap binds what follows by path, with its options.
    // P8: the protected paths, bound after the policy's mounts; the guard undoes the
    // placeholders and moves aside what the payload made where git reads, also on an error.
    // With --cow, DIR's protected paths are kept aside like the rest and `snug apply` writes
    // them only when told (W4): nothing of P8's is made in DIR, which stays as it was (W1).
    let mut protection = match cow_on {
        true => protect::plan(&cow::outside(&policy))?,
        false => protect::plan(&policy)?,
    };
    let _guard = match args.dry_run {
        true => None,
        false => Some(protect::placeholder::prepare(&mut protection, &name)?),
    };
    policy.protected = std::mem::take(&mut protection.mounts);
    if let (Some(to), false) = (&args.events, args.dry_run) {
        events::confirm(to, &|p| writable_inside(&policy, p))?;
        events::emit("started", run_started(record, &policy, mode, &name));
    }
    // Before bwrap's command line, which hides it (X4); a planted one does not stop the run (L5).
    let runtime = live::runtime::prepare(args.dry_run);
    let found = match found {
        Some(f) => f,
        None => launch::Bwrap::find()?,
    };
    // SPEC W1: the kept directory before bwrap's command line, which hides the state
    // directory once it exists (W5).
    let mut cow = match cow_on && !args.dry_run {
        true => Some(cow::start(&mut name, generated, &policy.target, record, || live::generated_name(&cmd))?),
        false => None,
    };
    if let Some(c) = cow.as_mut() {
        c.inside = inside;
    }
    let shown: &[grant_fd::Opened] = if args.dry_run { &[] } else { &opened };
    let argv = launch::command_line(&policy, (mode, (args.jobs, identity)), runtime.as_deref(), &found, shown)?;
    let checks = grant_fd::verify::encode(&grant_fd::expected_inside(&policy, &opened));
    let limits = bounds::Limits {
        max_procs: args.max_procs.or(policy.max_procs).unwrap_or(bounds::DEFAULT_MAX_PROCS),
        memory: args.memory.or(policy.memory),
        nested_userns: !identity::userns_denied(&argv, policy.allow_userns),
    };
    record.context().bounds = Some((limits.max_procs, limits.memory));
    let Some(begun) = begun else {
        let mut extra: Vec<(&str, Vec<String>)> = vec![("payload", payload_args::lossy(&cmd))];
        extra.extend(net.iter().map(|n| ("pasta", n.dry_run_line())));
        if args.cow || policy.cow {
            extra.push(("cow", cow::dry_run_line(&policy.target, &name)));
        }
        extra.extend(own.iter().map(|o| ("net-allow", o.dry_run_lines())));
        let text = dryrun::render(mode, &env_file::hidden_in(&policy, &hidden), &argv, &extra, args.json);
        let text = with_protection(with_bounds(text, &limits, args.json), &protection, args.json);
        let text = root::with_root(text, &policy.target, &root, args.json);
        return end::printed(with_name(text, &name, args.json));
    };
    // W1: the overlay is mounted while snug goes on (B10), unless nest starts again for
    // other cgroups: an overlay in the first nest would hold the layers the second needs.
    if let (Some(c), Some(nest)) = (cow.as_ref(), begun.nest_for_overlay(&limits)) {
        c.mount_early(nest)?;
    }
    let quiet = args.more.quiet; // O11: -q drops notes, hints and summaries
    if let Some(note) = cmd.first().filter(|_| !args.default_shell() && !quiet).and_then(|c| c.to_str()) {
        if let Some(note) = policy::program::other_program(note, &policy) {
            log::say!("snug: {note}");
        }
    }
    let cmd_text = payload_args::lossy(&cmd).join(" ");
    let shown_mode = cow::mode_word(mode.word(), cow.is_some()); // `snug ps` shows `--cow` (W1)
    let jobs = args.jobs;
    let control = move || {
        let bind = if generated { live::server::Server::bind_generated } else { live::server::Server::bind };
        runtime.map(|dir| bind(&dir, &name, &cmd_text, shown_mode, jobs)).transpose()
    };
    let watch = std::rc::Rc::new(std::cell::RefCell::new(discarded::Watch::new(&policy)));
    let seen = watch.clone();
    let (mut net, mut own) = (net, own);
    let hold = net.is_some() || own.is_some();
    let on_init: supervise::OnInit = Box::new(move |init| {
        // As init says hello: its root is the sandbox's (O8); the payload may run already,
        // so the watch resolves its directories inside that root, through no symlink.
        let mut w = seen.borrow_mut();
        w.open(init.host_pid);
        if init.exited() {
            w.close();
        }
        if let Some(o) = own.as_mut() {
            return o.attach(init).map(|s| Some(net::Attached::Own(Box::new(s))));
        }
        net.as_mut().map(|n| n.attach(init).map(net::Attached::Pasta)).transpose()
    });
    let env = policy::with_raw_values(&policy.env, &raw_env);
    let grants = (&opened[..], &checks[..]);
    let cow = cow.as_ref();
    let plan = launch::Plan { argv: &argv, mode, cmd: &cmd, env: &env, limits: &limits, hold, cow, grants };
    let outcome = launch::run(&plan, begun, on_init, record, (control, jobs));
    // SPEC W2: whatever ended the run, what it kept aside is said (nothing kept: nothing said).
    if let Some((line, value)) = cow.and_then(cow::finish) {
        log::say!("snug: {line}");
        record.changes(value);
    }
    if cow.is_some() {
        log::log!("--cow: the kept changes read");
    }
    let outcome = grant_fd::named(outcome?, &policy, &opened);
    if let Some(line) = record.network_line() {
        log::say!("snug: {line}");
    }
    if let Some(summary) = watch.borrow().summary() {
        if !quiet {
            log::say!("snug: {}", summary.line(&policy.home));
        }
        record.discarded(summary);
    }
    let cmd_words = payload_args::lossy(&cmd);
    let hint = match outcome {
        Outcome::Status(status) if !quiet => {
            hints::dropped_env(status, &request.host_env, &policy.env, policy.net, &cmd_words)
        }
        _ => None,
    };
    // O11: a hint only after a run that failed, where it may bear on the failure.
    let failed = !matches!(outcome, Outcome::Status(WaitStatus::Exited(0)));
    let ran = record.payload_ended(); // P11: not when snug itself failed
    let owners = (failed && ran && !quiet).then(|| identity::unmapped_line(&policy.target, identity)).flatten();
    for line in hint.iter().chain(worktree.iter().filter(|_| failed && !quiet)).chain(&owners) {
        log::say!("snug: {line}");
    }
    // snug exits next, and these go with its memory (the kernel closes the watch's
    // directories): freeing them one by one cost some 20 µs of every run's end (SPEC B1).
    std::mem::forget((policy, request, argv, env, watch));
    Ok(outcome)
}
