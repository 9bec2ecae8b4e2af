//! DNS over TCP to snug's resolver (RFC 7766): each message with a two-byte length before it;
//! a client may send several on one connection (glibc sends A and AAAA together).

use std::os::fd::{AsRawFd, OwnedFd};

use rustix::io::Errno;
use snug_core::net_allow::{Allowed, Decision, Pool};

/// Most bytes buffered from one client: one message of the largest size.
const MAX_IN: usize = 2 + 65_535;

/// One client's connection.
pub struct DnsConn {
    fd: OwnedFd,
    input: Vec<u8>,
    output: Vec<u8>,
    eof: bool,
}

impl DnsConn {
    /// A client just accepted.
    pub fn new(fd: OwnedFd) -> DnsConn {
        DnsConn { fd, input: Vec::new(), output: Vec::new(), eof: false }
    }

    /// Its descriptor.
    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// What to poll for.
    pub fn events(&self) -> i16 {
        if self.output.is_empty() {
            libc::POLLIN
        } else {
            libc::POLLOUT
        }
    }

    /// Read, answer and write what can be without blocking: (finished, decisions made).
    pub fn on_ready(&mut self, allowed: &Allowed, pool: &mut Pool) -> (bool, Vec<Decision>) {
        let mut decisions = Vec::new();
        let mut buf = [0u8; 4096];
        while self.output.is_empty() && !self.eof && self.input.len() < MAX_IN {
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(0) => self.eof = true,
                Ok(n) => self.input.extend_from_slice(&buf[..n]),
                Err(Errno::AGAIN | Errno::INTR) => break,
                Err(_) => return (true, decisions),
            }
        }
        while self.input.len() >= 2 {
            let len = usize::from(u16::from_be_bytes([self.input[0], self.input[1]]));
            if self.input.len() < 2 + len {
                break;
            }
            let msg: Vec<u8> = self.input.drain(..2 + len).skip(2).collect();
            match super::dns::answer(&msg, allowed, pool) {
                Some((reply, d)) => {
                    self.output.extend_from_slice(&(reply.len() as u16).to_be_bytes());
                    self.output.extend_from_slice(&reply);
                    decisions.extend(d);
                }
                None => return (true, decisions),
            }
        }
        while !self.output.is_empty() {
            match rustix::net::send(&self.fd, &self.output, rustix::net::SendFlags::NOSIGNAL) {
                Ok(n) => {
                    self.output.drain(..n);
                }
                Err(Errno::AGAIN | Errno::INTR) => return (false, decisions),
                Err(_) => return (true, decisions),
            }
        }
        (self.eof || self.input.len() >= MAX_IN, decisions)
    }
}
