//! `snug exec NAME [--] CMD…` (SPEC L3), the client side: ask the run for a socket to its
//! init, send CMD (in a memfd, as the payload's argv travels, R7) with this process's stdin,
//! stdout and stderr (each that is the caller's terminal replaced by a pty's slave, as for a
//! run's payload, [`crate::pty`]), relay the signals this process gets to CMD's group, and
//! end as CMD ended (R3).
//!
//! The socket goes from the run's snug straight to init, so snug's loop carries no bytes of
//! it and needs no state per exec; snug checked the caller's credentials (L5) before handing
//! it out, and init trusts only its shape.

use super::client;
use super::socket::{self, Got};
use crate::end::Outcome;
use crate::error::{failure, INTERNAL, NOT_EXECUTABLE, NOT_FOUND, OS_ERROR};
use crate::signals::SignalFd;
use crate::sys::poll::PollSet;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use snug_core::carry::{self, Carried, Carry};
use snug_core::exec_client::{Client, Effect, End, Event, Tty};
use snug_core::init::ToClient;
use snug_core::wire::{Control, ExecAsk, ExecTold, FRAME};
use snug_core::{Errno, Signal};
use std::ffi::OsString;
use std::ops::ControlFlow;

/// How long `exec` waits for a run that is still starting.
const STARTING: std::time::Duration = std::time::Duration::from_secs(10);
/// The run's answer while it starts (see `Host::exec` in src/supervise/live.rs).
const STILL_STARTING: &[u8] = b"err the sandbox is still starting";

/// Signals relayed to CMD's group (its process group, which it leads).
const RELAYED: [Signal; 6] = [Signal::INT, Signal::TERM, Signal::HUP, Signal::QUIT, Signal::USR1, Signal::USR2];

/// Run CMD in the live sandbox `name`; the outcome is CMD's (R3).
///
/// # Errors
/// As [`client::connect_named`]; 126/127 when CMD cannot be run; 71 for OS errors.
pub fn run(name: &str, cmd: &[OsString]) -> anyhow::Result<Outcome> {
    let c = client::connect_named(name)?;
    // A run that is still starting (bwrap, init, the network) has no init to ask yet: wait
    // for it, bounded, rather than fail a `snug … & snug exec …` that raced it.
    let until = std::time::Instant::now() + STARTING;
    let (_, mut fds) = loop {
        match c.ask(Control::Exec.encode(&mut [0; FRAME]), 5000) {
            Got::Packet(b, _) if b == STILL_STARTING && std::time::Instant::now() < until => {
                socket::readable(c.pidfd.as_fd(), 10); // 10 ms, or at once if the run ended
            }
            got => break client::expect_ok(name, got)?,
        }
    };
    let sock = fds.pop().ok_or_else(|| failure(INTERNAL, format!("{name}: no exec socket in the answer")))?;
    // The shell gets the run's prompt, as the run's own shell does (R1, O8); init keeps only
    // these variables of the client's, and only when the run set none of its own.
    let prompt = match cmd.is_empty() {
        true => {
            let shell = std::env::var_os("SHELL").filter(|s| !s.is_empty()).unwrap_or_else(|| "/bin/sh".into());
            crate::prompt::env_for(std::path::Path::new(&shell), name, rustix::process::geteuid().is_root())
        }
        false => Vec::new(),
    };
    let args = crate::payload_args::memfd(cmd, &prompt)?;
    // At a terminal CMD gets a pty of its own, as a run's payload does (L3, T11): each of fds
    // 0–2 that is the caller's terminal becomes its slave; pipes and files stay as they are.
    let tty = crate::tty::CallerTty::open();
    let pty = match &tty {
        Some(t) => Some(open_pty(sock.as_fd(), t).map_err(|e| failure(OS_ERROR, format!("pty: {e}")))?),
        None => None,
    };
    let mask = tty.as_ref().map_or(Default::default(), |t| t.stdio_mask());
    let mut sigs: Vec<Signal> = RELAYED.to_vec();
    if pty.is_some() {
        sigs.extend([Signal::WINCH, Signal::CONT, Signal::TSTP]);
    }
    let signals = SignalFd::new(&sigs).map_err(|e| failure(OS_ERROR, format!("signalfd: {e}")))?;
    let own = [rustix::stdio::stdin(), rustix::stdio::stdout(), rustix::stdio::stderr()];
    let mut fds: Vec<BorrowedFd<'_>> = own.to_vec();
    if let Some(p) = &pty {
        for (i, fd) in fds.iter_mut().enumerate() {
            if mask.has(i as i32) {
                *fd = p.slave.as_fd();
            }
        }
    }
    fds.push(args.as_fd());
    if let Some(p) = &pty {
        fds.push(p.slave.as_fd());
    }
    let run = ExecAsk::Run { tty: pty.is_some() };
    socket::send(sock.as_fd(), run.encode(&mut [0; FRAME]), &fds)
        .map_err(|e| failure(OS_ERROR, format!("{name}: cannot hand CMD to the sandbox: {e}")))?;
    drop(fds);
    // CMD holds the slave now; the master reads EIO once CMD's side is all closed.
    let mut bridge = tty.zip(pty).map(|(mut t, p)| {
        t.share(&super::own_dir()); // one record for snugs sharing the terminal (T16)
        crate::bridge::Bridge::new(t, p.master)
    });
    // Without a deferred hand-over of its own, exec takes the caller's terminal at the start
    // (in front only) when both CMD's stdin and stdout are its pty, or its stdin is and its
    // stdout is no pipe: `snug exec NAME -- sh -c 'read x' >file` gets the line typed, while
    // in `snug exec NAME -- cmd | less` the pager keeps the terminal's settings to itself.
    let piped = rustix::fs::fstat(rustix::stdio::stdout())
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Fifo);
    if let Some(b) = bridge.as_mut() {
        if mask.in_and_out() || (mask.has(0) && !piped) {
            b.set_input(true);
        }
    }
    let outcome = relay(&sock, &signals, bridge.as_mut(), cmd);
    drop(bridge); // the caller's terminal settings back before anything is printed (T7)
    outcome
}

/// How long the client waits for init's pty master.
const PTY_ANSWER_MS: i32 = 5000;

/// CMD's pty: one init opened from the sandbox's own `/dev/ptmx`, so that CMD's terminal is a
/// node of the sandbox's `/dev/pts` and `tty` names it (T1); the slave is opened here from the
/// master and gets the caller's settings before CMD starts. A sandbox without a pty device of
/// its own (a `/dev` bound from the host, say), or an init that does not answer (an older
/// snug's run), gets one of the host's, which works the same but has no name inside.
fn open_pty(sock: BorrowedFd<'_>, tty: &crate::tty::CallerTty) -> std::io::Result<crate::pty::Pty> {
    let _ = socket::send(sock, ExecAsk::OpenPty.encode(&mut [0; FRAME]), &[]);
    match socket::recv_within(sock, PTY_ANSWER_MS) {
        Got::Packet(b, mut fds) if ExecTold::decode(&b) == Some(ExecTold::Master(Errno(0))) && fds.len() == 1 => {
            crate::pty::adopt(fds.remove(0), tty)
        }
        got => {
            let why = match got {
                Got::Packet(b, _) => match ExecTold::decode(&b) {
                    Some(ExecTold::Master(e)) => crate::error::strerror(e.0),
                    _ => "?".into(),
                },
                _ => "no answer".into(),
            };
            crate::log::log!("exec: no pty inside the sandbox ({why}): one of the host's");
            crate::pty::open(tty)
        }
    }
}

/// What each entry of the client's poll set is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// The exec socket to init.
    Sock,
    /// The client's signalfd.
    Signals,
    /// The caller's terminal and CMD's pty master, at a terminal.
    Bridge,
}

/// The client's loop: decode what poll found, ask [`Client`] (the decisions, in snug-core),
/// carry out its effects, until it says how the client ends.
fn relay(
    sock: &OwnedFd,
    signals: &SignalFd,
    bridge: Option<&mut crate::bridge::Bridge>,
    cmd: &[OsString],
) -> anyhow::Result<Outcome> {
    let client = Client::new(bridge.as_ref().is_some_and(|b| b.input()));
    let mut r = Relay { client, sock, signals, bridge };
    loop {
        let mut set = PollSet::default();
        set.watch(Slot::Sock, Some(sock.as_fd()), libc::POLLIN);
        set.watch(Slot::Signals, Some(signals.as_fd()), libc::POLLIN);
        if let Some(b) = r.bridge.as_ref() {
            set.add(Slot::Bridge, b.poll_fds());
        }
        // Keys held for a CMD that does not read yet are looked at again (T14).
        let held = r.bridge.as_ref().and_then(|b| b.deadline());
        if set.poll(held.map(|at| at.saturating_duration_since(std::time::Instant::now()))).is_err() {
            continue; // EINTR
        }
        let mut events = Vec::new();
        if let Some(b) = r.bridge.as_mut() {
            let mut seen = Vec::new();
            b.on_ready(set.entries(Slot::Bridge), &mut seen);
            if seen.contains(&crate::bridge::Event::HungUp) {
                events.push(Event::HungUp);
            }
        }
        if set.got(Slot::Signals) != 0 {
            while let Some(got) = signals.read() {
                let tty = r.bridge.as_ref().map_or(Tty::default(), |b| Tty {
                    bridge: true,
                    input: b.input(),
                    front_is_leader: got.sig == Signal::TSTP && b.front_is_leader(),
                    has_key: b.has_key(got.sig),
                });
                events.push(Event::Signal { sig: got.sig, terminal: got.by_terminal(), tty });
            }
        }
        if set.got(Slot::Sock) != 0 {
            match socket::recv(sock.as_fd()) {
                Got::Packet(b, _) => match ExecTold::decode(&b) {
                    Some(ExecTold::Cmd(ToClient::Exited(status))) => events.push(Event::Exited(status)),
                    Some(ExecTold::Cmd(ToClient::Failed(e))) => events.push(Event::Failed(e)),
                    Some(ExecTold::Cmd(ToClient::Stopped(sig))) => {
                        events.push(Event::Stopped { sig, bridge: r.bridge.is_some() })
                    }
                    Some(ExecTold::Cmd(ToClient::Started(_)) | ExecTold::Master(_)) | None => {}
                },
                Got::Empty | Got::TooLong => {}
                Got::Closed => events.push(Event::Closed),
            }
        }
        for ev in events {
            if let ControlFlow::Break(end) = carry::on(&mut r, ev) {
                return match end {
                    End::Status(status) => Ok(Outcome::Status(status)),
                    End::Signal(sig) => Ok(Outcome::Signal(sig)),
                    End::Failed(e) => Err(exec_failed(e.0, cmd)),
                };
            }
        }
    }
}

/// The client's decisions and what its effects act on.
struct Relay<'a> {
    client: Client,
    sock: &'a OwnedFd,
    signals: &'a SignalFd,
    bridge: Option<&'a mut crate::bridge::Bridge>,
}

impl Carry for Relay<'_> {
    type Event = Event;
    type Effect = Effect;
    type End = End;

    fn decide(&mut self, ev: Event) -> Vec<Effect> {
        self.client.on(ev)
    }

    /// [`Effect::StopSelf`] is answered by [`Event::Woke`].
    fn carry(&mut self, fx: Effect) -> Carried<Event, End> {
        match (fx, self.bridge.as_deref_mut()) {
            (Effect::Tell(sig), _) => {
                let _ = socket::send(self.sock.as_fd(), ExecAsk::Kill(sig).encode(&mut [0; FRAME]), &[]);
            }
            (Effect::StopSelf(sig), b) => {
                let _ = crate::signals::stop_with(sig, true); // not stopped: Woke continues CMD at once
                let in_front = b.is_some_and(|b| b.tty.in_front());
                return Carried::Answer(Event::Woke { in_front });
            }
            (Effect::End(end), _) => return Carried::End(end),
            (Effect::PtyKey(sig), Some(b)) => {
                b.send_key(sig);
            }
            (Effect::Resize, Some(b)) => b.resize(),
            (Effect::InputOff, Some(b)) => {
                b.set_input(false);
            }
            (Effect::InputOn, Some(b)) => {
                b.set_input(true);
            }
            (Effect::Flush, Some(b)) => b.flush(),
            (Effect::Stopped, Some(b)) => b.stopped(),
            (Effect::ClosePty, Some(b)) => b.close_pty(),
            (Effect::Drain, Some(b)) => b.drain(&mut Ending(self.signals)),
            // The terminal's effects without a terminal: nothing to do.
            (_, None) => {}
        }
        Carried::Done
    }
}

fn exec_failed(e: i32, cmd: &[OsString]) -> anyhow::Error {
    let what = cmd.first().map_or("the shell".into(), |c| c.to_string_lossy().into_owned());
    match e {
        libc::ENOENT => failure(NOT_FOUND, format!("{what}: not found in the sandbox")),
        libc::EINVAL => failure(INTERNAL, format!("{what}: the sandbox refused the request")),
        _ => failure(NOT_EXECUTABLE, format!("{what}: {}", crate::error::strerror(e))),
    }
}

/// The final drain ends on an INT, TERM or HUP as well as with the last byte (T14).
struct Ending<'a>(&'a SignalFd);

impl crate::bridge::Watch for Ending<'_> {
    fn fds(&self) -> Vec<libc::pollfd> {
        vec![libc::pollfd { fd: self.0.raw(), events: libc::POLLIN, revents: 0 }]
    }

    fn ends(&mut self, ready: &[libc::pollfd]) -> bool {
        let mut end = false;
        if ready[0].revents != 0 {
            while let Some(got) = self.0.read() {
                end |= matches!(got.sig, Signal::INT | Signal::TERM | Signal::HUP);
            }
        }
        end
    }
}
