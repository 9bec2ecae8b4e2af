//! `snug exec` inside the sandbox (SPEC L3): init forks CMD. Being init's child, it is in
//! every namespace of the sandbox and under its bounds, under bwrap's seccomp filter
//! (inherited), without capabilities (init has none), with the payload's environment and
//! working directory (init's own, which bwrap set), and `kill(-1)` from init (relays, the
//! grace) reaches it; it dies with the sandbox. At a terminal the client sends a pty's slave
//! of its own, which CMD makes its controlling terminal (T1, T11).
//!
//! Each `exec` has its own socket (from snug, [`crate::channel::Order::Exec`]) on which the
//! client sends CMD and its descriptors, and signals, and init reports the start and the end.

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
    /// CMD has a pty: its stops are reported.
    tty: bool,
}

/// The `exec`s of one sandbox.
pub struct Execs {
    /// The payload's environment.
    env: Vec<CString>,
    entries: Vec<Entry>,
    /// A CMD with a pty ran: init waits for stops too.
    pub stops: bool,
}

impl Execs {
    /// No exec yet; `env` is the payload's environment.
    pub fn new(env: Vec<CString>) -> Execs {
        Execs { env, entries: Vec::new(), stops: false }
    }

    /// snug sent a new exec socket.
    pub fn add(&mut self, sock: OwnedFd) {
        self.entries.push(Entry { sock, pid: None, err: None, open: true, tty: false });
    }

    /// Descriptors to poll: each entry's socket and error pipe.
    pub fn poll_fds(&self, out: &mut Vec<libc::pollfd>) {
        for e in &self.entries {
            let sock = if e.open { e.sock.as_raw_fd() } else { -1 };
            out.push(libc::pollfd { fd: sock, events: libc::POLLIN, revents: 0 });
            let err = e.err.as_ref().map_or(-1, |f| f.as_raw_fd());
            out.push(libc::pollfd { fd: err, events: libc::POLLIN, revents: 0 });
        }
    }

    /// Act on what poll found in [`Execs::poll_fds`]'s descriptors.
    pub fn on_ready(&mut self, mine: &[libc::pollfd]) {
        let n = self.entries.len();
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
        if libc::WIFSTOPPED(status) {
            // Its client stops its own job and continues CMD on `fg` (T5).
            if let Some(e) = self.entries.iter().find(|e| e.pid == Some(pid) && e.tty) {
                let _ = socket::send(e.sock.as_fd(), &wire::tagged(wire::STOPPED, libc::WSTOPSIG(status)), &[]);
            }
            return;
        }
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
                (Got::Packet(b, fds), None)
                    if b.first() == Some(&wire::RUN) && b.len() == 2 && (fds.len() == 4 || fds.len() == 5) =>
                {
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

    /// Fork CMD with the client's descriptors `[stdin, stdout, stderr, argv memfd, pty slave?]`;
    /// the slave, sent at a terminal, becomes CMD's controlling terminal.
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
        let ctty = if tty { fds.get(4).map(|f| f.as_raw_fd()) } else { None };
        let (err_r, err_w) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)
                .map_err(|e| e.raw_os_error())?;
        let pid = super::spawn::fork_exec(&super::spawn::Plan {
            program: &program,
            argv: &ptrs,
            envp: &envp,
            close: None,
            session: Some(([fds[0].as_raw_fd(), fds[1].as_raw_fd(), fds[2].as_raw_fd()], ctty)),
            group: None,
            go: None,
            closed: 0,
            err: err_w.as_raw_fd(),
        });
        drop(err_w);
        let pid = pid?;
        if ctty.is_some() && !self.stops {
            // Stops of a CMD with a pty are news from now on, also in detached mode (B5 spares
            // a run without one).
            crate::signals::default_with(libc::SIGCHLD, 0);
            self.stops = true;
        }
        let e = &mut self.entries[i];
        e.tty = ctty.is_some();
        e.pid = Some(pid);
        e.err = Some(err_r);
        let _ = socket::send(e.sock.as_fd(), &wire::tagged(wire::STARTED, pid), &[]);
        Ok(())
    }
}
