//! The sandbox init: pid 1 of the sandbox's pid namespace, run by bwrap with `--as-pid-1`
//! (docs/design.md, "Init"). It leads the sandbox process group, execs the payload,
//! reaps orphans and reports to snug over the channel. As a namespace init it receives only
//! signals it handles (`pid_namespaces(7)`), so the payload cannot kill it; when it exits the
//! kernel kills the rest of the sandbox (SPEC R5).
//!
//! Failures, one rule (as catatonit and bubblewrap have one): before the loop, every failure
//! is fatal — init reports `InitFailed` with the errno and exits, so the run ends as snug's
//! own error (R4) instead of a payload started in a state snug did not mean; that includes
//! the security settings (not dumpable, the channel and the pty close-on-exec), whose silent
//! failure would hand the payload init's descriptors. Inside the loop an effect that fails
//! (a signal to a group that just emptied, a foreground change to a group that left) is
//! dropped: the kernel's next event (a child reaped, the sandbox empty) tells the state
//! machine what became of it, and init must keep reaping whatever else goes wrong.

use crate::channel::{Channel, FromInit, INIT_FD, PTY_FD, STDERR_FD};
use crate::payload_args::ARGS_FD;
use crate::signals::SignalFd;
use rustix::io::Errno;
use snug_core::init::{Config, Jobs};
use snug_core::Signal;
use std::os::fd::{AsRawFd, OwnedFd};

mod carry;
mod exec;
mod held;
mod procfs;
mod serve;
mod spawn;

/// The first argument that selects init mode in snug's own binary.
pub const FLAG: &str = "--snug-init";

/// What snug's nest put at fixed numbers for init (`start::child`): the channel
/// ([`INIT_FD`]), the caller's stderr ([`STDERR_FD`]), the payload's spec ([`ARGS_FD`]) and,
/// in terminal mode, the sandbox pty's slave ([`PTY_FD`]).
struct Inherited {
    chan: OwnedFd,
    stderr: OwnedFd,
    spec: OwnedFd,
    pty: Option<OwnedFd>,
}

/// `None` when a number is not open: this process was not started by snug's nest.
fn inherited(terminal: bool) -> Option<Inherited> {
    let [chan, stderr, spec, pty] = crate::sys::fds::adopt([INIT_FD, STDERR_FD, ARGS_FD, PTY_FD]);
    let pty = if terminal { Some(pty?) } else { None };
    Some(Inherited { chan: chan?, stderr: stderr?, spec: spec?, pty })
}

/// Run as init with `args` = `[MODE, JOBS?]` (what follows [`FLAG`]; CMD, its arguments and
/// environment come from [`crate::payload_args`]); never returns.
pub fn main(args: &[String]) -> ! {
    let mode = args.first().map(String::as_str).unwrap_or("detached");
    let Some(fds) = inherited(mode != "detached") else {
        eprintln!("snug: {FLAG} is snug's own init, started only by snug inside a sandbox");
        std::process::exit(crate::error::INTERNAL)
    };
    let chan = Channel::from_fd(fds.chan);
    let who = crate::identity::Identity::from_init_args(args);
    let code = match run(&chan, (mode, who), args.get(1), fds.stderr, fds.spec, fds.pty) {
        Ok(code) => code,
        Err(e) => {
            let _ = chan.report(FromInit::InitFailed(snug_core::Errno(e.raw_os_error())), None);
            1
        }
    };
    // Init ends at once; the kernel then empties the namespace.
    std::process::exit(code)
}

fn run(
    chan: &Channel,
    (mode, who): (&str, crate::identity::Identity),
    jobs: Option<&String>,
    stderr: OwnedFd,
    spec: OwnedFd,
    pty: Option<OwnedFd>,
) -> Result<i32, Errno> {
    let spec = crate::payload_args::receive_from(std::fs::File::from(spec))?;
    // SPEC P7: each mount inside DIR (init's working directory, bwrap's --chdir) sits where
    // snug meant, before anything of the payload's runs.
    let expected = crate::grant_fd::verify::decode(&spec.checks).ok_or(Errno::INVAL)?;
    crate::grant_fd::verify::check(std::path::Path::new("."), &expected)?;
    // The payload, and what `snug exec` starts, get the caller's `ulimit -s` (R4, R7).
    crate::stack::restore(spec.stack);
    let signals = settle(chan, stderr, pty.as_ref())?;
    let program = match crate::payload_args::resolve(&spec) {
        Ok(p) => p,
        Err(e) => {
            let _ = chan.report(FromInit::ExecFailed(snug_core::Errno(e.raw_os_error())), None);
            return Ok(127); // snug exits 126 or 127
        }
    };
    // SPEC P11: before any process of the payload's exists, what it may hold.
    crate::identity::settle(who)?;
    // The payload's process exists from here on, held before its exec until init's loop lets
    // it go: at once, or once snug says go when the network must come up first (SPEC N3).
    let held = held::spawn_held(&program, &spec, pty.as_ref().map(|p| (p.as_raw_fd(), mode == "terminal-fg")))?;
    let me = crate::pidfd::open(crate::sys::process::own()).map_err(errno)?;
    let payload = crate::pidfd::open(held.pid).ok();
    let hello = serve::Hello { init: me, payload };
    // SPEC L3, L4: `snug exec` and what is left after the main process.
    let jobs = jobs.and_then(|w| Jobs::from_word(w)).unwrap_or_default();
    let own_group = crate::sys::process::from_rustix(rustix::process::getpgrp());
    let cfg = Config { terminal: pty.is_some(), jobs, payload: held.pid, own_group, hold: spec.hold };
    let execs = exec::ExecSockets::new(spec.env.clone());
    Ok(serve::serve(chan, &signals, held, pty, cfg, execs, hello))
}

/// Init's own process as a sandbox's init: not dumpable, the caller's stderr on fd 2, a
/// session of its own with the pty (if any) as its controlling terminal, and the signals it
/// waits for on a signalfd.
fn settle(chan: &Channel, stderr: OwnedFd, pty: Option<&OwnedFd>) -> Result<SignalFd, Errno> {
    use rustix::process::{set_dumpable_behavior, setsid, DumpableBehavior};
    // The payload runs as the same uid: keep it from opening our descriptors via /proc.
    set_dumpable_behavior(DumpableBehavior::NotDumpable)?;
    rustix::io::fcntl_setfd(chan, rustix::io::FdFlags::CLOEXEC)?;
    // fd 2 is bwrap's error pipe to snug: put the caller's stderr back (SPEC R2).
    rustix::stdio::dup2_stderr(&stderr)?;
    drop(stderr);
    // Own session, led by init. Detached: no terminal at all, so no terminal can signal the
    // sandbox (SPEC D1). Terminal mode: the sandbox's pty is its controlling terminal, so
    // /dev/tty opens it and the payload's group is not orphaned: ^Z stops it (T1, T5).
    setsid()?;
    if let Some(pty) = pty {
        rustix::process::ioctl_tiocsctty(pty)?;
        rustix::io::fcntl_setfd(pty, rustix::io::FdFlags::CLOEXEC)?;
    }
    let signals =
        SignalFd::new(&[Signal::CHLD, Signal::INT, Signal::QUIT, Signal::TERM, Signal::HUP]).map_err(errno)?;
    // Init gives and takes the pty's foreground from its own group, which may be in the
    // background: blocked, SIGTTOU lets it (`tty_check_change`). The payload's process
    // clears its mask (S1).
    crate::signals::block(&[Signal::TTOU]);
    Ok(signals)
}

/// The errno of an `io::Error` from a system call (`EIO` for one without).
fn errno(e: std::io::Error) -> Errno {
    Errno::from_io_error(&e).unwrap_or(Errno::IO)
}
