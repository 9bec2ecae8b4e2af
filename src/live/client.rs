//! `snug ps`, `snug stop`, `snug signal` (SPEC L1, L2, L5): the client side of a run's
//! control socket.
//!
//! Identity is exact: the socket's peer is read with `SO_PEERCRED` (its pid as the kernel
//! recorded it at `listen(2)`), pinned with a pidfd before anything it says is trusted, and
//! the answer must name that same pid while the pidfd shows it alive. A pid that was reused
//! cannot show a stranger: a dead snug's socket refuses connections (and is removed here).

use super::socket::{self, Got};
use super::wire;
use crate::end::Outcome;
use crate::error::{failure, OS_ERROR, POLICY, USAGE};
use rustix::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// How long `ps` waits for one run's answer: a run stopped by ^Z cannot answer.
const ANSWER_MS: i32 = 500;

/// A verified connection to a live run's snug.
pub struct Conn {
    /// The connected socket.
    pub fd: OwnedFd,
    /// The run's snug, as `SO_PEERCRED` named it.
    pub pid: i32,
    /// A pidfd of that snug, taken before any reply was read.
    pub pidfd: OwnedFd,
}

/// Why a socket gave no connection.
pub enum Refused {
    /// Its snug is gone; the file was removed.
    Stale,
    /// The path is no socket (or one nobody listens on that is not a socket file): not a run.
    NotARun,
    /// Not this user's (`EACCES` from the socket's mode, or the run's own peer check).
    Denied,
    /// Anything else, in words.
    Other(String),
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The socket of the run named `name` (or a socket path given with a `/`).
///
/// # Errors
/// 64 when no live sandbox has the name.
pub fn find(name: &str) -> anyhow::Result<PathBuf> {
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    super::check_name(name)?;
    for (dir, _) in super::dirs_to_scan() {
        let p = dir.join(format!("{name}.sock"));
        if std::fs::symlink_metadata(&p).is_ok() {
            return Ok(p);
        }
    }
    Err(failure(USAGE, format!("no live sandbox named {name} (see snug ps)")))
}

/// Connect to `path` and check who answers (see the module doc).
pub fn open(path: &Path) -> Result<Conn, Refused> {
    let fd = match socket::connect(path) {
        Ok(fd) => fd,
        // SPEC L5: a dead snug leaves nothing live; a file that is no socket is not ours.
        Err(rustix::io::Errno::CONNREFUSED) if socket::remove_stale(path) => return Err(Refused::Stale),
        Err(rustix::io::Errno::CONNREFUSED) => return Err(Refused::NotARun),
        Err(rustix::io::Errno::ACCESS | rustix::io::Errno::PERM) => return Err(Refused::Denied),
        Err(e) => return Err(Refused::Other(crate::error::strerror(e.raw_os_error()))),
    };
    let peer = socket::peer(fd.as_fd()).map_err(|e| Refused::Other(e.to_string()))?;
    // A socket of another user is not this user's run (a root run's own check refuses the
    // request with `err permission denied`; root's socket can be asked).
    if peer.uid != euid() && euid() != 0 && peer.uid != 0 {
        return Err(Refused::Denied);
    }
    let Some(pid) = rustix::process::Pid::from_raw(peer.pid) else {
        return Err(Refused::Other("the socket's owner is not in this pid namespace".into()));
    };
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).map_err(|_| Refused::Stale)?;
    Ok(Conn { fd, pid: peer.pid, pidfd })
}

impl Conn {
    /// Whether the pinned snug is still alive (its pidfd is not readable).
    pub fn alive(&self) -> bool {
        !socket::readable(self.pidfd.as_fd(), 0)
    }

    /// Send `req` and wait up to `ms` for one reply packet.
    pub fn ask(&self, req: &[u8], ms: i32) -> Got {
        // A refusal (`err permission denied`) may already wait, sent before the run closed
        // the connection: read it even when the send found the connection closed.
        let _ = socket::send(self.fd.as_fd(), req, &[]);
        socket::recv_within(self.fd.as_fd(), ms)
    }
}

/// [`find`] and [`open`] for a command naming one run; a refusal is the matching error.
///
/// # Errors
/// 64 no such run, 77 not this user's (SPEC L5), 71 otherwise.
pub fn connect_named(name: &str) -> anyhow::Result<Conn> {
    let path = find(name)?;
    open(&path).map_err(|r| match r {
        Refused::Stale => failure(USAGE, format!("no live sandbox named {name} (its snug is gone)")),
        Refused::NotARun => failure(USAGE, format!("{name}: not a live sandbox's socket (see snug ps)")),
        Refused::Denied => failure(POLICY, format!("{name}: permission denied")),
        Refused::Other(why) => failure(OS_ERROR, format!("{name}: {why}")),
    })
}

/// A run's reply as a result: `err permission denied` is 77 (L5), any other `err` 71.
///
/// # Errors
/// As said.
pub fn expect_ok(name: &str, got: Got) -> anyhow::Result<(Vec<u8>, Vec<OwnedFd>)> {
    match got {
        Got::Packet(b, f) if b.starts_with(b"ok") || b.starts_with(b"J") => Ok((b, f)),
        Got::Packet(b, _) if b == b"err permission denied" => {
            Err(failure(POLICY, format!("{name}: permission denied")))
        }
        Got::Packet(b, _) => {
            let text = String::from_utf8_lossy(b.strip_prefix(b"err ").unwrap_or(&b)).into_owned();
            Err(failure(OS_ERROR, format!("{name}: {text}")))
        }
        _ => Err(failure(OS_ERROR, format!("{name}: no answer from its snug"))),
    }
}

/// `snug signal NAME SIG`: as if SIG were sent to that snug by a process (G1–G6).
///
/// # Errors
/// As [`connect_named`] and [`expect_ok`].
pub fn signal(name: &str, sig: i32) -> anyhow::Result<Outcome> {
    let c = connect_named(name)?;
    expect_ok(name, c.ask(&wire::tagged(wire::SIGNAL, sig), 2000))?;
    Ok(Outcome::Status(0))
}

/// `snug stop NAME [--now]`: TERM as `kill -TERM` of that snug would be (relay and grace),
/// or a teardown; waits until that snug is gone and prints how it ended (SPEC L2).
///
/// # Errors
/// As [`connect_named`] and [`expect_ok`].
pub fn stop(name: &str, now: bool) -> anyhow::Result<Outcome> {
    let c = connect_named(name)?;
    expect_ok(name, c.ask(&[wire::STOP, u8::from(now)], 2000))?;
    // The run writes `end …` just before it exits; its pidfd says when it is gone.
    let end = loop {
        let mut p = [
            rustix::event::PollFd::new(&c.fd, rustix::event::PollFlags::IN),
            rustix::event::PollFd::new(&c.pidfd, rustix::event::PollFlags::IN),
        ];
        match rustix::event::poll(&mut p, None) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(failure(OS_ERROR, format!("poll: {e}"))),
            Ok(_) => {}
        }
        match socket::recv(c.fd.as_fd()) {
            Got::Packet(b, _) if b.starts_with(b"end ") => break Some(String::from_utf8_lossy(&b[4..]).into_owned()),
            Got::Packet(..) | Got::TooLong | Got::Empty if c.alive() => continue,
            _ => break None,
        }
    };
    // Its pid must be gone before stop returns: wait on the pidfd (bounded by the run's own
    // bounds, G3: at most the grace and a teardown).
    socket::readable(c.pidfd.as_fd(), -1);
    let words = end.as_deref().map_or("ended".to_string(), wire::end_words);
    crate::log::print(&format!("{name}: {words}")).map_err(|e| failure(OS_ERROR, format!("stdout: {e}")))?;
    Ok(Outcome::Status(0))
}

/// One row of `ps`.
struct Row {
    name: String,
    info: serde_json::Value,
}

fn stopped(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    matches!(stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next()), Some('T' | 't'))
}

fn row(name: &str, path: &Path) -> Option<Row> {
    let c = open(path).ok()?;
    let info = match c.ask(&[wire::INFO], ANSWER_MS) {
        Got::Packet(b, _) if b.first() == Some(&b'J') => serde_json::from_slice::<serde_json::Value>(&b[1..]).ok()?,
        // A snug stopped by ^Z cannot answer; its pid is pinned and it is alive.
        Got::Empty if c.alive() && stopped(c.pid) => serde_json::json!({ "pid": c.pid, "state": "stopped" }),
        _ => return None,
    };
    // Exact: the answer names the pinned pid, which is still alive after answering.
    if info.get("pid").and_then(serde_json::Value::as_i64) != Some(i64::from(c.pid)) || !c.alive() {
        return None;
    }
    Some(Row { name: name.to_string(), info })
}

/// `snug ps [--json]`: the caller's live sandboxes (root: everyone's), SPEC L1.
///
/// # Errors
/// None today; the signature leaves room.
pub fn ps(json: bool) -> anyhow::Result<String> {
    let mut rows = Vec::new();
    for (dir, uid) in super::dirs_to_scan() {
        for (name, path) in super::sockets_in(&dir, uid) {
            rows.extend(row(&name, &path));
        }
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let age = |r: &Row| r.info.get("started").and_then(serde_json::Value::as_f64).map(|s| (now - s).max(0.0));
    if json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                let mut v = r.info.clone();
                v["name"] = r.name.clone().into();
                v["age_seconds"] = age(r).map_or(serde_json::Value::Null, |a| ((a * 10.0).round() / 10.0).into());
                v
            })
            .collect();
        return Ok(serde_json::to_string_pretty(&list).unwrap_or_default() + "\n");
    }
    let mut out = format!(
        "{:<20} {:>8} {:<9} {:<12} {:>7} {:>5}  {}\n",
        "NAME", "PID", "STATE", "MODE", "AGE", "PROCS", "COMMAND"
    );
    for r in &rows {
        let s = |k: &str| r.info.get(k).and_then(|v| v.as_str()).unwrap_or("-").to_string();
        let procs = r.info.get("processes").and_then(serde_json::Value::as_u64).map_or("-".into(), |n| n.to_string());
        let age = age(r).map_or("-".into(), |a| format!("{a:.0}s"));
        out.push_str(&format!(
            "{:<20} {:>8} {:<9} {:<12} {:>7} {:>5}  {}\n",
            r.name,
            r.info.get("pid").and_then(serde_json::Value::as_i64).unwrap_or(0),
            s("state"),
            s("mode"),
            age,
            procs,
            s("command")
        ));
    }
    Ok(out)
}
