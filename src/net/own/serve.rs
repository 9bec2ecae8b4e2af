//! Serving the sandbox's own network from snug's poll loop (SPEC N5–N8): the supervisor adds
//! [`Served::poll_fds`] to its poll set and hands the results to [`Served::on_ready`]. Each
//! accepted connection's destination (`getsockname(2)`: every address is local in the
//! sandbox) decides it: a pool address is its name's, resolved on the host side, checked
//! (N6), connected and copied; an address an address pattern names is connected as it is;
//! anything else is reset at once. Attempts on ports no socket of snug's serves, which the
//! kernel refuses, are seen on raw sockets ([`super::unserved`]). Every decision is
//! logged under `-v`, emitted as an event (O9) and counted (N7).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};

use snug_core::net_allow::{check, unserved, Allowed, Decision, Pool, Reason, Tally, Verdict};

use super::conn::{reset, Conn, State, Turn};
use super::dns_tcp::DnsConn;
use super::resolver::Resolver;
use super::setup::Made;
use crate::log::log;

/// At most this many connections at once, DNS over TCP included (SPEC N5); past it each new
/// one is reset and counted.
pub const MAX_CONNS: usize = 1024;
/// Connections accepted from one listener per poll round, so one busy port starves no other.
const ACCEPT_BURST: usize = 64;

#[derive(Clone, Copy)]
enum Token {
    Wake,
    Listener(usize),
    Udp(usize),
    Inside(u64),
    Outside(u64),
    Dns(u64),
    Watch(usize),
}

/// The running network of snug's own: its sockets in the sandbox and its connections.
pub struct Served {
    allowed: Allowed,
    /// The host's own addresses (N6).
    own: Vec<IpAddr>,
    listeners: Vec<Made>,
    udp: Vec<Made>,
    /// The raw sockets that see refusals on ports nobody serves, those that could be made.
    watch: Vec<Made>,
    /// The ports snug's sockets serve, ascending.
    served: Vec<u16>,
    pool: Pool,
    conns: HashMap<u64, Conn>,
    dns: HashMap<u64, DnsConn>,
    next: u64,
    resolver: Resolver,
    /// Every decision, counted (N7).
    pub tally: Tally,
    tokens: Vec<Token>,
}

impl Served {
    /// Serve `made` (the sockets [`super::setup::make`] made) for `allowed`; `own` are the
    /// host's addresses.
    pub fn new(allowed: Allowed, own: Vec<IpAddr>, made: Vec<Made>) -> Served {
        let (watch, made): (Vec<Made>, Vec<Made>) = made.into_iter().partition(|m| m.want.kind == libc::SOCK_RAW);
        if watch.is_empty() {
            log!("net: no raw socket in the sandbox's namespace: refusals on ports nobody serves go unseen");
        }
        let (udp, listeners) = made.into_iter().partition(|m| m.want.kind == libc::SOCK_DGRAM);
        let mut served: Vec<u16> = allowed.ports();
        served.push(53);
        served.sort_unstable();
        Served {
            allowed,
            own,
            listeners,
            udp,
            watch,
            served,
            pool: Pool::default(),
            conns: HashMap::new(),
            dns: HashMap::new(),
            next: 0,
            resolver: Resolver::new(),
            tally: Tally::default(),
            tokens: Vec::new(),
        }
    }

    /// This network's poll entries.
    pub fn poll_fds(&mut self) -> Vec<libc::pollfd> {
        let mut fds = Vec::new();
        let watch = |fd: i32, events: i16| libc::pollfd { fd, events, revents: 0 };
        self.tokens.clear();
        if let Some(w) = self.resolver.wake_fd() {
            fds.push(watch(w.as_raw_fd(), libc::POLLIN));
            self.tokens.push(Token::Wake);
        }
        for (i, w) in self.watch.iter().enumerate() {
            fds.push(watch(w.fd.as_raw_fd(), libc::POLLIN));
            self.tokens.push(Token::Watch(i));
        }
        for (i, l) in self.listeners.iter().enumerate() {
            fds.push(watch(l.fd.as_raw_fd(), libc::POLLIN));
            self.tokens.push(Token::Listener(i));
        }
        for (i, u) in self.udp.iter().enumerate() {
            fds.push(watch(u.fd.as_raw_fd(), libc::POLLIN));
            self.tokens.push(Token::Udp(i));
        }
        for (&id, c) in &self.conns {
            let [(i, ie), (o, oe)] = c.interest();
            fds.push(watch(i, ie));
            self.tokens.push(Token::Inside(id));
            if o >= 0 {
                fds.push(watch(o, oe));
                self.tokens.push(Token::Outside(id));
            }
        }
        for (&id, d) in &self.dns {
            fds.push(watch(d.fd(), d.events()));
            self.tokens.push(Token::Dns(id));
        }
        fds
    }

    /// Act on `fds`, the entries of [`Served::poll_fds`], as poll returned them.
    pub fn on_ready(&mut self, fds: &[libc::pollfd]) {
        let mut turns: HashMap<u64, (i16, i16)> = HashMap::new();
        let tokens = std::mem::take(&mut self.tokens);
        for (t, p) in tokens.iter().zip(fds) {
            if p.revents == 0 {
                continue;
            }
            match *t {
                Token::Wake => self.on_answers(),
                Token::Listener(i) => self.accept(i),
                Token::Udp(i) => self.on_udp(i),
                Token::Inside(id) => turns.entry(id).or_default().0 = p.revents,
                Token::Outside(id) => turns.entry(id).or_default().1 = p.revents,
                Token::Dns(id) => self.on_dns(id),
                Token::Watch(i) => {
                    self.on_watch(i);
                }
            }
        }
        self.tokens = tokens;
        for (id, (i, o)) in turns {
            let Some(c) = self.conns.get_mut(&id) else { continue };
            let turn = c.on_ready(i, o);
            self.after(id, turn);
        }
    }

    fn decide(
        &mut self,
        kind: &'static str,
        subject: String,
        upstream: Option<SocketAddr>,
        verdict: Verdict,
        bytes: (u64, u64),
    ) {
        let d = Decision {
            kind,
            subject,
            upstream: upstream.map(|u| u.to_string()),
            verdict,
            sent: bytes.0,
            received: bytes.1,
        };
        self.record(&d);
    }

    /// Log `d` under `-v`, emit it as a `net` event (O9) and count it (N7).
    fn record(&mut self, d: &Decision) {
        log!("net: {d}");
        if crate::events::on() {
            let reason = match d.verdict {
                Verdict::Allowed => None,
                Verdict::Refused(r) => Some(r.words()),
            };
            let fields = serde_json::json!({
                "kind": d.kind,
                "subject": d.subject,
                "upstream": d.upstream,
                "allowed": reason.is_none(),
                "reason": reason,
                "bytes_out": d.sent,
                "bytes_in": d.received,
            });
            crate::events::emit("net", fields);
        }
        self.tally.add(d);
    }

    /// Count what raw socket `i` saw: attempts the kernel refused on ports nobody serves.
    /// Returns how many packets it read (at most [`ACCEPT_BURST`]).
    fn on_watch(&mut self, i: usize) -> usize {
        let Some(w) = self.watch.get(i) else { return 0 };
        let (attempts, read) = super::unserved::read(&w.fd, w.want.family, i32::from(w.want.port), ACCEPT_BURST);
        for a in attempts {
            let served = self.served.binary_search(&a.dest.port()).is_ok();
            let name = self.pool.name_of(a.dest.ip());
            if let Some(d) = unserved::decision(&a, name, &self.allowed, served) {
                self.record(&d);
            }
        }
        read
    }

    /// The decisions of the run, once what the raw sockets hold is counted too: a payload
    /// that ended right after a refused attempt left its answer there.
    pub fn finish(mut self) -> Tally {
        for i in 0..self.watch.len() {
            while self.on_watch(i) == ACCEPT_BURST {}
        }
        self.tally
    }

    fn refuse(&mut self, fd: OwnedFd, subject: String, why: Reason) {
        reset(&fd);
        drop(fd);
        self.decide("tcp", subject, None, Verdict::Refused(why), (0, 0));
    }

    fn accept(&mut self, i: usize) {
        for _ in 0..ACCEPT_BURST {
            let flags = rustix::net::SocketFlags::NONBLOCK | rustix::net::SocketFlags::CLOEXEC;
            let Ok(fd) = rustix::net::accept_with(&self.listeners[i].fd, flags) else { return };
            let stream = std::net::TcpStream::from(fd);
            let dest = stream.local_addr().map(unmapped);
            let fd = OwnedFd::from(stream);
            let Ok(dest) = dest else { continue };
            let dns = self.listeners[i].want.port == 53 && dest.port() == 53;
            if self.conns.len() + self.dns.len() >= MAX_CONNS {
                self.refuse(fd, "connections past the bound".into(), Reason::TooManyConnections);
                continue;
            }
            if dns {
                self.next += 1;
                self.dns.insert(self.next, DnsConn::new(fd));
                continue;
            }
            self.open(fd, dest);
        }
    }

    /// Decide on a connection the payload made to `dest`.
    fn open(&mut self, fd: OwnedFd, dest: SocketAddr) {
        let (ip, port) = (dest.ip(), dest.port());
        self.next += 1;
        let id = self.next;
        if let Some(name) = self.pool.name_of(ip).map(str::to_string) {
            let subject = format!("{name}:{port}");
            if !self.allowed.name_port_allowed(&name, port) {
                return self.refuse(fd, subject, Reason::PortNotAllowed);
            }
            if self.resolver.ask(id, &name, port).is_err() {
                return self.refuse(fd, subject, Reason::NoAddress);
            }
            let conn = Conn { inside: fd, subject, upstream: None, v6: ip.is_ipv6(), state: State::Resolving };
            self.conns.insert(id, conn);
            return;
        }
        let subject = dest.to_string();
        if !self.allowed.addr_allowed(ip, port) {
            return self.refuse(fd, subject, Reason::AddressNotAllowed);
        }
        let mut conn = Conn { inside: fd, subject, upstream: None, v6: ip.is_ipv6(), state: State::Resolving };
        let turn = conn.connect(vec![dest]);
        self.conns.insert(id, conn);
        self.after(id, turn);
    }

    fn on_answers(&mut self) {
        for (id, addrs) in self.resolver.answers() {
            let Some(c) = self.conns.get_mut(&id) else { continue };
            let mut first_refusal = None;
            let mut ok: Vec<SocketAddr> = addrs
                .into_iter()
                .map(unmapped)
                .filter(|a| match check::refused(a.ip(), &self.own, &self.allowed) {
                    Some(r) => {
                        first_refusal.get_or_insert(r);
                        false
                    }
                    None => true,
                })
                .collect();
            // The family the payload asked first, then the other (stable: the resolver's order).
            ok.sort_by_key(|a| a.is_ipv6() != c.v6);
            let turn = if ok.is_empty() {
                let why = first_refusal.unwrap_or(Reason::NoAddress);
                let c = self.conns.remove(&id).map(|c| (c.inside, c.subject));
                if let Some((fd, subject)) = c {
                    self.refuse(fd, subject, why);
                }
                continue;
            } else {
                c.connect(ok)
            };
            self.after(id, turn);
        }
    }

    /// Close and count a connection whose turn ended.
    fn after(&mut self, id: u64, turn: Turn) {
        match turn {
            Turn::Going => {}
            Turn::Done(up, down) => {
                if let Some(c) = self.conns.remove(&id) {
                    self.decide("tcp", c.subject, c.upstream, Verdict::Allowed, (up, down));
                }
            }
            Turn::Unreachable => {
                if let Some(c) = self.conns.remove(&id) {
                    self.refuse(c.inside, c.subject, Reason::Unreachable);
                }
            }
        }
    }

    fn on_udp(&mut self, i: usize) {
        for _ in 0..ACCEPT_BURST {
            let Some(d) = super::dns::receive(&self.udp[i].fd) else { return };
            let Some((bytes, decision)) = super::dns::answer(&d.bytes, &self.allowed, &mut self.pool) else { continue };
            super::dns::reply(&self.udp[i].fd, &d, &bytes);
            if let Some(dec) = decision {
                self.record(&dec);
            }
        }
    }

    fn on_dns(&mut self, id: u64) {
        let Some(c) = self.dns.get_mut(&id) else { return };
        let (done, decisions) = c.on_ready(&self.allowed, &mut self.pool);
        for dec in decisions {
            self.record(&dec);
        }
        if done {
            self.dns.remove(&id);
        }
    }
}

/// An IPv4-mapped IPv6 socket address as the IPv4 one it carries.
fn unmapped(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => a,
        },
        a => a,
    }
}
