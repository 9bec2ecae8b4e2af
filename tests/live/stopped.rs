//! Runs whose snug is stopped (^Z, or TSTP from a process: T12): `ps`, `stop`, `signal` and
//! `exec` never wait for an answer it cannot give (SPEC L1, L2).

use crate::common::{code, everyone, marker, proc_state, until, workdir, Who};
use crate::live::{cmd, ms, Live};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// `snug ARGS` as `who`, which must end within 5 s (a client that waits for a stopped run
/// never does: the bound panics). (status code, stdout, stderr, wall time).
fn quick(who: Who, dir: &Path, args: &[&str]) -> (i32, String, String, Duration) {
    let t0 = Instant::now();
    let o = crate::common::run_bounded(&mut cmd(who, dir, args), Duration::from_secs(5));
    (code(o.status), o.out, o.err, t0.elapsed())
}

/// Stop the run's snug as a process's TSTP does (T12: the sandbox, then snug) and wait until
/// it is stopped (state T).
fn tstp(run: &Live) {
    crate::common::kill(run.pid() as u32, libc::SIGTSTP);
    let stopped = until(Duration::from_secs(10), || proc_state(run.pid()) == Some('T'));
    assert!(stopped, "{}: snug never stopped; stderr: {}", run.name, run.stderr());
}

/// Fill the stopped run's listen backlog with connections that say nothing, as clients that
/// gave up leave it: non-blocking `connect(2)` until `EAGAIN`. Returns them (kept open, they
/// would not free a place anyway) and whether the backlog is full: the in-test control that
/// a blocking `connect(2)` (the client without the fix) would wait now.
fn fill_backlog(who: Who, name: &str) -> (Vec<OwnedFd>, bool) {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
    let path = crate::live::runs::socket_dir(who).join(format!("{name}.sock"));
    let addr = SocketAddrUnix::new(&path).expect("socket path");
    let mut held = Vec::new();
    for _ in 0..200 {
        let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
        let fd = rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, flags, None).expect("socket");
        match rustix::net::connect(&fd, &addr) {
            Ok(()) => held.push(fd),
            Err(rustix::io::Errno::AGAIN) => return (held, true),
            Err(e) => panic!("connect {}: {e}", path.display()),
        }
    }
    (held, false)
}

/// L1, L2 (issue: `ps`, `stop`, `exec`, `signal` hung forever on a run stopped by TSTP): with
/// the run's snug stopped and its backlog full, `ps` lists it at once as stopped with its pid,
/// command and mode (from its lock file), `exec` refuses at once (71, naming the way to
/// continue it), and `signal NAME CONT` continues it as `kill -CONT` of snug would (state
/// running again). Without its lock file, `ps`, `exec`, `signal` and `stop` still return at
/// once ("no answer", 71; `ps` lists the name). Positive control: the backlog is full
/// ([`fill_backlog`] got `EAGAIN`), where a client whose `connect(2)` blocked (without
/// the fix) never returned (tried once: this test panicked at the first `ps`, "did not finish
/// within 5s"); with `SOCK_NONBLOCK` taken out of `socket::connect` again, it panicked at the
/// `ps` without the lock file (tried once).
#[test]
fn l1_l2_a_stopped_run_never_makes_a_client_wait() {
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        let mut a = Live::start(who, dir.path(), &[], &["sleep", &m]);
        a.ready(dir.path(), "running");
        tstp(&a);
        let (held, full) = fill_backlog(who, &a.name);
        assert!(full, "{who:?}: control: the backlog never filled ({} connections)", held.len());
        for _ in 0..3 {
            let (st, out, err, took) = quick(who, dir.path(), &["ps", "--json"]);
            println!("L1 {who:?}: ps of a stopped run with a full backlog: {} ms", ms(took));
            assert_eq!(st, 0, "{who:?}: {err}");
            let rows: Vec<serde_json::Value> = serde_json::from_str(&out).expect("ps --json");
            let row = rows.iter().find(|r| r["name"] == a.name.as_str()).unwrap_or_else(|| panic!("{who:?}: {out}"));
            assert_eq!((row["pid"].as_i64(), row["state"].as_str()), (Some(i64::from(a.pid())), Some("stopped")));
            assert_eq!(
                (row["command"].as_str(), row["mode"].as_str()),
                (Some(format!("sleep {m}").as_str()), Some("detached"))
            );
        }
        let (_, text, _, _) = quick(who, dir.path(), &["ps"]);
        let line = text.lines().find(|l| l.starts_with(&a.name)).unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains(" stopped ") && line.contains(&a.pid().to_string()), "{line}");
        let (st, _, err, _) = quick(who, dir.path(), &["exec", &a.name, "--", "true"]);
        assert_eq!(st, 71, "{who:?}: {err}");
        assert!(err.starts_with("snug: ") && err.contains("stopped") && err.lines().count() == 1, "{err}");
        // Without its lock file (moved aside: the lock stays on the inode), the clients reach
        // the run only through its socket: `connect(2)` to the full backlog gives "no answer"
        // at once, and `ps` still lists the name.
        let lock = crate::live::runs::socket_dir(who).join(format!("{}.lock", a.name));
        let aside = lock.with_file_name(format!(".aside-{}", a.name));
        std::fs::rename(&lock, &aside).expect("move the lock file aside");
        let (st, out, err, _) = quick(who, dir.path(), &["ps", "--json"]);
        assert!(st == 0 && out.contains(&format!("\"{}\"", a.name)), "{who:?}: {out} {err}");
        for args in [&["exec", &a.name, "--", "true"][..], &["signal", &a.name, "USR1"], &["stop", &a.name]] {
            let (st, _, err, _) = quick(who, dir.path(), args);
            assert_eq!(st, 71, "{who:?} {args:?}: {err}");
            assert!(err.contains("no answer"), "{who:?} {args:?}: {err}");
        }
        std::fs::rename(&aside, &lock).expect("the lock file back");
        let (st, _, err, _) = quick(who, dir.path(), &["signal", &a.name, "CONT"]);
        assert_eq!(st, 0, "{who:?}: {err}");
        a.ready(dir.path(), "running");
        let (st, out, err, _) = quick(who, dir.path(), &["stop", &a.name]);
        assert!(st == 0 && out.contains("killed by SIGTERM"), "{who:?}: {out} {err}");
        a.end(Duration::from_secs(5));
        drop(held);
    }
}

/// L2 (issue: `stop` of a stopped run said "no answer from its snug", 71, and its TERM took
/// effect at a later `fg`): `stop` acts as bash's `kill %1` on a stopped job, TERM then CONT
/// to snug: the payload's TERM handler runs (T), the run exits 7, `stop` says so, and the
/// report says the run was ended by the stop (O5); with the backlog full as well. `stop
/// --now` of a stopped run that ignores TERM tears down at once (no grace). Positive control:
/// fails without the fix (tried once: "no answer from its snug", exit 71, after 2 s).
#[test]
fn l2_stop_of_a_stopped_run_ends_it_as_kill_term_cont() {
    for who in everyone() {
        let dir = workdir(who);
        for full in [false, true] {
            let m = marker();
            let report = format!("stop-{m}.json");
            let script = format!("trap 'echo T; exit 7' TERM; echo ready; sleep {m} & wait");
            let mut a = Live::start(who, dir.path(), &["--report", &report], &["sh", "-c", &script]);
            a.ready(dir.path(), "running");
            assert!(until(Duration::from_secs(10), || a.stdout() == "ready\n"), "{who:?}: trap never set");
            tstp(&a);
            let held = if full { fill_backlog(who, &a.name).0 } else { Vec::new() };
            let (st, out, err, took) = quick(who, dir.path(), &["stop", &a.name]);
            println!("L2 {who:?}: stop of a stopped run (backlog full: {full}): {} ms", ms(took));
            assert_eq!(st, 0, "{who:?} full={full}: {err}");
            // How it ended, when snug saw the grace start before the payload's end.
            let note = out.trim().strip_prefix(&format!("{}: exited 7", a.name));
            let within = " (the payload ended within the grace)";
            assert!(note.is_some_and(|n| n.is_empty() || n == within), "{who:?} full={full}: {out}");
            assert_eq!(a.end(Duration::from_secs(5)).code(), Some(7), "{who:?}");
            assert_eq!(a.stdout(), "ready\nT\n", "{who:?} full={full}");
            let text = std::fs::read_to_string(dir.path().join(&report)).expect("report");
            let r: serde_json::Value = serde_json::from_str(&text).expect("report JSON");
            assert_eq!(r["ended_by"], "stop", "{who:?} full={full}: {r}");
            drop(held);
        }
        let script = format!("trap '' TERM; echo ready; sleep {}", marker());
        let mut b = Live::start(who, dir.path(), &[], &["sh", "-c", &script]);
        b.ready(dir.path(), "running");
        assert!(until(Duration::from_secs(10), || b.stdout() == "ready\n"), "{who:?}: trap never set");
        tstp(&b);
        let (st, out, err, took) = quick(who, dir.path(), &["stop", "--now", &b.name]);
        println!("L2 {who:?}: stop --now of a stopped run: {} ms", ms(took));
        assert!(st == 0 && out.contains("killed by SIGTERM"), "{who:?}: {out} {err}");
        assert!(took < Duration::from_millis(700), "{who:?}: --now took {} ms: a grace ran", ms(took));
        assert!(b.end(Duration::from_secs(5)).code().is_none(), "{who:?}: died of its signal");
    }
}

/// L1/L5: every run sweeps stale control files at its start; one started in a pid namespace
/// where a live run's snug is not visible (`F_GETLK` names the holder 0 there: a container, or
/// `make test`'s own pid namespace sharing /run/snug) leaves that run's lock file alone, and
/// the run's `ps` row stays whole. Root only (a pid namespace needs CAP_SYS_ADMIN). Positive
/// control: fails without the fix: snug took holder 0 for nobody and removed the lock file (a
/// run in a container removed a CI job's lock files that way).
#[test]
fn l1_l5_a_lock_held_from_another_pid_namespace_is_not_stale() {
    let who = Who::Root;
    let dir = workdir(who);
    let run = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
    run.ready(dir.path(), "running");
    let lock = crate::live::runs::socket_dir(who).join(format!("{}.lock", run.name));
    assert!(lock.exists(), "{}: no lock file", run.name);
    let snug = crate::common::snug();
    let o = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "--"])
        .arg(&snug)
        .args(["--", "true"])
        .current_dir(dir.path())
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .expect("unshare");
    assert!(o.status.success(), "a run in another pid namespace: {}", String::from_utf8_lossy(&o.stderr));
    assert!(lock.exists(), "{}: a run's sweep from another pid namespace removed a live run's lock file", run.name);
    let (rc, out, err, _) = quick(who, dir.path(), &["ps"]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.lines().any(|l| l.starts_with(&run.name) && l.contains("sleep")), "{out}");
}
