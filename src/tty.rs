//! The caller's terminal in terminal mode (SPEC R2, T1, T5, T7, T8, T11).
//!
//! Why the sandbox gets a pty of its own rather than the caller's terminal: the kernel applies
//! job control to a terminal only inside its session (`__tty_check_change` returns 0 for a
//! process whose controlling terminal is another), and a descriptor cannot be revoked. A
//! sandbox process holding the caller's terminal that calls `setsid(2)` or `TIOCNOTTY` is
//! then under no job control at all and reads what the person types to their shell, and no
//! trap on ioctls closes that (it races, and misses what it does not list). So no sandbox
//! process ever gets a descriptor of the caller's terminal: snug alone holds it, through a
//! description of its own, and copies bytes to and from the sandbox's pty (`pty(7)`), as
//! sudo's `use_pty`, ssh and `docker -t` do.
//!
//! snug never calls `tcsetpgrp(3)` on the caller's terminal: its job stays whatever the
//! caller's shell made it. It reads the terminal only while its job is the foreground (and
//! with SIGTTIN blocked, so a read that loses that race fails with EIO instead of stopping
//! the job), and changes its settings only then.

use crate::log::log;
use crate::sys::fds::TtyFds;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

mod shared;
mod typeahead;
use rustix::fs::{Mode, OFlags};
use rustix::termios::{self, OptionalActions, Termios, Winsize};

/// snug's own description of its controlling terminal, and what snug changed on it.
pub struct CallerTty {
    fd: OwnedFd,
    /// The settings before snug went raw, and the raw ones snug set; `None` while cooked.
    raw: Option<(Termios, Termios)>,
    /// Keeps OPOST in raw mode: stdout is not the terminal, so other writers to it (the
    /// caller's pipeline, snug's own `snug: ` lines) still get their newlines translated.
    keep_opost: bool,
    keeper: Option<crate::keeper::Keeper>,
    /// The record the snugs sharing this terminal agree on (T16), once [`CallerTty::share`]d.
    record: Option<shared::Record>,
    /// snug's own process group: snug never leaves it, and asking on every write to the
    /// terminal whether it is in front cost a system call of its own (B8).
    own_group: rustix::process::Pid,
    /// The keys typed under ICANON before the last switch to raw ([`typeahead`]).
    typeahead: typeahead::Typeahead,
}

impl CallerTty {
    /// Open `/dev/tty` (`tty(4)`): it opens exactly when snug has a controlling terminal.
    /// Its own description, non-blocking, so that no flag snug needs is ever set on the
    /// caller's descriptions (a shared O_NONBLOCK would break the caller's shell).
    pub fn open() -> Option<CallerTty> {
        let flags = OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::open("/dev/tty", flags, Mode::empty()).ok()?;
        let keep_opost = !is_it(rustix::stdio::stdout());
        let own_group = rustix::process::getpgrp();
        let typeahead = typeahead::Typeahead::default();
        Some(CallerTty { fd, raw: None, keep_opost, keeper: None, record: None, own_group, typeahead })
    }

    /// Keep this terminal's shared record (T16, [`shared`]) in `dir`, this user's runtime
    /// directory; a directory that is not private to this user is not used.
    pub fn share(&mut self, dir: &Path) {
        self.record = shared::Record::at(dir);
    }

    /// Which of fds 0–2 are this terminal.
    pub fn stdio_mask(&self) -> TtyFds {
        let fds = [rustix::stdio::stdin(), rustix::stdio::stdout(), rustix::stdio::stderr()];
        TtyFds::of(|n| is_it(fds[n as usize]))
    }

    /// The descriptor, to poll, read and write.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Whether snug's job is the terminal's foreground group now (`tcgetpgrp(3)`).
    pub fn in_front(&self) -> bool {
        termios::tcgetpgrp(&self.fd).is_ok_and(|p| p == self.own_group)
    }

    /// The terminal's settings now (`tcgetattr(3)`, allowed from the background).
    pub fn settings(&self) -> Option<Termios> {
        termios::tcgetattr(&self.fd).ok()
    }

    /// The caller's own settings snug saved when it went raw.
    pub fn saved(&self) -> Option<&Termios> {
        self.raw.as_ref().map(|(saved, _)| saved)
    }

    /// The terminal's window size.
    pub fn size(&self) -> Option<Winsize> {
        termios::tcgetwinsize(&self.fd).ok()
    }

    /// The settings snug gives the caller's terminal while it copies keys: raw (`cfmakeraw`,
    /// `termios(3)`), except that the signal keys of the sandbox's terminal (`pty`: ISIG,
    /// VINTR, VQUIT, VSUSP, NOFLSH) stay signal keys here. So ^C, ^\ and ^Z reach snug's job
    /// (and snug, which passes them on to the pty) without snug reading a byte, and keys the
    /// payload does not wait for stay unread (T2, T14). The pty's output flow control (IXON,
    /// IXANY, VSTART, VSTOP) stays too: ^S pauses the caller's terminal itself at once, and
    /// snug's writes to it then wait (back-pressure), whether or not the payload reads (T15).
    fn bridged(&self, saved: &Termios, pty: Option<&Termios>) -> Termios {
        use rustix::termios::{InputModes as In, LocalModes as L, SpecialCodeIndex as I};
        let mut raw = saved.clone();
        raw.make_raw();
        if self.keep_opost {
            raw.output_modes |= termios::OutputModes::OPOST;
        }
        raw.input_modes -= In::IXANY;
        if let Some(p) = pty.or(Some(saved)).filter(|p| p.input_modes.contains(In::IXON)) {
            raw.input_modes |= p.input_modes & (In::IXON | In::IXANY);
            for i in [I::VSTART, I::VSTOP] {
                raw.special_codes[i] = p.special_codes[i];
            }
        }
        if let Some(p) = pty.filter(|p| p.local_modes.contains(L::ISIG)) {
            raw.local_modes |= L::ISIG | (p.local_modes & L::NOFLSH);
            for i in [I::VINTR, I::VQUIT, I::VSUSP] {
                raw.special_codes[i] = p.special_codes[i];
            }
        }
        raw
    }

    /// Keys just read (the next bytes of the terminal's input): an end of file typed ahead
    /// under ICANON becomes `eof`, the sandbox pty's VEOF key ([`typeahead`]).
    pub fn typed_ahead(&mut self, keys: &mut [u8], eof: u8) {
        self.typeahead.translate(keys, eof);
    }

    /// Follow the sandbox terminal's signal keys (the payload went raw, or changed `intr`):
    /// the caller's terminal is set again when they differ from what snug set.
    pub fn mirror(&mut self, pty: &Termios) {
        let Some((saved, now)) = &self.raw else { return };
        let want = self.bridged(saved, Some(pty));
        if same(&want, now) || !self.in_front() {
            return;
        }
        if termios::tcsetattr(&self.fd, OptionalActions::Now, &want).is_ok() {
            let want = self.settings().unwrap_or(want);
            let saved = saved.clone();
            if let Some(k) = &self.keeper {
                k.raw(&saved, &want);
            }
            if let Some(r) = &self.record {
                r.with(|c| c.hold(&want));
            }
            self.raw = Some((saved, want));
        }
    }

    /// Raw mode ([`CallerTty::bridged`] for the pty's settings `pty`), only while snug's job
    /// is in front; the settings before are saved for [`CallerTty::cooked`] and for the keeper
    /// (T7). TCSADRAIN: output the caller queued is written in the old settings. True when raw.
    pub fn go_raw(&mut self, pty: Option<&Termios>) -> bool {
        if let Some((_, raw)) = &self.raw {
            // Raw already, unless the caller's shell put its own settings back while snug sat
            // stopped by a SIGSTOP it never saw coming: then raw again, in front only.
            if self.settings().is_some_and(|now| !same(&now, raw)) && self.in_front() {
                let _ = termios::tcsetattr(&self.fd, OptionalActions::Drain, raw);
            }
            return true;
        }
        if self.settings().is_none() || !self.in_front() {
            return false; // a background job never changes the caller's terminal (T8)
        }
        if self.keeper.is_none() {
            self.keeper = crate::keeper::Keeper::start(self.fd.as_fd());
            log!("terminal keeper started (restores the terminal if snug is killed, T7)");
        }
        let Some((saved, raw, ahead)) = self.take(pty) else { return false };
        self.typeahead = ahead;
        if let Some(k) = &self.keeper {
            k.raw(&saved, &raw);
        }
        log!("caller's terminal: raw");
        self.raw = Some((saved, raw));
        true
    }

    /// Save the caller's settings and set [`CallerTty::bridged`] ones (TCSADRAIN: output the
    /// caller queued is written in the old settings), under the shared record: found in the
    /// raw settings of another snug that holds the terminal, the caller's settings are the
    /// record's (T16). The saved and the raw settings, as the kernel kept them (it may drop
    /// flags it does not support): that is what the keeper and the restore compare with; and
    /// the keys typed ahead under ICANON.
    fn take(&self, pty: Option<&Termios>) -> Option<(Termios, Termios, typeahead::Typeahead)> {
        let step = |mut c: Option<&mut shared::Content>| {
            let now = self.settings()?;
            let mut saved = now.clone();
            match c.as_deref_mut() {
                Some(c) if c.others_raw(&now) => {
                    if let Some(o) = &c.original {
                        crate::keeper::decode_onto(&mut saved, o);
                    }
                }
                Some(c) => c.original = Some(crate::keeper::encode(&now)),
                None => {}
            }
            let raw = self.bridged(&saved, pty);
            let cooked = typeahead::Typeahead::before(&self.fd, &now);
            termios::tcsetattr(&self.fd, OptionalActions::Drain, &raw).ok()?;
            let ahead = typeahead::Typeahead::after(&self.fd, cooked);
            let raw = self.settings().unwrap_or(raw);
            if let Some(c) = c {
                c.hold(&raw);
            }
            Some((saved, raw, ahead))
        };
        match &self.record {
            Some(r) => r.with(|c| step(Some(c))).unwrap_or_else(|| step(None)),
            None => step(None),
        }
    }

    /// The caller's settings back, if snug's raw settings are still in place (a program that
    /// changed them since keeps its change, T7). Before stopping, dying, printing an error and
    /// at exit.
    pub fn cooked(&mut self) {
        let Some((saved, raw)) = self.raw.take() else { return };
        if let Some(k) = &self.keeper {
            k.cooked();
        }
        // Another snug still holding the terminal raw gets its raw settings back rather
        // than the caller's (T16).
        let give = |c: Option<&mut shared::Content>| {
            let mut to = saved.clone();
            if let Some(c) = c {
                c.release();
                if let Some(last) = c.holders.last() {
                    crate::keeper::decode_onto(&mut to, &last.raw);
                }
            }
            if self.settings().is_some_and(|now| same(&now, &raw)) {
                let _ = termios::tcsetattr(&self.fd, OptionalActions::Drain, &to);
            }
        };
        match &self.record {
            Some(r) => r.with(|c| give(Some(c))).unwrap_or_else(|| give(None)),
            None => give(None),
        }
        log!("caller's terminal: cooked (its own settings back)");
    }
}

impl Drop for CallerTty {
    fn drop(&mut self) {
        self.cooked();
    }
}

/// Whether `fd` is snug's controlling terminal (any description of it): `TIOCGSID` answers
/// only for the caller's own controlling terminal (`tty_ioctl(4)`); a device number would
/// not do, as `/dev/tty` itself is another node. Such an fd 0–2 becomes the sandbox
/// terminal's slave (R2).
fn is_it(fd: BorrowedFd<'_>) -> bool {
    crate::sys::fd::tty_session(fd).is_ok()
}

/// Whether two settings agree on every flag and control character (speeds aside).
pub fn same(a: &Termios, b: &Termios) -> bool {
    crate::keeper::encode(a) == crate::keeper::encode(b)
}
