//! `snug ps [--json]` (SPEC L1): the caller's live sandboxes (root: everyone's), one row each
//! from the run's own answer. A run whose snug is stopped (^Z, TSTP) cannot answer: its row
//! comes from its lock file (name, pid, command, mode, age; state `stopped`) without a
//! connection; one that does not answer in time gets the same row without a state. Never a
//! wait beyond [`ANSWER_MS`] per run.

use super::client::{self, Refused};
use super::lockfile::{self, Holder};
use super::socket::Got;
use super::wire;
use std::path::Path;

/// How long `ps` waits for one run's answer.
const ANSWER_MS: i32 = 500;

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

fn row(name: &str, path: &Path) -> Option<Row> {
    let held = lockfile::holder(&lockfile::path_for(path));
    if let Some(h) = held.as_ref().filter(|h| h.stopped()) {
        return quiet(name, h);
    }
    let c = match client::open(path) {
        Ok(c) => c,
        // Someone listens (a dead snug's socket refuses), but accepts nothing now: a row
        // with what is known, the name at least.
        Err(Refused::Busy) => {
            let nothing = || Row { name: name.to_string(), info: serde_json::json!({ "state": null }) };
            return Some(held.and_then(|h| quiet(name, &h)).unwrap_or_else(nothing));
        }
        Err(_) => return None,
    };
    let got = if c.stopped() { Got::Empty } else { c.ask(&[wire::INFO], ANSWER_MS) };
    let info = match got {
        Got::Packet(b, _) if b.first() == Some(&b'J') => serde_json::from_slice::<serde_json::Value>(&b[1..]).ok()?,
        Got::Empty if c.alive() => {
            return match held.filter(|h| h.pid == c.pid) {
                Some(h) => quiet(name, &h),
                // No lock file to say more (it stopped since, or is not answering).
                None => {
                    let state = if c.stopped() { "stopped".into() } else { serde_json::Value::Null };
                    Some(Row { name: name.to_string(), info: serde_json::json!({ "pid": c.pid, "state": state }) })
                }
            };
        }
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

/// `snug ps --names`: the names of the caller's live runs, one a line (for the completion
/// scripts, SPEC O7).
pub fn names() -> String {
    let mut out = String::new();
    for (dir, uid) in super::dirs_to_scan() {
        for (name, path) in super::sockets_in(&dir, uid) {
            if row(&name, &path).is_some() {
                out.push_str(&name);
                out.push('\n');
            }
        }
    }
    out
}
