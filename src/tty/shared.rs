//! One record per caller's terminal that the snugs sharing it agree on (SPEC T16): `snug A |
//! snug B`, both asking on /dev/tty, take the terminal (raw) and give it back in any order.
//!
//! Why a record: a snug that takes the terminal while another holds it raw would otherwise
//! save that raw setting as "the caller's", give it to its pty at the hand-over (its payload
//! then reads a raw terminal) and restore it at the end. sudo's `use_pty` does that
//! (sudo#337: `sudo … | pv | sudo …` leaves the terminal without echo), and `script` saves
//! whatever it finds as well. Here the first snug to take a terminal writes the settings it
//! found; each snug that holds it raw adds itself with the raw settings it set. A snug that
//! finds the terminal in a live holder's raw settings takes the record's as the caller's; the
//! last holder to give back restores them, one that gives back while others still hold it
//! raw hands it the raw settings of the one that took it last; and a setting nobody in the
//! record made (another program changed it) is never restored over (T7).
//!
//! The record is `tty-TTYNR` in this user's runtime directory (private, hidden from every
//! sandbox), locked with `flock(2)` for each step; a holder is a pid and its start time
//! (`proc_pid_stat(5)`, field 22), so a dead snug's entry is dropped. Snugs of other users
//! keep records of their own.

use crate::keeper::{encode, ENCODED};
use rustix::fd::AsFd;
use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::termios::Termios;
use snug_core::Pid;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One snug holding the terminal raw.
#[derive(Clone, PartialEq, Eq)]
pub struct Holder {
    pid: Pid,
    start: u64,
    /// The raw settings it set.
    pub raw: [u8; ENCODED],
}

/// What the record says.
#[derive(Default)]
pub struct Content {
    /// The caller's settings, as the first holder found them.
    pub original: Option<[u8; ENCODED]>,
    /// Live holders, in the order they took the terminal.
    pub holders: Vec<Holder>,
}

impl Content {
    /// Whether `now` are settings a live holder other than this snug set.
    pub fn others_raw(&self, now: &Termios) -> bool {
        let me = me();
        let now = encode(now);
        self.holders.iter().any(|h| h.raw == now && (h.pid, h.start) != (me.pid, me.start))
    }

    /// This snug holds the terminal with `raw` (replacing an entry of its own).
    pub fn hold(&mut self, raw: &Termios) {
        self.release();
        self.holders.push(Holder { raw: encode(raw), ..me() });
    }

    /// This snug no longer holds it.
    pub fn release(&mut self) {
        let me = me();
        self.holders.retain(|h| (h.pid, h.start) != (me.pid, me.start));
    }
}

/// This snug as a holder (its raw settings blank).
fn me() -> Holder {
    let pid = crate::sys::process::own();
    Holder { pid, start: start_time(pid).unwrap_or(0), raw: [0; ENCODED] }
}

/// Field 22 of `/proc/PID/stat`: when the process started, in clock ticks since boot.
fn start_time(pid: Pid) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// The record of one terminal.
pub struct Record {
    path: PathBuf,
}

impl Record {
    /// The record of snug's controlling terminal in `dir`, a private directory of this user's
    /// (a real directory it owns that nobody else may write to); `None` otherwise.
    pub fn at(dir: &Path) -> Option<Record> {
        let uid = rustix::process::geteuid().as_raw();
        let private =
            std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0);
        // Not `fstat` of snug's `/dev/tty` description: that has the node's own number (5, 0)
        // whatever the terminal; `tty_nr` names the terminal itself (`proc_pid_stat(5)`).
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let nr: u64 = stat.rsplit_once(')')?.1.split_whitespace().nth(4)?.parse().ok()?;
        (private && nr != 0).then(|| Record { path: dir.join(format!("tty-{nr:x}")) })
    }

    /// Run `step` on the record, locked; what it leaves is written back. `None` when the
    /// record cannot be opened or locked (the caller then acts alone, as without a record).
    pub fn with<T>(&self, step: impl FnOnce(&mut Content) -> T) -> Option<T> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let fd = rustix::fs::open(&self.path, flags, Mode::from_raw_mode(0o600)).ok()?;
        rustix::fs::flock(&fd, FlockOperation::LockExclusive).ok()?;
        let mut text = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = rustix::io::read(&fd, &mut buf) {
            if n == 0 {
                break;
            }
            text.extend_from_slice(&buf[..n]);
        }
        let mut content = parse(&String::from_utf8_lossy(&text));
        content.holders.retain(|h| start_time(h.pid) == Some(h.start));
        if content.holders.is_empty() {
            content.original = None;
        }
        let out = step(&mut content);
        let text = render(&content);
        let _ = rustix::fs::ftruncate(&fd, 0);
        let _ = rustix::io::pwrite(fd.as_fd(), text.as_bytes(), 0);
        Some(out)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; ENCODED]> {
    let mut out = [0u8; ENCODED];
    if s.len() != 2 * ENCODED {
        return None;
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// `original HEX` and `holder PID START HEX` lines; anything else is skipped.
fn parse(text: &str) -> Content {
    let mut c = Content::default();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["original", h] => c.original = unhex(h),
            ["holder", pid, start, h] => {
                if let (Some(pid), Ok(start), Some(raw)) =
                    (pid.parse().ok().and_then(Pid::new), start.parse(), unhex(h))
                {
                    c.holders.push(Holder { pid, start, raw });
                }
            }
            _ => {}
        }
    }
    c
}

fn render(c: &Content) -> String {
    let mut out = String::new();
    if let Some(o) = &c.original {
        out += &format!("original {}\n", hex(o));
    }
    for h in &c.holders {
        out += &format!("holder {} {} {}\n", h.pid, h.start, hex(&h.raw));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// T16: the record reads back what it wrote; malformed lines are skipped.
    #[test]
    fn t16_the_record_reads_back_what_it_wrote() {
        let c = Content {
            original: Some([7; ENCODED]),
            holders: vec![Holder { pid: Pid(12), start: 34, raw: [9; ENCODED] }],
        };
        let back = parse(&(render(&c) + "holder x y z\nnonsense\n"));
        assert_eq!(back.original, c.original);
        assert!(back.holders == c.holders);
    }
}
