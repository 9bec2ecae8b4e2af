//! Supervise: one poll loop on snug's signalfd, the init channel, bwrap's pidfd and stderr,
//! with the grace as the poll timeout from a monotonic deadline. No threads, no sleeps: snug
//! is blocked in the kernel while the payload runs (SPEC B5).

use crate::bridge::Bridge;
use crate::channel::{Channel, Order, Outbox, Received, Report, Resume};
use crate::error::{failure, INTERNAL};
use crate::log::log;
use crate::mode::Mode;
use crate::pidfd::Pinned;
use crate::relay::{decide, Action};
use crate::report::{EndedBy, RunRecord};
use crate::signals::signame;
use crate::signals::SignalFd;
use crate::start::Nest;
use ending::{End, Ending};
use sandbox::{Sandbox, Start};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

mod ending;
mod jobs;
mod live;
mod sandbox;
mod terminal;

/// The grace: a constant, no flag, no profile key (SPEC G2).
pub const GRACE: Duration = Duration::from_millis(1000);
/// A second ^C within this of one the payload did not end on is a force-quit (SPEC T3).
const FORCE_QUIT: Duration = Duration::from_millis(1000);

pub use crate::end::Outcome;

/// Called once init is up, with init pinned; starts the network before the payload (N3) and
/// hands over pasta, which the supervisor stops when the sandbox ends (N2).
pub type OnInit = Box<dyn FnMut(&Pinned) -> anyhow::Result<Option<crate::net::Pasta>>>;

/// Where each descriptor sits in the poll set; the control socket's follow (SPEC L1).
mod slot {
    /// snug's signalfd.
    pub const SIGNALS: usize = 0;
    /// The channel to init; also `POLLOUT` while orders wait for room.
    pub const INIT: usize = 1;
    /// bwrap's stderr pipe, until EOF.
    pub const BWRAP_ERR: usize = 2;
    /// bwrap's pidfd: readable once bwrap, pid 1 of the outer namespace, exited.
    pub const BWRAP: usize = 3;
    /// pasta's watch descriptor, with `@net`.
    pub const PASTA: usize = 4;
    /// The caller's terminal, in terminal mode.
    pub const TTY: usize = 5;
    /// The sandbox pty's master, in terminal mode.
    pub const MASTER: usize = 6;
    /// How many slots come before the control socket's.
    pub const FIXED: usize = 7;
}

/// Everything the loop watches, and what it learned.
pub struct Supervisor {
    mode: Mode,
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
    /// The payload's side holds the pty's foreground (by snug's decision): the hand-over
    /// happened, immediately or deferred (T1).
    handed: bool,
    /// The payload stopped reading or setting its terminal while snug's job was in the
    /// background: `fg` hands it over (T1, T8).
    wants_terminal: bool,
    on_init: OnInit,
    cmd: String,
    /// From init's hello on.
    sandbox: Option<Sandbox>,
    /// pasta with `@net`, once attached.
    pasta: Option<crate::net::Pasta>,
    /// Whether init reported the payload forked; signals before that wait in it.
    start: Start,
    /// Deadline and the signal that started the grace.
    grace: Option<(Instant, i32)>,
    /// How the run ends, once something ended it.
    ending: Ending,
    /// The last ^C that reached no handler (T3).
    last_unanswered: Option<Instant>,
    /// How the sandbox was stopped by snug, for the next continue (T5, T12).
    stopped: Option<Resume>,
    /// A job-control signal snug received and waits for init's [`Report::Halted`] to stop
    /// itself with (T12).
    halting: Option<i32>,
    /// What happened, for `--report`; also holds the `--timeout` deadline (O5, O6).
    record: RunRecord,
    /// The run's control socket (SPEC L1, L5), polled with the rest.
    control: Option<crate::live::server::Server>,
    /// What happens to other sandbox processes at the main process's exit (L4).
    at_main_exit: crate::live::Jobs,
}

impl Supervisor {
    /// A supervisor for a started nest; `cmd` names the payload in 126/127 messages.
    pub fn new(mode: Mode, nest: Nest, chan: Channel, signals: SignalFd, cmd: String, on_init: OnInit) -> Supervisor {
        Supervisor {
            mode,
            bwrap: nest.pid1,
            bwrap_err: Some(nest.bwrap_err),
            bwrap_said: Vec::new(),
            chan,
            chan_open: true,
            outbox: Outbox::default(),
            signals,
            bridge: None,
            handed: matches!(mode, Mode::Terminal { immediate: true }),
            wants_terminal: false,
            on_init,
            cmd,
            sandbox: None,
            pasta: None,
            start: Start::Pending(Vec::new()),
            grace: None,
            ending: Ending::default(),
            last_unanswered: None,
            stopped: None,
            halting: None,
            record: RunRecord::default(),
            control: None,
            at_main_exit: crate::live::Jobs::Kill,
        }
    }

    /// Run until the sandbox is gone, give the terminal back (T7) and say how to end; fills
    /// in `record` as it goes (O5).
    pub fn run(mut self, record: RunRecord) -> (Outcome, RunRecord) {
        self.record = record;
        if let Some(c) = &self.control {
            self.record.name(c.name()); // a generated name may have been drawn again (L1)
        }
        while !self.step() {}
        log!("the outer namespace is gone");
        if let Some(mut pasta) = self.pasta.take() {
            pasta.stop();
        }
        self.bwrap.reap();
        log!("bwrap reaped");
        // Every sandbox process is gone: the pty's last bytes, then the caller's own settings
        // back before snug says anything or dies of a signal (T7, T14).
        if let Some(b) = self.bridge.as_mut() {
            b.drain();
        }
        let outcome = self.outcome();
        self.finish_control(&outcome);
        (outcome, self.record)
    }

    /// One poll round; true once the outer namespace is gone.
    fn step(&mut self) -> bool {
        // The next deadline: the grace's or `--timeout`'s (O6), whichever comes first.
        let held_keys = self.bridge.as_ref().and_then(Bridge::deadline);
        let deadline = self.grace.map(|(d, _)| d).into_iter().chain(self.record.deadline()).chain(held_keys).min();
        let timeout = match deadline {
            Some(deadline) => deadline.saturating_duration_since(Instant::now()).as_micros().div_ceil(1000) as i32,
            None => -1,
        };
        let watch = |fd, events| libc::pollfd { fd, events, revents: 0 };
        let mut fds = vec![watch(-1, 0); slot::FIXED];
        fds[slot::SIGNALS] = watch(self.signals.raw(), libc::POLLIN);
        fds[slot::INIT] = watch(
            if self.chan_open { self.chan.raw() } else { -1 },
            if self.outbox.waiting() { libc::POLLIN | libc::POLLOUT } else { libc::POLLIN },
        );
        fds[slot::BWRAP_ERR] = watch(self.bwrap_err.as_ref().map_or(-1, |f| f.as_raw_fd()), libc::POLLIN);
        fds[slot::BWRAP] = watch(self.bwrap.raw(), libc::POLLIN);
        fds[slot::PASTA] = watch(self.pasta.as_ref().map_or(-1, |p| p.watch_fd()), libc::POLLIN);
        if let Some(b) = &self.bridge {
            let [tty, master] = b.poll_fds();
            fds[slot::TTY] = tty;
            fds[slot::MASTER] = master;
        }
        let control_at = self.control_fds(&mut fds);
        if crate::fdpoll::poll_raw(&mut fds, timeout).is_err() {
            return false; // EINTR
        }
        if fds[slot::INIT].revents & libc::POLLOUT != 0 {
            self.outbox.flush(&self.chan);
        }
        if fds[slot::INIT].revents & !libc::POLLOUT != 0 {
            self.read_reports();
        }
        if fds[slot::SIGNALS].revents != 0 {
            while let Some(got) = self.signals.read() {
                // snug's own copy of a key it sent to its group ([`Supervisor::on_typed`]).
                let own = !got.by_terminal() && got.pid == std::process::id();
                if own && matches!(got.sig, libc::SIGINT | libc::SIGQUIT) {
                    log!("dropped {}: snug's own, sent to its group with a key (R3)", signame(got.sig));
                    continue;
                }
                self.on_signal(got);
            }
        }
        if fds[slot::BWRAP_ERR].revents != 0 {
            self.read_bwrap_err();
        }
        if let (true, Some(pasta)) = (fds[slot::PASTA].revents != 0, self.pasta.as_mut()) {
            pasta.on_readable();
        }
        if let Some(b) = self.bridge.as_mut() {
            let mut events = Vec::new();
            b.on_ready(&[fds[slot::TTY], fds[slot::MASTER]], &mut events);
            for e in events {
                self.on_bridge(e);
            }
        }
        // `--timeout` (O6): what a TERM from a process does, unless a grace runs or the payload ended.
        if self.record.timeout_due(Instant::now()) && self.grace.is_none() && !self.ending.payload_ended() {
            self.record.timing_out();
            self.on_signal(crate::signals::Delivered { sig: libc::SIGTERM, code: 0, pid: std::process::id() });
        }
        self.on_control(&fds[control_at..]);
        if let (Some((deadline, sig)), false) = (self.grace, self.ending.torn_down()) {
            if Instant::now() >= deadline {
                log!("grace over after {} ms", GRACE.as_millis());
                self.teardown(sig, EndedBy::GraceExpired);
            }
        }
        if fds[slot::BWRAP].revents != 0 || self.ending.torn_down() {
            self.read_reports(); // what init said before it went
            while self.bwrap_err.is_some() {
                self.read_bwrap_err();
            }
            return true;
        }
        false
    }

    fn read_reports(&mut self) {
        loop {
            match self.chan.recv_report(true) {
                Ok(Received::Packet(Some(r), fd)) => self.on_report(r, fd),
                Ok(Received::Packet(None, _)) => {}
                Ok(Received::Empty) => return,
                // Init is gone: a hung-up socket polls readable forever, so stop watching it
                // (otherwise the loop spins until bwrap is reaped, B5).
                Ok(Received::Closed) | Err(_) => {
                    self.chan_open = false;
                    return;
                }
            }
        }
    }

    fn on_report(&mut self, r: Report, fd: Option<OwnedFd>) {
        self.record.report(r);
        match r {
            Report::Hello => self.on_hello(fd),
            Report::Started(sandbox_pid) => {
                let payload = fd.and_then(|fd| Pinned::adopt(fd).ok());
                let host = payload.as_ref().map_or(0, |p| p.host_pid);
                log!("payload started: pid {host} (pid {sandbox_pid} in the sandbox)");
                self.on_started(payload);
            }
            Report::Stopped(sig) => self.on_stopped(sig),
            Report::Halted => self.on_halted(),
            Report::Interrupt(unanswered) => self.on_interrupt(unanswered),
            Report::Exited(status) => {
                log!("payload ended: {}", describe(status));
                // Keys typed from now on are the caller's shell's, not the sandbox's; the
                // terminal stays raw until the pty is drained, so its last bytes are not
                // translated twice (T14).
                if let Some(b) = self.bridge.as_mut() {
                    b.keys_off();
                }
                self.ending.note(End::Payload(status));
                self.on_main_exit();
            }
            Report::Empty => log!("sandbox empty"),
            Report::Leaving(_) => {}
            Report::ExecFailed(e) => self.ending.note(End::ExecFailed(e)),
            Report::InitFailed(e) => {
                let code = crate::error::errno_code(e, INTERNAL);
                let hint = if e == libc::EAGAIN { crate::bounds::cap_hint() } else { String::new() };
                let e = failure(code, format!("sandbox init failed: {}{hint}", crate::error::strerror(e)));
                self.ending.note(End::Failed(e));
            }
        }
    }

    fn on_hello(&mut self, fd: Option<OwnedFd>) {
        let Some(init) = fd.and_then(|fd| Pinned::adopt(fd).ok()) else {
            return self.fail(failure(INTERNAL, "sandbox init sent no usable pidfd"));
        };
        let pid = init.host_pid;
        log!(
            "tree: bwrap pid {} (pid 1 of the outer namespace), init pid {pid} (pid 1 of the sandbox, leads its group)",
            self.bwrap.host_pid
        );
        let net = (self.on_init)(&init);
        self.sandbox = Some(Sandbox { init, payload: None });
        match net {
            Ok(pasta) => self.pasta = pasta,
            Err(e) => return self.fail(e),
        }
        self.order(Order::Go);
    }

    fn on_signal(&mut self, got: crate::signals::Delivered) {
        let origin = if got.by_terminal() { "terminal".to_string() } else { format!("process {}", got.pid) };
        log!("received {} from {origin} (si_code {})", signame(got.sig), got.code);
        if self.on_terminal_key(&got) {
            return;
        }
        if got.sig == libc::SIGWINCH && got.by_terminal() {
            if let Some(b) = &self.bridge {
                // The caller's window changed: the pty's size follows, and the kernel tells
                // the pty's foreground itself (T1).
                b.resize();
                return log!("window size copied to the sandbox's terminal");
            }
        }
        let action = decide(&got, self.mode, self.grace.is_some());
        self.record.signal(&got, action);
        if got.sig == libc::SIGHUP && got.by_terminal() {
            log!("hangup from the kernel: the terminal went away (never a key, T10)");
        }
        log!("decision: {action:?}");
        match action {
            Action::RelayWithGrace => {
                // The deadline counts from receipt, also when init is not up yet (G3).
                self.grace = Some((Instant::now() + GRACE, got.sig));
                log!("grace started: {} ms", GRACE.as_millis());
            }
            Action::Teardown => {
                log!("second {} during the grace: teardown", signame(got.sig));
                let first = self.grace.map_or(got.sig, |(_, s)| s);
                return self.teardown(first, EndedBy::SecondSignal);
            }
            Action::Drop => return,
            // Stopping cannot wait for the payload: a job the shell lists as stopped never
            // runs on (T12). Init takes the order whenever it reads it.
            Action::Stop => return self.halt(got.sig),
            Action::Relay | Action::Key | Action::Resume => {}
        }
        match &mut self.start {
            Start::Pending(pending) => pending.push((action, got.sig)),
            Start::Started => self.apply(action, got.sig),
        }
    }

    fn apply(&mut self, action: Action, sig: i32) {
        match action {
            Action::Relay => self.relay(sig),
            Action::RelayWithGrace => {
                // Tell init first: the payload may end of this very signal (G2).
                self.order(Order::Grace);
                self.relay(sig);
            }
            Action::Key => {
                self.order(Order::Key(sig));
                log!(
                    "relayed the terminal's {} to the payload's process group (the hand-over is deferred)",
                    signame(sig)
                );
            }
            Action::Resume => self.resume(),
            Action::Teardown | Action::Drop | Action::Stop => {}
        }
    }

    /// Relay through init, which signals every sandbox process (see [`Order::Signal`]).
    fn relay(&mut self, sig: i32) {
        self.order(Order::Signal(sig));
        log!("relayed {} to every sandbox process (through init)", signame(sig));
    }

    fn order(&mut self, o: Order) {
        self.outbox.send(&self.chan, o);
    }
}

/// A raw wait status in words, for `-v`.
fn describe(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("killed by {}", signame(libc::WTERMSIG(status)))
    } else {
        format!("exit {}", libc::WEXITSTATUS(status))
    }
}
