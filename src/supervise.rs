//! Supervise: one poll loop on snug's signalfd, the init channel, bwrap's pidfd and stderr,
//! with the grace as the poll timeout from a monotonic deadline. No threads (but the resolver
//! threads of a network of snug's own, [`crate::net::own`]), no sleeps: snug is blocked in
//! the kernel while the payload runs (SPEC B5).
//!
//! The loop decides nothing: it decodes what the kernel, init and the bridge said into
//! [`snug_core::supervisor::Event`]s ([`decode`]), asks the run's state
//! ([`snug_core::supervisor::Supervisor`], where every row is decided) and carries out the
//! effects it returns ([`effects`]). This struct holds only descriptors and handles.

use crate::bridge::Bridge;
use crate::channel::{Channel, Outbox};
use crate::log::log;
use crate::mode::Mode;
use crate::pidfd::Pinned;
use crate::report::RunRecord;
use crate::signals::SignalFd;
use crate::start::Nest;
use crate::sys::poll::PollSet;
use snug_core::supervisor::{Config, Event};
use snug_core::Signal;
use std::ops::ControlFlow;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Instant;

mod decode;
mod drain;
mod effects;
mod ending;
mod live;
mod sandbox;

pub use crate::end::Outcome;

/// The run's decisions, with snug's own failure as the error.
type Core = snug_core::supervisor::Supervisor<anyhow::Error>;

/// Called once init is up, with init pinned; starts the network before the payload (N3) and
/// hands over pasta, which the supervisor stops when the sandbox ends (N2).
pub type OnInit = Box<dyn FnMut(&Pinned) -> anyhow::Result<Option<crate::net::Attached>>>;

/// What each entry of the poll set is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// snug's signalfd.
    Signals,
    /// The channel to init, while init's end is open; also `POLLOUT` while orders wait for room.
    Init,
    /// bwrap's stderr pipe, until EOF.
    BwrapErr,
    /// bwrap's pidfd: readable once bwrap, pid 1 of the outer namespace, exited.
    Bwrap,
    /// pasta's watch descriptor, with `@net`.
    Pasta,
    /// The caller's terminal and the sandbox pty's master, in terminal mode.
    Bridge,
    /// The control socket's listener and connections (SPEC L1).
    Control,
    /// The network of snug's own (N5).
    OwnNet,
}

/// The descriptors and handles the loop watches and acts on; the run's state is `core`.
pub struct SupervisorLoop {
    /// Every decision, and the state they read.
    core: Core,
    /// bwrap, pid 1 of the outer namespace (pinned): killing it tears the sandbox down.
    bwrap: Pinned,
    bwrap_err: Option<OwnedFd>,
    /// What bwrap wrote before init's hello: its error line when the sandbox never started.
    bwrap_said: Vec<u8>,
    chan: Channel,
    /// Init's end is still open.
    chan_open: bool,
    /// Orders waiting for room in init's socket.
    outbox: Outbox,
    signals: SignalFd,
    /// The caller's terminal and the sandbox's pty, in terminal mode (SPEC T).
    bridge: Option<Bridge>,
    on_init: OnInit,
    /// The payload's name, for 126/127 messages.
    cmd: String,
    /// Init, from its hello on.
    init: Option<Pinned>,
    /// The payload's main process, once init reported it forked and its pidfd came through.
    payload: Option<Pinned>,
    /// pasta with `@net`, once attached.
    pasta: Option<crate::net::Pasta>,
    /// The network of snug's own with `--net-allow`, once made (N5).
    own_net: Option<Box<crate::net::own::Served>>,
    /// What happened, for `--report` (O5).
    record: RunRecord,
    /// The run's control socket (SPEC L1, L5), polled with the rest.
    control: Option<crate::live::server::Server>,
    /// The final drain's state (T14).
    draining: drain::Draining,
}

impl SupervisorLoop {
    /// A supervisor for a started nest; `cmd` names the payload in 126/127 messages.
    pub fn new(
        mode: Mode,
        nest: Nest,
        chan: Channel,
        signals: SignalFd,
        cmd: String,
        on_init: OnInit,
    ) -> SupervisorLoop {
        let cfg = Config {
            terminal: matches!(mode, Mode::Terminal { .. }),
            immediate: matches!(mode, Mode::Terminal { immediate: true }),
            hup_ignored: crate::signals::ignored(Signal::HUP),
            ..Config::default()
        };
        SupervisorLoop {
            core: Core::new(cfg),
            bwrap: nest.pid1,
            bwrap_err: Some(nest.bwrap_err),
            bwrap_said: Vec::new(),
            chan,
            chan_open: true,
            outbox: Outbox::default(),
            signals,
            bridge: None,
            on_init,
            cmd,
            init: None,
            payload: None,
            pasta: None,
            own_net: None,
            record: RunRecord::default(),
            control: None,
            draining: drain::Draining::default(),
        }
    }

    /// Attach the bridge (terminal mode). An immediate hand-over goes raw now, before the
    /// payload starts, so that typeahead reaches it (T1, T14).
    pub fn terminal(mut self, bridge: Option<Bridge>) -> SupervisorLoop {
        self.bridge = bridge;
        let fx = self.core.start();
        let ControlFlow::Continue(()) = snug_core::carry::carry_out(&mut self, fx);
        self
    }

    /// Run until the sandbox is gone, give the terminal back (T7) and say how to end; fills
    /// in `record` as it goes (O5).
    pub fn run(mut self, record: RunRecord) -> (Outcome, RunRecord) {
        self.record = record;
        self.core.set_timeout(self.record.deadline());
        if let Some(c) = &self.control {
            self.record.name(c.name()); // a generated name may have been drawn again (L1)
        }
        while !self.step() {}
        log!("the outer namespace is gone");
        if let Some(mut pasta) = self.pasta.take() {
            pasta.stop();
        }
        if let Some(own) = self.own_net.take() {
            // Its connections close with it, however they stand (N8).
            self.record.network(own.finish());
        }
        self.bwrap.reap();
        log!("bwrap reaped");
        // Every sandbox process is gone: the pty's last bytes, then the caller's own settings
        // back before snug says anything or dies of a signal (T7, T14).
        self.drain();
        let end = self.core.finish();
        let outcome = self.outcome(end);
        self.finish_control(&outcome);
        (outcome, self.record)
    }

    /// Decide on `event` and carry out what was decided.
    fn on(&mut self, event: Event<anyhow::Error>) {
        let ControlFlow::Continue(()) = snug_core::carry::on(self, event);
    }

    /// One poll round; true once the outer namespace is gone.
    fn step(&mut self) -> bool {
        // The next deadline: the core's (grace, `--timeout`) or the bridge's held keys.
        let held_keys = self.bridge.as_ref().and_then(Bridge::deadline);
        let deadline = self.core.deadline().into_iter().chain(held_keys).min();
        let within = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let mut set = PollSet::default();
        set.watch(Slot::Signals, Some(self.signals.as_fd()), libc::POLLIN);
        let orders = if self.outbox.waiting() { libc::POLLIN | libc::POLLOUT } else { libc::POLLIN };
        set.watch(Slot::Init, self.chan_open.then(|| self.chan.as_fd()), orders);
        set.watch(Slot::BwrapErr, self.bwrap_err.as_ref().map(|f| f.as_fd()), libc::POLLIN);
        set.watch(Slot::Bwrap, Some(self.bwrap.as_fd()), libc::POLLIN);
        set.watch(Slot::Pasta, self.pasta.as_ref().and_then(|p| p.watch_fd()), libc::POLLIN);
        if let Some(b) = &self.bridge {
            set.add(Slot::Bridge, b.poll_fds());
        }
        if let Some(c) = &self.control {
            set.add(Slot::Control, c.poll_fds());
        }
        if let Some(own) = self.own_net.as_mut() {
            set.add(Slot::OwnNet, own.poll_fds());
        }
        if set.poll(within).is_err() {
            return false; // EINTR
        }
        if set.got(Slot::Init) & libc::POLLOUT != 0 {
            self.outbox.flush(&self.chan);
        }
        if set.got(Slot::Init) & !libc::POLLOUT != 0 {
            self.read_reports();
        }
        let signalled = set.got(Slot::Signals) != 0;
        if signalled {
            loop {
                let pending = self.signals.read_pending::<32>();
                if pending.is_empty() {
                    break;
                }
                // Signals pending together with a SIGCONT were sent while snug was stopped
                // and could act on none (G4): bash's HUP, TERM and CONT to a stopped job. Ones
                // a running snug reads together were only sent close together, and each
                // counts as sent (`kill -TERM; kill -INT` is a first and a second).
                let stopped = pending.iter().any(|d| d.sig == snug_core::Signal::CONT);
                for (i, got) in pending.into_iter().enumerate() {
                    self.on_delivered(got, stopped && i > 0);
                }
            }
        }
        if set.got(Slot::BwrapErr) != 0 {
            self.read_bwrap_err();
        }
        if let (true, Some(pasta)) = (set.got(Slot::Pasta) != 0, self.pasta.as_mut()) {
            pasta.on_readable();
        }
        if let Some(b) = self.bridge.as_mut() {
            let mut events = Vec::new();
            b.on_ready(set.entries(Slot::Bridge), &mut events);
            for e in events {
                self.on_bridge(e);
            }
        }
        if let Some(own) = self.own_net.as_mut() {
            own.on_ready(set.entries(Slot::OwnNet));
        }
        self.on(Event::Tick);
        self.on_control(set.entries(Slot::Control), signalled);
        if set.got(Slot::Bwrap) != 0 || self.core.torn_down() {
            self.read_reports(); // what init said before it went
            while self.bwrap_err.is_some() {
                self.read_bwrap_err();
            }
            return true;
        }
        false
    }
}
