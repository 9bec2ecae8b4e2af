//! The run's end of its control socket (SPEC L1, L2, L5): one listening descriptor and a
//! few connections, all polled by the supervisor's single loop, never waited on. Each
//! connection's peer is checked (`SO_PEERCRED`: the same uid, or root; and not inside a
//! sandbox, [`super::peer`]) before any request is read; a request is one packet of at most 4 KiB; garbage gets `err` and the loop goes on.

use super::socket::{self, Got, Peer};
use super::wire;
use crate::error::{failure, USAGE};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use snug_core::wire::Control;
use snug_core::{Pid, Signal};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

mod room;

/// What the control socket asks of the supervisor.
pub trait Host {
    /// `starting`, `running`, `grace`, `stopped` or `jobs`.
    fn state(&self) -> &'static str;
    /// Init's pid in snug's namespace, once it is up.
    fn init_pid(&self) -> Option<Pid>;
    /// Act on `sig` as if process `from` had sent it to snug (G1–G6); a word on what was done.
    fn signal(&mut self, sig: Signal, from: Option<Pid>) -> String;
    /// `snug stop` is about to signal: the run ends by it (for `--report`, O5).
    fn stopping(&mut self);
    /// Give init one end of a new `exec` socket; the other end for the client.
    ///
    /// # Errors
    /// Why not now (not started yet, ending).
    fn exec(&mut self) -> anyhow::Result<OwnedFd>;
}

struct Conn {
    fd: OwnedFd,
    peer: Peer,
    /// A stop caller: gets the end's text.
    waiting: bool,
    /// It has sent a request: a client at work, kept over idle ones when the list is full.
    spoke: bool,
    /// Another user's: every request gets `err permission denied` (kept open until the
    /// peer closes: closing on unread data would reset the connection before the client
    /// reads the refusal, `unix_release_sock`).
    refused: bool,
}

/// The socket and lock file this run made, removed at exit ([`cleanup`]).
static BOUND: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The control socket of one run.
pub struct Server {
    listener: OwnedFd,
    /// `NAME.lock`, locked while the run lives ([`super::lockfile`]).
    lock: super::lockfile::Held,
    name: String,
    conns: Vec<Conn>,
    started: f64,
    cmd: String,
    mode: &'static str,
    jobs: &'static str,
}

fn now_secs() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Remove the sockets in `dir` whose snug is gone (`connect(2)` refused) and the lock files
/// nobody holds: SPEC L5, a SIGKILLed snug leaves nothing that looks live.
pub fn sweep(dir: &Path) {
    for (_, path) in super::sockets_in(dir, None) {
        socket::remove_stale(&path);
    }
    for (_, path) in super::files_in(dir, None, ".lock") {
        super::lockfile::remove_stale(&path);
    }
}

impl Server {
    /// Bind `NAME.sock` in `dir`, this user's runtime directory
    /// ([`super::runtime::prepare`]), mode 0600.
    ///
    /// # Errors
    /// 64 when a live run already has the name; 71 when the socket cannot be made.
    pub fn bind(
        dir: &Path,
        name: &str,
        cmd: &str,
        mode: &'static str,
        jobs: snug_core::init::Jobs,
    ) -> anyhow::Result<Server> {
        sweep(dir);
        Server::bind_swept(dir, name, cmd, mode, jobs)
    }

    /// [`Server::bind`] under a generated name (`STEM-XXXX`, [`super::generated_name`]): one
    /// that a live run happens to have already is drawn again, at most 8 times, so that a
    /// name the caller never chose never fails a run (L1).
    ///
    /// # Errors
    /// As [`Server::bind`].
    pub fn bind_generated(
        dir: &Path,
        name: &str,
        cmd: &str,
        mode: &'static str,
        jobs: snug_core::init::Jobs,
    ) -> anyhow::Result<Server> {
        sweep(dir);
        let stem = name.rsplit_once('-').map_or(name, |(s, _)| s).to_string();
        let mut name = name.to_string();
        for _ in 0..8 {
            match Server::bind_swept(dir, &name, cmd, mode, jobs) {
                Err(e) if crate::error::code_of(&e) == USAGE => {
                    crate::log::log!("the generated name {name} is taken: drawing another");
                    name = super::generated_name(&[std::ffi::OsString::from(&stem)]);
                }
                other => return other,
            }
        }
        Server::bind_swept(dir, &name, cmd, mode, jobs)
    }

    /// The run's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn bind_swept(
        dir: &Path,
        name: &str,
        cmd: &str,
        mode: &'static str,
        jobs: snug_core::init::Jobs,
    ) -> anyhow::Result<Server> {
        let path = dir.join(format!("{name}.sock"));
        let os = |what: &str, e: std::io::Error| {
            failure(crate::error::OS_ERROR, format!("{what} {}: {}", path.display(), crate::error::io_text(&e)))
        };
        // Bound and listening under a hidden name first, then linked into place: a socket
        // that `ps` or another run's sweep can see always accepts (no window between bind
        // and listen where it would look stale), and `link(2)` fails with EEXIST when the
        // name is taken, atomically.
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let listener = socket::listen(&tmp).map_err(|e| os("cannot create", e))?;
        super::private_mode(&tmp).map_err(|e| os("cannot chmod", e))?;
        let linked = std::fs::hard_link(&tmp, &path).or_else(|e| {
            // Taken by a snug that is gone (SIGKILL): take it over.
            if e.kind() == std::io::ErrorKind::AlreadyExists && socket::remove_stale(&path) {
                return std::fs::hard_link(&tmp, &path);
            }
            Err(e)
        });
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(failure(USAGE, format!("a live sandbox is already named {name} (see snug ps)")));
            }
            Err(e) => return Err(os("cannot create", e)),
        }
        BOUND.lock().unwrap_or_else(|e| e.into_inner()).push(path.clone());
        crate::log::log!("name: {name} (control socket {})", path.display());
        let (started, jobs) = (now_secs(), jobs.word());
        let fixed = fixed_info(name, cmd, mode, jobs, started);
        let lock_path = super::lockfile::path_for(&path);
        let lock = super::lockfile::create(&lock_path, &fixed.to_string()).map_err(|e| {
            let why = crate::error::io_text(&e);
            failure(crate::error::OS_ERROR, format!("cannot create {}: {why}", lock_path.display()))
        })?;
        BOUND.lock().unwrap_or_else(|e| e.into_inner()).push(lock_path);
        Ok(Server {
            listener,
            lock,
            name: name.to_string(),
            conns: Vec::new(),
            started,
            cmd: cmd.to_string(),
            mode,
            jobs,
        })
    }

    /// The descriptors to poll: the listener, then each connection.
    pub fn poll_fds(&self) -> Vec<libc::pollfd> {
        let fds = std::iter::once(self.listener.as_raw_fd()).chain(self.conns.iter().map(|c| c.fd.as_raw_fd()));
        fds.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect()
    }

    /// Act on what poll found (`ready` is what [`Server::poll_fds`] added, with revents);
    /// called on every round of snug's loop, with `signalled` when that round read signals.
    /// First, in such a round, the stops of this run made while it was stopped
    /// ([`super::lockfile::Held::requests`]): such a stop wrote its request before it sent
    /// TERM and CONT to snug itself, so it is here in the round snug reads them in. Other
    /// rounds (a keystroke, output) have none to find and skip the look (B8).
    pub fn on_ready(&mut self, ready: &[libc::pollfd], signalled: bool, host: &mut dyn Host) {
        let requests = if signalled { self.lock.requests() } else { Vec::new() };
        for (from, now) in requests {
            crate::log::log!("control: stop{} of the stopped run from pid {from}", if now { " --now" } else { "" });
            host.stopping();
            if now {
                // The second TERM: G4's teardown, after the caller's own.
                host.signal(Signal::TERM, Pid::new(from));
            }
        }
        let mut gone = Vec::new();
        for (i, p) in ready.iter().enumerate().skip(1) {
            if p.revents != 0 && !self.serve(i - 1, host) {
                gone.push(i - 1);
            }
        }
        for i in gone.into_iter().rev() {
            self.conns.remove(i);
        }
        if ready.first().is_some_and(|p| p.revents != 0) {
            self.accept_all();
        }
    }

    fn accept_all(&mut self) {
        while let Some(fd) = socket::accept(self.listener.as_fd()) {
            let Ok(peer) = socket::peer(fd.as_fd()) else { continue };
            let me = rustix::process::geteuid().as_raw();
            // SPEC L5: only the same user, or root; X4: never from inside a sandbox.
            let other_user = peer.uid != me && peer.uid != 0;
            let sandboxed = !other_user && !super::peer::in_own_pid_namespace(fd.as_fd(), peer.pid);
            if other_user {
                crate::log::log!(
                    "control: refused a connection from uid {} (pid {})",
                    peer.uid,
                    peer.pid.map_or(0, Pid::raw)
                );
            } else if sandboxed {
                crate::log::log!(
                    "control: refused a connection from inside a sandbox (pid {})",
                    peer.pid.map_or(0, Pid::raw)
                );
            }
            let refused = other_user || sandboxed;
            if !room::make(&mut self.conns) {
                continue;
            }
            self.conns.push(Conn { fd, peer, waiting: false, spoke: false, refused });
        }
    }

    /// Read and answer what connection `i` sent; false once it is to be dropped.
    fn serve(&mut self, i: usize, host: &mut dyn Host) -> bool {
        loop {
            let c = &self.conns[i];
            let (bytes, fds) = match socket::recv(c.fd.as_fd()) {
                Got::Packet(b, f) => (b, f),
                Got::Empty => return true,
                Got::Closed => return false,
                Got::TooLong => {
                    let _ = socket::send(c.fd.as_fd(), b"err request too long", &[]);
                    continue;
                }
            };
            drop(fds); // no request carries descriptors to the run
            let (refused, peer) = (c.refused, c.peer);
            self.conns[i].spoke = true;
            if refused {
                let _ = socket::send(self.conns[i].fd.as_fd(), b"err permission denied", &[]);
                continue;
            }
            let reply = self.answer(i, &bytes, host);
            match reply {
                Reply::Text(t) => {
                    let _ = socket::send(self.conns[i].fd.as_fd(), t.as_bytes(), &[]);
                }
                Reply::Fd(fd) => {
                    let _ = socket::send(self.conns[i].fd.as_fd(), b"ok", &[fd.as_fd()]);
                }
            }
            crate::log::log!(
                "control: request {:?} from pid {}",
                String::from_utf8_lossy(&bytes[..1]),
                peer.pid.map_or(0, Pid::raw)
            );
        }
    }

    fn answer(&mut self, i: usize, bytes: &[u8], host: &mut dyn Host) -> Reply {
        let from = self.conns[i].peer.pid;
        let text = |t: &str| Reply::Text(t.to_string());
        match Control::decode(bytes) {
            Some(Control::Info) => Reply::Text(format!("J{}", self.info(host))),
            Some(Control::Signal(sig)) if (1..=64).contains(&sig.raw()) => {
                Reply::Text(format!("ok {}", host.signal(sig, from)))
            }
            Some(Control::Signal(_)) => text("err bad signal"),
            Some(Control::Stop { now }) => {
                self.conns[i].waiting = true;
                host.stopping();
                host.signal(Signal::TERM, from);
                if now {
                    // A second TERM within the grace is G4's teardown: the same path as kill.
                    host.signal(Signal::TERM, from);
                }
                text("ok")
            }
            Some(Control::Exec) => match host.exec() {
                Ok(fd) => Reply::Fd(fd),
                Err(why) => Reply::Text(format!("err {why}")),
            },
            None => text("err unknown request"),
        }
    }

    fn info(&self, host: &dyn Host) -> String {
        let mut info = fixed_info(&self.name, &self.cmd, self.mode, self.jobs, self.started);
        info["state"] = host.state().into();
        info["processes"] = host.init_pid().map_or(0, count_below).into();
        info.to_string()
    }

    /// Tell every stop caller how the run ended (just before snug exits) and remove the socket.
    /// `note`: how a run asked to end did end ([`crate::report::RunRecord::end_note`]).
    pub fn finish(mut self, outcome: &crate::end::Outcome, note: Option<&str>) {
        let text = match note {
            Some(n) => format!("end {} ({n})", wire::end_text(outcome)),
            None => format!("end {}", wire::end_text(outcome)),
        };
        // Stops that reached the run as it ended (a harness cancelling twice, several stops
        // at once) and were not read yet, queued or accepted: each gets the end as the first
        // did, not a reset connection.
        self.accept_all();
        for c in self.conns.iter_mut().filter(|c| !c.waiting && !c.refused) {
            if let Got::Packet(bytes, _) = socket::recv(c.fd.as_fd()) {
                c.waiting = matches!(Control::decode(&bytes), Some(Control::Stop { .. }));
                if c.waiting {
                    let _ = socket::send(c.fd.as_fd(), b"ok", &[]); // as a stop served in time
                }
            }
        }
        for c in self.conns.iter().filter(|c| c.waiting) {
            let _ = socket::send(c.fd.as_fd(), text.as_bytes(), &[]);
        }
        self.lock.end(&text);
        // (the lock file is removed below; a stop caller that has it open still reads it)
        cleanup();
    }
}

enum Reply {
    Text(String),
    Fd(OwnedFd),
}

/// What `ps` shows of a run that never changes: its answer to `I` and its lock file.
fn fixed_info(name: &str, cmd: &str, mode: &str, jobs: &str, started: f64) -> serde_json::Value {
    serde_json::json!({
        "name": name,
        "pid": std::process::id(),
        "uid": rustix::process::geteuid().as_raw(),
        "command": cmd,
        "mode": mode,
        "jobs": jobs,
        "started": started,
    })
}

/// Remove this run's socket and lock file (idempotent): at the end of the run and on any
/// exit path.
pub fn cleanup() {
    for p in std::mem::take(&mut *BOUND.lock().unwrap_or_else(|e| e.into_inner())) {
        let _ = std::fs::remove_file(p);
    }
}

/// How many processes descend from `root` (the sandbox's processes besides its init: every
/// sandbox process is init's descendant, orphans being reparented to it), from `/proc`.
fn count_below(root: Pid) -> usize {
    let mut parent = std::collections::HashMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<i32>().ok());
        if let Some(pp) = ppid {
            parent.insert(pid, pp);
        }
    }
    parent
        .keys()
        .filter(|p| {
            let mut at = **p;
            for _ in 0..4096 {
                match parent.get(&at) {
                    Some(&pp) if pp == root.raw() => return true,
                    Some(&pp) if pp > 1 => at = pp,
                    _ => return false,
                }
            }
            false
        })
        .count()
}
