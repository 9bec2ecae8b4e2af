//! `snug exec` as init decides it (SPEC L3): each exec socket snug passes is one entry;
//! its client asks to run CMD, may signal it, and hears how it started, stopped and ended.

use super::{Effect, Errno, Target};
use crate::types::{Pid, Signal, WaitStatus};
use std::collections::BTreeMap;

/// The loop's name for one exec socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExecId(pub u32);

/// A message from a `snug exec` client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FromClient {
    /// Run CMD with the descriptors that came with the request; `tty`: one of them is a pty's
    /// slave, which becomes CMD's controlling terminal.
    Run { tty: bool },
    /// Open a pty in the sandbox for CMD, before its run request (T1).
    OpenPty,
    /// Signal CMD's process group.
    Kill(Signal),
    /// The client is gone (killed, or its terminal).
    Closed,
}

/// What init tells a `snug exec` client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToClient {
    /// CMD was forked: its pid in the sandbox.
    Started(Pid),
    /// CMD could not be started or executed: an `errno`.
    Failed(Errno),
    /// CMD, which has a pty, stopped with this signal: the client stops its own job (T5).
    Stopped(Signal),
    /// CMD ended so.
    Exited(WaitStatus),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// CMD's pid (leader of its own session and group), once forked.
    pid: Option<Pid>,
    /// CMD has a pty of its own: its stops are news.
    tty: bool,
}

/// The `snug exec` commands of one sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Execs {
    entries: BTreeMap<ExecId, Entry>,
    /// A CMD with a pty ran: init waits for stops too.
    pub(super) stops: bool,
}

/// The highest signal number `kill(2)` takes on Linux (`SIGRTMAX`).
const SIGMAX: i32 = 64;

impl Execs {
    pub(super) fn opened(&mut self, id: ExecId) -> Vec<Effect> {
        self.entries.insert(id, Entry { pid: None, tty: false });
        Vec::new()
    }

    pub(super) fn client(&mut self, id: ExecId, msg: FromClient) -> Vec<Effect> {
        let Some(e) = self.entries.get_mut(&id) else { return Vec::new() };
        match (msg, e.pid) {
            (FromClient::Run { tty }, None) => {
                e.tty = tty;
                vec![Effect::Spawn(id)]
            }
            // A pty from inside, whose slave the client sends back with its run request: only
            // before CMD runs (one client asks once; init owes nothing after).
            (FromClient::OpenPty, None) => vec![Effect::OpenPty(id)],
            (FromClient::Kill(sig), Some(pid)) if (1..=SIGMAX).contains(&sig.raw()) => {
                // CMD leads its own group in this namespace.
                vec![Effect::Signal(Target::Group(pid), sig)]
            }
            // The client is gone: CMD's session goes with it, as a run's sandbox goes with its
            // snug (K1); the entry stays until CMD is reaped.
            (FromClient::Closed, Some(pid)) => vec![Effect::Signal(Target::Session(pid), Signal::KILL)],
            (FromClient::Closed, None) => {
                self.entries.remove(&id);
                vec![Effect::Forget(id)]
            }
            (FromClient::Run { .. } | FromClient::OpenPty, Some(_)) | (FromClient::Kill(_), _) => Vec::new(),
        }
    }

    /// CMD was forked, or not; `news`: stops are already reported.
    pub(super) fn spawned(&mut self, id: ExecId, result: Result<Pid, Errno>, news: bool) -> Vec<Effect> {
        let Some(e) = self.entries.get_mut(&id) else { return Vec::new() };
        match result {
            Ok(pid) => {
                e.pid = Some(pid);
                let mut out = Vec::new();
                if e.tty {
                    // Stops of a CMD with a pty are news from now on, also in detached mode
                    // (B5 spares a run without one).
                    self.stops = true;
                    if !news {
                        out.push(Effect::StopNews(true));
                    }
                }
                out.push(Effect::ToClient(id, ToClient::Started(pid)));
                out
            }
            Err(errno) => {
                self.entries.remove(&id);
                vec![Effect::ToClient(id, ToClient::Failed(errno)), Effect::Forget(id)]
            }
        }
    }

    pub(super) fn exec_failed(&mut self, id: ExecId, errno: Errno) -> Vec<Effect> {
        match self.entries.get(&id) {
            Some(_) => vec![Effect::ToClient(id, ToClient::Failed(errno))],
            None => Vec::new(),
        }
    }

    /// A child of init that is not the payload changed state: if it is an exec'd CMD, tell
    /// its client; any other is an orphan init reaped, which nobody hears about.
    pub(super) fn reaped(&mut self, pid: Pid, status: WaitStatus) -> Vec<Effect> {
        let Some((&id, e)) = self.entries.iter().find(|(_, e)| e.pid == Some(pid)) else { return Vec::new() };
        match status {
            // Its client stops its own job and continues CMD on `fg` (T5).
            WaitStatus::Stopped(sig) if e.tty => vec![Effect::ToClient(id, ToClient::Stopped(sig))],
            WaitStatus::Stopped(_) | WaitStatus::Continued => Vec::new(),
            WaitStatus::Exited(_) | WaitStatus::Signaled { .. } => {
                self.entries.remove(&id);
                vec![Effect::ToClient(id, ToClient::Exited(status)), Effect::Forget(id)]
            }
        }
    }
}
