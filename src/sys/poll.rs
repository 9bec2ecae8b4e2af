//! Waiting on descriptors (`poll(2)`): through rustix with one place for the timeout
//! arithmetic, and [`PollSet`], the one shape of the loops' poll sets, whose entries are named
//! by a slot enum of each loop's own.

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::Duration;

/// `within` as a `poll(2)` timeout: `None` waits forever.
fn timeout(within: Option<Duration>) -> Option<Timespec> {
    within.map(|d| Timespec { tv_sec: d.as_secs() as _, tv_nsec: d.subsec_nanos() as _ })
}

/// Whether `fd` polls readable (data, EOF, or an exited pidfd) within `within` (`None`:
/// forever). An interrupted or failed poll counts as not readable; callers loop on a deadline.
pub fn readable(fd: impl AsFd, within: Option<Duration>) -> bool {
    let mut set = [PollFd::new(&fd, PollFlags::IN)];
    matches!(poll(&mut set, timeout(within).as_ref()), Ok(1))
}

/// `poll(2)` on `fds` as the kernel takes them: a negative descriptor is skipped. Waits at
/// most `timeout_ms` milliseconds (-1: forever); the number of entries with events.
///
/// # Errors
/// The `poll(2)` error (`EINTR`).
fn poll_raw(fds: &mut [libc::pollfd], timeout_ms: i32) -> std::io::Result<usize> {
    // SAFETY: pointer and length describe `fds`, borrowed mutably for the call; poll(2) writes
    // only their `revents`. A number that is not an open descriptor gets POLLNVAL, nothing more.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
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

    /// Wait at most `within` (`None`: forever, rounded up to whole milliseconds) until some
    /// entry has events.
    ///
    /// # Errors
    /// The `poll(2)` error (`EINTR`).
    pub fn poll(&mut self, within: Option<Duration>) -> std::io::Result<()> {
        let ms = within.map_or(-1, |d| d.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32);
        poll_raw(&mut self.fds, ms).map(|_| ())
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
