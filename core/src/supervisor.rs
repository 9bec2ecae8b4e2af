//! The supervisor's decisions (SPEC G, T, D1, L2, L4, O6): one [`Supervisor`] value is the
//! run's state, [`Supervisor::on`] takes one [`Event`] the binary's poll loop decoded (a
//! signal, a report from init, the bridge, a deadline) and returns the [`Effect`]s the loop
//! carries out, in order. Nothing here reads a clock or makes a system call: time comes in
//! with each event.
//!
//! Three effects answer with an event, decided on before the next effect ([`crate::carry`]):
//! [`Effect::StartNetwork`] with [`Event::NetworkUp`] or [`Event::Failed`], [`Effect::Raw`]
//! (whether the caller's terminal took raw mode) with [`Event::Raw`], and
//! [`Effect::StopSelf`] (snug stopped, then continued) with [`Event::Woke`].
//!
//! Where each row is decided:
//!
//! | Row | Place |
//! |-----|-------|
//! | G1 (once, in order before the fork; own copies dropped) | `signal`, `Phase::Starting`, `started_payload` |
//! | G2 (grace from receipt; the payload's end wins; no clock while stopped) | `signal`, [`End::rank`], `jobs::woke` |
//! | G3 (grace over: teardown with the first signal, once) | `Supervisor::tick`, `Supervisor::tear_down` |
//! | G4 (second INT/TERM/HUP tears down; not one read with the first, nor a hangup) | [`relay::decide`], `Supervisor::signal` |
//! | G6 (every signal's answer; CONT once) | [`relay::answer`], `jobs::resume` |
//! | T1 (immediate or deferred hand-over) | `Supervisor::start`, `jobs::payload_stopped`, `jobs::raw` |
//! | T2 (keys to the pty; typed keys to snug's group) | `jobs::terminal_key`, `jobs::typed`, [`relay::decide`] |
//! | T3 (force-quit) | `Supervisor::interrupt` |
//! | T4, D1 (a process's INT/TERM/HUP, a detached terminal's, get the grace) | [`relay::decide`] |
//! | T5, T8 (payload stop, `fg`, `bg`, `tostop`) | `jobs::payload_stopped`, `jobs::resume`, `jobs::raw` |
//! | T10 (one hangup, nohup) | `jobs::terminal_key`, `jobs::hung_up` |
//! | T12 (stop the sandbox, then snug) | `jobs::halt`, `jobs::halted` |
//! | L2 (`snug stop`, `snug signal`) | as a signal from a process: `Supervisor::signal` |
//! | L4 (`--jobs grace`) | `Supervisor::exited` |
//! | N3 (the payload starts once the network is up) | `Supervisor::on` (`Hello`, `NetworkUp`) |
//! | O6 (`--timeout` acts as a TERM once) | `Supervisor::tick` |
//! | R3, R4 (which end snug leaves as) | [`End::rank`], `Supervisor::finish` |

use crate::types::{Signal, WaitStatus};
use std::time::{Duration, Instant};

mod ending;
mod event;
mod jobs;
pub mod relay;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ends;
#[cfg(test)]
mod tests_jobs;

use ending::Ends;
pub use ending::{End, EndedBy};
pub use event::{Config, Effect, Event, Note, Order, Origin, Resume, Tty};
use jobs::{AfterRaw, Job};
pub use relay::Action;

/// The grace: a constant, no flag, no profile key (SPEC G2).
pub const GRACE: Duration = Duration::from_millis(1000);
/// A second ^C within this of one the payload did not end on is a force-quit (SPEC T3).
pub const FORCE_QUIT: Duration = Duration::from_millis(1000);

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
    /// The grace was started by a signal of the signalfd read the loop is going through.
    grace_batch: bool,
    /// A hangup's SIGHUP was relayed during another signal's grace: later news of it counts
    /// once (T10).
    hangup_relayed: bool,
    /// The sandbox's pty was hung up ([`Effect::ClosePty`]), once.
    pty_closed: bool,
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
            grace_batch: false,
            hangup_relayed: false,
            pty_closed: false,
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
            Event::Signal { sig, origin, together, tty } => self.signal(now, (sig, origin, together), tty, &mut fx),
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
            Event::PayloadWaits { tty } => self.payload_waits(tty, &mut fx),
            Event::Raw(ok) => self.raw(ok, &mut fx),
            Event::Woke { paused } => self.woke(paused),
            Event::Tick => self.tick(now, &mut fx),
        }
        fx
    }

    /// A signal (G1–G6, T2, T4, T10, T12, L2).
    fn signal(
        &mut self,
        now: Instant,
        (sig, origin, together): (Signal, Origin, bool),
        tty: Tty,
        fx: &mut Vec<Effect>,
    ) {
        if !together {
            self.grace_batch = false;
        }
        // snug's own copy of a key it sent to its group (T2): the sandbox had it already.
        if origin == Origin::Own && matches!(sig, Signal::INT | Signal::QUIT) {
            return fx.push(Effect::Note(Note::OwnCopyDropped(sig)));
        }
        if self.terminal_key(sig, origin, tty, fx) {
            return;
        }
        let by_terminal = origin == Origin::Terminal;
        if sig == Signal::WINCH && by_terminal && self.cfg.terminal {
            fx.extend([Effect::Resize, Effect::Note(Note::WindowCopied)]);
            return self.winch_deferred(fx);
        }
        let mut action = relay::decide(sig, by_terminal, self.cfg.terminal, self.grace.is_some());
        // G4's second signal is a new request to stop now. Two kinds of INT/TERM/HUP during the
        // grace are none, and the grace runs on to its deadline, once (never past the first
        // signal's 1 s): one sent while snug was stopped with the signal that started it
        // (bash sends a stopped job HUP, TERM and CONT at once when its terminal closes), and
        // the first SIGHUP once the caller's terminal is gone (the caller's shell's to its
        // jobs, or the kernel's to a foreground group whose session leader ended): what the
        // payload would get without snug. Each is relayed; the pty hangs up with the latter.
        let hangup = sig == Signal::HUP && tty.hung_up;
        if action == Action::Teardown && ((together && self.grace_batch) || hangup) {
            action = Action::Relay;
            if hangup {
                self.hangup_relayed = true;
                self.close_pty(fx);
            }
            fx.push(Effect::Note(Note::UnderGrace(sig)));
        }
        fx.push(Effect::Decided { sig, origin, action });
        if sig == Signal::HUP && by_terminal {
            fx.push(Effect::Note(Note::KernelHangup));
        }
        match action {
            Action::RelayWithGrace => {
                // The deadline counts from receipt, also when init is not up yet (G3).
                self.grace = Some(Grace { until: now + GRACE, first: sig });
                self.grace_batch = true;
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
                self.signal(now, (Signal::TERM, Origin::Own, false), Tty::default(), fx);
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
