//! Supervise: one poll loop on snug's signalfd, the init channel, bwrap's pidfd and stderr,
//! with the grace as the poll timeout from a monotonic deadline. No threads, no sleeps: snug
//! is blocked in the kernel while the payload runs (SPEC B5).

use crate::channel::{Channel, Order, Outbox, Received, Report, Resume};
use crate::error::{failure, INTERNAL, NOT_EXECUTABLE, NOT_FOUND};
use crate::log::log;
use crate::mode::Mode;
use crate::pidfd::Pinned;
use crate::relay::{decide, Action};
use crate::report::{EndedBy, RunRecord};
use crate::signals::signame;
use crate::signals::SignalFd;
use crate::start::Nest;
use crate::terminal::Terminal;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

mod jobs;
mod live;

/// The grace: a constant, no flag, no profile key (SPEC G2).
pub const GRACE: Duration = Duration::from_millis(1000);
/// A second ^C within this of one the payload did not end on is a force-quit (SPEC T3).
const FORCE_QUIT: Duration = Duration::from_millis(1000);

pub use crate::end::Outcome;

/// Called once init is up, with init pinned; starts the network before the payload (N3) and
/// hands over pasta, which the supervisor stops when the sandbox ends (N2).
pub type OnInit = Box<dyn FnMut(&Pinned) -> anyhow::Result<Option<crate::net::Pasta>>>;

/// Everything the loop watches, and what it learned.
pub struct Supervisor {
    mode: Mode,
    pid1: Pinned,
    bwrap_err: Option<OwnedFd>,
    bwrap_said: Vec<u8>,
    chan: Channel,
    /// Init's end is still open.
    chan_open: bool,
    /// Orders waiting for room in init's socket.
    outbox: Outbox,
    signals: SignalFd,
    terminal: Terminal,
    on_init: OnInit,
    cmd: String,
    init: Option<Pinned>,
    /// pasta with `@net`, once attached.
    pasta: Option<crate::net::Pasta>,
    payload: Option<Pinned>,
    /// The payload was forked: the sandbox holds more than init.
    started: bool,
    /// Signals that came before the payload was started; relayed once it is.
    pending: Vec<(Action, i32)>,
    /// Deadline and the signal that started the grace.
    grace: Option<(Instant, i32)>,
    ended: Option<i32>,
    exec_failed: Option<i32>,
    fail: Option<anyhow::Error>,
    /// The last ^C that reached no handler (T3).
    last_unanswered: Option<Instant>,
    /// How the sandbox was stopped by snug, for the next continue (T5, T12).
    stopped: Option<Resume>,
    /// A job-control signal snug received and waits for init's [`Report::Halted`] to stop
    /// itself with (T12).
    halting: Option<i32>,
    /// Set once snug tore the sandbox down: the signal to die of (0: a failure).
    torn_down: Option<i32>,
    /// What happened, for `--report`; also holds the `--timeout` deadline (O5, O6).
    record: RunRecord,
    /// The run's control socket (SPEC L1, L5), polled with the rest.
    control: Option<crate::live::server::Server>,
    /// What happens to other sandbox processes at the main process's exit (L4).
    jobs: crate::live::Jobs,
}

impl Supervisor {
    /// A supervisor for a started nest; `cmd` names the payload in 126/127 messages.
    pub fn new(mode: Mode, nest: Nest, chan: Channel, signals: SignalFd, cmd: String, on_init: OnInit) -> Supervisor {
        Supervisor {
            mode,
            pid1: nest.pid1,
            bwrap_err: Some(nest.bwrap_err),
            bwrap_said: Vec::new(),
            chan,
            chan_open: true,
            outbox: Outbox::default(),
            signals,
            terminal: Terminal::new(mode),
            on_init,
            cmd,
            init: None,
            pasta: None,
            payload: None,
            started: false,
            pending: Vec::new(),
            grace: None,
            ended: None,
            exec_failed: None,
            fail: None,
            last_unanswered: None,
            stopped: None,
            halting: None,
            torn_down: None,
            record: RunRecord::default(),
            control: None,
            jobs: crate::live::Jobs::Kill,
        }
    }

    /// Run until the sandbox is gone, give the terminal back (T7) and say how to end; fills
    /// in `record` as it goes (O5).
    pub fn run(mut self, record: RunRecord) -> (Outcome, RunRecord) {
        self.record = record;
        while !self.step() {}
        if let Some(mut pasta) = self.pasta.take() {
            pasta.stop();
        }
        self.pid1.reap();
        self.terminal.restore();
        let outcome = self.outcome();
        self.finish_control(&outcome);
        (outcome, self.record)
    }

    /// One poll round; true once the outer namespace is gone.
    fn step(&mut self) -> bool {
        // The next deadline: the grace's or `--timeout`'s (O6), whichever comes first.
        let deadline = self.grace.map(|(d, _)| d).into_iter().chain(self.record.deadline()).min();
        let timeout = match deadline {
            Some(deadline) => deadline.saturating_duration_since(Instant::now()).as_micros().div_ceil(1000) as i32,
            None => -1,
        };
        let err_fd = self.bwrap_err.as_ref().map_or(-1, |f| f.as_raw_fd());
        let mut fds = vec![
            libc::pollfd { fd: self.signals.raw(), events: libc::POLLIN, revents: 0 },
            libc::pollfd {
                fd: if self.chan_open { self.chan.raw() } else { -1 },
                events: if self.outbox.waiting() { libc::POLLIN | libc::POLLOUT } else { libc::POLLIN },
                revents: 0,
            },
            libc::pollfd { fd: err_fd, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.pid1.raw(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.pasta.as_ref().map_or(-1, |p| p.watch_fd()), events: libc::POLLIN, revents: 0 },
        ];
        let control_at = self.control_fds(&mut fds);
        if crate::fdpoll::poll_raw(&mut fds, timeout).is_err() {
            return false; // EINTR
        }
        if fds[1].revents & libc::POLLOUT != 0 {
            self.outbox.flush(&self.chan);
        }
        if fds[1].revents & !libc::POLLOUT != 0 {
            self.read_reports();
        }
        if fds[0].revents != 0 {
            while let Some(got) = self.signals.read() {
                self.on_signal(got);
            }
        }
        if fds[2].revents != 0 {
            self.read_bwrap_err();
        }
        if let (true, Some(pasta)) = (fds[4].revents != 0, self.pasta.as_mut()) {
            pasta.on_readable();
        }
        // `--timeout` (O6): what a TERM from a process does, unless a grace runs or the payload ended.
        if self.record.timeout_due(Instant::now()) && self.grace.is_none() && self.ended.is_none() {
            self.record.timing_out();
            self.on_signal(crate::signals::Delivered { sig: libc::SIGTERM, code: 0, pid: std::process::id() });
        }
        self.on_control(&fds[control_at..]);
        if let (Some((deadline, sig)), None) = (self.grace, self.torn_down) {
            if Instant::now() >= deadline {
                log!("grace over after {} ms", GRACE.as_millis());
                self.teardown(sig, EndedBy::GraceExpired);
            }
        }
        if fds[3].revents != 0 || self.torn_down.is_some() {
            self.read_reports(); // what init said before it went
            while self.bwrap_err.is_some() {
                self.read_bwrap_err();
            }
            return true;
        }
        false
    }

    fn read_bwrap_err(&mut self) {
        let Some(fd) = &self.bwrap_err else { return };
        let mut buf = [0u8; 4096];
        // Poll said readable, or the writer is gone (EOF).
        let n = match rustix::io::read(fd, &mut buf) {
            Ok(n) if n > 0 => n,
            _ => {
                self.bwrap_err = None;
                return;
            }
        };
        let text = &buf[..n];
        if self.init.is_some() {
            for line in String::from_utf8_lossy(text).lines() {
                crate::log::say!("snug: bwrap: {line}");
            }
        } else {
            self.bwrap_said.extend_from_slice(text);
        }
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
                self.payload = fd.and_then(|fd| Pinned::adopt(fd).ok());
                self.started = true;
                let host = self.payload.as_ref().map_or(0, |p| p.host_pid);
                log!("payload started: pid {host} (pid {sandbox_pid} in the sandbox)");
                // Held back until now: before the fork the sandbox held only init.
                for (action, sig) in std::mem::take(&mut self.pending) {
                    self.apply(action, sig);
                }
            }
            Report::Stopped(sig) => self.on_stopped(sig),
            Report::Halted => self.on_halted(),
            Report::Interrupt(unanswered) => self.on_interrupt(unanswered),
            Report::Refused(req) => self.on_refused(req),
            Report::Exited(status) => {
                log!("payload ended: {}", describe(status));
                self.ended = Some(status);
                self.on_main_exit();
            }
            Report::Empty => log!("sandbox empty"),
            Report::Leaving(_) => {}
            Report::ExecFailed(e) => self.exec_failed = Some(e),
            Report::InitFailed(e) => {
                let code = crate::error::errno_code(e, INTERNAL);
                self.fail = Some(failure(code, format!("sandbox init failed: {}", crate::error::strerror(e))));
            }
        }
    }

    fn on_hello(&mut self, fd: Option<OwnedFd>) {
        let Some(init) = fd.and_then(|fd| Pinned::adopt(fd).ok()) else {
            self.fail = Some(failure(INTERNAL, "sandbox init sent no usable pidfd"));
            return self.teardown(0, EndedBy::SnugError);
        };
        let pid = init.host_pid;
        log!(
            "tree: bwrap pid {} (pid 1 of the outer namespace), init pid {pid} (pid 1 of the sandbox, leads its group)",
            self.pid1.host_pid
        );
        let handed = self.terminal.hand_over(pid);
        self.init = Some(init);
        // Before Go: init carries out the payload's terminal changes only once it knows (T11).
        self.order(Order::Handed(handed));
        match self.init.as_ref().map_or(Ok(None), |init| (self.on_init)(init)) {
            Ok(pasta) => self.pasta = pasta,
            Err(e) => {
                self.fail = Some(e);
                return self.teardown(0, EndedBy::SnugError);
            }
        }
        self.order(Order::Go);
    }

    fn on_signal(&mut self, got: crate::signals::Delivered) {
        let origin = if got.by_terminal() { "terminal".to_string() } else { format!("process {}", got.pid) };
        log!("received {} from {origin} (si_code {})", signame(got.sig), got.code);
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
        if !self.started {
            return self.pending.push((action, got.sig));
        }
        self.apply(action, got.sig);
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
                    "relayed the terminal's {} to every sandbox process (it does not hold the foreground)",
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

    /// Kill bwrap, pid 1 of the outer namespace: the kernel kills and reaps everything below
    /// before bwrap's own exit is seen (`zap_pid_ns_processes` in `kernel/pid_namespace.c`).
    fn teardown(&mut self, sig: i32, why: EndedBy) {
        if self.torn_down.is_none() {
            log!("teardown");
            self.record.teardown(why, self.init.as_ref());
            let _ = self.pid1.signal(libc::SIGKILL);
            self.torn_down = Some(sig);
        }
    }

    fn outcome(&mut self) -> Outcome {
        if let Some(e) = self.exec_failed {
            let (code, what) = if e == libc::ENOENT {
                (NOT_FOUND, crate::hints::not_found(&self.cmd))
            } else {
                (NOT_EXECUTABLE, crate::error::strerror(e))
            };
            return Outcome::Fail(failure(code, format!("{}: {what}", self.cmd)));
        }
        if let Some(status) = self.ended {
            // Even after a teardown (G2), and over a start-up failure it caused: a ^C that
            // ended the held payload while pasta attached also ends pasta's namespace.
            return Outcome::Status(status);
        }
        if let Some(e) = self.fail.take() {
            return Outcome::Fail(e);
        }
        match self.torn_down {
            Some(sig) if sig > 0 => return Outcome::Signal(sig),
            _ => {}
        }
        if self.init.is_none() {
            let said = String::from_utf8_lossy(&self.bwrap_said);
            let line = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("exited before the sandbox started");
            let line = line.strip_prefix("bwrap: ").unwrap_or(line);
            return Outcome::Fail(failure(crate::error::bwrap_code(line), format!("bwrap: {line}")));
        }
        Outcome::Fail(failure(INTERNAL, "the sandbox ended without reporting the payload's status"))
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
