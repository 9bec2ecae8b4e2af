//! Init's decisions. Init is the sandbox's pid 1 (snug's own binary, re-executed by bwrap
//! with `--as-pid-1`): it holds the payload until snug says go, carries out snug's orders
//! (relays, stops, continues, the pty's foreground), reaps every child, reports the
//! payload's stops and end, and runs `snug exec` commands.
//!
//! [`Init`] is everything init knows; [`Init::on`] takes one [`Event`] and returns the
//! [`Effect`]s to carry out, in order. Init's loop (`src/init/serve.rs` in the binary) only
//! decodes events from its descriptors and carries effects out. What init reads of other
//! processes (groups, the pty's foreground) comes in through [`Procs`], so a decision that
//! depends on it is still made here.

mod exec;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_exec;
#[cfg(test)]
mod tests_payload;

pub use exec::{ExecId, FromClient, ToClient};

use crate::types::{Pid, Signal, WaitStatus};
use exec::Execs;

/// What happens to the sandbox's other processes when the payload's main process exits
/// (`--jobs`, SPEC L4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jobs {
    /// Init exits at once, so the kernel kills them (R5).
    Kill,
    /// Init outlives the main process until the sandbox is empty (L4).
    Wait,
    /// They get SIGTERM and the grace (L4).
    Grace,
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
}

/// How [`Order::Continue`] continues the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// After a job stop at the terminal (T5): init's group and the payload's own group, so
    /// that jobs a shell inside stopped stay stopped (T6).
    Job,
    /// After [`Order::Stop`], or a CONT to a running snug: every sandbox process, once (G6, T12).
    All,
}

/// What snug tells init over the channel (the binary's `channel::Order`, typed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Let the payload exec: the network is up (N3).
    Go,
    /// A grace has started: when the payload ends, wait for the sandbox to empty (G2).
    Grace,
    /// Relay this signal to every sandbox process (G1, G6).
    Signal(Signal),
    /// A key the caller's terminal sent snug's job while the hand-over is deferred (T2).
    Key(Signal),
    /// Stop every sandbox process and say so (T12).
    Stop,
    /// Continue after a stop, or relay a CONT (T5, T12, G6).
    Continue(Resume),
    /// Give the pty's foreground to the payload's side (`give`) or take it for init's group
    /// (T1, T5, T8).
    Front { give: bool },
    /// A key snug copied to the pty that its line discipline turned into this signal (T2).
    Typed(Signal),
}

/// One thing init's loop saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The loop starts (the payload is forked and held, snug has init's hello).
    Start,
    /// An order from snug.
    Order(Order),
    /// snug's end of the channel is gone (or the channel failed).
    SnugGone,
    /// The payload's exec-error pipe said something: `Some(errno)` of a failed `execve(2)`,
    /// `None` at EOF (the exec happened, or the process died).
    ExecError(Option<i32>),
    /// `waitpid(2)` gave this child's status.
    Child(Pid, WaitStatus),
    /// `waitpid(2)` found no child at all (`ECHILD`): the sandbox is empty.
    NoChildren,
    /// A signal was delivered to init itself (read from its signalfd).
    Signal(Signal),
    /// snug passed a new `snug exec` socket; the loop named it `ExecId`.
    ExecOpened(ExecId),
    /// A message on an exec socket.
    Client(ExecId, FromClient),
    /// The loop forked CMD for [`Effect::Spawn`]: its pid, or the `errno` that stopped it.
    Spawned(ExecId, Result<Pid, i32>),
    /// CMD's exec-error pipe said this `errno`.
    CmdExecFailed(ExecId, i32),
}

/// Who a signal goes to (`kill(2)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every sandbox process but init: `kill(-1)` from the namespace's pid 1.
    All,
    /// Init's own process group: `kill(0)`.
    OwnGroup,
    /// Process group `pgrp`: `kill(-pgrp)`.
    Group(Pid),
    /// Every process of session `sid` (read from `/proc`), one `kill` each.
    Session(Pid),
}

/// What init tells snug (the binary's `channel::Report`, typed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// The payload stopped at the terminal with this signal (T5).
    Stopped(Signal),
    /// A ^C reached `among` (a process group; `None`: every sandbox process). The loop
    /// says, measured after the signal went out, whether every process there ignored or
    /// blocked SIGINT (T3).
    Interrupt { among: Option<Pid> },
    /// Every sandbox process was stopped on [`Order::Stop`] (T12).
    Halted,
    /// The payload's main process ended so (R3).
    Exited(WaitStatus),
    /// After the payload's end, during a grace: no sandbox process is left (G2).
    Empty,
    /// The payload could not be executed: the `errno` of `execve(2)` (R4).
    ExecFailed(i32),
    /// Init exits now; the loop counts the processes its exit kills (O5).
    Leaving,
}

/// One thing for init's loop to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Let the held payload exec: one byte on its go pipe, then close it (N3).
    Go,
    /// Send a signal (`kill(2)`).
    Signal(Target, Signal),
    /// Tell snug.
    Report(Report),
    /// Make this group the sandbox pty's foreground (`tcsetpgrp(3)`).
    Foreground(Pid),
    /// Read the payload's exec-error pipe now, and hand what it says to [`Init::on`] before
    /// the next effect, so that an exec error is reported before the end it caused (R4).
    ReadExecError,
    /// Whether a child's stop or continue raises SIGCHLD (`SA_NOCLDSTOP`, `sigaction(2)`);
    /// also whether `waitpid` asks for them ([`Init::stop_news`]).
    StopNews(bool),
    /// Exit with this code; the kernel then kills the rest of the sandbox (R5).
    Exit(i32),
    /// Fork `snug exec`'s CMD with the descriptors that came with its run request (L3);
    /// the result comes back as [`Event::Spawned`].
    Spawn(ExecId),
    /// Tell a `snug exec` client.
    ToClient(ExecId, ToClient),
    /// Close an exec's socket and pipe: it is done.
    Forget(ExecId),
}

/// What init reads of the sandbox's processes from its `/proc` and its pty.
pub trait Procs {
    /// The process group of `pid`; `None` once it is gone.
    fn pgrp(&self, pid: Pid) -> Option<Pid>;
    /// The pty's foreground group (`tcgetpgrp(3)`); `None` without one.
    fn front(&self) -> Option<Pid>;
    /// Whether some sandbox process is in group `pgrp`.
    fn group_alive(&self, pgrp: Pid) -> bool;
}

/// The payload's main process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Forked and waiting for [`Order::Go`] before its exec (N3).
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
            Event::Start if !self.cfg.terminal => vec![Effect::StopNews(false)],
            Event::Start | Event::Signal(_) => Vec::new(),
            Event::Order(o) => self.order(o, procs),
            Event::SnugGone => vec![Effect::Exit(1)],
            Event::ExecError(said) => {
                self.exec_error_open = false;
                said.map(|e| Effect::Report(Report::ExecFailed(e))).into_iter().collect()
            }
            Event::Child(pid, status) if pid == self.cfg.payload => self.payload_status(status),
            Event::Child(pid, status) => self.execs.reaped(pid, status),
            Event::NoChildren => match self.payload {
                Payload::Ended(_) => vec![Effect::Report(Report::Empty), Effect::Exit(0)],
                Payload::Held | Payload::Running => Vec::new(),
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
                self.payload = Payload::Running;
                vec![Effect::Go]
            }
            Order::Go => Vec::new(),
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
            Order::Key(sig) => {
                // As the caller's terminal would have sent it: to the payload's group, or to
                // every process when the payload is in init's own group (or gone).
                let group = self.payload_group(procs);
                let mut out = vec![Effect::Signal(group.map_or(Target::All, Target::Group), sig)];
                if sig == Signal::INT {
                    out.push(Effect::Report(Report::Interrupt { among: group }));
                }
                out
            }
            Order::Typed(Signal::INT) => vec![Effect::Report(Report::Interrupt { among: procs.front() })],
            Order::Typed(_) => Vec::new(),
            Order::Front { give } if self.cfg.terminal => vec![Effect::Foreground(self.front(give, procs))],
            Order::Front { .. } => Vec::new(),
            Order::Stop => {
                self.stopped = Stopped::Halted;
                vec![relay(Signal::STOP), Effect::Report(Report::Halted)]
            }
            Order::Continue(how) => {
                self.stopped = Stopped::No;
                match how {
                    Resume::All => vec![relay(Signal::CONT)],
                    Resume::Job => {
                        let mut out = vec![Effect::Signal(Target::OwnGroup, Signal::CONT)];
                        out.extend(self.payload_group(procs).map(|g| Effect::Signal(Target::Group(g), Signal::CONT)));
                        out
                    }
                }
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
        if self.grace {
            self.payload = Payload::Ended(status);
        } else {
            out.extend([Effect::Report(Report::Leaving), Effect::Exit(0)]);
        }
        out
    }
}
