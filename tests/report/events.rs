//! The event stream (SPEC O9): one JSON line per event as it happens, numbered, never
//! reordered, ending with the report itself; a reader that stops reading never holds the
//! run, and the events it missed are counted.

use crate::common::{code, marker, run_bounded, snug_cmd, start, workdir, Who};
use crate::report::{each, LIMIT};
use serde_json::Value;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The lines of an event stream, parsed; panics on a line that is not JSON.
fn parse(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}"))).collect()
}

/// What every stream holds: `seq` from 1 on, each number either present or counted by the
/// `dropped` event that follows the gap; `ms` never decreasing; `end` last, carrying the
/// report's fields (`report`, when one was written too). The event names, in order.
fn check_stream(ev: &[Value], report: Option<&Value>) -> Vec<String> {
    assert!(!ev.is_empty(), "no events");
    let (mut want, mut last_ms) = (1u64, 0u64);
    for e in ev {
        let seq = e["seq"].as_u64().unwrap_or_else(|| panic!("seq: {e}"));
        if e["event"] == "dropped" {
            let n = e["count"].as_u64().unwrap_or(0);
            assert!(n > 0 && seq == want + n, "the dropped event counts the gap: want {want}, {e}");
        } else {
            assert_eq!(seq, want, "numbered without gaps or reordering: {e}");
        }
        want = seq + 1;
        let ms = e["ms"].as_u64().unwrap_or_else(|| panic!("ms: {e}"));
        assert!(ms >= last_ms, "ms never goes back: {e}");
        last_ms = ms;
    }
    let end = ev.last().expect("end");
    assert_eq!(end["event"], "end", "the end is last: {end}");
    assert!(end["ended_by"].is_string() && end["snug_exit"].is_object(), "{end}");
    if let Some(r) = report {
        let mut fields = end.as_object().cloned().unwrap_or_default();
        for k in ["seq", "ms", "event"] {
            fields.remove(k);
        }
        assert_eq!(Value::Object(fields), *r, "the end event is the report");
    }
    ev.iter().map(|e| e["event"].as_str().unwrap_or_default().to_string()).collect()
}

/// What a step does once the payload is ready: given snug's pid and DIR.
type During<'a> = Option<&'a dyn Fn(u32, &Path)>;

/// `snug --report D/r.json --events E/events ARGS…` as `who` in a fresh DIR; `during` runs
/// once the payload wrote `ready` (when it is given); the exit code, the events and the report.
fn evented(who: Who, args: &[&str], during: During) -> (i32, Vec<Value>, Value, String) {
    let dir = workdir(who);
    let out_dir = workdir(who);
    let report = out_dir.path().join("r.json");
    let events = out_dir.path().join("events");
    let mut all = vec!["--report", report.to_str().unwrap(), "--events", events.to_str().unwrap()];
    all.extend(args);
    let run = start(&mut snug_cmd(who, dir.path(), &all));
    if let Some(f) = during {
        let ready = dir.path().join("ready");
        assert!(crate::common::until(LIMIT, || ready.exists()), "{who:?}: payload never ready");
        f(run.pid, dir.path());
    }
    let out = run.finish(LIMIT);
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let r: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{who:?}: report {e}: {text:?} {}", out.err));
    let ev = parse(&std::fs::read_to_string(&events).unwrap_or_default());
    (code(out.status), ev, r, out.err)
}

/// Whether `names` holds `want` in this order (other events between them allowed).
fn in_order(names: &[String], want: &[&str]) -> bool {
    let mut it = names.iter();
    want.iter().all(|w| it.any(|n| n == w))
}

/// O9, O5: every end of a run ends the stream with the report's own object, after the
/// events that led there: the payload's exit and its death by a signal, a relayed TERM
/// handled within the grace, the grace run out (teardown), a second TERM, the timeout,
/// `snug stop`, and snug's own errors (before the policy: only `end`; at the exec). The first
/// event says what started (argv, DIR, the policy). Force-quit needs a terminal (T3) and the
/// OOM end a memory cgroup: their `end` is the same code path. Fails without the fix: no
/// stream was written (`--events` was an unknown option, 64).
#[test]
fn o9_every_end_of_o5_ends_the_stream_with_the_report() {
    each(&|who: Who| {
        let looping = |handle: bool| {
            let trap = if handle { "trap 'exit 0' TERM" } else { "trap '' TERM" };
            format!("{trap}; touch ready; i=0; while [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done")
        };
        let term = |pid: u32, _: &Path| crate::common::kill(pid, libc::SIGTERM);
        let term_twice = |pid: u32, _: &Path| {
            crate::common::kill(pid, libc::SIGTERM);
            // Kept: pacing, the second TERM comes during the grace as a person's would.
            std::thread::sleep(Duration::from_millis(200));
            crate::common::kill(pid, libc::SIGTERM);
        };
        let name = format!("ev-{}", marker());
        let stop = |_: u32, dir: &Path| {
            let o = run_bounded(&mut snug_cmd(who, dir, &["stop", &name]), LIMIT);
            assert!(o.status.code().is_some(), "{who:?}: snug stop: {} {}", o.out, o.err);
        };
        let missing = format!("no-such-command-{}", marker());
        let (handled, ignored) = (looping(true), looping(false));
        type Case<'a> = (&'a str, Vec<&'a str>, During<'a>, &'a [&'a str]);
        let cases: Vec<Case> = vec![
            ("payload", vec!["--", "sh", "-c", "exit 3"], None, &["started", "payload_started", "payload_exited"]),
            ("payload_signal", vec!["--", "sh", "-c", "kill -KILL $$"], None, &["started", "payload_exited"]),
            ("relayed_handled", vec!["--", "sh", "-c", &handled], Some(&term), &["started", "signal", "grace"]),
            ("grace_expired", vec!["--", "sh", "-c", &ignored], Some(&term), &["signal", "grace", "teardown"]),
            ("second_signal", vec!["--", "sh", "-c", &ignored], Some(&term_twice), &["grace", "signal", "teardown"]),
            (
                "timeout",
                vec!["--timeout", "0.3s", "--", "sleep", "5"],
                None,
                &["started", "timeout", "signal", "grace"],
            ),
            ("stop", vec!["--name", &name, "--", "sh", "-c", &handled], Some(&stop), &["stop_requested", "grace"]),
            ("snug_error", vec!["--", &missing], None, &["started"]),
            ("snug_error", vec!["-p", "no-such-profile", "--", "true"], None, &[]),
        ];
        for (ending, args, during, want) in cases {
            let (st, ev, report, err) = evented(who, &args, during);
            assert_eq!(report["ended_by"], ending, "{who:?} {args:?}: {err}");
            let names = check_stream(&ev, Some(&report));
            assert!(in_order(&names, want), "{who:?} {ending}: {names:?}");
            if want.first() == Some(&"started") {
                let s = &ev[0];
                assert_eq!(s["event"], "started", "{s}");
                assert!(s["argv"].is_array() && s["dir"].is_string() && s["policy"]["mounts"].is_array(), "{s}");
            }
            assert_eq!(st, report["snug_exit"]["code"].as_i64().map_or(st, |c| c as i32), "{who:?} {ending}");
        }
    });
}

/// O9: a PATH inside DIR or a writable grant is refused with 64 before the payload runs (the
/// payload could rewrite it); a path outside and `fd:N` are fine. Control: the same run with
/// the path outside DIR exits 0.
#[test]
fn o9_events_inside_dir_or_a_grant_is_64() {
    each(&|who: Who| {
        let dir = workdir(who);
        let grant = workdir(who);
        let inside = dir.path().join("ev");
        let in_grant = grant.path().join("ev");
        let g = grant.path().to_str().unwrap();
        for (path, extra) in [(&inside, vec![]), (&in_grant, vec!["--rw", g])] {
            let mut args = vec!["--events", path.to_str().unwrap()];
            args.extend(extra);
            args.extend(["--", "touch", "ran"]);
            let o = run_bounded(&mut snug_cmd(who, dir.path(), &args), LIMIT);
            assert_eq!(code(o.status), 64, "{who:?} {path:?}: {}", o.err);
            assert!(o.err.starts_with("snug: --events ") && o.err.contains("fd:N"), "{}", o.err);
            assert!(!dir.path().join("ran").exists(), "{who:?}: the payload ran");
        }
        let outside = grant.path().join("ev");
        let o =
            run_bounded(&mut snug_cmd(who, dir.path(), &["--events", outside.to_str().unwrap(), "--", "true"]), LIMIT);
        assert_eq!(code(o.status), 0, "{who:?} control: {}", o.err);
    });
}

/// O5, O9: `--events` and `--report` naming one file (the same path, or one spelt another
/// way, or the same descriptor) is refused with 64 before the payload runs; each its own
/// file is fine. Positive control once against the build before: exit 0, and the file held
/// only the report, the stream overwritten without a word.
#[test]
fn o9_events_and_report_in_one_file_is_64() {
    each(&|who: Who| {
        let dir = workdir(who);
        let side = workdir(who);
        let one = side.path().join("out.json");
        let other = side.path().join(".").join("out.json");
        let (a, b) = (one.to_str().unwrap(), other.to_str().unwrap());
        for (r, e) in [(a, a), (a, b), ("fd:1", "fd:1")] {
            let args = ["--report", r, "--events", e, "--", "touch", "ran"];
            let o = run_bounded(&mut snug_cmd(who, dir.path(), &args), LIMIT);
            assert_eq!(code(o.status), 64, "{who:?} {r} {e}: {}", o.err);
            assert!(o.err.contains("snug: --events and --report name the same file"), "{who:?}: {}", o.err);
            assert!(!dir.path().join("ran").exists(), "{who:?}: the payload ran");
        }
        let ev = side.path().join("ev");
        let o = run_bounded(
            &mut snug_cmd(who, dir.path(), &["--report", a, "--events", ev.to_str().unwrap(), "--", "true"]),
            LIMIT,
        );
        assert_eq!(code(o.status), 0, "{who:?} control: {}", o.err);
    });
}

/// O9, O10: nothing is created, truncated or written at a refused `--events` path, and a
/// symbolic link there is never followed: a link planted in DIR to a file elsewhere, and a
/// plain file in DIR, are both refused with 64 and left as they were; a link outside DIR is
/// refused (74) without writing through it. Control: a plain file outside DIR gets the
/// stream. Without the fix the stream was opened (created, truncated, following the link)
/// before the check: the victim behind the link was emptied and the plain file truncated,
/// though the run exited 64.
#[test]
fn o9_refused_events_path_is_never_opened_nor_followed() {
    each(&|who: Who| {
        let dir = workdir(who);
        let elsewhere = workdir(who);
        let victim = elsewhere.path().join("victim");
        let give = |p: &Path, text: &str| {
            std::fs::write(p, text).expect("write");
            if who == Who::User {
                let (uid, gid) = crate::common::test_user();
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).expect("chown");
            }
        };
        give(&victim, "victim's own");
        let link = dir.path().join("ev.json");
        std::os::unix::fs::symlink(&victim, &link).expect("symlink");
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--here", "--events", "./ev.json", "--", "true"]), LIMIT);
        assert_eq!(code(o.status), 64, "{who:?} link in DIR: {}", o.err);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "victim's own", "{who:?}: written through the link");
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink(), "{who:?}: the link was replaced");

        std::fs::remove_file(&link).expect("rm link");
        give(&link, "kept");
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--here", "--events", "./ev.json", "--", "true"]), LIMIT);
        assert_eq!(code(o.status), 64, "{who:?} file in DIR: {}", o.err);
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "kept", "{who:?}: a refused file was truncated");

        let out_link = elsewhere.path().join("ev-link");
        std::os::unix::fs::symlink(&victim, &out_link).expect("symlink");
        let args = ["--here", "--events", out_link.to_str().unwrap(), "--", "true"];
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &args), LIMIT);
        assert_eq!(code(o.status), 74, "{who:?} link outside DIR: {}", o.err);
        assert!(o.err.starts_with("snug: cannot write events to ") && o.err.contains("symbolic link"), "{}", o.err);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "victim's own", "{who:?}: written through the link");

        let plain = elsewhere.path().join("ev-plain");
        give(&plain, "old");
        let args = ["--here", "--events", plain.to_str().unwrap(), "--", "true"];
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &args), LIMIT);
        assert_eq!(code(o.status), 0, "{who:?} control: {}", o.err);
        let ev = parse(&std::fs::read_to_string(&plain).unwrap());
        assert_eq!(check_stream(&ev, None).first().map(String::as_str), Some("started"), "{who:?}");
    });
}

/// A FIFO at `path` opened for reading before snug opens it for writing.
fn fifo_reader(path: &Path) -> std::fs::File {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo(3) only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0, "mkfifo");
    // Writable by the test user's snug, whatever the umask.
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).expect("chmod");
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).expect("open fifo")
}

/// O9: a reader that stops reading for 2 s while 10,000 events happen (real-time signals to
/// snug, relayed to a payload that ignores them) holds nothing: a USR2 sent during the pause
/// reaches the payload's trap within it, and the run then ends as usual; when the reader
/// reads again every number is either there or counted by a `dropped` event, and the
/// stream ends with the report. With emit() made to wait for the writer (as a snug writing each
/// event itself would), the USR2 sent once the FIFO was full never reached the payload during
/// the pause (snug blocked in write(2)) and this failed.
#[test]
fn o9_a_reader_that_stops_never_holds_the_run() {
    each(&|who: Who| {
        let dir = workdir(who);
        let out_dir = workdir(who);
        let fifo = out_dir.path().join("events");
        let mut reader = fifo_reader(&fifo);
        let payload = "trap '' RTMIN+1; trap 'touch got-usr2' USR2; touch ready; \
                       while [ ! -e finish ]; do sleep 0.02; done";
        let args = ["--events", fifo.to_str().unwrap(), "--", "bash", "-c", payload];
        let run = start(&mut snug_cmd(who, dir.path(), &args));
        let ready = dir.path().join("ready");
        assert!(crate::common::until(LIMIT, || ready.exists()), "{who:?}: payload never ready");
        let paused = Instant::now();
        let rt = libc::SIGRTMIN() + 1;
        let mut sent = 0;
        while sent < 10_000 && paused.elapsed() < Duration::from_millis(1500) {
            // SAFETY: kill(2) of the snug this test started, with a real-time signal it relays.
            if unsafe { libc::kill(run.pid as i32, rt) } == 0 {
                sent += 1;
            } else {
                std::thread::yield_now(); // EAGAIN: the queue of pending signals is full
            }
        }
        // Once the pipe is full, a snug that wrote its events itself would block in write(2).
        let fd = std::os::fd::AsRawFd::as_raw_fd(&reader);
        let unread = || {
            let mut n: libc::c_int = 0;
            // SAFETY: FIONREAD on this test's own FIFO end into a c_int it owns.
            unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
            n
        };
        // Full as the kernel counts it: a pipe is full when its slots (pages) are taken, which
        // partly filled slots reach below 64 KiB of bytes; a write end of the test's own, never
        // written, is then not writable (`pipe_poll` in fs/pipe.c).
        let probe = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo).expect("probe");
        let writable = || {
            let mut p = libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(&probe), events: libc::POLLOUT, revents: 0 };
            // SAFETY: poll(2) of one descriptor this test owns, no wait.
            unsafe { libc::poll(&mut p, 1, 0) };
            p.revents & libc::POLLOUT != 0
        };
        let full = crate::common::until(Duration::from_secs(2).saturating_sub(paused.elapsed()), || !writable());
        assert!(full, "{who:?}: the FIFO never filled ({} bytes unread, {sent} sent)", unread());
        drop(probe); // the stream's end is the reader's EOF: no writer of the test's may stay
        crate::common::kill(run.pid, libc::SIGUSR2);
        let got = dir.path().join("got-usr2");
        let reached = crate::common::until(Duration::from_secs(2).saturating_sub(paused.elapsed()), || got.exists());
        let during_pause = paused.elapsed() < Duration::from_secs(2);
        assert!(reached && during_pause, "{who:?}: USR2 relayed while the reader paused ({sent} sent)");
        // Kept: the reader's 2 s pause is what the test is about.
        std::thread::sleep(Duration::from_secs(2).saturating_sub(paused.elapsed()));
        // SAFETY: the descriptor is this test's own FIFO end; blocking reads from now on.
        let fl = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&reader), libc::F_GETFL) };
        // SAFETY: as above.
        unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&reader), libc::F_SETFL, fl & !libc::O_NONBLOCK) };
        let text = std::thread::scope(|s| {
            let h = s.spawn(|| {
                let mut t = String::new();
                let _ = reader.read_to_string(&mut t);
                t
            });
            std::fs::write(dir.path().join("finish"), "").expect("finish");
            h.join().expect("reader")
        });
        let out = run.finish(LIMIT);
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        let ev = parse(&text);
        let names = check_stream(&ev, None);
        let dropped: u64 = ev.iter().filter(|e| e["event"] == "dropped").filter_map(|e| e["count"].as_u64()).sum();
        let signals = names.iter().filter(|n| *n == "signal").count() as u64;
        eprintln!("O9 {who:?}: {sent} signals sent, {signals} signal events written, {dropped} dropped");
        assert_eq!(sent, 10_000, "{who:?}");
        assert!(dropped > 0, "{who:?}: the pause dropped events");
        assert!(signals + dropped >= 10_000, "{who:?}: each signal is an event, written or counted");
        assert_eq!(ev.last().unwrap()["ended_by"], "payload", "{who:?}");
        let _: PathBuf = fifo;
    });
}
