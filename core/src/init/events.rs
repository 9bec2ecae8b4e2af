//! What goes in and out of init's core: the events its loop decodes ([`Event`], with snug's
//! [`Order`]s), the effects it carries out ([`Effect`], with the [`Report`]s to snug), and
//! what it reads of the sandbox's processes ([`Procs`]).

use super::{ExecId, FromClient, ToClient};
pub use crate::types::Errno;
use crate::types::{Pid, Signal, WaitStatus};

pub use crate::orders::{Order, Resume};

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
    ExecError(Option<Errno>),
    /// `waitpid(2)` gave this child's status.
    Child(Pid, WaitStatus),
    /// `waitpid(2)` found no child at all (`ECHILD`): the sandbox is empty.
    NoChildren,
    /// A signal was delivered to init itself (read from its signalfd).
    Signal(Signal),
    /// A signal the sandbox's terminal sent init's own process group (`si_code` `SI_KERNEL`):
    /// a key snug typed into the pty while its foreground was still init's group, in the
    /// moment the payload's process takes it over (between its `setpgid` and `tcsetpgrp`).
    TerminalSignal(Signal),
    /// snug passed a new `snug exec` socket; the loop named it `ExecId`.
    ExecOpened(ExecId),
    /// A message on an exec socket.
    Client(ExecId, FromClient),
    /// The loop forked CMD for [`Effect::Spawn`]: its pid, or the `errno` that stopped it.
    Spawned(ExecId, Result<Pid, Errno>),
    /// CMD's exec-error pipe said this `errno`.
    CmdExecFailed(ExecId, Errno),
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
    ExecFailed(Errno),
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
    /// Read the payload's exec-error pipe now; what it says is the answer, decided on before
    /// the next effect ([`crate::carry`]), so that an exec error is reported before the end it
    /// caused (R4).
    ReadExecError,
    /// Whether a child's stop or continue raises SIGCHLD (`SA_NOCLDSTOP`, `sigaction(2)`);
    /// also whether `waitpid` asks for them ([`Init::stop_news`]).
    StopNews(bool),
    /// Exit with this code; the kernel then kills the rest of the sandbox (R5).
    Exit(i32),
    /// Fork `snug exec`'s CMD with the descriptors that came with its run request (L3);
    /// the result is the answer, [`Event::Spawned`].
    Spawn(ExecId),
    /// Open a pty from the sandbox's own `/dev/ptmx` and send its master to the exec's client
    /// (T1, L3): CMD's terminal is then a node of the sandbox's `/dev/pts`.
    OpenPty(ExecId),
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
