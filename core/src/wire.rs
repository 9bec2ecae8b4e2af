//! The messages on snug's three links, one typed enum per direction, each with its one
//! encoding and decoding: the channel between snug and its sandbox init ([`FromInit`],
//! [`ToInit`]), the control socket of a live run ([`Control`]; its replies are text), and an
//! `exec` socket between `snug exec` and init ([`ExecAsk`], [`ExecTold`]). Both ends of every
//! link are the same binary, so the layout needs no version; a packet that decodes to
//! nothing is refused (it comes from a process snug does not trust, or is cut short).
//!
//! Most messages are one [`frame`]: a tag byte, then an i32 little-endian. Pure and
//! allocation-free: a child between fork and exec may encode (`signal-safety(7)`).

use crate::init::ToClient;
use crate::orders::{Order, Resume};
use crate::types::{Errno, Pid, Signal, WaitStatus};

#[cfg(test)]
mod tests;

/// The length of one frame, in bytes.
pub const FRAME: usize = 5;

/// `tag` and `value` as one frame.
pub const fn frame(tag: u8, value: i32) -> [u8; FRAME] {
    let v = value.to_le_bytes();
    [tag, v[0], v[1], v[2], v[3]]
}

/// The tag and value of a frame; `None` for bytes of any other length.
pub fn unframe(bytes: &[u8]) -> Option<(u8, i32)> {
    match *bytes {
        [tag, a, b, c, d] => Some((tag, i32::from_le_bytes([a, b, c, d]))),
        _ => None,
    }
}

/// The value of a frame tagged `tag`; `None` for another tag or shape.
pub fn value_of(bytes: &[u8], tag: u8) -> Option<i32> {
    unframe(bytes).filter(|&(t, _)| t == tag).map(|(_, v)| v)
}

/// Channel, init to snug. Each is a hint snug checks before acting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromInit {
    /// Init is up and leads the sandbox group; carries a pidfd of init.
    Hello,
    /// The payload was forked: its pid in the sandbox; carries a pidfd of it.
    Started(Pid),
    /// The payload stopped (terminal mode only: detached, nothing acts on it, B5): the stop
    /// signal. SIGTTIN or SIGTTOU while the hand-over is deferred: it needs its terminal.
    Stopped(Signal),
    /// A ^C reached the sandbox; true when it reached no handler: every process it was sent
    /// to ignored or blocked SIGINT, so a second one within 1 s is a force-quit (SPEC T3).
    Interrupt(bool),
    /// Every sandbox process was stopped on [`Order::Stop`] (T12).
    Halted,
    /// The payload's main process ended so (`waitpid(2)`).
    Exited(WaitStatus),
    /// After [`FromInit::Exited`] during a grace: the sandbox has no process left.
    Empty,
    /// The payload could not be executed: the `errno` of `execve(2)`.
    ExecFailed(Errno),
    /// Init itself failed: an `errno`.
    InitFailed(Errno),
    /// Init exits now, at the payload's end (SPEC R5): how many sandbox processes its exit
    /// kills, `None` when it could not count them (for `--report`, O5). A count past
    /// `i32::MAX` is sent as `None`.
    Leaving(Option<u32>),
}

impl FromInit {
    /// The message as one frame.
    pub fn encode(self) -> [u8; FRAME] {
        match self {
            FromInit::Hello => frame(1, 0),
            FromInit::Started(p) => frame(2, p.0),
            FromInit::Stopped(s) => frame(3, s.0),
            FromInit::Interrupt(u) => frame(4, u as i32),
            FromInit::Halted => frame(5, 0),
            FromInit::Exited(s) => frame(6, s.to_raw()),
            FromInit::Empty => frame(7, 0),
            FromInit::ExecFailed(e) => frame(8, e.0),
            FromInit::InitFailed(e) => frame(9, e.0),
            FromInit::Leaving(n) => frame(11, n.and_then(|n| i32::try_from(n).ok()).unwrap_or(-1)),
        }
    }

    /// The message in `b`; `None` for a packet that is not one frame or has no known tag.
    pub fn decode(b: &[u8]) -> Option<FromInit> {
        let (tag, v) = unframe(b)?;
        Some(match tag {
            1 => FromInit::Hello,
            2 => FromInit::Started(Pid(v)),
            3 => FromInit::Stopped(Signal(v)),
            4 => FromInit::Interrupt(v != 0),
            5 => FromInit::Halted,
            6 => FromInit::Exited(WaitStatus::from_raw(v)),
            7 => FromInit::Empty,
            8 => FromInit::ExecFailed(Errno(v)),
            9 => FromInit::InitFailed(Errno(v)),
            11 => FromInit::Leaving(u32::try_from(v).ok()),
            _ => return None,
        })
    }
}

/// Channel, snug to init: an order of snug's core, or a `snug exec` (SPEC L3), whose packet
/// carries one end of an `exec` socket. The exec is no decision of either core, so it is no
/// [`Order`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToInit {
    /// An order of snug's core.
    Order(Order),
    /// Start a command for `snug exec`.
    Exec,
}

impl ToInit {
    /// The message as one frame.
    pub fn encode(self) -> [u8; FRAME] {
        match self {
            ToInit::Order(Order::Go) => frame(1, 0),
            ToInit::Order(Order::Grace) => frame(2, 0),
            ToInit::Order(Order::Signal(sig)) => frame(3, sig.0),
            ToInit::Order(Order::Continue(Resume::Job)) => frame(4, 0),
            ToInit::Order(Order::Continue(Resume::All)) => frame(4, 1),
            ToInit::Order(Order::Key(sig)) => frame(5, sig.0),
            ToInit::Order(Order::Stop) => frame(6, 0),
            ToInit::Order(Order::Front(f)) => frame(7, f as i32),
            ToInit::Exec => frame(8, 0),
            ToInit::Order(Order::Typed(sig)) => frame(9, sig.0),
        }
    }

    /// The message in `b`; `None` for a packet that is not one frame or has no known tag.
    pub fn decode(b: &[u8]) -> Option<ToInit> {
        let (tag, v) = unframe(b)?;
        Some(match tag {
            1 => ToInit::Order(Order::Go),
            2 => ToInit::Order(Order::Grace),
            3 => ToInit::Order(Order::Signal(Signal(v))),
            4 => ToInit::Order(Order::Continue(if v == 0 { Resume::Job } else { Resume::All })),
            5 => ToInit::Order(Order::Key(Signal(v))),
            6 => ToInit::Order(Order::Stop),
            7 => ToInit::Order(Order::Front(v != 0)),
            8 => ToInit::Exec,
            9 => ToInit::Order(Order::Typed(Signal(v))),
            _ => return None,
        })
    }
}

/// Control socket, a client (`snug ps`, `stop`, `signal`, `exec`) to a live run (SPEC L1–L3).
/// The run answers in text: `ok`, `ok TEXT`, `err TEXT`, `J` + JSON (info), `ok` with an
/// `exec` socket (`SCM_RIGHTS`), and for a stop, `end TEXT` just before its snug exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Describe the run (for `ps`).
    Info,
    /// Relay a signal as if the client had sent it to snug; the run refuses one outside 1–64.
    Signal(Signal),
    /// Stop (TERM, or teardown with `now`), then wait for the end.
    Stop {
        /// Tear down at once instead of TERM and the grace.
        now: bool,
    },
    /// An `exec` socket to the sandbox init.
    Exec,
}

const INFO: u8 = b'I';
const SIGNAL: u8 = b'S';
const STOP: u8 = b'T';
const EXEC: u8 = b'E';

impl Control {
    /// Write the request into `buf`; its bytes.
    pub fn encode(self, buf: &mut [u8; FRAME]) -> &[u8] {
        let n = match self {
            Control::Info => {
                buf[0] = INFO;
                1
            }
            Control::Signal(sig) => {
                *buf = frame(SIGNAL, sig.0);
                FRAME
            }
            Control::Stop { now } => {
                buf[..2].copy_from_slice(&[STOP, u8::from(now)]);
                2
            }
            Control::Exec => {
                buf[0] = EXEC;
                1
            }
        };
        &buf[..n]
    }

    /// The request in `b`; `None` for anything else.
    pub fn decode(b: &[u8]) -> Option<Control> {
        match *b {
            [INFO] => Some(Control::Info),
            [SIGNAL, ..] => value_of(b, SIGNAL).map(|v| Control::Signal(Signal(v))),
            [STOP, now @ (0 | 1)] => Some(Control::Stop { now: now == 1 }),
            [EXEC] => Some(Control::Exec),
            _ => None,
        }
    }
}

/// Exec socket, `snug exec` to init (SPEC L3, T1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecAsk {
    /// At a terminal, first: a pty master from the sandbox's own `/dev/ptmx`, answered by
    /// [`ExecTold::Master`].
    OpenPty,
    /// Run CMD with the descriptors that come with this packet: stdin, stdout, stderr and a
    /// memfd of CMD's argv, and with `tty` a fifth, the pty's slave, which becomes CMD's
    /// controlling terminal.
    Run {
        /// A fifth descriptor is a pty's slave.
        tty: bool,
    },
    /// Signal CMD's process group.
    Kill(Signal),
}

const OPEN_PTY: u8 = b'O';
const RUN: u8 = b'R';
const KILL: u8 = b'K';
const FLAG_TTY: u8 = 1;

impl ExecAsk {
    /// Write the request into `buf`; its bytes.
    pub fn encode(self, buf: &mut [u8; FRAME]) -> &[u8] {
        let n = match self {
            ExecAsk::OpenPty => {
                *buf = frame(OPEN_PTY, 0);
                FRAME
            }
            ExecAsk::Run { tty } => {
                buf[..2].copy_from_slice(&[RUN, if tty { FLAG_TTY } else { 0 }]);
                2
            }
            ExecAsk::Kill(sig) => {
                *buf = frame(KILL, sig.0);
                FRAME
            }
        };
        &buf[..n]
    }

    /// The request in `b`; `None` for anything else.
    pub fn decode(b: &[u8]) -> Option<ExecAsk> {
        match *b {
            [RUN, flags] => Some(ExecAsk::Run { tty: flags & FLAG_TTY != 0 }),
            _ => match unframe(b)? {
                (OPEN_PTY, 0) => Some(ExecAsk::OpenPty),
                (KILL, v) => Some(ExecAsk::Kill(Signal(v))),
                _ => None,
            },
        }
    }
}

/// Exec socket, init to `snug exec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecTold {
    /// The answer to [`ExecAsk::OpenPty`]: an `errno`, 0 when the master comes with it
    /// (`SCM_RIGHTS`).
    Master(Errno),
    /// What became of CMD.
    Cmd(ToClient),
}

const MASTER: u8 = b'M';
const STARTED: u8 = b'P';
const FAILED: u8 = b'F';
const EXITED: u8 = b'X';
const STOPPED: u8 = b'Z';

impl ExecTold {
    /// The message as one frame.
    pub fn encode(self) -> [u8; FRAME] {
        match self {
            ExecTold::Master(e) => frame(MASTER, e.0),
            ExecTold::Cmd(ToClient::Started(pid)) => frame(STARTED, pid.0),
            ExecTold::Cmd(ToClient::Failed(e)) => frame(FAILED, e.0),
            ExecTold::Cmd(ToClient::Stopped(sig)) => frame(STOPPED, sig.0),
            ExecTold::Cmd(ToClient::Exited(status)) => frame(EXITED, status.to_raw()),
        }
    }

    /// The message in `b`; `None` for a packet that is not one frame or has no known tag.
    pub fn decode(b: &[u8]) -> Option<ExecTold> {
        let (tag, v) = unframe(b)?;
        Some(match tag {
            MASTER => ExecTold::Master(Errno(v)),
            STARTED => ExecTold::Cmd(ToClient::Started(Pid(v))),
            FAILED => ExecTold::Cmd(ToClient::Failed(Errno(v))),
            STOPPED => ExecTold::Cmd(ToClient::Stopped(Signal(v))),
            EXITED => ExecTold::Cmd(ToClient::Exited(WaitStatus::from_raw(v))),
            _ => return None,
        })
    }
}
