//! Packets with descriptors over `SOCK_SEQPACKET` Unix sockets (`unix(7)`), through rustix:
//! a connected pair, one packet sent or received with its `SCM_RIGHTS`. Packets keep message
//! boundaries, so a request is read whole or refused. The control socket, init's exec
//! sockets and the network helper's link use them.

use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{
    self, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;

/// Largest request or reply, in bytes: a tag and a little data, or one `ps` line as JSON.
pub const MAX_PACKET: usize = 4096;
/// Most descriptors one packet carries (`exec`: stdin, stdout, stderr, argv).
pub const MAX_FDS: usize = 4;

/// A connected close-on-exec pair (`socketpair(2)`).
///
/// # Errors
/// The `socketpair(2)` error.
pub fn pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    Ok(net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)?)
}

/// Send one packet with `fds` as `SCM_RIGHTS`; never raises SIGPIPE.
///
/// # Errors
/// The `sendmsg(2)` error (`EAGAIN` on a full non-blocking socket, `EPIPE` when the peer left).
pub fn send(fd: BorrowedFd<'_>, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> std::io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(Errno::INVAL.into());
    }
    let flags = SendFlags::NOSIGNAL | SendFlags::DONTWAIT;
    loop {
        match net::sendmsg(fd, &[IoSlice::new(bytes)], &mut control, flags) {
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => return Ok(()),
        }
    }
}

/// What one receive gave.
pub enum Got {
    /// A packet of at most [`MAX_PACKET`] bytes and the descriptors that came with it.
    Packet(Vec<u8>, Vec<OwnedFd>),
    /// A packet larger than [`MAX_PACKET`] (cut by the kernel): refused whole.
    TooLong,
    /// Nothing waits (non-blocking).
    Empty,
    /// The peer closed its end (or the socket failed).
    Closed,
}

/// Receive one packet, without waiting. Descriptors arrive close-on-exec; more than
/// [`MAX_FDS`] are cut by the kernel (`MSG_CTRUNC`) and the packet is refused as too long.
pub fn recv(fd: BorrowedFd<'_>) -> Got {
    let mut buf = [0u8; MAX_PACKET];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let flags = RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT;
    let got = loop {
        match net::recvmsg(fd, &mut [IoSliceMut::new(&mut buf)], &mut control, flags) {
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => return Got::Empty,
            Err(_) => return Got::Closed,
            Ok(m) => break m,
        }
    };
    let mut fds = Vec::new();
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(it) = msg {
            fds.extend(it);
        }
    }
    let cut = got.flags.contains(net::ReturnFlags::TRUNC) || got.flags.contains(net::ReturnFlags::CTRUNC);
    if cut {
        return Got::TooLong;
    }
    if got.bytes == 0 {
        return Got::Closed;
    }
    Got::Packet(buf[..got.bytes].to_vec(), fds)
}

/// Wait up to `ms` milliseconds (-1: no bound) for `fd` to be readable; true when it is (or
/// hung up).
pub fn readable(fd: BorrowedFd<'_>, ms: i32) -> bool {
    let mut set = super::poll::PollSet::default();
    set.watch((), Some(fd), libc::POLLIN);
    while let Err(e) = set.poll(u64::try_from(ms).ok().map(std::time::Duration::from_millis)) {
        if e.kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
    set.got(()) != 0
}

/// Wait up to `ms` for one packet on `fd`.
pub fn recv_within(fd: BorrowedFd<'_>, ms: i32) -> Got {
    if !readable(fd, ms) {
        return Got::Empty;
    }
    recv(fd)
}
