//! Closing descriptors whose last close would make snug wait: the kernel closes them later,
//! on its own worker, while snug goes on and exits.
//!
//! The last close of an emptied, removed directory frees its inode and its data block; on a
//! filesystem mounted with `discard` (ext4 with `-o discard`, as some VMs' root filesystems
//! are) that waits for the device to acknowledge the discard, 0.2 to several ms each, in the
//! closing task (`ext4_free_blocks` → `blkdev_issue_discard` → `submit_bio_wait`). A
//! protected path's placeholder is such a directory (SPEC P8), and its removal was most of
//! what snug's end cost in a DIR that lacks them (B1).
//!
//! How: the descriptors go, with one end of a socket pair, in one `SCM_RIGHTS` message into
//! that same end's receive queue (`unix(7)`), and both ends are closed. What is left is a
//! cycle only descriptors in flight refer to, which the kernel's garbage collector for unix
//! sockets finds and frees (`net/unix/garbage.c`): on a workqueue in recent kernels (6.18
//! here; measured: the close returns in some 40 µs, the lock goes some ms later), where each
//! last `fput` is finished by a kernel worker (`delayed_fput`), never by snug. Where the
//! collector runs in the closing task instead, that is the same wait as a plain close, no
//! worse. What the descriptors hold (a `flock(2)`, the inode) is let go when that worker
//! gets to them: a few ms after, never before, snug's own close would have.

use rustix::net::{self, AddressFamily, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType};
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// At most this many descriptors go in one message (below `SCM_MAX_FD`, 253, `unix(7)`).
const MOST: usize = 64;

/// Close `fds`, letting the kernel finish the last close of each later (see the module).
/// When the message cannot be sent (no socket, too many), they are closed here, now.
pub fn close_later(fds: Vec<OwnedFd>) {
    if fds.is_empty() {
        return;
    }
    if fds.len() > MOST {
        return; // dropped: closed now
    }
    let Ok((a, b)) = net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None) else {
        return;
    };
    let mut all: Vec<BorrowedFd<'_>> = vec![b.as_fd()];
    all.extend(fds.iter().map(|f| f.as_fd()));
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MOST + 1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if control.push(SendAncillaryMessage::ScmRights(&all)) {
        let _ = net::sendmsg(&a, &[IoSlice::new(b"x")], &mut control, SendFlags::NOSIGNAL | SendFlags::DONTWAIT);
    }
    // The message holds its own references: these closes are not the last ones.
    drop(all);
    drop(fds);
    drop(b);
    drop(a);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{flock, mkdir, open, rmdir, FlockOperation, Mode, OFlags};

    /// P8, B1: a descriptor closed this way lets its `flock(2)` go: the kernel finished its
    /// last close, nothing leaked. With the descriptors kept instead of dropped after the
    /// send, the lock was never let go and the test failed.
    #[test]
    fn p8_closed_later_lets_its_lock_go() {
        let t = tempfile::tempdir().expect("tempdir");
        let dir = t.path().join("placeholder");
        mkdir(&dir, Mode::from_raw_mode(0o700)).expect("mkdir");
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let held = open(&dir, flags, Mode::empty()).expect("open");
        let probe = open(&dir, flags, Mode::empty()).expect("open");
        flock(&held, FlockOperation::LockShared).expect("flock");
        assert!(flock(&probe, FlockOperation::NonBlockingLockExclusive).is_err(), "held shared");
        rmdir(&dir).expect("rmdir");
        close_later(vec![held]);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while flock(&probe, FlockOperation::NonBlockingLockExclusive).is_err() {
            assert!(std::time::Instant::now() < until, "the lock was never let go: the descriptor leaked");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
