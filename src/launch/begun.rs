//! What a run starts before its policy is resolved (SPEC B1): snug's signals held (G3), the
//! sandbox's pty (T1), the cgroups (K5), and nest, which execs `bwrap --args 8 -- init …`.
//! bwrap's exec, dynamic loading and C start-up then run on another CPU while snug works out
//! the policy, and bwrap waits on the pipe for its options: it reads them before it makes
//! any namespace or mount, so nothing of the sandbox exists until [`Attempt::give_options`].
//! The alternative, bwrap started once its command line is known, waits for each in turn.

use super::Bwrap;
use crate::bounds::{ForChild, Shape};
use crate::channel::Channel;
use crate::log::log;
use crate::mode::Mode;
use crate::pidfd::Pinned;
use crate::pty::Pty;
use crate::signals::{self, SignalFd};
use crate::start::{Nest, Passed};
use crate::tty::CallerTty;
use anyhow::{Context, Result};
use snug_core::Signal;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

/// A run begun: what [`super::run`] finishes once the policy is known.
pub struct Begun {
    pub(super) signals: SignalFd,
    pub(super) tty: Option<CallerTty>,
    pub(super) pty: Option<Pty>,
    /// Where bwrap may be on PATH, in order; nest execs the first executable one.
    pub(super) bwrap: Vec<PathBuf>,
    /// What follows bwrap's options on its command line ([`super::init_tail`]).
    pub(super) tail: Vec<String>,
    /// The signals snug ignores, as nest inherits them ([`sigseal::ignored`]).
    pub(super) ignored: u64,
    pub(super) attempt: Attempt,
}

impl Begun {
    /// Hand nest the binds' descriptors as soon as they are open (SPEC P7): nest execs bwrap
    /// then, while snug builds bwrap's options ([`crate::start::Nest::give_grants`]; a nest
    /// started again in [`super::run`] gets them there).
    ///
    /// # Errors
    /// As [`crate::start::Nest::give_grants`].
    pub fn give_grants(&mut self, opened: &[crate::grant_fd::Opened]) -> Result<()> {
        let fds: Vec<_> = opened.iter().map(|o| o.fd.as_fd()).collect();
        self.attempt.nest.give_grants(&fds)
    }

    /// nest's pidfd, host pid and setup pipe, for the overlay's helper
    /// ([`crate::cow::Run::mount_early`]); `None` when `limits` need other cgroups, so that
    /// [`super::run`] starts nest again.
    pub fn nest_for_overlay(
        &self,
        limits: &crate::bounds::Limits,
    ) -> Option<(BorrowedFd<'_>, snug_core::Pid, BorrowedFd<'_>)> {
        let nest = &self.attempt.nest;
        let kept = self.attempt.bounds.shape() == limits.shape();
        nest.setup_watch().filter(|_| kept).map(|watch| (nest.pid1.as_fd(), nest.pid1.host_pid, watch))
    }

    /// The bwrap this run uses: looked up now, while nest execs it (nest makes the same
    /// choice from the same list, [`crate::start::nest`]); what it knows is read once nest
    /// has the binds' descriptors ([`Bwrap`]).
    ///
    /// # Errors
    /// As [`super::find_bwrap`]: no bwrap on PATH (nest fails the same way and is killed).
    pub fn bwrap(&mut self) -> Result<Bwrap> {
        let path = super::find_bwrap()?;
        self.attempt.nest.set_program(&path);
        Ok(Bwrap { path })
    }
}

/// Begin a run in `mode` (`tty`: the caller's terminal in terminal mode): signals held, the
/// pty, and nest started for the cgroups the command line asks for (`jobs`: `--jobs` and
/// who the payload is, SPEC P11; `memory`: a memory
/// bound; `allow_userns`: `--allow-userns`). A profile that asks for more makes
/// [`super::run`] start nest again.
///
/// # Errors
/// 69 when bwrap is missing or the namespaces are refused; the pty's, the cgroups' and
/// the descriptors' errors.
pub fn begin(
    mode: Mode,
    tty: Option<CallerTty>,
    jobs: (snug_core::init::Jobs, crate::identity::Identity),
    memory: bool,
    allow_userns: bool,
) -> Result<Begun> {
    // S3: a caller that ignores SIGCHLD would make the kernel reap bwrap behind our back.
    signals::default(Signal::CHLD);
    // S2: what was ignored at start stays ignored and is never relayed.
    let all = snug_core::supervisor::relay::caught();
    // Read once: for S2 here, and for nest's seal (what nest inherits at the clone).
    let ignoring = sigseal::ignored();
    let (caught, ignored): (Vec<Signal>, Vec<Signal>) =
        all.into_iter().partition(|s| !sigseal::SigState::has(ignoring, s.raw()));
    if !ignored.is_empty() {
        log!(
            "ignored at start, so never relayed: {:?}",
            ignored.iter().map(|s| signals::signame(*s)).collect::<Vec<_>>()
        );
    }
    // Blocked before the clone, so a signal during start-up waits in the queue (G3).
    let signals = SignalFd::new(&caught).context("signalfd")?;
    let bwrap = crate::bwrap::on_path("bwrap");
    // Terminal mode: the sandbox's own pty, with the caller's settings and size (SPEC T1).
    let pty = match &tty {
        Some(tty) => Some(crate::pty::open(tty).context("cannot open a pty for the sandbox (/dev/ptmx)")?),
        None => None,
    };
    let tail = super::init_tail(mode, jobs);
    // bwrap has `--disable-userns` (0.8.0, 2023), as the run takes it to ([`Bwrap`]).
    let shape = Shape { memory, nested_userns: allow_userns };
    let attempt = Attempt::start(&bwrap, &tail, pty.as_ref(), tty.as_ref(), (shape, ignoring))?;
    Ok(Begun { signals, tty, pty, bwrap, tail, ignored: ignoring, attempt })
}

/// One nest, waiting in bwrap for its options.
pub(super) struct Attempt {
    pub(super) nest: Nest,
    /// snug's end of the channel to init.
    pub(super) ours: Channel,
    /// The payload's argv and environment, [`crate::payload_args::fill`]ed later.
    pub(super) args: OwnedFd,
    pub(super) bounds: ForChild,
    options: OptionsPipe,
}

impl Attempt {
    /// Clone nest for `shape`'s cgroups, with snug's `ignored` signals for its seal; bwrap
    /// waits for its options.
    pub(super) fn start(
        bwrap: &[PathBuf],
        tail: &[String],
        pty: Option<&Pty>,
        tty: Option<&CallerTty>,
        (shape, ignored): (Shape, u64),
    ) -> Result<Attempt> {
        let (ours, theirs) = Channel::pair().context("socketpair")?;
        let seccomp = crate::seccomp::memfd()?;
        let args = crate::payload_args::empty_memfd()?;
        let (options_r, options_w) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(std::io::Error::from).context("pipe")?;
        let mut argv = vec!["bwrap".to_string()];
        argv.extend(["--args".to_string(), crate::sys::fds::BWRAP_ARGS_FD.to_string()]);
        argv.extend(tail.iter().cloned());
        let mask = tty.map_or(Default::default(), CallerTty::stdio_mask);
        let slave = pty.map(|p| (p.slave.as_fd(), mask));
        let passed = Passed {
            channel: theirs.as_fd(),
            seccomp: seccomp.as_fd(),
            payload_args: args.as_fd(),
            options: options_r.as_fd(),
        };
        let deny_userns = !shape.nested_userns; // as root, nest's own doing (SPEC P11, X2)
        let mut nest = crate::start::nest((bwrap, ignored, deny_userns), &argv, passed, slave)?;
        let pinned = nest.pid1.as_fd().try_clone_to_owned().context("fcntl(F_DUPFD_CLOEXEC)")?;
        let options = OptionsPipe { write: Some(options_w), bwrap: Pinned::cloned(pinned, nest.pid1.host_pid) };
        // While nest sets its namespace up; it waits for them before it execs bwrap. An error
        // here drops `options`, which kills nest.
        let mut bounds = crate::bounds::prepare(shape)?;
        nest.give_cgroups(&mut bounds)?;
        // SPEC P11: the set-id rules when the payload is the host's root.
        crate::seccomp::fill(&seccomp, crate::identity::Identity::from_init_args(tail).is_host_root())?;
        Ok(Attempt { nest, ours, args, bounds, options })
    }

    /// Give bwrap its options (each NUL-terminated, `--args`) and close the pipe: bwrap goes
    /// on. A bwrap that died meanwhile is not an error here: the supervisor sees its end and
    /// its stderr.
    pub(super) fn give_options(&mut self, options: &[String]) {
        let Some(write) = self.options.write.take() else { return };
        let bytes: Vec<u8> = options.iter().flat_map(|o| o.bytes().chain([0])).collect();
        let mut done = 0;
        while done < bytes.len() {
            match rustix::io::write(&write, &bytes[done..]) {
                Ok(n) => done += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return log!("bwrap's options not written: {e}"),
            }
        }
    }

    /// Kill this nest and remove its cgroups, for another attempt.
    pub(super) fn abandon(self) {
        let Attempt { options, bounds, .. } = self;
        drop(options); // kills and reaps bwrap, so that its cgroups are empty
        bounds.abandon();
    }
}

/// The write end of bwrap's `--args` pipe, with bwrap pinned: dropped before the options
/// were given, it kills and reaps bwrap first, so that no bwrap ever goes on without them.
struct OptionsPipe {
    write: Option<OwnedFd>,
    bwrap: Pinned,
}

impl Drop for OptionsPipe {
    fn drop(&mut self) {
        if self.write.is_some() {
            let _ = self.bwrap.signal(Signal::KILL);
            self.bwrap.reap();
        }
    }
}
