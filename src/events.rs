//! `--events PATH|fd:N` (SPEC O9): one JSON line per event as it happens, numbered (`seq`,
//! from 1) with milliseconds since snug started (`ms`) and the event's name (`event`), then
//! its fields. The fields of an event name things as the report does (README.md, "Reports"
//! and "Events"); the last event, `end`, carries the whole report.
//!
//! A reader that stops reading never holds the run: [`emit`] only queues a line (at most
//! [`BOUND`]) for a writer thread of the stream's own, which alone may block in write(2).
//! Past the bound an event is dropped but still numbered; the next event that fits is
//! preceded by one `dropped` event with the count, so the numbering shows the gap. Lines are
//! written in the order they were numbered, never reordered.
//!
//! Anything in snug may emit: `events::emit("net", json!({...}))`; nothing happens when no
//! stream was asked for.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{failure, REPORT, USAGE};
use crate::report_sink::{walk, ReportTo};

/// Most lines queued for the writer; past it events are dropped and counted.
pub const BOUND: usize = 1024;

/// How long snug's end waits for a reader to take the queued lines, `end` included: a reader
/// that stopped reading costs snug's exit at most this.
pub const FINAL_WAIT: Duration = Duration::from_millis(250);

struct Queue {
    lines: VecDeque<String>,
    seq: u64,
    dropped: u64,
    /// The writer is writing a batch it took off the queue.
    busy: bool,
    /// A write failed: the reader is gone; further events are not queued.
    broken: bool,
    /// The path was refused or could not be opened ([`confirm`]): nothing is queued or written.
    refused: bool,
}

struct Stream {
    start: Instant,
    queue: Mutex<Queue>,
    /// Signalled when a line is queued (for the writer) and when the queue drains (for [`end`]).
    changed: Condvar,
    /// A path not opened yet: nothing is created or truncated there before [`confirm`] has
    /// checked it against the policy.
    pending: Mutex<Option<Pending>>,
}

/// A stream's path, its directory resolved at the start ([`walk::open_dir`]), opened for
/// writing only once the policy allows it.
struct Pending {
    dir: OwnedFd,
    name: OsString,
    label: String,
}

static STREAM: OnceLock<Stream> = OnceLock::new();

/// Whether an event stream is open: for callers whose fields cost something to gather.
pub fn on() -> bool {
    STREAM.get().is_some()
}

/// A path inside DIR or inside any writable grant is refused (SPEC O9): the payload could
/// rewrite it, or have planted a symbolic link there in an earlier run. `writable` says
/// whether a host path is writable inside. Checked once the policy is known, before the
/// payload starts, and before anything is created or truncated at the path; a path that
/// passes is opened now ([`start_writer`]), a refused one never is.
///
/// # Errors
/// 64 naming the path; 74 when it cannot be opened for writing (a symbolic link there
/// included: it is not followed); 71 when the writer thread cannot start.
pub fn confirm(to: &ReportTo, writable: &dyn Fn(&Path) -> bool) -> anyhow::Result<()> {
    let ReportTo::Path(p) = to else { return Ok(()) };
    let Some(s) = STREAM.get() else { return Ok(()) };
    let pending = s.pending.lock().unwrap_or_else(|e| e.into_inner()).take();
    let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let at = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
    if writable(&at.join(p.file_name().unwrap_or_default())) {
        // Nothing is written there, not even the `end` of this refused run.
        s.queue.lock().unwrap_or_else(|e| e.into_inner()).refused = true;
        let why = "it lies where the sandbox can write (the payload could rewrite it)";
        return Err(failure(USAGE, format!("--events {}: {why}; use a path outside or fd:N", p.display())));
    }
    let Some(pending) = pending else { return Ok(()) };
    let started = start_writer(pending);
    if started.is_err() {
        // No writer will take what is queued: the run ends on this error, its line says why.
        s.queue.lock().unwrap_or_else(|e| e.into_inner()).refused = true;
    }
    started
}

/// Open the stream (SPEC O9) with time zero `start` (the run's, as the report's `ms`), first
/// thing in a run as the report is, so that snug's own early failures still end it. At a
/// path only its directory is resolved now, as the report's is (O10, [`walk::open_dir`]):
/// the file itself is opened by [`confirm`] once the policy says the sandbox cannot write
/// there, or by [`end`] when snug failed before that (no payload ran then).
///
/// # Errors
/// 64 when `report` (`--report`'s) is the same destination ([`crate::report_sink::same`]);
/// 74 when it cannot be opened for writing; 71 when its writer thread cannot start.
pub fn open(to: &ReportTo, report: Option<&ReportTo>, start: Instant) -> anyhow::Result<()> {
    if report.is_some_and(|r| crate::report_sink::same(to, r)) {
        return Err(failure(USAGE, "--events and --report name the same file: give each its own"));
    }
    let stream = |pending| Stream {
        start,
        queue: Mutex::new(Queue {
            lines: VecDeque::new(),
            seq: 0,
            dropped: 0,
            busy: false,
            broken: false,
            refused: false,
        }),
        changed: Condvar::new(),
        pending: Mutex::new(pending),
    };
    let file = match to {
        ReportTo::Path(p) => {
            let label = p.display().to_string();
            let pending = resolve(p).map_err(|e| refused(&label, e))?;
            let _ = STREAM.set(stream(Some(Pending { dir: pending.0, name: pending.1, label })));
            return Ok(());
        }
        ReportTo::Fd(n) => {
            let label = format!("fd:{n}");
            // A close-on-exec copy: no sandbox process inherits it (as --report's).
            let fd = crate::sys::fd::inherited(*n).ok_or_else(|| ebadf(&label))?;
            let fl = rustix::fs::fcntl_getfl(fd).map_err(|_| ebadf(&label))?;
            if fl & rustix::fs::OFlags::RWMODE == rustix::fs::OFlags::RDONLY {
                return Err(failure(REPORT, format!("cannot write events to {label}: not open for writing")));
            }
            if *n > 2 {
                let _ = rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC);
            }
            File::from(rustix::io::fcntl_dupfd_cloexec(fd, 10).map_err(|_| ebadf(&label))?)
        }
    };
    if STREAM.set(stream(None)).is_err() {
        return Ok(());
    }
    spawn(file)
}

/// Open the pending path (create or truncate, never through a symbolic link) and start the
/// writer on it.
fn start_writer(p: Pending) -> anyhow::Result<()> {
    let file = open_at(&p.dir, &p.name).map_err(|e| refused(&p.label, e))?;
    spawn(file)
}

/// Start the writer thread on `file`.
fn spawn(file: File) -> anyhow::Result<()> {
    // The writer starts with every signal blocked, so that snug's signals stay queued for its
    // signalfd (signalfd(2): a signal unblocked in any thread may be delivered there).
    let before = sigseal::set_mask(libc::SIG_BLOCK, u64::MAX).ok();
    let spawned = std::thread::Builder::new().name("events".into()).stack_size(64 << 10).spawn(move || writer(file));
    if let Some(mask) = before {
        let _ = sigseal::set_mask(libc::SIG_SETMASK, mask);
    }
    spawned.map(drop).map_err(|e| failure(crate::error::OS_ERROR, format!("cannot start the event writer: {e}")))
}

/// Queue event `kind` with `fields` (a JSON object; anything else is put under `value`).
/// Never blocks on the reader.
pub fn emit(kind: &str, fields: Value) {
    let Some(s) = STREAM.get() else { return };
    let ms = s.start.elapsed().as_millis();
    let mut q = s.queue.lock().unwrap_or_else(|p| p.into_inner());
    if q.broken || q.refused {
        return;
    }
    q.seq += 1;
    let need = if q.dropped > 0 { 2 } else { 1 };
    if kind != "end" && q.lines.len() + need > BOUND {
        q.dropped += 1;
        return;
    }
    if q.dropped > 0 {
        // The gap's own event, numbered after the events it counts (O9).
        let count = std::mem::take(&mut q.dropped);
        let seq = q.seq;
        q.lines.push_back(line(seq, ms, "dropped", serde_json::json!({ "count": count })));
        q.seq += 1;
    }
    let seq = q.seq;
    q.lines.push_back(line(seq, ms, kind, fields));
    drop(q);
    s.changed.notify_all();
}

/// How the stream ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// No stream, a refused one ([`confirm`]), or every line was written.
    Written,
    /// The reader had not taken every line after [`FINAL_WAIT`]: the rest is lost.
    Behind,
    /// A write failed (the reader went away): the stream could not be written (R4's 74).
    Broken,
    /// The path, opened only at the end, could not be opened: the line saying why (R4's 74).
    Unopened(String),
}

/// The last event, `end`, with `report` (the report's object) as its fields; then wait up to
/// [`FINAL_WAIT`] for the writer to hand every queued line to the reader.
pub fn end(report: &str) -> Ended {
    let Some(s) = STREAM.get() else { return Ended::Written };
    let pending = s.pending.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(p) = pending {
        // snug failed before the policy was checked: no payload ran, so the path is safe.
        if let Err(e) = start_writer(p) {
            return Ended::Unopened(crate::error::one_line(&e));
        }
    }
    if s.queue.lock().unwrap_or_else(|p| p.into_inner()).refused {
        return Ended::Written;
    }
    let fields = serde_json::from_str(report).unwrap_or(Value::Null);
    emit("end", fields);
    let deadline = Instant::now() + FINAL_WAIT;
    let mut q = s.queue.lock().unwrap_or_else(|p| p.into_inner());
    while (!q.lines.is_empty() || q.busy) && !q.broken {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ended::Behind;
        }
        q = s.changed.wait_timeout(q, left).unwrap_or_else(|p| p.into_inner()).0;
    }
    if q.broken {
        Ended::Broken
    } else {
        Ended::Written
    }
}

/// One line: `seq`, `ms` and `event` first, then the fields.
fn line(seq: u64, ms: u128, kind: &str, fields: Value) -> String {
    let head = format!("{{\"seq\":{seq},\"ms\":{ms},\"event\":{}", Value::from(kind));
    let body = match fields {
        Value::Object(m) if m.is_empty() => String::new(),
        Value::Object(m) => {
            let text = Value::Object(m).to_string();
            format!(",{}", &text[1..text.len() - 1])
        }
        Value::Null => String::new(),
        other => format!(",\"value\":{other}"),
    };
    format!("{head}{body}}}\n")
}

/// The writer thread: take what is queued, write it, until a write fails.
fn writer(mut file: File) {
    let Some(s) = STREAM.get() else { return };
    loop {
        let batch: String = {
            let mut q = s.queue.lock().unwrap_or_else(|p| p.into_inner());
            q.busy = false;
            s.changed.notify_all();
            while q.lines.is_empty() {
                q = s.changed.wait(q).unwrap_or_else(|p| p.into_inner());
            }
            q.busy = true;
            q.lines.drain(..).collect()
        };
        if file.write_all(batch.as_bytes()).is_err() {
            let mut q = s.queue.lock().unwrap_or_else(|p| p.into_inner());
            q.broken = true;
            q.lines.clear();
            s.changed.notify_all();
            return;
        }
    }
}

/// Why a stream's path was not opened: an errno, or snug's refusal in words.
type Unopened = crate::report_sink::Opened;

/// The directory of `p` resolved as the report's is ([`walk::open_dir`]), and the name in it.
fn resolve(p: &Path) -> Result<(OwnedFd, OsString), Unopened> {
    let abs = std::path::absolute(p).map_err(|e| Unopened::Errno(e.raw_os_error().unwrap_or(libc::EINVAL)))?;
    let name = match abs.file_name() {
        Some(n) if !p.as_os_str().as_bytes().ends_with(b"/") => n.to_owned(),
        _ => return Err(Unopened::Refused("not a file name".into())),
    };
    let dir = walk::open_dir(abs.parent().unwrap_or(Path::new("/")))?;
    Ok((dir, name))
}

/// Create or truncate `name` in `dir` for writing, refusing a symbolic link there
/// (`O_NOFOLLOW`: `ELOOP`), as the report refuses one at its path (O10). A FIFO is opened
/// without waiting for a reader (ENXIO when there is none), then made blocking again for the
/// writer.
fn open_at(dir: &OwnedFd, name: &OsString) -> Result<File, Unopened> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o644)) {
        Err(rustix::io::Errno::LOOP) => {
            return Err(Unopened::Refused("it is a symbolic link (snug does not follow one there)".into()))
        }
        r => r?,
    };
    let fl = rustix::fs::fcntl_getfl(&fd)?;
    rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)?;
    Ok(File::from(fd))
}

fn refused(label: &str, e: Unopened) -> anyhow::Error {
    let why = match e {
        Unopened::Errno(n) => crate::error::strerror(n),
        Unopened::Refused(why) => why,
    };
    failure(REPORT, format!("cannot write events to {label}: {why}"))
}

fn ebadf(label: &str) -> anyhow::Error {
    failure(REPORT, format!("cannot write events to {label}: {}", crate::error::strerror(libc::EBADF)))
}

#[cfg(test)]
mod tests {
    use super::line;
    use serde_json::json;

    #[test]
    fn o9_line_puts_seq_ms_and_event_first() {
        assert_eq!(line(3, 17, "grace", json!({})), "{\"seq\":3,\"ms\":17,\"event\":\"grace\"}\n");
        let l = line(4, 20, "signal", json!({"name": "TERM"}));
        assert_eq!(l, "{\"seq\":4,\"ms\":20,\"event\":\"signal\",\"name\":\"TERM\"}\n");
    }
}
