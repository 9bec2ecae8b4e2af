//! Init's decisions. Init is the sandbox's pid 1 (snug's own binary, re-executed by bwrap
//! with `--as-pid-1`): it holds the payload until snug says go when the run needs the
//! network (N3), else lets it go at once and stays until snug's go, carries out snug's orders
//! (relays, stops, continues, the pty's foreground), reaps every child, reports the
//! payload's stops and end, and runs `snug exec` commands.
//!
//! [`Init`] is everything init knows; [`Init::on`] takes one [`Event`] and returns the
//! [`Effect`]s to carry out, in order. Init's loop (`src/init/serve.rs` in the binary) only
//! decodes events from its descriptors and carries effects out. What init reads of other
//! processes (groups, the pty's foreground) comes in through [`Procs`], so a decision that
//! depends on it is still made here.

mod events;
mod exec;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_exec;
#[cfg(test)]
mod tests_payload;

pub use events::{Effect, Errno, Event, Order, Procs, Report, Resume, Target};
pub use exec::{ExecId, FromClient, ToClient};

use crate::types::{Pid, Signal, WaitStatus};
use exec::Execs;

/// What happens to the sandbox's other processes when the payload's main process exits
/// (`--jobs`, SPEC L4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Jobs {
    /// Init exits at once, so the kernel kills them (R5), the default.
    #[default]
    Kill,
    /// Init outlives the main process until the sandbox is empty (L4).
    Wait,
    /// They get SIGTERM and the grace (L4).
    Grace,
}

impl Jobs {
    /// The word on snug's command line and on init's.
    pub fn word(self) -> &'static str {
        match self {
            Jobs::Kill => "kill",
            Jobs::Wait => "wait",
            Jobs::Grace => "grace",
        }
    }

    /// The value of a word; `None` for anything else.
    pub fn from_word(w: &str) -> Option<Jobs> {
        [Jobs::Kill, Jobs::Wait, Jobs::Grace].into_iter().find(|j| j.word() == w)
    }
}

/// How init runs; fixed when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Terminal mode: the sandbox's pty is init's controlling terminal (T1); else detached (D1).
    pub terminal: bool,
    /// `--jobs` (L4).
    pub jobs: Jobs,
    /// The payload's main process, as forked by init.
    pub payload: Pid,
    /// Init's own process group (`getpgrp(2)`; it leads its session, so its own pid).
    pub own_group: Pid,
    /// The payload waits for [`Order::Go`] before its exec: the network comes up first (N3).
    /// Otherwise it execs at once and only init's exit waits for the go: snug opens what it
    /// watches through init's root on init's hello (O8), so init must be there until then;
    /// this saves the payload's start a round trip to snug (B1).
    pub hold: bool,
}

/// The payload's main process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Forked and waiting for [`Order::Go`] before its exec (N3), or for [`Event::Start`]
    /// when not [`Config::hold`].
    Held,
    /// Let go: executing, or running.
    Running,
    /// Ended (so reported) while init waits for the sandbox to empty (G2, L4).
    Ended(WaitStatus),
}

/// Who has the sandbox stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// Nobody.
    No,
    /// The payload's job stopped at the terminal (T5), not continued since.
    Job,
    /// Every sandbox process stopped on snug's [`Order::Stop`] (T12), not continued since.
    Halted,
}

/// Everything init knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Init {
    cfg: Config,
    payload: Payload,
    /// The payload's exec-error pipe has not said anything yet.
    exec_error_open: bool,
    stopped: Stopped,
    /// When the payload ends, wait for the sandbox to empty (a grace, or `--jobs wait`).
    grace: bool,
    /// The group that held the pty's foreground when init took it: an interactive shell
    /// payload may have given it to one of its jobs, and `fg` gives it back.
    taken_from: Option<Pid>,
    execs: Execs,
    /// snug's [`Order::Go`] came.
    go: bool,
    /// Init's exit, deferred until the go ([`Config::hold`]).
    leaving: Vec<Effect>,
}

/// Whether a relay of `sig` is followed by SIGCONT to every sandbox process (G2, as
/// `systemd.kill(5)`'s `SendSIGCONT=`): only for the signals that start the grace, and never
/// while the caller has the job stopped (T5, T12): a job the shell lists as stopped must
/// not run on.
pub fn cont_after(sig: Signal, caller_stopped: bool) -> bool {
    matches!(sig, Signal::INT | Signal::TERM | Signal::HUP) && !caller_stopped
}

impl Init {
    /// Init with the payload forked and held.
    pub fn new(cfg: Config) -> Init {
        Init {
            cfg,
            payload: Payload::Held,
            exec_error_open: true,
            stopped: Stopped::No,
            grace: cfg.jobs == Jobs::Wait,
            taken_from: None,
            execs: Execs::default(),
            go: false,
            leaving: Vec::new(),
        }
    }

    /// Whether `waitpid` reports stops and continues (`WUNTRACED | WCONTINUED`): at a
    /// terminal, or once a `snug exec` CMD with a pty of its own runs. Detached, a child's
    /// stop is nobody's business (B5).
    pub fn stop_news(&self) -> bool {
        self.cfg.terminal || self.execs.stops
    }

    /// Decide what `ev` means: the effects to carry out, in order.
    pub fn on(&mut self, ev: Event, procs: &impl Procs) -> Vec<Effect> {
        match ev {
            Event::Start => {
                let mut out = if self.cfg.terminal { Vec::new() } else { vec![Effect::StopNews(false)] };
                if !self.cfg.hold {
                    self.payload = Payload::Running;
                    out.push(Effect::Go);
                }
                out
            }
            Event::Signal(_) => Vec::new(),
            Event::TerminalSignal(sig) => self.stray_key(sig, procs),
            Event::Order(o) => self.order(o, procs),
            Event::SnugGone => vec![Effect::Exit(1)],
            Event::ExecError(said) => {
                self.exec_error_open = false;
                said.map(|e| Effect::Report(Report::ExecFailed(e))).into_iter().collect()
            }
            Event::Child(pid, status) if pid == self.cfg.payload => self.payload_status(status),
            Event::Child(pid, status) => self.execs.reaped(pid, status),
            Event::NoChildren => match self.payload {
                Payload::Ended(_) if self.leaving.is_empty() => {
                    let mut out = vec![Effect::Report(Report::Empty)];
                    out.extend(self.leave(vec![Effect::Exit(0)]));
                    out
                }
                Payload::Ended(_) | Payload::Held | Payload::Running => Vec::new(),
            },
            Event::ExecOpened(id) => self.execs.opened(id),
            Event::Client(id, msg) => self.execs.client(id, msg),
            Event::Spawned(id, result) => {
                let news = self.stop_news();
                self.execs.spawned(id, result, news)
            }
            Event::CmdExecFailed(id, errno) => self.execs.exec_failed(id, errno),
        }
    }

    fn order(&mut self, o: Order, procs: &impl Procs) -> Vec<Effect> {
        let relay = |sig| Effect::Signal(Target::All, sig);
        match o {
            Order::Go if self.payload == Payload::Held => {
                self.go = true;
                self.payload = Payload::Running;
                vec![Effect::Go]
            }
            // A second go finds nothing left to take: `leave` defers only before the first.
            Order::Go => {
                self.go = true;
                std::mem::take(&mut self.leaving)
            }
            Order::Grace => {
                self.grace = true;
                Vec::new()
            }
            Order::Signal(sig) => {
                let mut out = vec![relay(sig)];
                if cont_after(sig, self.stopped != Stopped::No) {
                    out.push(relay(Signal::CONT));
                }
                out
            }
            Order::Key(sig) => self.key(sig, procs),
            Order::Typed(Signal::INT) => vec![Effect::Report(Report::Interrupt { among: procs.front() })],
            Order::Typed(_) => Vec::new(),
            Order::Front(give) if self.cfg.terminal => vec![Effect::Foreground(self.front(give, procs))],
            Order::Front(_) => Vec::new(),
            Order::Stop => {
                self.stopped = Stopped::Halted;
                vec![relay(Signal::STOP), Effect::Report(Report::Halted)]
            }
            Order::Continue(how) => self.resume(how, procs),
        }
    }

    /// A key the caller's terminal sent snug's job (T2): to the payload's group, as that
    /// terminal would have sent it, or to every process when the payload is in init's own
    /// group (or gone); for ^C, whether anything there caught it (T3).
    fn key(&self, sig: Signal, procs: &impl Procs) -> Vec<Effect> {
        let group = self.payload_group(procs);
        let mut out = vec![Effect::Signal(group.map_or(Target::All, Target::Group), sig)];
        if sig == Signal::INT {
            out.push(Effect::Report(Report::Interrupt { among: group }));
        }
        out
    }

    /// A key's signal that reached init's group instead of the payload's (SPEC T2: one key,
    /// one signal, to the payload): the payload's own group gets it. A payload still in
    /// init's group got it itself; nothing else is a key's (a hangup's HUP is not).
    fn stray_key(&self, sig: Signal, procs: &impl Procs) -> Vec<Effect> {
        if !self.cfg.terminal || !matches!(sig, Signal::INT | Signal::QUIT | Signal::TSTP) {
            return Vec::new();
        }
        self.payload_group(procs).map(|g| Effect::Signal(Target::Group(g), sig)).into_iter().collect()
    }

    /// Continue after a stop: every process once (G6, T12), or the job at the terminal (T5).
    fn resume(&mut self, how: Resume, procs: &impl Procs) -> Vec<Effect> {
        self.stopped = Stopped::No;
        match how {
            Resume::All => vec![Effect::Signal(Target::All, Signal::CONT)],
            Resume::Job => {
                let mut out = vec![Effect::Signal(Target::OwnGroup, Signal::CONT)];
                out.extend(self.payload_group(procs).map(|g| Effect::Signal(Target::Group(g), Signal::CONT)));
                out
            }
        }
    }

    /// The payload's process group when it is not init's own.
    fn payload_group(&self, procs: &impl Procs) -> Option<Pid> {
        procs.pgrp(self.cfg.payload).filter(|g| *g != self.cfg.own_group)
    }

    /// The group to give the pty's foreground to: the payload's side (the group init took it
    /// from while that group lives, else the payload's group) or init's own.
    fn front(&mut self, give: bool, procs: &impl Procs) -> Pid {
        let mine = self.cfg.own_group;
        if give {
            let back = self.taken_from.take().filter(|g| procs.group_alive(*g));
            back.or_else(|| procs.pgrp(self.cfg.payload)).unwrap_or(mine)
        } else {
            if let Some(g) = procs.front().filter(|g| *g != mine) {
                self.taken_from = Some(g);
            }
            mine
        }
    }

    /// The payload's main process stopped, continued or ended.
    fn payload_status(&mut self, status: WaitStatus) -> Vec<Effect> {
        match status {
            // Only a terminal job stops with its payload (T5); detached, nothing acts on it
            // (B5). The stop of snug's own Order::Stop is no news: snug stops once, on Halted.
            WaitStatus::Stopped(sig) if self.cfg.terminal && self.stopped != Stopped::Halted => {
                self.stopped = Stopped::Job;
                vec![Effect::Report(Report::Stopped(sig))]
            }
            WaitStatus::Stopped(_) => Vec::new(),
            WaitStatus::Continued => {
                if self.stopped == Stopped::Job {
                    self.stopped = Stopped::No;
                }
                Vec::new()
            }
            WaitStatus::Exited(_) | WaitStatus::Signaled { .. } => self.payload_ended(status),
        }
    }

    fn payload_ended(&mut self, status: WaitStatus) -> Vec<Effect> {
        // Its exec error, written just before it exited, comes before its end (R4).
        let mut out = if self.exec_error_open { vec![Effect::ReadExecError] } else { Vec::new() };
        out.push(Effect::Report(Report::Exited(status)));
        if self.cfg.jobs == Jobs::Grace && !self.grace {
            // L4: what is left gets TERM; snug runs the grace from the report.
            out.push(Effect::Signal(Target::All, Signal::TERM));
            self.grace = true;
        }
        self.payload = Payload::Ended(status);
        if !self.grace {
            out.extend(self.leave(vec![Effect::Report(Report::Leaving), Effect::Exit(0)]));
        }
        out
    }

    /// `exit` (the effects that end init) now, or once snug's go came ([`Config::hold`]).
    fn leave(&mut self, exit: Vec<Effect>) -> Vec<Effect> {
        if self.go {
            return exit;
        }
        self.leaving = exit;
        Vec::new()
    }
}
