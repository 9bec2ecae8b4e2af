//! `snug exec` inside the sandbox (SPEC L3): init forks CMD. Being init's child, it is in
//! every namespace of the sandbox and under its bounds, under bwrap's seccomp filter
//! (inherited), without capabilities (init has none), with the payload's environment and
//! working directory (init's own, which bwrap set), and `kill(-1)` from init (relays, the
//! grace) reaches it; it dies with the sandbox. At a terminal the client sends a pty's slave
//! of its own, which CMD makes its controlling terminal (T1, T11).
//!
//! Each `exec` has its own socket (from snug, [`crate::channel::Order::Exec`]) on which the
//! client sends CMD and its descriptors, and signals, and init reports the start and the end.
//! This is the descriptors' side; what a message means is decided in `snug_core::init`.

use crate::sys::packet::{self, Got};
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::io::Errno;
use snug_core::init::{ExecId, FromClient, ToClient};
use snug_core::wire::{ExecAsk, ExecTold};
use snug_core::Pid;
use std::collections::BTreeMap;
use std::ffi::CString;

/// Most bytes of CMD's argv init reads from the client's memfd.
const MAX_ARGS: u64 = 16 << 20;

/// The variables a `snug exec` client may add for its shell: its prompt ([`crate::prompt`]).
const PROMPT: [&[u8]; 2] = [b"PS1=", b"debian_chroot="];

/// One exec socket and what came with it.
struct Conn {
    sock: OwnedFd,
    /// CMD's exec error pipe until the exec happened.
    err: Option<OwnedFd>,
    /// The client's end is still open (a hung-up socket would poll readable forever).
    open: bool,
    /// The descriptors of the last run request, and whether its fifth is a pty's slave:
    /// what [`ExecSockets::spawn`] starts CMD with.
    pending: Option<(Vec<OwnedFd>, bool)>,
}

/// A descriptor of an exec, for `poll(2)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fd {
    /// Its socket to the client.
    Sock,
    /// CMD's exec-error pipe.
    Err,
}

/// The exec sockets of one sandbox.
pub struct ExecSockets {
    /// The payload's environment.
    env: Vec<CString>,
    conns: BTreeMap<ExecId, Conn>,
    next: u32,
}

impl ExecSockets {
    /// No exec yet; `env` is the payload's environment.
    pub fn new(env: Vec<CString>) -> ExecSockets {
        ExecSockets { env, conns: BTreeMap::new(), next: 0 }
    }

    /// snug sent a new exec socket: its name.
    pub fn add(&mut self, sock: OwnedFd) -> ExecId {
        let id = ExecId(self.next);
        self.next = self.next.wrapping_add(1);
        self.conns.insert(id, Conn { sock, err: None, open: true, pending: None });
        id
    }

    /// The descriptors to poll, each exec's error pipe before its socket.
    pub fn fds(&self) -> impl Iterator<Item = (ExecId, Fd, BorrowedFd<'_>)> {
        self.conns.iter().flat_map(|(id, c)| {
            let err = c.err.as_ref().map(|f| (*id, Fd::Err, f.as_fd()));
            let sock = c.open.then(|| (*id, Fd::Sock, c.sock.as_fd()));
            err.into_iter().chain(sock)
        })
    }

    /// The next message on `id`'s socket; `None` when nothing more waits. Packets that are
    /// no message are skipped; the descriptors of a run request are kept for [`ExecSockets::spawn`].
    pub fn recv(&mut self, id: ExecId) -> Option<FromClient> {
        let c = self.conns.get_mut(&id).filter(|c| c.open)?;
        loop {
            match packet::recv(c.sock.as_fd()) {
                Got::Packet(b, fds) => match ExecAsk::decode(&b) {
                    Some(ExecAsk::Run { tty }) if matches!(fds.len(), 4 | 5) => {
                        let tty = tty && fds.len() == 5;
                        c.pending = Some((fds, tty));
                        return Some(FromClient::Run { tty });
                    }
                    Some(ExecAsk::Kill(sig)) => return Some(FromClient::Kill(sig)),
                    Some(ExecAsk::OpenPty) => return Some(FromClient::OpenPty),
                    Some(ExecAsk::Run { .. }) | None => {}
                },
                Got::TooLong => {}
                Got::Empty => return None,
                Got::Closed => {
                    c.open = false;
                    return Some(FromClient::Closed);
                }
            }
        }
    }

    /// Drop what a run request brought that no spawn took.
    pub fn settle(&mut self, id: ExecId) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.pending = None;
        }
    }

    /// What CMD's exec-error pipe says: an `errno` when its exec failed; the pipe is closed
    /// once it said that or reached EOF.
    pub fn read_err(&mut self, id: ExecId) -> Option<i32> {
        let c = self.conns.get_mut(&id)?;
        let fd = c.err.take()?;
        let mut e = [0u8; 4];
        match rustix::io::read(&fd, &mut e) {
            Ok(4) => Some(i32::from_le_bytes(e)),
            Err(Errno::AGAIN) => {
                c.err = Some(fd);
                None
            }
            _ => None, // EOF: the exec happened
        }
    }

    /// Tell `id`'s client; a client that is gone does not hear it.
    pub fn send(&self, id: ExecId, m: ToClient) {
        let Some(c) = self.conns.get(&id) else { return };
        let _ = packet::send(c.sock.as_fd(), &ExecTold::Cmd(m).encode(), &[]);
    }

    /// Open a pty from the sandbox's own `/dev/ptmx` (`pts(4)`) and send `id`'s client its
    /// master, or the `errno` that stopped it (T1). The client opens the slave from the
    /// master (`TIOCGPTPEER`), sets the caller's settings on it and sends it back with its run
    /// request: CMD's terminal is then a node of the sandbox's `/dev/pts`, which `tty` and
    /// `ttyname(3)` find, where a pty of the host's devpts is nowhere inside.
    pub fn open_pty(&self, id: ExecId) {
        let Some(c) = self.conns.get(&id) else { return };
        let (errno, master) = match open_master() {
            Ok(m) => (0, Some(m)),
            Err(e) => (e.raw_os_error(), None),
        };
        let fds: Vec<BorrowedFd<'_>> = master.iter().map(|m| m.as_fd()).collect();
        let _ = packet::send(c.sock.as_fd(), &ExecTold::Master(snug_core::Errno(errno)).encode(), &fds);
    }

    /// Close `id`'s socket and pipe.
    pub fn forget(&mut self, id: ExecId) {
        self.conns.remove(&id);
    }

    /// Fork CMD with the descriptors of `id`'s run request, `[stdin, stdout, stderr, argv
    /// memfd, pty slave?]`; the slave, sent at a terminal, becomes CMD's controlling terminal.
    ///
    /// # Errors
    /// An `errno` for the client: the request's (`EINVAL`, `EBADF`), CMD's lookup, or the fork's.
    pub fn spawn(&mut self, id: ExecId) -> Result<Pid, Errno> {
        let c = self.conns.get_mut(&id).ok_or(Errno::BADF)?;
        let (fds, tty) = c.pending.take().ok_or(Errno::BADF)?;
        let args = std::fs::File::from(fds[3].try_clone().map_err(|_| Errno::BADF)?);
        let meta = args.metadata().map_err(|_| Errno::BADF)?;
        if !meta.is_file() || meta.len() > MAX_ARGS {
            return Err(Errno::INVAL); // a pipe could block init; a memfd cannot
        }
        let mut spec = crate::payload_args::receive_from(args)?;
        // The client's environment holds at most the shell's prompt (`snug exec NAME` with no
        // CMD): kept where the run's own environment has none; anything else is dropped (L3:
        // the run's environment).
        let prompt: Vec<CString> = std::mem::take(&mut spec.env)
            .into_iter()
            .filter(|e| spec.argv.is_empty() && PROMPT.iter().any(|p| e.as_bytes().starts_with(p)))
            .filter(|e| {
                !self
                    .env
                    .iter()
                    .any(|o| o.as_bytes().split(|b| *b == b'=').next() == e.as_bytes().split(|b| *b == b'=').next())
            })
            .collect();
        spec.env.clone_from(&self.env);
        spec.env.extend(prompt);
        // R2 for CMD: what the caller of `snug exec` had closed (its fds 0–2 reach here as
        // /dev/null, which Rust's runtime put there) is closed for CMD too.
        let closed = spec.closed & 0b111;
        if spec.argv.is_empty() {
            let shell = spec.var("SHELL").filter(|s| !s.is_empty()).unwrap_or(b"/bin/sh").to_vec();
            spec.argv = vec![CString::new(shell).map_err(|_| Errno::INVAL)?];
        }
        let program = crate::payload_args::resolve(&spec)?;
        let (ptrs, envp) = spec.pointers();
        let ctty = if tty { fds.get(4).map(|f| f.as_raw_fd()) } else { None };
        let (err_r, err_w) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)?;
        let pid = super::spawn::fork_exec(&super::spawn::Plan {
            program: &program,
            argv: &ptrs,
            envp: &envp,
            close: None,
            session: Some(([fds[0].as_raw_fd(), fds[1].as_raw_fd(), fds[2].as_raw_fd()], ctty)),
            group: None,
            go: None,
            closed,
            err: err_w.as_raw_fd(),
        })?;
        c.err = Some(err_r);
        Ok(pid)
    }
}

/// A new pty master from `/dev/ptmx` as the sandbox sees it, unlocked. Sandbox processes
/// can change `/dev`, so the file is checked to be a pty master (`TIOCGPTN` answers only for
/// one) before it leaves; non-blocking, so a node put in its place cannot hold init in `open`.
fn open_master() -> Result<OwnedFd, Errno> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let master = rustix::fs::open("/dev/ptmx", flags, Mode::empty())?;
    rustix::pty::ptsname(&master, Vec::new()).map_err(|_| Errno::NOTTY)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    Ok(master)
}
