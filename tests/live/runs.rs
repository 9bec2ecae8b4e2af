//! Names, `ps` and who may reach a run (SPEC L1, L5).

use crate::common::{code, everyone, marker, workdir, Who};
use crate::live::{cmd, listed, ps, run, Live};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

/// L1: `ps` lists two live named runs (with pid, command, mode, state, processes) and not a
/// third that ended. Positive control: the third is listed while it runs, so its absence
/// afterwards is the end's doing, not a listing that misses runs.
#[test]
fn l1_ps_lists_live_runs_not_ended_ones() {
    for who in everyone() {
        let dir = workdir(who);
        let (m1, m2, m3) = (marker(), marker(), marker());
        let a = Live::start(who, dir.path(), &[], &["sleep", &m1]);
        let b = Live::start(who, dir.path(), &[], &["sh", "-c", &format!("sleep {m2} & sleep {m2}")]);
        let mut c = Live::start(who, dir.path(), &[], &["sleep", &m3]);
        a.ready(dir.path(), "running");
        b.ready(dir.path(), "running");
        c.ready(dir.path(), "running"); // the control
        let (st, _, _, _) = run(who, dir.path(), &["stop", &c.name]);
        assert!(st.success(), "{who:?}: stop");
        c.end(Duration::from_secs(5));
        let rows = ps(who, dir.path());
        let row = |n: &str| rows.iter().find(|r| r["name"] == n).cloned();
        let ra = row(&a.name).unwrap_or_else(|| panic!("{who:?}: {} not listed: {rows:?}", a.name));
        let rb = row(&b.name).unwrap_or_else(|| panic!("{who:?}: {} not listed: {rows:?}", b.name));
        assert!(row(&c.name).is_none(), "{who:?}: ended run listed: {rows:?}");
        assert_eq!(ra["pid"], a.pid(), "{who:?}");
        assert_eq!(ra["command"], format!("sleep {m1}"), "{who:?}");
        assert_eq!(ra["mode"], "detached");
        assert_eq!((ra["processes"].as_u64(), rb["processes"].as_u64()), (Some(1), Some(3)), "{who:?}: {rows:?}");
        assert!(ra["age_seconds"].as_f64().is_some_and(|s| s >= 0.0));
        let (_, text, _, _) = run(who, dir.path(), &["ps"]);
        assert!(text.starts_with("NAME") && text.contains(&a.name) && text.contains(&b.name), "{text}");
        for r in [a, b] {
            run(who, dir.path(), &["stop", "--now", &r.name]);
        }
    }
}

/// L1: a name is unique per user: a second live run with it is a usage error (64) before
/// anything starts; once the first ended, the name is free again (control: the same
/// command succeeds then). A generated name shows in `--dry-run` and `-v`.
#[test]
fn l1_name_clash_is_a_usage_error() {
    for who in everyone() {
        let dir = workdir(who);
        let mut a = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
        a.ready(dir.path(), "running");
        let (st, _, err, _) = run(who, dir.path(), &["--name", &a.name, "--", "true"]);
        assert_eq!(code(st), 64, "{who:?}: {err}");
        assert!(err.starts_with("snug: ") && err.contains(&a.name), "{err}");
        run(who, dir.path(), &["stop", &a.name]);
        a.end(Duration::from_secs(5));
        let (st, _, err, _) = run(who, dir.path(), &["--name", &a.name, "--", "true"]);
        assert!(st.success(), "{who:?}: control: the freed name: {err}");
        let (_, out, _, _) = run(who, dir.path(), &["-n", "--", "sleep", "1"]);
        assert!(out.lines().any(|l| l.starts_with("name: sleep-")), "{out}");
        let (_, _, err, _) = run(who, dir.path(), &["-v", "--", "true"]);
        assert!(err.contains("name: true-"), "{err}");
        let (st, _, _, _) = run(who, dir.path(), &["--name", "../x", "--", "true"]);
        assert_eq!(code(st), 64);
    }
}

/// L5: a snug killed with SIGKILL leaves nothing `ps` shows as live, and `ps` (or another
/// run's sweep) removes its socket and its lock file. Positive control: a second link to the dead snug's socket
/// (a hidden name nothing sweeps) is still there and refuses connections: the stale entry a
/// listing by file would show.
#[test]
fn l5_sigkilled_snug_is_not_listed() {
    for who in everyone() {
        let dir = workdir(who);
        let mut a = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
        a.ready(dir.path(), "running");
        let sock = std::fs::read_dir(socket_dir(who))
            .expect("socket dir")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().is_some_and(|f| f.to_string_lossy() == format!("{}.sock", a.name)))
            .expect("socket file");
        let lock = sock.with_extension("lock");
        assert!(lock.exists(), "{who:?}: control: a live run has its lock file");
        let keep = sock.with_file_name(format!(".keep-{}", a.name));
        std::fs::hard_link(&sock, &keep).expect("link");
        crate::common::kill(a.pid() as u32, libc::SIGKILL);
        a.end(Duration::from_secs(5));
        let refused = try_connect(&keep);
        let _ = std::fs::remove_file(&keep);
        assert_eq!(refused, libc::ECONNREFUSED, "control: the dead snug's socket is there and refuses");
        assert!(!listed(who, dir.path(), &a.name), "{who:?}: a SIGKILLed run is listed");
        assert!(!sock.exists(), "{who:?}: ps left the stale socket");
        assert!(!lock.exists(), "{who:?}: ps left the stale lock file");
        let (st, _, err, _) = run(who, dir.path(), &["stop", &a.name]);
        assert_eq!(code(st), 64, "{err}");
    }
}

/// The control socket directory of `who` (no XDG_RUNTIME_DIR in the tests).
pub fn socket_dir(who: Who) -> std::path::PathBuf {
    match who {
        Who::Root => "/run/snug".into(),
        Who::User => format!("/tmp/snug-{}", crate::common::test_user().0).into(),
    }
}

/// L5: another user can neither list, stop, signal nor enter a run (exit 77): the socket is
/// 0600 in a 0700 directory (EACCES), and even when the modes are opened up the run's own
/// SO_PEERCRED check refuses (the run keeps running). Root lists everyone's runs. Positive
/// control: the same path-addressed requests from root (allowed) succeed.
#[test]
fn l5_other_users_are_refused() {
    if !crate::common::is_root() {
        return;
    }
    let dir = workdir(Who::User);
    let root_run = Live::start(Who::Root, dir.path(), &[], &["sleep", &marker()]);
    let user_run = Live::start(Who::User, dir.path(), &[], &["sleep", &marker()]);
    root_run.ready(dir.path(), "running");
    user_run.ready(dir.path(), "running");
    assert!(listed(Who::Root, dir.path(), &user_run.name), "root lists everyone's");
    assert!(!listed(Who::User, dir.path(), &root_run.name), "the user lists root's run");
    let path = format!("/run/snug/{}.sock", root_run.name);
    let meta = std::fs::metadata(&path).expect("socket");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let attempts: [&[&str]; 3] = [&["stop", &path], &["signal", &path, "TERM"], &["exec", &path, "--", "true"]];
    for args in attempts {
        let (st, _, err, _) = run(Who::User, dir.path(), args);
        assert_eq!(code(st), 77, "{args:?}: {err}");
        assert!(err.contains("permission denied"), "{err}");
    }
    // The modes opened: the run's peer check still refuses.
    let dir_mode = std::fs::metadata("/run/snug").expect("dir").permissions().mode();
    std::fs::set_permissions("/run/snug", std::fs::Permissions::from_mode(0o711)).expect("chmod dir");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod sock");
    let (st, _, err, _) = run(Who::User, dir.path(), &["stop", &path]);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod back");
    std::fs::set_permissions("/run/snug", std::fs::Permissions::from_mode(dir_mode)).expect("chmod back");
    assert_eq!(code(st), 77, "peer check: {err}");
    assert!(listed(Who::Root, dir.path(), &root_run.name), "the refused stop ended the run");
    // Control: root, by the same path, is let in.
    let (st, _, err, _) = run(Who::Root, dir.path(), &["signal", &path, "USR2"]);
    assert!(st.success(), "control: {err}");
    for (who, r) in [(Who::Root, &root_run), (Who::User, &user_run)] {
        run(who, dir.path(), &["stop", "--now", &r.name]);
    }
    let _ = cmd;
}

/// L5: garbage on the socket (an unknown request, one over 4 KiB, an empty one, a bad
/// signal number) gets an `err` reply and the run goes on. Positive control: a valid
/// request on the same connection gets its answer (`J{…}`).
#[test]
fn l5_garbage_gets_an_error_and_the_run_goes_on() {
    for who in everyone() {
        let dir = workdir(who);
        let (a, _, fd) = connected(who, dir.path());
        for junk in [b"zzz".to_vec(), vec![b'S'; 5000], vec![b'S', 0, 0, 0, 0], b"T\x07".to_vec(), vec![0u8; 1]] {
            let reply = ask(&fd, &junk);
            assert!(reply.starts_with(b"err"), "{junk:?}: {:?}", String::from_utf8_lossy(&reply));
        }
        let reply = ask(&fd, b"I");
        assert!(reply.starts_with(b"J{"), "control: {:?}", String::from_utf8_lossy(&reply));
        drop(fd);
        assert!(listed(who, dir.path(), &a.name), "{who:?}: the run did not survive garbage");
        stop_and_end(who, dir.path(), a);
    }
}

/// L5: a request that waits unread while the run's list of connections is full is answered;
/// the connections that crowd in after it go instead. snug is stopped while the request and
/// five empty connections queue behind 32 served ones, then continued. Positive control:
/// against the build that dropped the oldest connection that had sent nothing it had read
/// (eb19ad6), the request got no answer (an empty reply).
#[test]
fn l5_a_request_queued_in_a_full_run_is_answered() {
    for who in everyone() {
        let dir = workdir(who);
        let (a, path, fd) = connected(who, dir.path());
        assert!(ask(&fd, b"I").starts_with(b"J{"), "{who:?}: the first connection");
        // Each served once. In a parallel test run other runs' start-up sweeps connect to this
        // socket too, and a crowd of them may take the place of a connection that has not
        // asked yet, as the rule allows: such a one connects again, a bounded number of times.
        let served: Vec<OwnedFd> = (0..31)
            .map(|k| {
                let mut last = Vec::new();
                for _ in 0..5 {
                    let c = seqpacket_connect(&path);
                    last = ask(&c, b"I");
                    if last.starts_with(b"J{") {
                        return c;
                    }
                }
                panic!("{who:?}: served connection {k}: {:?}", String::from_utf8_lossy(&last));
            })
            .collect();
        let snug = rustix::process::Pid::from_raw(a.pid()).expect("snug's pid");
        rustix::process::kill_process(snug, rustix::process::Signal::STOP).expect("SIGSTOP");
        let stopped = || {
            std::fs::read_to_string(format!("/proc/{}/stat", a.pid()))
                .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('T')))
        };
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while !stopped() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1)); // polling for a process state
        }
        assert!(stopped(), "{who:?}: snug did not stop");
        let queued = seqpacket_connect(&path);
        let _ = rustix::net::send(&queued, b"I", rustix::net::SendFlags::NOSIGNAL);
        let crowd: Vec<OwnedFd> = (0..5).map(|_| seqpacket_connect(&path)).collect();
        rustix::process::kill_process(snug, rustix::process::Signal::CONT).expect("SIGCONT");
        let reply = answer(&queued);
        assert!(reply.starts_with(b"J{"), "{who:?}: the queued request: {:?}", String::from_utf8_lossy(&reply));
        drop((served, crowd, queued, fd));
        stop_and_end(who, dir.path(), a);
    }
}

/// A live run of `sleep` for `who` in `dir`, its control socket's path and a connection to it.
fn connected(who: Who, dir: &std::path::Path) -> (Live, std::path::PathBuf, OwnedFd) {
    let a = Live::start(who, dir, &[], &["sleep", &marker()]);
    a.ready(dir, "running");
    let path = socket_dir(who).join(format!("{}.sock", a.name));
    let fd = seqpacket_connect(&path);
    (a, path, fd)
}

/// `snug stop` of `a`, which TERM ends, and its end.
fn stop_and_end(who: Who, dir: &std::path::Path, mut a: Live) {
    let (st, out, _, _) = run(who, dir, &["stop", &a.name]);
    assert!(st.success() && out.contains("killed by SIGTERM"), "{out}");
    a.end(Duration::from_secs(5));
}

/// L5: a client at work keeps its connection while others crowd in: 40 held open (more than
/// a run keeps) and 40 that connect and close at once, as every run's start-up sweep does,
/// many at a time in a parallel test run. Positive control: against the build that evicted
/// the oldest connection, the client's next request found a closed socket (an empty reply),
/// as `l5_garbage_gets_an_error_and_the_run_goes_on` once did in a full test run.
#[test]
fn l5_a_client_at_work_keeps_its_connection_through_a_crowd() {
    for who in everyone() {
        let dir = workdir(who);
        let (a, path, fd) = connected(who, dir.path());
        assert!(ask(&fd, b"I").starts_with(b"J{"), "{who:?}: the first request");
        // Blocking connects: each returns once the run's backlog has room, so all 40 are
        // accepted by the time the last returns.
        let held: Vec<OwnedFd> = (0..40).map(|_| seqpacket_connect(&path)).collect();
        let reply = ask(&fd, b"I");
        assert!(reply.starts_with(b"J{"), "{who:?}: after 40 held: {:?}", String::from_utf8_lossy(&reply));
        drop(held);
        for _ in 0..40 {
            drop(seqpacket_connect(&path));
        }
        let reply = ask(&fd, b"I");
        assert!(reply.starts_with(b"J{"), "{who:?}: after 40 closed: {:?}", String::from_utf8_lossy(&reply));
        drop(fd);
        stop_and_end(who, dir.path(), a);
    }
}

/// 0 when a connection to `path` is accepted, else the errno.
fn try_connect(path: &std::path::Path) -> i32 {
    seqpacket_socket(path).map_or_else(|e| e.raw_os_error(), |_| 0)
}

fn seqpacket_connect(path: &std::path::Path) -> OwnedFd {
    seqpacket_socket(path).unwrap_or_else(|e| panic!("connect {}: {e}", path.display()))
}

/// A `SOCK_SEQPACKET` connection to the unix socket at `path` (`unix(7)`), close-on-exec.
fn seqpacket_socket(path: &std::path::Path) -> rustix::io::Result<OwnedFd> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
    let fd = rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)?;
    rustix::net::connect(&fd, &SocketAddrUnix::new(path)?)?;
    Ok(fd)
}

/// Send `req` and read one reply (bounded by a 5 s receive timeout).
fn ask(fd: &OwnedFd, req: &[u8]) -> Vec<u8> {
    let _ = rustix::net::send(fd, req, rustix::net::SendFlags::NOSIGNAL);
    answer(fd)
}

/// One reply on `fd` (bounded by a 5 s receive timeout); empty when none came.
fn answer(fd: &OwnedFd) -> Vec<u8> {
    use rustix::net::{sockopt, RecvFlags};
    let mut buf = vec![0u8; 8192];
    let _ = sockopt::set_socket_timeout(fd, sockopt::Timeout::Recv, Some(Duration::from_secs(5)));
    let n = rustix::net::recv(fd, &mut buf[..], RecvFlags::empty()).map_or(0, |(n, _)| n);
    buf.truncate(n);
    buf
}
