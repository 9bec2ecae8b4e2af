//! The channel between snug and its sandbox init: a `SOCK_SEQPACKET` socketpair
//! (`unix(7)`), one [`crate::sys::codec`] frame per packet, pidfds passed with `SCM_RIGHTS`.
//!
//! Messages come from inside the sandbox; snug treats each as a hint it checks before
//! acting (docs/design.md, "The channel").

use rustix::io::Errno;
use rustix::net::{
    recvmsg, sendmsg, socketpair, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
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
    Started(i32),
    /// The payload stopped (terminal mode only: detached, nothing acts on it, B5); value: the
    /// stop signal. SIGTTIN or SIGTTOU while the hand-over is deferred: it needs its terminal.
    Stopped(i32),
    /// A ^C reached the sandbox; true when it reached no handler: every process it was sent
    /// to ignored or blocked SIGINT, so a second one within 1 s is a force-quit (SPEC T3).
    Interrupt(bool),
    /// Every sandbox process was stopped on [`Order::Stop`] (T12).
    Halted,
    /// The payload's main process ended; value: its raw wait status (`waitpid(2)`).
    Exited(i32),
    /// After [`Report::Exited`] during a grace: the sandbox has no process left.
    Empty,
    /// The payload could not be executed; value: the `errno` of `execve(2)`.
    ExecFailed(i32),
    /// Init itself failed; value: an `errno`.
    InitFailed(i32),
    /// Init exits now, at the payload's end (SPEC R5); value: how many sandbox processes its
    /// exit kills, -1 when it could not count them (for `--report`, O5).
    Leaving(i32),
}

/// How [`Order::Continue`] continues the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// After a job stop at the terminal (T5): the sandbox group and the payload's own group,
    /// so stopped jobs of a shell inside stay stopped (T6).
    Job,
    /// After [`Order::Stop`], or a CONT to a running snug: every sandbox process, once (G6, T12).
    All,
}

/// Orders snug sends to init.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Start the payload (after the network is up, SPEC N3).
    Go,
    /// A grace has started: when the payload ends, wait for the sandbox to empty (SPEC G2).
    Grace,
    /// Relay this signal to every sandbox process: init sends it with `kill(-1, sig)`, which
    /// from the namespace's pid 1 reaches all its processes in every group and session, and
    /// nothing outside (`kill(2)`, `pid_namespaces(7)`). Simpler than tracking groups, and it
    /// never names a pid.
    Signal(i32),
    /// A key the caller's terminal sent snug's job while the hand-over is deferred (T2, T13):
    /// init sends it to the payload's process group; for SIGINT it says [`Report::Interrupt`]
    /// whether anything caught it.
    Key(i32),
    /// Stop every sandbox process (SIGSTOP, which a payload cannot ignore; TSTP would be
    /// discarded for the sandbox's orphaned group in detached mode), then say
    /// [`Report::Halted`] (T12).
    Stop,
    /// Continue after a stop, or relay a CONT (T5, T12, G6).
    Continue(Resume),
    /// Give the pty's foreground to the payload's side (true: the group that had it when init
    /// took it, else the payload's group) or take it for init's own group (false), so that a
    /// payload reading its terminal while snug's job is in the background stops (T1, T5, T8).
    Front(bool),
    /// A key snug copied to the pty that its line discipline turns into this signal (T2); for
    /// SIGINT init says [`Report::Interrupt`] whether the pty's foreground caught it (T3).
    Typed(i32),
    /// Run a command in the sandbox for `snug exec` (SPEC L3): the packet carries one end of
    /// a socket on which the client sends CMD and its descriptors and init reports its end.
    Exec,
}

use crate::sys::codec::{self, encode, FRAME};

impl Report {
    fn to_bytes(self) -> [u8; FRAME] {
        match self {
            Report::Hello => encode(1, 0),
            Report::Started(p) => encode(2, p),
            Report::Stopped(s) => encode(3, s),
            Report::Interrupt(u) => encode(4, u as i32),
            Report::Halted => encode(5, 0),
            Report::Exited(s) => encode(6, s),
            Report::Empty => encode(7, 0),
            Report::ExecFailed(e) => encode(8, e),
            Report::InitFailed(e) => encode(9, e),
            Report::Leaving(n) => encode(11, n),
        }
    }

    fn from_bytes(b: &[u8]) -> Option<Report> {
        let (tag, v) = codec::decode(b)?;
        Some(match tag {
            1 => Report::Hello,
            2 => Report::Started(v),
            3 => Report::Stopped(v),
            4 => Report::Interrupt(v != 0),
            5 => Report::Halted,
            6 => Report::Exited(v),
            7 => Report::Empty,
            8 => Report::ExecFailed(v),
            9 => Report::InitFailed(v),
            11 => Report::Leaving(v),
            _ => return None,
        })
    }
}

impl Order {
    fn to_bytes(self) -> [u8; FRAME] {
        match self {
            Order::Go => encode(1, 0),
            Order::Grace => encode(2, 0),
            Order::Signal(sig) => encode(3, sig),
            Order::Continue(Resume::Job) => encode(4, 0),
            Order::Continue(Resume::All) => encode(4, 1),
            Order::Key(sig) => encode(5, sig),
            Order::Stop => encode(6, 0),
            Order::Front(f) => encode(7, f as i32),
            Order::Typed(sig) => encode(9, sig),
            Order::Exec => encode(8, 0),
        }
    }

    fn from_bytes(b: &[u8]) -> Option<Order> {
        let (tag, v) = codec::decode(b)?;
        Some(match tag {
            1 => Order::Go,
            2 => Order::Grace,
            3 => Order::Signal(v),
            4 => Order::Continue(if v == 0 { Resume::Job } else { Resume::All }),
            5 => Order::Key(v),
            6 => Order::Stop,
            7 => Order::Front(v != 0),
            9 => Order::Typed(v),
            8 => Order::Exec,
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
        let (a, b) = socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)?;
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

    /// Send an order (snug side) without blocking: `Ok(false)` when the socket buffer is
    /// full (init is not reading, e.g. stopped from outside), so snug's loop never waits on
    /// init and its deadlines still run (SPEC G3, G4).
    ///
    /// # Errors
    /// The `sendmsg(2)` error (`EPIPE` when init is gone).
    pub fn order(&self, o: Order) -> io::Result<bool> {
        match self.send_with(o.to_bytes(), None, SendFlags::DONTWAIT) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// [`Channel::order`] with `fd` passed along (`SCM_RIGHTS`), for [`Order::Exec`].
    ///
    /// # Errors
    /// As [`Channel::order`].
    pub fn order_with_fd(&self, o: Order, fd: BorrowedFd<'_>) -> io::Result<bool> {
        match self.send_with(o.to_bytes(), Some(fd), SendFlags::DONTWAIT) {
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

    /// Receive an order (init side).
    ///
    /// # Errors
    /// The `recvmsg(2)` error.
    pub fn recv_order(&self, nonblock: bool) -> io::Result<Received<Order>> {
        self.recv_as(nonblock, Order::from_bytes)
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
        a.report(Report::Exited(0x0f00), Some(probe.as_fd())).unwrap();
        match b.recv_report(false).unwrap() {
            Received::Packet(Some(Report::Exited(0x0f00)), Some(_fd)) => {}
            _ => panic!("wrong packet"),
        }
        assert!(b.order(Order::Grace).unwrap());
        assert!(matches!(a.recv_order(false).unwrap(), Received::Packet(Some(Order::Grace), None)));
        assert!(b.order(Order::Signal(libc::SIGUSR2)).unwrap());
        assert!(matches!(a.recv_order(false).unwrap(), Received::Packet(Some(Order::Signal(libc::SIGUSR2)), None)));
        assert!(matches!(a.recv_order(true).unwrap(), Received::Empty));
        drop(b);
        assert!(matches!(a.recv_order(false).unwrap(), Received::Closed));
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
            assert!(matches!(a.recv_order(false).unwrap(), Received::Packet(None, None)), "{len} bytes");
        }
        b.order(Order::Go).unwrap();
        assert!(matches!(a.recv_order(false).unwrap(), Received::Packet(Some(Order::Go), None)));
    }
}
