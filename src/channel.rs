//! The channel between snug and its sandbox init: a `SOCK_SEQPACKET` socketpair
//! (`unix(7)`), one [`crate::sys::codec`] frame per packet, pidfds passed with `SCM_RIGHTS`.
//!
//! Messages come from inside the sandbox; snug treats each as a hint it checks before
//! acting (docs/design.md, "The channel").

use rustix::io::Errno;
use rustix::net::{
    recvmsg, sendmmsg, sendmsg, MMsgHdr, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use snug_core::{Pid, Signal, WaitStatus};
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

mod outbox;
pub use outbox::Outbox;

/// The fixed descriptor numbers, kept where callers of the channel have always found them.
pub use crate::sys::fds::{INIT_FD, PTY_FD, SECCOMP_FD, STDERR_FD};

/// Messages init sends to snug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// Init is up and leads the sandbox group; carries a pidfd of init.
    Hello,
    /// The payload was forked; value: its pid in the sandbox; carries a pidfd of it.
    Started(Pid),
    /// The payload stopped (terminal mode only: detached, nothing acts on it, B5); value: the
    /// stop signal. SIGTTIN or SIGTTOU while the hand-over is deferred: it needs its terminal.
    Stopped(Signal),
    /// A ^C reached the sandbox; true when it reached no handler: every process it was sent
    /// to ignored or blocked SIGINT, so a second one within 1 s is a force-quit (SPEC T3).
    Interrupt(bool),
    /// Every sandbox process was stopped on [`Order::Stop`] (T12).
    Halted,
    /// The payload's main process ended so (`waitpid(2)`).
    Exited(WaitStatus),
    /// After [`Report::Exited`] during a grace: the sandbox has no process left.
    Empty,
    /// The payload could not be executed; value: the `errno` of `execve(2)`.
    ExecFailed(snug_core::Errno),
    /// Init itself failed; value: an `errno`.
    InitFailed(snug_core::Errno),
    /// Init exits now, at the payload's end (SPEC R5); value: how many sandbox processes its
    /// exit kills, `None` when it could not count them (for `--report`, O5).
    Leaving(Option<u32>),
}

pub use snug_core::orders::{Order, Resume};

/// What init receives on the channel: an order, or a `snug exec` (SPEC L3), whose packet
/// carries one end of a socket on which the client sends CMD and its descriptors and init
/// reports its end. The exec is no decision of either core, so it is no [`Order`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// An order of snug's core.
    Order(Order),
    /// Start a command for `snug exec`.
    Exec,
}

use crate::sys::codec::{self, encode, FRAME};

impl Report {
    fn to_bytes(self) -> [u8; FRAME] {
        match self {
            Report::Hello => encode(1, 0),
            Report::Started(p) => encode(2, p.raw()),
            Report::Stopped(s) => encode(3, s.raw()),
            Report::Interrupt(u) => encode(4, u as i32),
            Report::Halted => encode(5, 0),
            Report::Exited(s) => encode(6, s.to_raw()),
            Report::Empty => encode(7, 0),
            Report::ExecFailed(e) => encode(8, e.0),
            Report::InitFailed(e) => encode(9, e.0),
            Report::Leaving(n) => encode(11, n.and_then(|n| i32::try_from(n).ok()).unwrap_or(-1)),
        }
    }

    fn from_bytes(b: &[u8]) -> Option<Report> {
        let (tag, v) = codec::decode(b)?;
        Some(match tag {
            1 => Report::Hello,
            2 => Report::Started(Pid(v)),
            3 => Report::Stopped(Signal(v)),
            4 => Report::Interrupt(v != 0),
            5 => Report::Halted,
            6 => Report::Exited(WaitStatus::from_raw(v)),
            7 => Report::Empty,
            8 => Report::ExecFailed(snug_core::Errno(v)),
            9 => Report::InitFailed(snug_core::Errno(v)),
            11 => Report::Leaving(u32::try_from(v).ok()),
            _ => return None,
        })
    }
}

impl Message {
    fn to_bytes(self) -> [u8; FRAME] {
        match self {
            Message::Order(Order::Go) => encode(1, 0),
            Message::Order(Order::Grace) => encode(2, 0),
            Message::Order(Order::Signal(sig)) => encode(3, sig.raw()),
            Message::Order(Order::Continue(Resume::Job)) => encode(4, 0),
            Message::Order(Order::Continue(Resume::All)) => encode(4, 1),
            Message::Order(Order::Key(sig)) => encode(5, sig.raw()),
            Message::Order(Order::Stop) => encode(6, 0),
            Message::Order(Order::Front(f)) => encode(7, f as i32),
            Message::Exec => encode(8, 0),
            Message::Order(Order::Typed(sig)) => encode(9, sig.raw()),
        }
    }

    fn from_bytes(b: &[u8]) -> Option<Message> {
        let (tag, v) = codec::decode(b)?;
        Some(match tag {
            1 => Message::Order(Order::Go),
            2 => Message::Order(Order::Grace),
            3 => Message::Order(Order::Signal(Signal(v))),
            4 => Message::Order(Order::Continue(if v == 0 { Resume::Job } else { Resume::All })),
            5 => Message::Order(Order::Key(Signal(v))),
            6 => Message::Order(Order::Stop),
            7 => Message::Order(Order::Front(v != 0)),
            8 => Message::Exec,
            9 => Message::Order(Order::Typed(Signal(v))),
            _ => return None,
        })
    }
}

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

    /// The raw descriptor, for `poll(2)`.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Send a report, with `pass` as `SCM_RIGHTS` when given (init side).
    ///
    /// # Errors
    /// The `sendmsg(2)` error (`EPIPE` when snug is gone).
    pub fn report(&self, r: Report, pass: Option<BorrowedFd<'_>>) -> io::Result<()> {
        self.send(r.to_bytes(), pass)
    }

    /// Send `reports` in order, each with its descriptor (`SCM_RIGHTS`) when given (init
    /// side): one `sendmmsg(2)` for all of them, so snug is woken once, not once each (a
    /// wake-up of the other CPU costs some 20 µs of the sender's time in a VM, SPEC B1).
    ///
    /// # Errors
    /// The `sendmmsg(2)` error (`EPIPE` when snug is gone); what was sent before stays sent.
    pub fn reports(&self, reports: &[(Report, Option<BorrowedFd<'_>>)]) -> io::Result<()> {
        let frames: Vec<[u8; FRAME]> = reports.iter().map(|(r, _)| r.to_bytes()).collect();
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
        match self.send_with(Message::Order(o).to_bytes(), None, SendFlags::DONTWAIT) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// [`Message::Exec`] with `fd`, the exec's socket, passed along (`SCM_RIGHTS`).
    ///
    /// # Errors
    /// As [`Channel::order`].
    pub fn exec(&self, fd: BorrowedFd<'_>) -> io::Result<bool> {
        match self.send_with(Message::Exec.to_bytes(), Some(fd), SendFlags::DONTWAIT) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Receive a report (snug side); `nonblock` for a drain.
    ///
    /// # Errors
    /// The `recvmsg(2)` error.
    pub fn recv_report(&self, nonblock: bool) -> io::Result<Received<Report>> {
        self.recv_as(nonblock, Report::from_bytes)
    }

    /// Receive an order or an exec (init side).
    ///
    /// # Errors
    /// The `recvmsg(2)` error.
    pub fn recv_message(&self, nonblock: bool) -> io::Result<Received<Message>> {
        self.recv_as(nonblock, Message::from_bytes)
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

    #[test]
    fn reports_and_orders_round_trip_with_a_descriptor() {
        let (a, b) = Channel::pair().unwrap();
        let probe = std::fs::File::open("/dev/null").unwrap();
        a.report(Report::Exited(WaitStatus::Exited(15)), Some(probe.as_fd())).unwrap();
        match b.recv_report(false).unwrap() {
            Received::Packet(Some(Report::Exited(WaitStatus::Exited(15))), Some(_fd)) => {}
            _ => panic!("wrong packet"),
        }
        assert!(b.order(Order::Grace).unwrap());
        assert!(matches!(a.recv_message(false).unwrap(), Received::Packet(Some(Message::Order(Order::Grace)), None)));
        assert!(b.order(Order::Signal(Signal::USR2)).unwrap());
        assert!(matches!(
            a.recv_message(false).unwrap(),
            Received::Packet(Some(Message::Order(Order::Signal(Signal::USR2))), None)
        ));
        let probe = std::fs::File::open("/dev/null").unwrap();
        assert!(b.exec(probe.as_fd()).unwrap());
        assert!(matches!(a.recv_message(false).unwrap(), Received::Packet(Some(Message::Exec), Some(_))));
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
        assert!(matches!(a.recv_message(false).unwrap(), Received::Packet(Some(Message::Order(Order::Go)), None)));
    }
}
