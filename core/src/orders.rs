//! What snug orders init over the channel: the one vocabulary the two cores share. The
//! supervisor's core decides these ([`crate::supervisor::Effect::Order`]), init's core acts on
//! them ([`crate::init::Event::Order`]); the binary's channel only encodes them.

use crate::types::Signal;

/// How [`Order::Continue`] continues the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// After a job stop at the terminal (T5): init's group and the payload's own group, so
    /// that jobs a shell inside stopped stay stopped (T6).
    Job,
    /// After [`Order::Stop`], or a CONT to a running snug: every sandbox process, once (G6, T12).
    All,
}

/// One order from snug to init.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Let the payload exec: the network is up (N3).
    Go,
    /// A grace has started: when the payload ends, wait for the sandbox to empty (G2).
    Grace,
    /// Relay this signal to every sandbox process: init sends it with `kill(-1, sig)`, which
    /// from the namespace's pid 1 reaches all its processes in every group and session, and
    /// nothing outside (`kill(2)`, `pid_namespaces(7)`) (G1, G6).
    Signal(Signal),
    /// A key the caller's terminal sent snug's job while the hand-over is deferred: init
    /// sends its signal to the payload's process group; for INT it says whether anything
    /// caught it (T2, T13).
    Key(Signal),
    /// Stop every sandbox process (SIGSTOP, which a payload cannot ignore; TSTP would be
    /// discarded for the sandbox's orphaned group in detached mode), then say so (T12).
    Stop,
    /// Continue after a stop, or relay a CONT (T5, T12, G6).
    Continue(Resume),
    /// Give the pty's foreground to the payload's side (true: the group that had it when
    /// init took it, else the payload's group) or take it for init's own group (false), so
    /// that a payload reading its terminal while snug's job is in the background stops
    /// (T1, T5, T8).
    Front(bool),
    /// A key snug copied to the pty that its line discipline turns into this signal (T2);
    /// for INT init says whether the pty's foreground caught it (T3).
    Typed(Signal),
}
