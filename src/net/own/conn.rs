//! One connection of the payload's through snug (SPEC N5, N8): the payload's end (accepted in
//! the sandbox's namespace) and snug's own connection to the host side, copied both ways.
//! A direction starts with a small buffer of snug's; once a read fills it (bulk data), it
//! moves to `splice(2)` through a pipe of its own, so the bytes go socket → pipe → socket
//! inside the kernel, never copied through snug (B9: a 100 MB transfer keeps the host's
//! throughput). Small exchanges never pay the pipe's two descriptors, so N5's 1024
//! connections fit in snug's descriptors. Either way a direction reads only while nothing it
//! read waits to be written, so a slow reader holds back the writer (back-pressure); end of
//! input is passed on as a half-close (`shutdown(SHUT_WR)`); an error on either end closes
//! both.

use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::io::Errno;
use rustix::pipe::SpliceFlags;

/// Bytes buffered per direction before it moves to a pipe.
const BUF: usize = 32 * 1024;
/// The pipe's size asked for (`F_SETPIPE_SZ`, `fcntl(2)`; the default of 64 KiB stays where
/// the user's pipe pages are used up) and the most one `splice(2)` moves.
const PIPE: usize = 256 * 1024;

/// One direction.
pub struct Pipe {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The kernel pipe (read end, write end) once the direction carries bulk data.
    kernel: Option<(OwnedFd, OwnedFd)>,
    /// Bytes in the kernel pipe not yet written on.
    pending: usize,
    /// The source said end of input.
    eof: bool,
    /// End of input passed on to the sink.
    shut: bool,
    /// Bytes copied.
    copied: u64,
}

impl Pipe {
    fn new() -> Pipe {
        Pipe { buf: Vec::new(), start: 0, end: 0, kernel: None, pending: 0, eof: false, shut: false, copied: 0 }
    }

    fn empty(&self) -> bool {
        self.start == self.end && self.pending == 0
    }

    /// Move what can move from `from` to `to` without blocking; `Err` when either end failed.
    fn pump(&mut self, from: &OwnedFd, to: &OwnedFd) -> Result<(), Errno> {
        loop {
            if self.empty() && !self.eof {
                if let Some((_, w)) = &self.kernel {
                    let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
                    match rustix::pipe::splice(from, None, w, None, PIPE, flags) {
                        Ok(0) => self.eof = true,
                        Ok(n) => self.pending = n,
                        Err(Errno::AGAIN | Errno::INTR) => {}
                        // Not spliceable after all: back to the buffer, nothing is in the pipe.
                        Err(Errno::INVAL) => {
                            self.kernel = None;
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                } else {
                    if self.buf.is_empty() {
                        self.buf = vec![0; BUF];
                    }
                    match rustix::io::read(from, &mut self.buf) {
                        Ok(0) => self.eof = true,
                        Ok(n) => (self.start, self.end) = (0, n),
                        Err(Errno::AGAIN | Errno::INTR) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            if self.empty() {
                if self.eof && !self.shut {
                    self.shut = true;
                    let _ = rustix::net::shutdown(to, rustix::net::Shutdown::Write);
                }
                return Ok(());
            }
            if self.pending > 0 {
                let Some((r, _)) = &self.kernel else { return Err(Errno::INVAL) };
                let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
                match rustix::pipe::splice(r, None, to, None, self.pending, flags) {
                    Ok(0) | Err(Errno::AGAIN | Errno::INTR) => return Ok(()),
                    Ok(n) => {
                        self.pending -= n;
                        self.copied += n as u64;
                    }
                    Err(e) => return Err(e),
                }
                continue;
            }
            match rustix::net::send(to, &self.buf[self.start..self.end], rustix::net::SendFlags::NOSIGNAL) {
                Ok(n) => {
                    self.start += n;
                    self.copied += n as u64;
                    if self.start == self.end && self.end == BUF && self.kernel.is_none() {
                        self.splice_from_now();
                    }
                }
                Err(Errno::AGAIN | Errno::INTR) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// A full buffer read and written on: from now on through a pipe (best effort: without
    /// descriptors to spare the buffer goes on).
    fn splice_from_now(&mut self) {
        use rustix::pipe::{pipe_with, PipeFlags};
        if let Ok((r, w)) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK) {
            let _ = rustix::pipe::fcntl_setpipe_size(&w, PIPE);
            self.kernel = Some((r, w));
            self.buf = Vec::new();
        }
    }
}

/// Where a connection is.
pub enum State {
    /// Waiting for the host-side addresses of its name.
    Resolving,
    /// snug's own connect in flight to `at`; `rest` are the addresses to try after it.
    Connecting { out: OwnedFd, at: SocketAddr, rest: Vec<SocketAddr> },
    /// Copying.
    Open { out: OwnedFd, up: Pipe, down: Pipe },
}

/// A connection of the payload's.
pub struct Conn {
    /// The payload's end, in the sandbox's namespace.
    pub inside: OwnedFd,
    /// `NAME:PORT` or `ADDR:PORT`, as the report names it.
    pub subject: String,
    /// The host-side address, once connected.
    pub upstream: Option<SocketAddr>,
    /// The payload asked an IPv6 address: the host side tries IPv6 first too.
    pub v6: bool,
    /// Where it is.
    pub state: State,
}

/// What a connection's turn ended in.
pub enum Turn {
    /// Still going.
    Going,
    /// Copied to the end: bytes up (payload → host) and down.
    Done(u64, u64),
    /// snug's connect failed on every address.
    Unreachable,
}

impl Conn {
    /// The poll entries for its two ends: (inside, outside) fds and events.
    pub fn interest(&self) -> [(i32, i16); 2] {
        let inside = self.inside.as_raw_fd();
        match &self.state {
            State::Resolving => [(inside, 0), (-1, 0)],
            State::Connecting { out, .. } => [(inside, 0), (out.as_raw_fd(), libc::POLLOUT)],
            State::Open { out, up, down } => {
                let want = |p: &Pipe, reading: bool| {
                    if reading {
                        if p.empty() && !p.eof {
                            libc::POLLIN
                        } else {
                            0
                        }
                    } else if !p.empty() {
                        libc::POLLOUT
                    } else {
                        0
                    }
                };
                [(inside, want(up, true) | want(down, false)), (out.as_raw_fd(), want(down, true) | want(up, false))]
            }
        }
    }

    /// Start connecting to the first of `addrs` (the rest are tried after it).
    pub fn connect(&mut self, mut addrs: Vec<SocketAddr>) -> Turn {
        while !addrs.is_empty() {
            let at = addrs.remove(0);
            if let Ok(out) = start_connect(at) {
                self.state = State::Connecting { out, at, rest: addrs };
                return Turn::Going;
            }
        }
        Turn::Unreachable
    }

    /// Act on what poll said about its two ends.
    pub fn on_ready(&mut self, inside: i16, outside: i16) -> Turn {
        match &mut self.state {
            State::Resolving => {
                if inside & (libc::POLLHUP | libc::POLLERR) != 0 {
                    return Turn::Done(0, 0);
                }
                Turn::Going
            }
            State::Connecting { out, .. } => {
                if outside == 0 {
                    return Turn::Going;
                }
                let failed = rustix::net::sockopt::socket_error(&*out).map_or(true, |r| r.is_err());
                let State::Connecting { out, at, rest } = std::mem::replace(&mut self.state, State::Resolving) else {
                    return Turn::Unreachable;
                };
                if failed {
                    drop(out);
                    return self.connect(rest);
                }
                self.upstream = Some(at);
                self.state = State::Open { out, up: Pipe::new(), down: Pipe::new() };
                self.on_ready(libc::POLLIN, libc::POLLIN)
            }
            State::Open { out, up, down } => {
                let broken = up.pump(&self.inside, out).is_err() || down.pump(out, &self.inside).is_err();
                if broken || (up.shut && down.shut) {
                    if broken {
                        reset(&self.inside);
                    }
                    return Turn::Done(up.copied, down.copied);
                }
                Turn::Going
            }
        }
    }
}

/// A non-blocking `connect(2)` from snug's own namespace.
fn start_connect(at: SocketAddr) -> std::io::Result<OwnedFd> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let family = if at.is_ipv4() { AddressFamily::INET } else { AddressFamily::INET6 };
    let fd = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC, None)?;
    let _ = rustix::net::sockopt::set_tcp_nodelay(&fd, true);
    match rustix::net::connect(&fd, &at) {
        Ok(()) | Err(Errno::INPROGRESS) => Ok(fd),
        Err(e) => Err(e.into()),
    }
}

/// Make the close of `fd` a reset (`SO_LINGER` 0, `socket(7)`): the payload sees
/// `ECONNRESET` at once rather than an orderly end.
pub fn reset(fd: &impl AsFd) {
    let _ = rustix::net::sockopt::set_socket_linger(fd, Some(std::time::Duration::ZERO));
}
