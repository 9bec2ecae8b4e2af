//! The supervisor's decisions (SPEC G, T, D1, L2, L4, O6): one [`Supervisor`] value is the
//! run's state, [`Supervisor::on`] takes one [`Event`] the binary's poll loop decoded (a
//! signal, a report from init, the bridge, a deadline) and returns the [`Effect`]s the loop
//! carries out, in order. Nothing here reads a clock or makes a system call: time comes in
//! with each event.
//!
//! Two effects answer with an event: [`Effect::Raw`] (whether the caller's terminal took raw
//! mode) with [`Event::Raw`], and [`Effect::StopSelf`] (snug stopped, then continued) with
//! [`Event::Woke`]; each is the last effect of its batch.

use crate::types::{Pid, Signal, WaitStatus};
use std::time::{Duration, Instant};

mod ending;
mod jobs;
pub mod relay;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_jobs;

use ending::Ends;
pub use ending::{End, EndedBy};
use jobs::{AfterRaw, Job};
pub use relay::Action;

/// The grace: a constant, no flag, no profile key (SPEC G2).
pub const GRACE: Duration = Duration::from_millis(1000);
/// A second ^C within this of one the payload did not end on is a force-quit (SPEC T3).
pub const FORCE_QUIT: Duration = Duration::from_millis(1000);

/// What the run was started with; fixed before the first event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// Terminal mode (SPEC T): the sandbox has a pty of its own, bridged to the caller's terminal.
    pub terminal: bool,
    /// The hand-over is immediate: the payload holds the pty's foreground from the start (T1).
    pub immediate: bool,
    /// SIGHUP was ignored when snug started (`nohup`, S2): a hangup does not end the run (T10).
    pub hup_ignored: bool,
    /// `--jobs grace`: at the main process's exit what is left gets the grace (L4).
    pub jobs_grace: bool,
    /// `--timeout`'s deadline (O6).
    pub timeout: Option<Instant>,
}

/// Who sent a signal, as `signalfd(2)`'s `ssi_code` and `ssi_pid` tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The caller's terminal (`si_code` SI_KERNEL): a key, a hangup, a window change.
    Terminal,
    /// snug itself (its copy of a typed key sent to its own group, or the timeout's TERM).
    Own,
    /// Another process (`kill(2)`, `snug signal`, `snug stop`); its pid when visible.
    Process(Option<Pid>),
}

/// The caller's terminal as the loop finds it when it decodes an event (terminal mode;
/// all false when detached).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tty {
    /// snug's job is the caller's terminal's foreground.
    pub in_front: bool,
    /// snug copies the caller's keys to the pty (raw mode, the payload holds the pty).
    pub copying: bool,
    /// The caller's terminal has gone away (seen, or a hangup pending on it).
    pub hung_up: bool,
    /// The pty makes the event's signal from a key of its own (ISIG, and VINTR, VQUIT or
    /// VSUSP set), so snug can type it there.
    pub has_key: bool,
}

/// What the loop decoded; `E` is the binary's error type.
#[derive(Debug)]
pub enum Event<E> {
    /// A signal snug received, or one `snug signal` / `snug stop` asked for (L2).
    Signal { sig: Signal, origin: Origin, tty: Tty },
    /// Init is up, pinned, and leads the sandbox group.
    Hello,
    /// The network is up (or none was asked for): the payload may start (N3).
    NetworkUp,
    /// Init forked the payload.
    Started { tty: Tty },
    /// Init saw the payload stop with `sig`; `really` when snug checked it is stopped.
    Stopped { sig: Signal, really: bool, tty: Tty },
    /// Every sandbox process stopped on [`Order::Stop`] (T12).
    Halted,
    /// A ^C reached the sandbox; `unanswered` when no process it reached caught it (T3).
    Interrupt { unanswered: bool },
    /// The payload's main process ended.
    Exited(WaitStatus),
    /// The payload could not be executed; the `errno` of `execve(2)`.
    ExecFailed(i32),
    /// Init failed and ends (it says why; nothing to tear down).
    InitFailed(E),
    /// snug failed (init sent no pidfd, the network): tear down (R4).
    Failed(E),
    /// The bridge saw a key the pty turns into `sig` (^C, ^\) (T2).
    Typed(Signal),
    /// The bridge found the caller's terminal gone (T10).
    HungUp,
    /// Output waits: snug's job is in the background and the caller set `tostop` (T8).
    Tostop,
    /// The answer to [`Effect::Raw`]: whether the caller's terminal is raw now.
    Raw(bool),
    /// The answer to [`Effect::StopSelf`]: snug was continued after `paused`.
    Woke { paused: Duration },
    /// Time passed: look at the deadlines (grace, `--timeout`).
    Tick,
}

/// How [`Order::Continue`] continues the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// After a job stop at the terminal (T5): the sandbox group and the payload's own group,
    /// so stopped jobs of a shell inside stay stopped (T6).
    Job,
    /// After [`Order::Stop`], or a CONT to a running snug: every sandbox process, once (G6, T12).
    All,
}

/// What snug tells init (the channel's orders, less `Exec`, which is not a decision).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Start the payload (N3).
    Go,
    /// A grace has started: when the payload ends, wait for the sandbox to empty (G2).
    Grace,
    /// Relay this signal to every sandbox process (G1, G6).
    Signal(Signal),
    /// Send this key's signal to the payload's group; for INT, say whether it was caught (T2, T13).
    Key(Signal),
    /// Stop every sandbox process, then say [`Event::Halted`] (T12).
    Stop,
    /// Continue after a stop, or relay a CONT (T5, T12, G6).
    Continue(Resume),
    /// Give the pty's foreground to the payload's side (true) or take it for init (false) (T1, T5, T8).
    Front(bool),
    /// A key snug copied to the pty makes this signal; for INT, say whether it was caught (T3).
    Typed(Signal),
}

/// What the loop does, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Send an order to init.
    Order(Order),
    /// Start the network, then [`Event::NetworkUp`] (or [`Event::Failed`]) (N3).
    StartNetwork,
    /// Type `sig`'s key into the pty: its line discipline signals its foreground (T2).
    PtyKey(Signal),
    /// Send `sig` to snug's own process group (a typed key, T2; snug drops its own copy).
    SignalOwnGroup(Signal),
    /// SIGCONT to init alone, should someone have stopped it.
    ContinueInit,
    /// The caller's window size to the pty (T1, T5).
    Resize,
    /// Copy keys: the caller's terminal raw; answer with [`Event::Raw`].
    Raw,
    /// Copy no keys: the caller's terminal in its own settings (T5, T7).
    Cooked,
    /// The payload ended: copy no more keys, leave the settings until the drain (T14).
    KeysOff,
    /// Hang the pty up (T10).
    ClosePty,
    /// Stop snug (and its process group when `group`) with `sig`; answer with [`Event::Woke`].
    StopSelf { sig: Signal, group: bool },
    /// Kill bwrap (every sandbox process dies with its namespace), for this reason (G3, G4, T3, R4).
    TearDown(EndedBy),
    /// `--timeout` acts: the TERM that follows is its (O6).
    TimingOut,
    /// What [`relay::decide`] made of a signal (for `-v` and `--report`, O4, O5).
    Decided { sig: Signal, origin: Origin, action: Action },
    /// A decision with nothing to carry out, for `-v` (O4).
    Note(Note),
}

/// Decisions that need no I/O, said under `-v`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// snug's own copy of a key it sent its group: dropped (R3, T2).
    OwnCopyDropped(Signal),
    /// The grace started (G2).
    GraceStarted,
    /// The grace is over (G3).
    GraceOver,
    /// A second INT/TERM/HUP during the grace (G4).
    SecondSignal(Signal),
    /// A SIGHUP the kernel sent: the terminal went away (T10).
    KernelHangup,
    /// A SIGHUP of a hangup that started the grace already: it counts once (T10).
    SameHangup,
    /// Under `nohup` a hangup does not end the run (S2, T10).
    HangupIgnored,
    /// The caller's window changed: copied to the pty (T1).
    WindowCopied,
    /// A typed key passed to the pty as its key (T2).
    KeyTyped(Signal),
    /// A ^C reached a handler: no force-quit (T3).
    InterruptCaught,
    /// A ^C reached no handler: the next within [`FORCE_QUIT`] is a force-quit (T3).
    InterruptUnanswered,
    /// A second unanswered ^C: force-quit (T3).
    ForceQuit,
    /// `--jobs grace`: what is left got TERM from init and the grace (L4).
    JobsGrace,
    /// The timeout is due (O6).
    Timeout,
    /// The payload holds its terminal's foreground from the start (T1).
    HandedAtStart,
}

/// Where the run is.
#[derive(Debug, PartialEq, Eq)]
pub enum Phase {
    /// Init has not reported the payload forked: the sandbox holds only init. Signals wait
    /// here in order of receipt, relayed once it has (G1).
    Starting(Vec<(Action, Signal)>),
    /// The payload was forked: signals are relayed at once.
    Running,
    /// snug killed bwrap: the loop ends after this round.
    TornDown,
}

/// Deadline of the grace and the signal that started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Grace {
    until: Instant,
    first: Signal,
}

/// The run's state: the one value the supervisor's decisions read and change.
#[derive(Debug)]
pub struct Supervisor<E> {
    cfg: Config,
    phase: Phase,
    grace: Option<Grace>,
    /// `--timeout`'s deadline until it fired (O6).
    timeout: Option<Instant>,
    /// The last ^C that reached no handler (T3).
    unanswered: Option<Instant>,
    /// Job control and who holds the pty's foreground (T1, T5, T8, T12).
    job: Job,
    /// What to do once the caller's terminal answered [`Effect::Raw`].
    after_raw: Option<AfterRaw>,
    ends: Ends<E>,
}

impl<E> Supervisor<E> {
    /// A run that has not started.
    pub fn new(cfg: Config) -> Self {
        let handed = cfg.terminal && cfg.immediate;
        Supervisor {
            cfg,
            phase: Phase::Starting(Vec::new()),
            grace: None,
            timeout: cfg.timeout,
            unanswered: None,
            job: Job { handed, ..Job::default() },
            after_raw: None,
            ends: Ends::default(),
        }
    }

    /// Where the run is.
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// snug tore the sandbox down: the loop ends after this round.
    pub fn torn_down(&self) -> bool {
        self.phase == Phase::TornDown
    }

    /// Init reported the payload forked.
    pub fn started(&self) -> bool {
        !matches!(self.phase, Phase::Starting(_))
    }

    /// The next deadline the loop must wake for: the grace's or `--timeout`'s.
    pub fn deadline(&self) -> Option<Instant> {
        self.grace.map(|g| g.until).into_iter().chain(self.timeout).min()
    }

    /// The run's state for `snug ps` (L1): `starting`, `running`, `grace`, `stopped`, `jobs`.
    pub fn state(&self) -> &'static str {
        if self.job.halting.is_some() || self.job.stopped.is_some() {
            "stopped"
        } else if self.grace.is_some() {
            "grace"
        } else if self.ends.payload_ended() {
            "jobs"
        } else if !self.started() {
            "starting"
        } else {
            "running"
        }
    }

    /// Why `snug exec` cannot join now (L3), if it cannot.
    pub fn exec_refusal(&self) -> Option<&'static str> {
        match self.phase {
            Phase::Starting(_) => Some("the sandbox is still starting"),
            Phase::TornDown => Some("the sandbox is ending"),
            Phase::Running => None,
        }
    }

    /// How the run ends, by precedence ([`End::rank`]); `None` when nothing said.
    pub fn finish(&mut self) -> Option<End<E>> {
        self.ends.take()
    }

    /// `--timeout`'s deadline (O6), before the first event.
    pub fn set_timeout(&mut self, deadline: Option<Instant>) {
        self.cfg.timeout = deadline;
        self.timeout = deadline;
    }

    /// `--jobs grace` (L4), before the first event.
    pub fn set_jobs_grace(&mut self, on: bool) {
        self.cfg.jobs_grace = on;
    }

    /// Terminal mode, before the payload starts: an immediate hand-over goes raw now, so
    /// that typeahead reaches the payload (T1, T14).
    pub fn start(&mut self) -> Vec<Effect> {
        if !self.job.handed {
            return Vec::new();
        }
        self.after_raw = Some(AfterRaw::Start);
        vec![Effect::Raw]
    }

    /// The one entry: decide on `event`, seen at `now`.
    pub fn on(&mut self, now: Instant, event: Event<E>) -> Vec<Effect> {
        let mut fx = Vec::new();
        match event {
            Event::Signal { sig, origin, tty } => self.signal(now, sig, origin, tty, &mut fx),
            Event::Hello => fx.push(Effect::StartNetwork),
            Event::NetworkUp => fx.push(Effect::Order(Order::Go)),
            Event::Started { tty } => self.started_payload(tty, &mut fx),
            Event::Stopped { sig, really, tty } => self.payload_stopped(sig, really, tty, &mut fx),
            Event::Halted => self.halted(&mut fx),
            Event::Interrupt { unanswered } => self.interrupt(now, unanswered, &mut fx),
            Event::Exited(status) => self.exited(now, status, &mut fx),
            Event::ExecFailed(errno) => self.ends.note(End::ExecFailed(errno)),
            Event::InitFailed(e) => self.ends.note(End::Failed(e)),
            Event::Failed(e) => self.tear_down(End::Failed(e), EndedBy::SnugError, &mut fx),
            Event::Typed(sig) => self.typed(sig, &mut fx),
            Event::HungUp => self.hung_up(now, &mut fx),
            Event::Tostop => self.halt(Signal::TTOU, &mut fx),
            Event::Raw(ok) => self.raw(ok, &mut fx),
            Event::Woke { paused } => self.woke(paused),
            Event::Tick => self.tick(now, &mut fx),
        }
        fx
    }

    /// A signal (G1–G6, T2, T4, T10, T12, L2).
    fn signal(&mut self, now: Instant, sig: Signal, origin: Origin, tty: Tty, fx: &mut Vec<Effect>) {
        // snug's own copy of a key it sent to its group (T2): the sandbox had it already.
        if origin == Origin::Own && matches!(sig, Signal::INT | Signal::QUIT) {
            return fx.push(Effect::Note(Note::OwnCopyDropped(sig)));
        }
        if self.terminal_key(sig, origin, tty, fx) {
            return;
        }
        let by_terminal = origin == Origin::Terminal;
        if sig == Signal::WINCH && by_terminal && self.cfg.terminal {
            return fx.extend([Effect::Resize, Effect::Note(Note::WindowCopied)]);
        }
        let action = relay::decide(sig, by_terminal, self.cfg.terminal, self.grace.is_some());
        fx.push(Effect::Decided { sig, origin, action });
        if sig == Signal::HUP && by_terminal {
            fx.push(Effect::Note(Note::KernelHangup));
        }
        match action {
            Action::RelayWithGrace => {
                // The deadline counts from receipt, also when init is not up yet (G3).
                self.grace = Some(Grace { until: now + GRACE, first: sig });
                fx.push(Effect::Note(Note::GraceStarted));
            }
            Action::Teardown => {
                fx.push(Effect::Note(Note::SecondSignal(sig)));
                let first = self.grace.map_or(sig, |g| g.first);
                return self.tear_down(End::TornDown(first), EndedBy::SecondSignal, fx);
            }
            Action::Drop => return,
            // Stopping cannot wait for the payload: a job the shell lists as stopped never
            // runs on (T12). Init takes the order whenever it reads it.
            Action::Stop => return self.halt(sig, fx),
            Action::Relay | Action::Key | Action::Resume => {}
        }
        match &mut self.phase {
            Phase::Starting(pending) => pending.push((action, sig)),
            Phase::Running | Phase::TornDown => self.apply(action, sig, tty, fx),
        }
    }

    /// Carry out a relay, now or once the payload was forked.
    fn apply(&mut self, action: Action, sig: Signal, tty: Tty, fx: &mut Vec<Effect>) {
        match action {
            Action::Relay => fx.push(Effect::Order(Order::Signal(sig))),
            // Tell init first: the payload may end of this very signal (G2).
            Action::RelayWithGrace => fx.extend([Effect::Order(Order::Grace), Effect::Order(Order::Signal(sig))]),
            Action::Key => fx.push(Effect::Order(Order::Key(sig))),
            Action::Resume => self.resume(tty, fx),
            Action::Teardown | Action::Drop | Action::Stop => {}
        }
    }

    /// Init forked the payload: what waited is relayed, in order of receipt (G1).
    fn started_payload(&mut self, tty: Tty, fx: &mut Vec<Effect>) {
        if let Phase::Starting(pending) = std::mem::replace(&mut self.phase, Phase::Running) {
            for (action, sig) in pending {
                self.apply(action, sig, tty, fx);
            }
        }
    }

    /// A ^C reached the sandbox. One that reached no handler followed by another within
    /// [`FORCE_QUIT`] tears down (T3); a payload that answers ^C is never ended by keys alone.
    fn interrupt(&mut self, now: Instant, unanswered: bool, fx: &mut Vec<Effect>) {
        if !unanswered {
            self.unanswered = None;
            return fx.push(Effect::Note(Note::InterruptCaught));
        }
        match self.unanswered {
            Some(t) if now.duration_since(t) <= FORCE_QUIT => {
                fx.push(Effect::Note(Note::ForceQuit));
                self.tear_down(End::TornDown(Signal::INT), EndedBy::ForceQuit, fx);
            }
            _ => {
                fx.push(Effect::Note(Note::InterruptUnanswered));
                self.unanswered = Some(now);
            }
        }
    }

    /// The payload's main process ended (R3); with `--jobs grace`, what is left gets init's
    /// TERM (sent by init itself) and the grace from now (L4).
    fn exited(&mut self, now: Instant, status: WaitStatus, fx: &mut Vec<Effect>) {
        // Keys typed from now on are the caller's shell's (T14).
        if self.cfg.terminal {
            fx.push(Effect::KeysOff);
        }
        self.ends.note(End::Payload(status));
        if self.cfg.jobs_grace && self.grace.is_none() {
            self.grace = Some(Grace { until: now + GRACE, first: Signal::TERM });
            fx.push(Effect::Note(Note::JobsGrace));
        }
    }

    /// The deadlines: `--timeout` acts as a TERM from a process unless a grace runs or the
    /// payload ended (O6); the grace's end tears down (G3).
    fn tick(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        if self.timeout.is_some_and(|t| now >= t) {
            self.timeout = None;
            if self.grace.is_none() && !self.ends.payload_ended() {
                fx.extend([Effect::Note(Note::Timeout), Effect::TimingOut]);
                self.signal(now, Signal::TERM, Origin::Own, Tty::default(), fx);
            }
        }
        if let (Some(g), false) = (self.grace, self.torn_down()) {
            if now >= g.until {
                fx.push(Effect::Note(Note::GraceOver));
                self.tear_down(End::TornDown(g.first), EndedBy::GraceExpired, fx);
            }
        }
    }

    /// Note `end` and kill bwrap, once: the kernel kills and reaps everything below. A later
    /// teardown's signal is not noted: snug dies of the one that started it; a failure is.
    fn tear_down(&mut self, end: End<E>, why: EndedBy, fx: &mut Vec<Effect>) {
        let first = !self.torn_down();
        if first || !matches!(end, End::TornDown(_)) {
            self.ends.note(end);
        }
        if first {
            self.phase = Phase::TornDown;
            fx.push(Effect::TearDown(why));
        }
    }
}
