//! `snug ps [--json]` (SPEC L1): the caller's live sandboxes (root: everyone's), one row each
//! from the run's own answer. A run whose snug is stopped (^Z, TSTP) cannot answer: its row
//! comes from its lock file (name, pid, command, mode, age; state `stopped`) without a
//! connection; one that does not answer in time gets the same row without a state. Every
//! run is asked at once and the answers are awaited together: `ps` never waits beyond
//! [`ANSWER_MS`] for all of them (SPEC L5: 40 silent sockets still answer within 1 s).
//! Every field is shown with its control characters escaped (a command line, or what a
//! hostile run answers, cannot drive the caller's terminal).

use super::client::{self, Conn, Refused};
use super::lockfile::{self, Holder};
use super::socket::{self, Got};
use crate::sys::poll::PollSet;
use rustix::fd::AsFd;
use snug_core::wire::{Control, FRAME};
use std::path::{Path, PathBuf};

/// How long `ps` waits for the answers of all runs together, in milliseconds.
const ANSWER_MS: u64 = 400;

/// One row of `ps`.
struct Row {
    name: String,
    info: serde_json::Value,
}

/// The row of a run that gives no answer, from its lock file: `state` from its process
/// (`stopped`, else unknown), no process count; `None` once its snug is gone.
fn quiet(name: &str, h: &Holder) -> Option<Row> {
    let mut info = h.info.clone();
    info["state"] = if h.stopped() { "stopped".into() } else { serde_json::Value::Null };
    info["processes"] = serde_json::Value::Null;
    h.alive().then(|| Row { name: name.to_string(), info })
}

/// A run asked, whose answer is awaited.
struct Asked {
    name: String,
    conn: Conn,
    held: Option<Holder>,
    got: Got,
}

/// What a run's socket gave without waiting: a row already, or a connection asked `I`.
enum First {
    Row(Option<Row>),
    Asked(Box<Asked>),
}

fn first(name: &str, path: &Path, owner: Option<u32>) -> First {
    let held = lockfile::holder(&lockfile::path_for(path)).filter(|h| owner.is_none_or(|u| u == h.uid));
    if let Some(h) = held.as_ref().filter(|h| h.stopped()) {
        return First::Row(quiet(name, h));
    }
    let conn = match client::open(path, owner) {
        Ok(c) => c,
        // Someone listens (a dead snug's socket refuses), but accepts nothing now: a row
        // with what is known, the name at least.
        Err(Refused::Busy) => {
            let nothing = || Row { name: name.to_string(), info: serde_json::json!({ "state": null }) };
            return First::Row(Some(held.and_then(|h| quiet(name, &h)).unwrap_or_else(nothing)));
        }
        Err(_) => return First::Row(None),
    };
    if !conn.stopped() {
        let _ = socket::send(conn.fd.as_fd(), Control::Info.encode(&mut [0; FRAME]), &[]);
    }
    First::Asked(Box::new(Asked { name: name.to_string(), conn, held, got: Got::Empty }))
}

/// Wait, [`ANSWER_MS`] at most in all, for one packet on each connection.
fn collect(asked: &mut [Box<Asked>]) {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(ANSWER_MS);
    loop {
        let open: Vec<usize> = (0..asked.len()).filter(|i| matches!(asked[*i].got, Got::Empty)).collect();
        let left = until.saturating_duration_since(std::time::Instant::now());
        if open.is_empty() || left.is_zero() {
            return;
        }
        // Each connection by its place in `asked`.
        let mut set = PollSet::default();
        for i in open {
            set.watch(i, Some(asked[i].conn.fd.as_fd()), libc::POLLIN);
        }
        match set.poll(Some(left)) {
            Err(e) if e.kind() != std::io::ErrorKind::Interrupted => return,
            _ => {}
        }
        for i in set.ready() {
            asked[i].got = match socket::recv(asked[i].conn.fd.as_fd()) {
                Got::Empty => Got::Empty,
                Got::Packet(b, f) => Got::Packet(b, f),
                // Closed or garbage: no answer, and none to wait for.
                _ => Got::Closed,
            };
        }
    }
}

fn row(a: Asked) -> Option<Row> {
    let Asked { name, conn: c, held, got } = a;
    let info = match got {
        Got::Packet(b, _) if b.first() == Some(&b'J') => serde_json::from_slice::<serde_json::Value>(&b[1..]).ok()?,
        Got::Empty if c.alive() => {
            return match held.filter(|h| h.pid == c.pid) {
                Some(h) => quiet(&name, &h),
                // No lock file to say more (it stopped since, or is not answering).
                None => {
                    let state = if c.stopped() { "stopped".into() } else { serde_json::Value::Null };
                    Some(Row { name, info: serde_json::json!({ "pid": c.pid.raw(), "state": state }) })
                }
            };
        }
        _ => return None,
    };
    // Exact: the answer names the pinned pid, which is still alive after answering.
    if info.get("pid").and_then(serde_json::Value::as_i64) != Some(i64::from(c.pid.raw())) || !c.alive() {
        return None;
    }
    Some(Row { name, info })
}

/// The login name of `uid` ([`crate::passwd::by_uid`]), else the number.
fn user_name(uid: u32) -> String {
    crate::passwd::by_uid(uid).map_or_else(|| uid.to_string(), |u| u.name)
}

/// The live runs' rows, each with `user` (the login name) and `address` (what `stop`,
/// `signal` and `exec` take: NAME for the caller's own, `USER/NAME` for another user's).
fn rows() -> Vec<Row> {
    let me = rustix::process::geteuid().as_raw();
    let mut found: Vec<(String, PathBuf, Option<u32>)> = Vec::new();
    for (dir, uid) in super::dirs_to_scan() {
        for (name, path) in super::sockets_in(&dir, uid) {
            found.push((name, path, uid));
        }
    }
    let mut rows = Vec::new();
    let mut asked = Vec::new();
    let mut owners = Vec::new();
    for (name, path, uid) in &found {
        match first(name, path, *uid) {
            First::Row(r) => rows.extend(r.map(|r| (r, *uid))),
            First::Asked(a) => {
                asked.push(a);
                owners.push(*uid);
            }
        }
    }
    collect(&mut asked);
    rows.extend(asked.into_iter().zip(owners).filter_map(|(a, uid)| row(*a).map(|r| (r, uid))));
    rows.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    rows.into_iter()
        .map(|(mut r, uid)| {
            let uid = uid.unwrap_or(me);
            let user = user_name(uid);
            r.info["user"] = user.clone().into();
            r.info["address"] = if uid == me { r.name.clone() } else { format!("{user}/{}", r.name) }.into();
            r
        })
        .collect()
}

/// `snug ps [--json]`: the caller's live sandboxes (root: everyone's), SPEC L1.
///
/// # Errors
/// Never an error for now; the signature leaves room.
pub fn ps(json: bool) -> anyhow::Result<String> {
    let rows = rows();
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
        let text = serde_json::to_string_pretty(&list).unwrap_or_default();
        return Ok(crate::quote::json_controls_escaped(&text) + "\n");
    }
    let mut out = format!(
        "{:<20} {:>8} {:<9} {:<12} {:>7} {:>5}  {}\n",
        "NAME", "PID", "STATE", "MODE", "AGE", "PROCS", "COMMAND"
    );
    for r in &rows {
        let s = |k: &str| r.info.get(k).and_then(|v| v.as_str()).map_or("-".into(), escaped);
        let procs = r.info.get("processes").and_then(serde_json::Value::as_u64).map_or("-".into(), |n| n.to_string());
        let age = age(r).map_or("-".into(), |a| format!("{a:.0}s"));
        out.push_str(&format!(
            "{:<20} {:>8} {:<9} {:<12} {:>7} {:>5}  {}\n",
            s("address"),
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

/// `text` with its control characters escaped, for a terminal ([`crate::quote::controls_escaped`]).
fn escaped(text: &str) -> String {
    crate::quote::controls_escaped(text).into_owned()
}

/// `snug ps --names`: the names of the caller's live runs, one a line (for the completion
/// scripts, SPEC O7).
pub fn names() -> String {
    rows().iter().filter_map(|r| r.info["address"].as_str()).map(|a| format!("{a}\n")).collect()
}
