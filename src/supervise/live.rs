//! The supervisor as the control socket's host (SPEC L1–L4): `snug stop` and `snug signal`
//! enter the core exactly as a signal from a process does (G1–G6), and `snug exec` gets a
//! socket to init.

use super::SupervisorLoop;
use crate::live::server::Host;
use crate::signals::Delivered;
use anyhow::{anyhow, bail};
use rustix::fd::{AsFd, OwnedFd};
use snug_core::init::Jobs;

impl Host for SupervisorLoop {
    fn state(&self) -> &'static str {
        self.core.state()
    }

    fn init_pid(&self) -> Option<snug_core::Pid> {
        self.init().map(|i| i.host_pid)
    }

    fn signal(&mut self, sig: snug_core::Signal, from: Option<snug_core::Pid>) -> String {
        // `si_code` SI_USER (0): from a process, never a terminal key.
        self.on_delivered(Delivered { sig, code: 0, pid: from }, false);
        format!("{} sent", crate::signals::signame(sig))
    }

    fn stopping(&mut self) {
        self.record.stopping();
    }

    fn exec(&mut self) -> anyhow::Result<OwnedFd> {
        if let Some(why) = self.core.exec_refusal() {
            bail!(why);
        }
        if !self.chan_open {
            bail!("the sandbox is ending");
        }
        let (ours, theirs) = crate::sys::packet::pair().map_err(|e| anyhow!("socketpair: {e}"))?;
        match self.chan.exec(theirs.as_fd()) {
            Ok(true) => Ok(ours),
            Ok(false) => Err(anyhow!("the sandbox init is busy (stopped?)")),
            Err(e) => Err(anyhow!("the sandbox init is gone: {e}")),
        }
    }
}

impl SupervisorLoop {
    /// Attach this run's control socket (SPEC L1) and what `--jobs` asked (L4).
    pub fn live(mut self, server: Option<crate::live::server::Server>, jobs: Jobs) -> SupervisorLoop {
        self.control = server;
        self.core.set_jobs_grace(jobs == Jobs::Grace);
        self
    }

    /// Serve the control socket after a poll (`ready`: its entries of the poll set);
    /// `signalled`: the round read signals (see [`crate::live::server::Server::on_ready`]).
    pub(super) fn on_control(&mut self, ready: &[libc::pollfd], signalled: bool) {
        if let Some(mut s) = self.control.take() {
            s.on_ready(ready, signalled, self);
            self.control = Some(s);
        }
    }

    /// Tell stop callers how the run ended and remove the socket.
    pub(super) fn finish_control(&mut self, outcome: &super::Outcome) {
        if let Some(s) = self.control.take() {
            s.finish(outcome, self.record.end_note());
        }
    }
}
