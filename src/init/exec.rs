//! `snug exec` inside the sandbox (SPEC L3): init forks CMD. Being init's child, it is in
//! every namespace of the sandbox and under its bounds, under bwrap's seccomp filter
//! (inherited), without capabilities (init has none), with the payload's environment and
//! working directory (init's own, which bwrap set), and `kill(-1)` from init (relays, the
//! grace) reaches it; it dies with the sandbox. In terminal mode it also gets the terminal
//! guard's filter (T11), answered by init like the payload's.
//!
//! Each `exec` has its own socket (from snug, [`crate::channel::Order::Exec`]) on which the
//! client sends CMD and its descriptors, and signals, and init reports the start and the end.

use super::guard::{self, Guard};
use crate::live::socket::{self, Got};
use crate::live::wire;
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use std::ffi::CString;

/// Most bytes of CMD's argv init reads from the client's memfd.
const MAX_ARGS: u64 = 16 << 20;

struct Entry {
    sock: OwnedFd,
    /// CMD's pid (leader of its own session and group), once forked.
    pid: Option<i32>,
    /// Its exec error pipe until the exec happened.
    err: Option<OwnedFd>,
    /// The client's end is still open (a hung-up socket would poll readable forever).
    open: bool,
}

/// The `exec`s of one sandbox.
pub struct Execs {
    /// The payload's environment.
    env: Vec<CString>,
    /// The terminal guard's program, in terminal mode.
    filter: Option<Vec<libc::sock_filter>>,
    entries: Vec<Entry>,
    guards: Vec<Guard>,
    handed: bool,
}

impl Execs {
    /// No exec yet; `env` is the payload's environment.
    pub fn new(env: Vec<CString>, terminal: bool) -> Execs {
        let filter = terminal.then(guard::program);
        Execs { env, filter, entries: Vec::new(), guards: Vec::new(), handed: false }
    }

    /// snug sent a new exec socket.
    pub fn add(&mut self, sock: OwnedFd) {
        self.entries.push(Entry { sock, pid: None, err: None, open: true });
    }

    /// Whether snug handed the caller's terminal to the sandbox (T11), for the guards.
    pub fn set_handed(&mut self, h: bool) {
        self.handed = h;
        for g in &mut self.guards {
            g.handed = h;
        }
    }

    /// Descriptors to poll: each entry's socket and error pipe, then each guard.
    pub fn poll_fds(&self, out: &mut Vec<libc::pollfd>) {
        for e in &self.entries {
            let sock = if e.open { e.sock.as_raw_fd() } else { -1 };
            out.push(libc::pollfd { fd: sock, events: libc::POLLIN, revents: 0 });
            let err = e.err.as_ref().map_or(-1, |f| f.as_raw_fd());
            out.push(libc::pollfd { fd: err, events: libc::POLLIN, revents: 0 });
        }
        for g in &self.guards {
            out.push(libc::pollfd { fd: g.raw(), events: libc::POLLIN, revents: 0 });
        }
    }

    /// Act on what poll found in [`Execs::poll_fds`]'s descriptors.
    pub fn on_ready(&mut self, ready: &[libc::pollfd], chan: &crate::channel::Channel) {
        let n = self.entries.len();
        let (mine, guards) = ready.split_at((2 * n).min(ready.len()));
        // Guards first (their indices do not move when entries go).
        let mut hung = Vec::new();
        for (i, p) in guards.iter().enumerate().take(self.guards.len()) {
            if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                hung.push(i); // every process under that filter is gone
            } else if p.revents != 0 {
                self.guards[i].serve(chan);
            }
        }
        for i in hung.into_iter().rev() {
            self.guards.remove(i);
        }
        let mut gone = Vec::new();
        for i in 0..n {
            if mine.get(2 * i + 1).is_some_and(|p| p.revents != 0) {
                self.read_err(i);
            }
            if mine.get(2 * i).is_some_and(|p| p.revents != 0) && !self.serve(i) {
                gone.push(i);
            }
        }
        for i in gone.into_iter().rev() {
            self.entries.remove(i);
        }
    }

    /// A child of init was reaped: if it was an exec'd CMD, tell its client how it ended.
    pub fn reaped(&mut self, pid: i32, status: i32) {
        if !(libc::WIFEXITED(status) || libc::WIFSIGNALED(status)) {
            return;
        }
        if let Some(i) = self.entries.iter().position(|e| e.pid == Some(pid)) {
            let e = self.entries.remove(i);
            let _ = socket::send(e.sock.as_fd(), &wire::tagged(wire::EXITED, status), &[]);
        }
    }

    fn read_err(&mut self, i: usize) {
        let Some(fd) = self.entries[i].err.take() else { return };
        let mut e = [0u8; 4];
        match rustix::io::read(&fd, &mut e) {
            Ok(4) => {
                let errno = i32::from_le_bytes(e);
                let _ = socket::send(self.entries[i].sock.as_fd(), &wire::tagged(wire::FAILED, errno), &[]);
            }
            Err(rustix::io::Errno::AGAIN) => self.entries[i].err = Some(fd),
            _ => {} // EOF: the exec happened
        }
    }

    /// Serve entry `i`'s socket; false once the entry is done.
    fn serve(&mut self, i: usize) -> bool {
        loop {
            let got = socket::recv(self.entries[i].sock.as_fd());
            let pid = self.entries[i].pid;
            match (got, pid) {
                (Got::Packet(b, fds), None) if b.first() == Some(&wire::RUN) && b.len() == 2 && fds.len() == 4 => {
                    if let Err(e) = self.start(i, b[1] & wire::FLAG_TTY != 0, fds) {
                        let _ = socket::send(self.entries[i].sock.as_fd(), &wire::tagged(wire::FAILED, e), &[]);
                        return false;
                    }
                }
                (Got::Packet(b, _), Some(pid)) => {
                    if let Some(sig) = wire::value(&b, wire::KILL).filter(|s| (1..=64).contains(s)) {
                        // CMD leads its own group in this namespace.
                        let _ = crate::signals::kill(-pid, sig);
                    }
                }
                (Got::Packet(..) | Got::TooLong, _) => {}
                (Got::Empty, _) => return true,
                (Got::Closed, pid) => {
                    // The client is gone (killed, or its terminal): CMD's session goes with it,
                    // as a run's sandbox goes with its snug (K1).
                    if let Some(pid) = pid {
                        for p in super::procfs::pids().into_iter().filter(|p| super::procfs::session(*p) == Some(pid)) {
                            let _ = crate::signals::kill(p, libc::SIGKILL);
                        }
                    }
                    self.entries[i].open = false;
                    return pid.is_some(); // a started entry stays until CMD is reaped
                }
            }
        }
    }

    /// Fork CMD with the client's descriptors `[stdin, stdout, stderr, argv memfd]`.
    fn start(&mut self, i: usize, tty: bool, fds: Vec<OwnedFd>) -> Result<(), i32> {
        let args = std::fs::File::from(fds[3].try_clone().map_err(|_| libc::EBADF)?);
        let meta = args.metadata().map_err(|_| libc::EBADF)?;
        if !meta.is_file() || meta.len() > MAX_ARGS {
            return Err(libc::EINVAL); // a pipe could block init; a memfd cannot
        }
        let mut spec = crate::payload_args::receive_from(args)?;
        spec.env.clone_from(&self.env);
        spec.closed = 0;
        if spec.argv.is_empty() {
            let shell = spec.var("SHELL").filter(|s| !s.is_empty()).unwrap_or(b"/bin/sh").to_vec();
            spec.argv = vec![CString::new(shell).map_err(|_| libc::EINVAL)?];
        }
        let program = crate::payload_args::resolve(&spec)?;
        let (ptrs, envp) = spec.pointers();
        let pair = match self.filter {
            Some(_) => Some(socket::pair().map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?),
            None => None,
        };
        let (err_r, err_w) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)
                .map_err(|e| e.raw_os_error())?;
        let guard_to = pair.as_ref().zip(self.filter.as_deref()).map(|((_, theirs), prog)| (prog, theirs.as_raw_fd()));
        let pid = super::spawn::fork_exec(&super::spawn::Plan {
            program: &program,
            argv: &ptrs,
            envp: &envp,
            close: None,
            session: Some(([fds[0].as_raw_fd(), fds[1].as_raw_fd(), fds[2].as_raw_fd()], tty)),
            guard: guard_to,
            go: None,
            closed: 0,
            err: err_w.as_raw_fd(),
        });
        drop(err_w);
        let pid = pid?;
        if let Some((ours, theirs)) = pair {
            drop(theirs);
            if let Some(mut g) = Guard::receive(&ours) {
                g.handed = self.handed;
                self.guards.push(g);
            }
        }
        let e = &mut self.entries[i];
        e.pid = Some(pid);
        e.err = Some(err_r);
        let _ = socket::send(e.sock.as_fd(), &wire::tagged(wire::STARTED, pid), &[]);
        Ok(())
    }
}
