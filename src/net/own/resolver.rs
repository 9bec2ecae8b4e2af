//! Host-side name resolution for the sandbox's connections (SPEC N6): `getaddrinfo(3)` blocks,
//! so a few threads of snug's do it, started with the first connection to a name, and wake
//! the poll loop through a pipe. The answer is what the host's own resolver says now, checked
//! by the caller before snug connects.

use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// Threads resolving at once: one slow name does not hold the others.
const THREADS: usize = 4;

/// One question: which connection asked, the name and the port.
type Ask = (u64, String, u16);
/// One answer: which connection asked, the addresses (empty when the name did not resolve).
pub type Answer = (u64, Vec<SocketAddr>);

/// The resolver threads and the pipe that says an answer is waiting.
pub struct Resolver {
    ask: Option<Sender<Ask>>,
    answers: Option<Receiver<Answer>>,
    wake: Option<OwnedFd>,
}

impl Resolver {
    /// Not started yet: [`Resolver::ask`] starts the threads.
    pub fn new() -> Resolver {
        Resolver { ask: None, answers: None, wake: None }
    }

    /// The descriptor the poll loop watches (readable when an answer waits), once started.
    pub fn wake_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.wake.as_ref().map(|f| f.as_fd())
    }

    /// Resolve `name` at `port` for connection `id`.
    ///
    /// # Errors
    /// When the threads or their pipe cannot be made.
    pub fn ask(&mut self, id: u64, name: &str, port: u16) -> std::io::Result<()> {
        if self.ask.is_none() {
            self.start()?;
        }
        if let Some(tx) = &self.ask {
            let _ = tx.send((id, name.to_string(), port));
        }
        Ok(())
    }

    fn start(&mut self) -> std::io::Result<()> {
        use rustix::pipe::{pipe_with, PipeFlags};
        let (r, w) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        let w = Arc::new(w);
        let (ask_tx, ask_rx) = channel::<Ask>();
        let (ans_tx, ans_rx) = channel::<Answer>();
        let ask_rx = Arc::new(Mutex::new(ask_rx));
        for i in 0..THREADS {
            let (rx, tx, w) = (ask_rx.clone(), ans_tx.clone(), w.clone());
            std::thread::Builder::new().name(format!("snug-resolve-{i}")).stack_size(64 * 1024).spawn(
                move || loop {
                    let next = rx.lock().map(|rx| rx.recv());
                    let Ok(Ok((id, name, port))) = next else { return };
                    let addrs = (name.as_str(), port).to_socket_addrs().map(|a| a.collect()).unwrap_or_default();
                    if tx.send((id, addrs)).is_err() {
                        return;
                    }
                    let _ = rustix::io::write(&*w, b"!");
                },
            )?;
        }
        self.ask = Some(ask_tx);
        self.answers = Some(ans_rx);
        self.wake = Some(r);
        Ok(())
    }

    /// The answers that arrived, without waiting.
    pub fn answers(&mut self) -> Vec<Answer> {
        if let Some(r) = &self.wake {
            let mut buf = [0u8; 256];
            while matches!(rustix::io::read(r, &mut buf), Ok(n) if n > 0) {}
        }
        self.answers.as_ref().map(|rx| rx.try_iter().collect()).unwrap_or_default()
    }
}
