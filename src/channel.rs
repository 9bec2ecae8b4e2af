//! The channel between snug and its sandbox init: a `SOCK_SEQPACKET` socketpair
//! (`unix(7)`), one [`snug_core::wire`] frame per packet, pidfds passed with `SCM_RIGHTS`.
//!
//! Messages come from inside the sandbox; snug treats each as a hint it checks before
//! acting (docs/design.md, "The channel").

use rustix::io::Errno;
use rustix::net::{
    recvmsg, sendmmsg, sendmsg, MMsgHdr, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

mod outbox;
pub use outbox::Outbox;

/// The fixed descriptor numbers, kept where callers of the channel have always found them.
pub use crate::sys::fds::{INIT_FD, PTY_FD, SECCOMP_FD, STDERR_FD};

pub use snug_core::orders::Order;
use snug_core::wire::FRAME;
/// The messages, init to snug and snug to init, with their one encoding.
pub use snug_core::wire::{FromInit, ToInit};

/// One end of the channel.
#[derive(Debug)]
pub struct Channel {
    fd: OwnedFd,
}

/// What one receive gave: a message (or `None` for a packet that is not one) and any
/// descriptor passed with it; `Closed` when the other end is gone.
pub enum Received<T> {
    /// A packet.
    Packet(Option<T>, Option<OwnedFd>),
    /// The peer closed its end.
    Closed,
    /// Non-blocking receive found nothing.
    Empty,
}

impl AsFd for Channel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Channel {
    /// A connected pair, both ends close-on-exec (`socketpair(2)`).
    ///
    /// # Errors
    /// The `socketpair(2)` error.
    pub fn pair() -> io::Result<(Channel, Channel)> {
        let (a, b) = crate::sys::packet::pair()?;
        Ok((Channel { fd: a }, Channel { fd: b }))
    }

    /// Adopt an inherited descriptor (init's end at [`INIT_FD`]).
    pub fn from_fd(fd: OwnedFd) -> Channel {
        Channel { fd }
    }

    /// Send a report, with `pass` as `SCM_RIGHTS` when given (init side).
    ///
    /// # Errors
    /// The `sendmsg(2)` error (`EPIPE` when snug is gone).
    pub fn report(&self, r: FromInit, pass: Option<BorrowedFd<'_>>) -> io::Result<()> {
        self.send(r.encode(), pass)
    }

    /// Send `reports` in order, each with its descriptor (`SCM_RIGHTS`) when given (init
    /// side): one `sendmmsg(2)` for all of them, so snug is woken once, not once each (a
    /// wake-up of the other CPU costs some 20 µs of the sender's time in a VM, SPEC B1).
    ///
    /// # Errors
    /// The `sendmmsg(2)` error (`EPIPE` when snug is gone); what was sent before stays sent.
    pub fn reports(&self, reports: &[(FromInit, Option<BorrowedFd<'_>>)]) -> io::Result<()> {
        let frames: Vec<[u8; FRAME]> = reports.iter().map(|(r, _)| r.encode()).collect();
        let passed: Vec<Vec<BorrowedFd<'_>>> = reports.iter().map(|(_, f)| f.iter().copied().collect()).collect();
        let mut spaces = vec![[MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))]; reports.len()];
        let mut controls: Vec<SendAncillaryBuffer<'_, '_, '_>> =
            spaces.iter_mut().map(|s| SendAncillaryBuffer::new(s)).collect();
        for (control, fds) in controls.iter_mut().zip(&passed) {
            if !fds.is_empty() {
                control.push(SendAncillaryMessage::ScmRights(fds));
            }
        }
        let iovs: Vec<[IoSlice<'_>; 1]> = frames.iter().map(|f| [IoSlice::new(f)]).collect();
        let mut msgs: Vec<MMsgHdr<'_>> =
            iovs.iter().zip(controls.iter_mut()).map(|(i, c)| MMsgHdr::new(i, c)).collect();
        let mut done = 0;
        while done < msgs.len() {
            match sendmmsg(&self.fd, &mut msgs[done..], SendFlags::NOSIGNAL) {
                Ok(n) => done += n.max(1),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Send an order (snug side) without blocking: `Ok(false)` when the socket buffer is
    /// full (init is not reading, e.g. stopped from outside), so snug's loop never waits on
    /// init and its deadlines still run (SPEC G3, G4).
    ///
    /// # Errors
    /// The `sendmsg(2)` error (`EPIPE` when init is gone).
    pub fn order(&self, o: Order) -> io::Result<bool> {
        match self.send_with(ToInit::Order(o).encode(), None, SendFlags::DONTWAIT) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// [`ToInit::Exec`] with `fd`, the exec's socket, passed along (`SCM_RIGHTS`).
    ///
    /// # Errors
    /// As [`Channel::order`].
    pub fn exec(&self, fd: BorrowedFd<'_>) -> io::Result<bool> {
        match self.send_with(ToInit::Exec.encode(), Some(fd), SendFlags::DONTWAIT) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Receive a report (snug side); `nonblock` for a drain.
    ///
    /// # Errors
    /// The `recvmsg(2)` error.
    pub fn recv_report(&self, nonblock: bool) -> io::Result<Received<FromInit>> {
        self.recv_as(nonblock, FromInit::decode)
    }

    /// Receive an order or an exec (init side).
    ///
    /// # Errors
    /// The `recvmsg(2)` error.
    pub fn recv_message(&self, nonblock: bool) -> io::Result<Received<ToInit>> {
        self.recv_as(nonblock, ToInit::decode)
    }

    fn recv_as<T>(&self, nonblock: bool, decode: fn(&[u8]) -> Option<T>) -> io::Result<Received<T>> {
        Ok(match self.recv(nonblock)? {
            Received::Packet(bytes, fd) => Received::Packet(bytes.and_then(|b| decode(&b)), fd),
            Received::Closed => Received::Closed,
            Received::Empty => Received::Empty,
        })
    }

    fn send(&self, bytes: [u8; FRAME], pass: Option<BorrowedFd<'_>>) -> io::Result<()> {
        self.send_with(bytes, pass, SendFlags::empty())
    }

    /// `sendmsg(2)` of one packet, with `pass` as `SCM_RIGHTS` when given; never SIGPIPE.
    fn send_with(&self, bytes: [u8; FRAME], pass: Option<BorrowedFd<'_>>, flags: SendFlags) -> io::Result<()> {
        let fds: Vec<BorrowedFd<'_>> = pass.into_iter().collect();
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty() {
            control.push(SendAncillaryMessage::ScmRights(&fds));
        }
        loop {
            match sendmsg(&self.fd, &[IoSlice::new(&bytes)], &mut control, SendFlags::NOSIGNAL | flags) {
                Ok(_) => return Ok(()),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// `recvmsg(2)` of one packet; every descriptor passed with it arrives close-on-exec and
    /// owned, the first is kept and any others are closed. A packet longer than a frame is
    /// not one (the buffer has room for one byte more, to see it).
    fn recv(&self, nonblock: bool) -> io::Result<Received<[u8; FRAME]>> {
        let mut bytes = [0u8; FRAME + 1];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let flags = RecvFlags::CMSG_CLOEXEC | if nonblock { RecvFlags::DONTWAIT } else { RecvFlags::empty() };
        let n = loop {
            match recvmsg(&self.fd, &mut [IoSliceMut::new(&mut bytes)], &mut control, flags) {
                Ok(m) => break m.bytes,
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => return Ok(Received::Empty),
                Err(e) => return Err(e.into()),
            }
        };
        let mut passed = None;
        for msg in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = msg {
                for fd in fds {
                    passed.get_or_insert(fd);
                }
            }
        }
        if n == 0 {
            return Ok(Received::Closed);
        }
        Ok(Received::Packet(bytes[..n].try_into().ok(), passed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snug_core::{Signal, WaitStatus};

    #[test]
    fn reports_and_orders_round_trip_with_a_descriptor() {
        let (a, b) = Channel::pair().unwrap();
        let probe = std::fs::File::open("/dev/null").unwrap();
        a.report(FromInit::Exited(WaitStatus::Exited(15)), Some(probe.as_fd())).unwrap();
        match b.recv_report(false).unwrap() {
            Received::Packet(Some(FromInit::Exited(WaitStatus::Exited(15))), Some(_fd)) => {}
            _ => panic!("wrong packet"),
        }
        assert!(b.order(Order::Grace).unwrap());
        assert!(matches!(a.recv_message(false).unwrap(), Received::Packet(Some(ToInit::Order(Order::Grace)), None)));
        assert!(b.order(Order::Signal(Signal::USR2)).unwrap());
        assert!(matches!(
            a.recv_message(false).unwrap(),
            Received::Packet(Some(ToInit::Order(Order::Signal(Signal::USR2))), None)
        ));
        let probe = std::fs::File::open("/dev/null").unwrap();
        assert!(b.exec(probe.as_fd()).unwrap());
        assert!(matches!(a.recv_message(false).unwrap(), Received::Packet(Some(ToInit::Exec), Some(_))));
        assert!(matches!(a.recv_message(true).unwrap(), Received::Empty));
        drop(b);
        assert!(matches!(a.recv_message(false).unwrap(), Received::Closed));
    }

    /// A packet that is not exactly one frame is no message, whatever its first bytes say
    /// (fails with the receive buffer cut to a frame: a 6-byte packet, truncated, read as
    /// `Order::Go`).
    #[test]
    fn packets_of_another_length_are_not_messages() {
        let (a, b) = Channel::pair().unwrap();
        for len in [1, FRAME - 1, FRAME + 1, 8] {
            let mut bytes = vec![0u8; len];
            bytes[0] = 1; // Order::Go's tag
            rustix::net::send(&b.fd, &bytes, SendFlags::empty()).unwrap();
            assert!(matches!(a.recv_message(false).unwrap(), Received::Packet(None, None)), "{len} bytes");
        }
        b.order(Order::Go).unwrap();
        assert!(matches!(a.recv_message(false).unwrap(), Received::Packet(Some(ToInit::Order(Order::Go)), None)));
    }
}
