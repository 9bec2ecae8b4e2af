//! Waiting on descriptors (`poll(2)`): [`PollSet`], the one shape of every poll set, whose
//! entries are named by a slot enum of the caller's own, and [`readable`] for one descriptor.

use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::Duration;

/// Whether `fd` polls readable (data, EOF, or an exited pidfd) within `within` (`None`:
/// forever). An interrupted or failed poll counts as not readable; callers loop on a deadline.
pub fn readable(fd: impl AsFd, within: Option<Duration>) -> bool {
    let mut set = PollSet::default();
    set.watch((), Some(fd.as_fd()), libc::POLLIN);
    set.poll(within).is_ok() && set.got(()) != 0
}

/// One round's `poll(2)` set of a loop, each entry named by a slot `S` (an enum of the
/// loop's): a slot whose descriptor is absent this round is simply not in the set, and a slot
/// may stand for several descriptors that a part of the loop polls as a group (the control
/// socket's connections). Entries keep the order they were added in.
pub struct PollSet<S> {
    fds: Vec<libc::pollfd>,
    slots: Vec<(S, Range<usize>)>,
}

impl<S> Default for PollSet<S> {
    fn default() -> Self {
        PollSet { fds: Vec::new(), slots: Vec::new() }
    }
}

impl<S: Copy + PartialEq> PollSet<S> {
    /// Watch `fd` for `events` (`POLLIN`, `POLLOUT`) as `slot`; `None`: not this round.
    pub fn watch(&mut self, slot: S, fd: Option<BorrowedFd<'_>>, events: i16) {
        if let Some(fd) = fd {
            self.add(slot, [libc::pollfd { fd: fd.as_raw_fd(), events, revents: 0 }]);
        }
    }

    /// Add `entries` as one slot: a part of the loop that polls a group of its own.
    pub fn add(&mut self, slot: S, entries: impl IntoIterator<Item = libc::pollfd>) {
        let at = self.fds.len();
        self.fds.extend(entries);
        self.slots.push((slot, at..self.fds.len()));
    }

    /// Wait until some entry has events, at most `within` rounded up to whole milliseconds
    /// (`None`: no bound).
    ///
    /// # Errors
    /// The `poll(2)` error (`EINTR`).
    pub fn poll(&mut self, within: Option<Duration>) -> std::io::Result<()> {
        let ms = within.map_or(-1, |d| d.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32);
        // SAFETY: pointer and length describe `fds`, borrowed mutably for the call; poll(2)
        // writes only their `revents`. A number that is no open descriptor gets POLLNVAL.
        let n = unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, ms) };
        match n {
            n if n < 0 => Err(std::io::Error::last_os_error()),
            _ => Ok(()),
        }
    }

    /// `slot`'s entries as the poll left them; none when it was not watched.
    pub fn entries(&self, slot: S) -> &[libc::pollfd] {
        self.slots.iter().find(|(s, _)| *s == slot).map_or(&[], |(_, r)| &self.fds[r.clone()])
    }

    /// The events `slot`'s descriptor got (`revents`); 0 when it was not watched.
    pub fn got(&self, slot: S) -> i16 {
        self.entries(slot).iter().fold(0, |all, p| all | p.revents)
    }

    /// The slots that got events, in the set's order.
    pub fn ready(&self) -> Vec<S> {
        self.slots.iter().filter(|(_, r)| self.fds[r.clone()].iter().any(|p| p.revents != 0)).map(|(s, _)| *s).collect()
    }
}
