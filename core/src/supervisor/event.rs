//! The words between the loop and the core: what happened ([`Event`]), what to do
//! ([`Effect`], [`Order`]), and the facts the loop reads at decode time ([`Tty`], [`Origin`]).

use super::{Action, EndedBy};
use crate::types::{Errno, Pid, Signal, WaitStatus};
use std::time::{Duration, Instant};

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
    /// `together`: read from the signalfd in the same read as the signal before it, with a
    /// SIGCONT, so it was sent while snug was stopped, before it could act on that one.
    Signal { sig: Signal, origin: Origin, together: bool, tty: Tty },
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
    ExecFailed(Errno),
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
    /// While init holds the pty's foreground (deferred), a line was typed at the caller's
    /// terminal and a payload process waits for its terminal in `poll`/`select`, which stops
    /// no background process as a read does (T13, T15); `tty`: the caller's terminal now.
    PayloadWaits { tty: Tty },
    /// The answer to [`Effect::Raw`]: whether the caller's terminal is raw now.
    Raw(bool),
    /// The answer to [`Effect::StopSelf`]: snug was continued after `paused`.
    Woke { paused: Duration },
    /// Time passed: look at the deadlines (grace, `--timeout`).
    Tick,
}

pub use crate::orders::{Order, Resume};

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
    /// What [`super::relay::decide`] made of a signal (for `-v` and `--report`, O4, O5).
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
    /// An INT/TERM/HUP during the grace that is no second request: pending with the signal
    /// that started the grace (relayed), or a hangup (the shell's relayed, the terminal's
    /// not); the grace runs on (G4, T10).
    UnderGrace(Signal),
    /// Under `nohup` a hangup does not end the run (S2, T10).
    HangupIgnored,
    /// The caller's window changed: copied to the pty (T1).
    WindowCopied,
    /// A typed key passed to the pty as its key (T2).
    KeyTyped(Signal),
    /// A ^C reached a handler: no force-quit (T3).
    InterruptCaught,
    /// A ^C reached no handler: the next within [`super::FORCE_QUIT`] is a force-quit (T3).
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
