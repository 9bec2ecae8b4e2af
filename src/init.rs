//! The sandbox init: pid 1 of the sandbox's pid namespace, run by bwrap with `--as-pid-1`
//! (docs/design.md, "Init"). It leads the sandbox process group, execs the payload,
//! reaps orphans and reports to snug over the channel. As a namespace init it receives only
//! signals it handles (`pid_namespaces(7)`), so the payload cannot kill it; when it exits the
//! kernel kills the rest of the sandbox (SPEC R5).

use crate::channel::{Channel, Report, INIT_FD, STDERR_FD};
use crate::payload_args::ARGS_FD;
use crate::signals::SignalFd;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

mod exec;
mod held;
mod procfs;
mod relay;
mod serve;
mod spawn;

/// The first argument that selects init mode in snug's own binary.
pub const FLAG: &str = "--snug-init";

/// What snug's nest put at fixed numbers for init (`start::child`): the channel
/// ([`INIT_FD`]), the caller's stderr ([`STDERR_FD`]) and the payload's spec ([`ARGS_FD`]).
fn inherited() -> [OwnedFd; 3] {
    // SAFETY: the nest dup2'd these numbers for exactly this process, which takes them here
    // once, first thing in `main`, before it opens anything: nothing else owns them.
    unsafe { [INIT_FD, STDERR_FD, ARGS_FD].map(|fd| OwnedFd::from_raw_fd(fd)) }
}

/// Run as init with `args` = `[MODE, JOBS?]` (what follows [`FLAG`]; CMD, its arguments and
/// environment come from [`crate::payload_args`]); never returns.
pub fn main(args: &[String]) -> ! {
    let [chan, stderr, spec] = inherited();
    let chan = Channel::from_fd(chan);
    let code = match run(&chan, args, stderr, spec) {
        Ok(code) => code,
        Err(e) => {
            let _ = chan.report(Report::InitFailed(e), None);
            1
        }
    };
    // Init ends at once; the kernel then empties the namespace.
    std::process::exit(code)
}

fn run(chan: &Channel, args: &[String], stderr: OwnedFd, spec: OwnedFd) -> Result<i32, i32> {
    use rustix::process::{set_dumpable_behavior, setsid, DumpableBehavior};
    let mode = args.first().map(String::as_str).unwrap_or("detached");
    let spec = crate::payload_args::receive_from(std::fs::File::from(spec))?;
    // The payload, and what `snug exec` starts, get the caller's `ulimit -s` (R4, R7).
    crate::stack::restore(spec.stack);
    let os = |e: rustix::io::Errno| e.raw_os_error();
    // The payload runs as the same uid: keep it from opening our descriptors via /proc.
    let _ = set_dumpable_behavior(DumpableBehavior::NotDumpable);
    let _ = rustix::io::fcntl_setfd(chan, rustix::io::FdFlags::CLOEXEC);
    // fd 2 is bwrap's error pipe to snug: put the caller's stderr back (SPEC R2).
    rustix::stdio::dup2_stderr(&stderr).map_err(os)?;
    drop(stderr);
    let terminal = mode != "detached";
    // Own session, led by init. Detached: no terminal at all, so no terminal can signal the
    // sandbox (SPEC D1). Terminal mode: the sandbox's pty is its controlling terminal, so
    // /dev/tty opens it and the payload's group is not orphaned: ^Z stops it (T1, T5).
    setsid().map_err(os)?;
    let pty = if terminal {
        // SAFETY: the nest dup2'd the pty's slave to this number for this process, which
        // takes it once, here; nothing else owns it.
        let pty = unsafe { OwnedFd::from_raw_fd(crate::channel::PTY_FD) };
        rustix::process::ioctl_tiocsctty(&pty).map_err(os)?;
        let _ = rustix::io::fcntl_setfd(&pty, rustix::io::FdFlags::CLOEXEC);
        Some(pty)
    } else {
        None
    };
    let signals = SignalFd::new(&[libc::SIGCHLD, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP])
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    // Init gives and takes the pty's foreground from its own group, which may be in the
    // background: blocked, SIGTTOU lets it (`tty_check_change`). The payload's process
    // clears its mask (S1).
    crate::signals::block(&[libc::SIGTTOU]);
    let program = match crate::payload_args::resolve(&spec) {
        Ok(p) => p,
        Err(e) => {
            let _ = chan.report(Report::ExecFailed(e.into()), None);
            return Ok(127); // snug exits 126 or 127
        }
    };
    // The payload's process exists from here on, held before its exec until snug says go
    // (the network is up, SPEC N3).
    let held = held::spawn_held(&program, &spec, pty.as_ref().map(|p| (p.as_raw_fd(), mode == "terminal-fg")))?;
    let me = crate::pidfd::open(std::process::id() as i32).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    chan.report(Report::Hello, Some(me.as_fd())).map_err(|_| libc::EPIPE)?;
    let payload = crate::pidfd::open(held.pid).ok();
    let _ = chan.report(Report::Started(held.pid), payload.as_ref().map(|p| p.as_fd()));
    // SPEC L3, L4: `snug exec` and what is left after the main process.
    let jobs = args.get(1).and_then(|w| crate::live::Jobs::from_word(w)).unwrap_or_default();
    let execs = exec::Execs::new(spec.env.clone());
    serve::serve(chan, &signals, held, pty, (execs, jobs))
}
