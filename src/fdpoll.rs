//! Waiting on descriptors (`poll(2)`) through rustix: one place for the timeout arithmetic.

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
