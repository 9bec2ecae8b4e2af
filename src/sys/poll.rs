//! Waiting on descriptors (`poll(2)`): through rustix with one place for the timeout
//! arithmetic, and [`poll_raw`] for the loops whose slots may be empty.

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::os::fd::AsFd;
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

/// Poll `fds` for reading within `within`; each entry gives whether that descriptor is
/// ready (readable, hung up or in error). `Err` for `EINTR` and other poll errors.
///
/// # Errors
/// The `poll(2)` error.
pub fn ready<const N: usize>(
    fds: [Option<std::os::fd::BorrowedFd<'_>>; N],
    within: Duration,
) -> std::io::Result<[bool; N]> {
    let present: Vec<(usize, std::os::fd::BorrowedFd<'_>)> =
        fds.iter().enumerate().filter_map(|(i, f)| f.map(|f| (i, f))).collect();
    let mut set: Vec<PollFd<'_>> = present.iter().map(|(_, f)| PollFd::new(f, PollFlags::IN)).collect();
    poll(&mut set, timeout(Some(within)).as_ref())?;
    let mut out = [false; N];
    for ((i, _), p) in present.iter().zip(&set) {
        out[*i] = !p.revents().is_empty();
    }
    Ok(out)
}

/// `poll(2)` on `fds` as the kernel takes them, for loops with fixed slots: a negative
/// descriptor marks an empty slot, which poll(2) skips. Waits at most `timeout_ms`
/// milliseconds (-1: forever); the number of entries with events.
///
/// # Errors
/// The `poll(2)` error (`EINTR`).
pub fn poll_raw(fds: &mut [libc::pollfd], timeout_ms: i32) -> std::io::Result<usize> {
    // SAFETY: pointer and length describe `fds`, borrowed mutably for the call; poll(2) writes
    // only their `revents`. A number that is not an open descriptor gets POLLNVAL, nothing more.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}
