//! When keys move from the caller's terminal to the sandbox's pty (SPEC T14, T15).
//!
//! The rule: a key moves as soon as a program in the sandbox would get it without snug, and
//! stays in the caller's terminal otherwise.
//! - The sandbox's terminal is in non-canonical mode (ICANON off): the payload set it up to
//!   take keys one by one (an editor, a pager, a game, a TUI, a loop that polls for a key
//!   between sleeps with O_NONBLOCK, `poll`/`select` or `FIONREAD`), so keys go at once,
//!   whatever it is doing at that moment.
//! - In canonical mode: while any process of the pty's foreground group (not only its leader:
//!   the pager at the end of a shell's pipeline) is blocked reading a terminal, or waiting in
//!   `poll`/`select`/`epoll` with a terminal open ([`waiting`](super::waiting)).
//! - Nobody in the pty's foreground group (it is empty, or the pty has none) or no pty any
//!   more: the keys are the caller's shell's.
//!
//! Why: a key given to the pty cannot be taken back, and without snug a key typed while the
//! foreground never reads (during `snug -- sleep 2`, after the payload's last output) is read
//! by the caller's shell afterwards. Holding keys costs a program that asked for them nothing
//! except in the one case snug cannot tell from a program that never reads: canonical mode
//! with non-blocking checks between sleeps (such a program gets a key only if it happens to
//! be waiting in a `poll` when snug looks, every [`RECHECK`](super::RECHECK)). README's limits
//! say so.
//!
//! The flow-control keys (^S, ^Q) never wait: the caller's terminal keeps the pty's IXON and
//! acts on them itself ([`crate::tty::CallerTty::mirror`]).

use super::{waiting, Bridge, Event, RECHECK};
use rustix::io::Errno;
use rustix::termios::{self, LocalModes, SpecialCodeIndex};
use snug_core::Signal;
use std::time::Instant;

/// How often a line at the caller's terminal is looked at again while snug's job is in the
/// background and init holds the pty: that line is the front job's, which reads it soon.
const AWAY: std::time::Duration = std::time::Duration::from_millis(200);

impl Bridge {
    /// A key the caller's terminal turned into `sig` (ISIG, mirrored from the pty) while snug
    /// copies keys: the pty gets that key, so its line discipline signals its foreground group
    /// with the payload's own settings (T2). False when the pty has no such key.
    pub fn send_key(&mut self, sig: Signal) -> bool {
        let Some(key) = self.key_for(sig) else { return false };
        self.to_master.insert(0, key);
        self.write_master();
        true
    }

    /// Whether the pty makes `sig` from a key of its own (ISIG, and VINTR, VQUIT or VSUSP set),
    /// so that [`Bridge::send_key`] can type it.
    pub fn has_key(&self, sig: Signal) -> bool {
        self.key_for(sig).is_some()
    }

    fn key_for(&self, sig: Signal) -> Option<u8> {
        let index = match sig {
            Signal::INT => SpecialCodeIndex::VINTR,
            Signal::QUIT => SpecialCodeIndex::VQUIT,
            Signal::TSTP => SpecialCodeIndex::VSUSP,
            _ => return None,
        };
        let t = self.pty_settings().filter(|t| t.local_modes.contains(LocalModes::ISIG))?;
        Some(t.special_codes[index]).filter(|k| *k != 0)
    }

    /// Keys are pending: copy them if the module's rule says a program takes them now, else
    /// leave them in the caller's terminal and look again in [`RECHECK`].
    pub(super) fn offer_keys(&mut self, events: &mut Vec<Event>) {
        let session = self.pty_session();
        let Some(m) = &self.master else {
            self.held = Some(Instant::now() + RECHECK);
            return;
        };
        let settings = termios::tcgetattr(m).ok();
        let front = termios::tcgetpgrp(m).ok().map(crate::sys::process::from_rustix);
        let takes = front.is_some_and(|group| {
            // Init's own group (it leads the pty's session) reads no key: while it holds the
            // foreground, a key given to the pty would wake a payload's poll in the
            // background, whose read then stops it (SIGTTIN) as the hand-over goes on.
            if (self.init_leads && Some(group) == session) || !self.leader.lives(group) {
                return false;
            }
            let canonical = settings.as_ref().is_none_or(|t| t.local_modes.contains(LocalModes::ICANON));
            !canonical || waiting::group_waits(group, session)
        });
        if takes {
            if let Some(t) = &settings {
                self.tty.mirror(t);
            }
            self.read_tty(settings.as_ref(), events);
        } else {
            self.held = Some(Instant::now() + RECHECK);
        }
    }

    /// A line waits at the caller's terminal while init holds the pty's foreground: the
    /// payload is to get the pty if one of its processes waits for the terminal in
    /// `poll`/`select` (a read would have stopped it, which hands over, T13). Asked once;
    /// the hand-over ends the watch. Else the line stays the caller's shell's, looked at
    /// again in [`RECHECK`]; from the background (the line is for the job in front) only
    /// every [`AWAY`], without looking at the sandbox.
    pub(super) fn look_deferred(&mut self, events: &mut Vec<Event>) {
        if !self.tty.in_front() {
            self.held = Some(Instant::now() + AWAY);
            return;
        }
        if self.pty_session().is_some_and(waiting::session_waits) {
            self.deferred = false;
            events.push(Event::PayloadWaits);
        } else {
            self.held = Some(Instant::now() + RECHECK);
        }
    }

    /// The leader of the pty's session (host pid): asked once it has one, which it keeps
    /// for the run (init's, or a `snug exec` CMD's), so a key costs no `TIOCGSID` (B8).
    fn pty_session(&mut self) -> Option<snug_core::Pid> {
        if self.session.is_none() {
            self.session = self.master.as_ref().and_then(|m| crate::sys::fd::tty_session(m).ok().flatten());
        }
        self.session
    }

    /// Read the pending keys; `settings`: the pty's, as the rule just read them.
    fn read_tty(&mut self, settings: Option<&termios::Termios>, events: &mut Vec<Event>) {
        match rustix::io::read(self.tty.fd(), &mut self.scratch[..]) {
            Ok(n) if n > 0 => {
                let mut keys = self.scratch[..n].to_vec();
                let eof = settings.map_or(0, |t| t.special_codes[SpecialCodeIndex::VEOF]);
                self.tty.typed_ahead(&mut keys, if eof == 0 { 4 } else { eof });
                if let Some(t) = settings {
                    self.keys(t, &keys, events);
                }
                self.to_master = keys;
            }
            Err(Errno::AGAIN | Errno::INTR) => {}
            // EIO from the background (SIGTTIN is blocked): the job left the front, not a
            // hangup; stop reading until snug hands the terminal over again.
            Err(Errno::IO) if !self.tty.in_front() => self.input = false,
            _ => self.hang_up(events),
        }
    }

    pub(super) fn write_master(&mut self) {
        let Some(m) = &self.master else {
            self.to_master.clear();
            return;
        };
        match rustix::io::write(m, &self.to_master) {
            Ok(n) => {
                self.to_master.drain(..n);
            }
            Err(Errno::AGAIN | Errno::INTR) => {}
            Err(_) => self.to_master.clear(),
        }
    }

    /// The signals the pty's line discipline makes of `keys` under its settings `t`
    /// (`termios(3)`: ISIG, VINTR, VQUIT; VLNEXT under ICANON and IEXTEN quotes the next key).
    fn keys(&mut self, t: &termios::Termios, keys: &[u8], events: &mut Vec<Event>) {
        let lm = t.local_modes;
        if !lm.contains(LocalModes::ISIG) {
            return;
        }
        let cc = |i: SpecialCodeIndex| Some(t.special_codes[i]).filter(|c| *c != 0);
        let (intr, quit, lnext) =
            (cc(SpecialCodeIndex::VINTR), cc(SpecialCodeIndex::VQUIT), cc(SpecialCodeIndex::VLNEXT));
        let quoting = lm.contains(LocalModes::ICANON) && lm.contains(LocalModes::IEXTEN);
        for &k in keys {
            if std::mem::take(&mut self.lnext) {
                continue;
            }
            if Some(k) == intr {
                events.push(Event::Typed(Signal::INT));
            } else if Some(k) == quit {
                events.push(Event::Typed(Signal::QUIT));
            } else if quoting && Some(k) == lnext {
                self.lnext = true;
            }
        }
    }
}
