//! Runs against other users and hostile endpoints (SPEC L5): root's bare names, clients
//! bounded in time against a server that never answers, a planted runtime directory,
//! control characters in what snug prints.

use crate::common::{cmd_as, code, everyone, marker, test_user, workdir, Who};
use crate::live::runs::socket_dir;
use crate::live::{ms, run, Live};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A fake control socket: binds `DIR/NAME.sock` and `N` hard links `NAME-i.sock`, prints
/// READY, accepts every connection and never answers (`silent`) or answers `ok` to every
/// packet and nothing more (`ok`); removes its files and ends when its stdin closes.
const FAKE: &str = r#"
import os, select, socket, sys
d, name, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
os.makedirs(d, mode=0o700, exist_ok=True)
path = os.path.join(d, name + ".sock")
l = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
l.bind(path); l.listen(128); os.chmod(path, 0o600)
links = [os.path.join(d, "%s-%d.sock" % (name, i)) for i in range(n)]
for p in links: os.link(path, p)
print("READY", flush=True)
conns = []
while True:
    r, _, _ = select.select([sys.stdin, l] + conns, [], [])
    if sys.stdin in r and not sys.stdin.buffer.read1(1): break
    if l in r: conns.append(l.accept()[0])
    for c in conns:
        if c in r:
            b = c.recv(4096)
            if not b: conns.remove(c)
            elif mode == "ok": c.send(b"ok")
for p in [path] + links: os.unlink(p)
"#;

/// A fake server started as `who` in `who`'s socket directory.
struct Fake {
    child: std::process::Child,
    name: String,
}

impl Fake {
    fn start(who: Who, dir: &std::path::Path, mode: &str, links: usize) -> Fake {
        use std::io::BufRead;
        let name = format!("f{}", marker());
        let sdir = socket_dir(who);
        let sdir = sdir.to_str().expect("utf-8");
        let n = links.to_string();
        let mut c = cmd_as(who, dir, "/usr/bin/python3", &["-c", FAKE, sdir, &name, mode, &n]);
        c.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = crate::common::spawn_own_group(&mut c);
        let mut line = String::new();
        // Its READY, or EOF if it failed (which the assertion shows).
        let _ = std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
        assert_eq!(line.trim(), "READY", "fake server");
        Fake { child, name }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // its end: it removes its sockets
        crate::common::wait_bounded(&mut self.child, Duration::from_secs(10));
    }
}

/// L5: root's bare NAME is root's own run, never another user's: with the user's fake
/// server (which says `ok` to everything and never ends) and root's own run both named
/// NAME, root's `stop NAME` stops root's run at once and the fake is untouched; root
/// reaches the user's real run as `USER/NAME` (the address `ps` shows), and the user's fake
/// only when asked by that address, and then `stop` gives up within its bound (71) instead
/// of waiting without end. Fails without the fix (tried on main): with no root run of that
/// name, root's `snug stop NAME` reached the user's fake and did not end (`did not finish
/// within 20s`).
#[test]
fn l5_root_bare_name_is_roots_own_run() {
    if !crate::common::is_root() {
        return;
    }
    let dir = workdir(Who::User);
    let fake = Fake::start(Who::User, dir.path(), "ok", 0);
    let (st, _, err, t) = run(Who::Root, dir.path(), &["stop", &fake.name]);
    assert_eq!(code(st), 64, "root's bare name reached the user's run: {err} ({} ms)", ms(t));
    let (st, _, err, _) = run(Who::Root, dir.path(), &["exec", &fake.name, "--", "true"]);
    assert_eq!(code(st), 64, "{err}");
    let address = format!("{}/{}", crate::common::TEST_USER, fake.name);
    let (st, _, err, t) = run(Who::Root, dir.path(), &["stop", &address]);
    assert_eq!(code(st), 71, "{err}");
    assert!(t < Duration::from_secs(18), "stop of a run that never ends took {} ms", ms(t));
    // Root's own run and the user's real one, both named NAME.
    let user_run = Live::start(Who::User, dir.path(), &[], &["sleep", &marker()]);
    user_run.ready(dir.path(), "running");
    let name = user_run.name.clone();
    let mut root_run = Live::start_named(Who::Root, dir.path(), &name, &["sleep", &marker()]);
    root_run.ready(dir.path(), "running");
    let rows = crate::live::ps(Who::Root, dir.path());
    let user_address = format!("{}/{name}", crate::common::TEST_USER);
    assert!(rows.iter().any(|r| r["address"] == user_address.as_str()), "{rows:?}");
    assert!(rows.iter().any(|r| r["address"] == name.as_str() && r["user"] == "root"), "{rows:?}");
    let (st, out, err, _) = run(Who::Root, dir.path(), &["stop", &name]);
    assert!(st.success(), "{out}{err}");
    root_run.end(Duration::from_secs(10));
    assert!(crate::live::listed(Who::User, dir.path(), &name), "root's bare name stopped the user's run");
    let (st, out, err, _) = run(Who::Root, dir.path(), &["stop", &user_address]);
    assert!(st.success() && out.contains("killed by SIGTERM"), "control: USER/NAME: {out}{err}");
}

/// L5: every client call is bounded against a server that accepts and never answers: `stop`,
/// `signal` and `exec` fail (71) within their bounds, and `ps` of 40 such sockets (hard links
/// of one) answers within 1 s, as root (the server another user's, addressed `USER/NAME`)
/// and as the user. Fails without the fix (tried on main): `ps` took 20.6 s as root and as
/// the user (500 ms for each socket in turn; 0.41 s with the fix), and root had no
/// `USER/NAME` address (`snug: snugtest/f…: no such file or directory`).
#[test]
fn l5_silent_server_never_hangs_a_client() {
    // The server is the test user's (as root) or the caller's own.
    let owner = if crate::common::is_root() { Who::User } else { Who::Root };
    {
        let dir = workdir(owner);
        let fake = Fake::start(owner, dir.path(), "silent", 40);
        for who in everyone() {
            let address =
                if who == owner { fake.name.clone() } else { format!("{}/{}", crate::common::TEST_USER, fake.name) };
            for args in [vec!["stop", &address], vec!["signal", &address, "USR1"], vec!["exec", &address, "--", "true"]]
            {
                let (st, _, err, t) = run(who, dir.path(), &args);
                assert_eq!(code(st), 71, "{who:?} {args:?}: {err}");
                assert!(err.starts_with("snug: ") && err.contains("no answer"), "{err}");
                assert!(t < Duration::from_secs(12), "{who:?} {args:?}: {} ms", ms(t));
            }
            let t0 = Instant::now();
            let rows = crate::live::ps(who, dir.path());
            let took = t0.elapsed();
            let fakes = rows.iter().filter(|r| r["name"].as_str().is_some_and(|n| n.starts_with(&fake.name))).count();
            assert_eq!(fakes, 41, "{who:?}: {rows:?}");
            assert!(took < Duration::from_secs(1), "{who:?}: ps of 41 silent sockets took {} ms", ms(took));
        }
    }
}

/// L5: a directory another user planted where snug keeps its sockets (`/tmp/snug-UID`, here
/// root's, mounted over the user's own in a mount namespace of the test's) does not stop the
/// run: one `snug: ` line names it, the payload runs and its status is snug's. Fails without
/// the fix (tried on main): exit 71, `snug: /tmp/snug-1001 is not a directory only this user
/// owns and enters`, and the payload never ran.
#[test]
fn l5_planted_runtime_directory_does_not_stop_a_run() {
    if !crate::common::is_root() {
        return;
    }
    let dir = workdir(Who::User);
    let (uid, gid) = test_user();
    let own = socket_dir(Who::User);
    if !own.exists() {
        std::fs::create_dir(&own).expect("mkdir");
        std::os::unix::fs::chown(&own, Some(uid), Some(gid)).expect("chown");
        std::fs::set_permissions(&own, std::os::unix::fs::PermissionsExt::from_mode(0o700)).expect("chmod");
    }
    let planted = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(planted.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).expect("chmod");
    let snug = crate::common::snug_for(Who::User);
    let script = format!(
        "mount --bind {} {} && exec {}{} -- sh -c 'echo ran; exit 7'",
        planted.path().display(),
        own.display(),
        crate::common::as_words(Who::User),
        snug.display()
    );
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "sh", "-c", &script])
        .current_dir(dir.path())
        .env_remove("XDG_RUNTIME_DIR")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("unshare");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(7), "{stdout}{stderr}");
    assert_eq!(stdout, "ran\n");
    let line = stderr.lines().find(|l| l.contains(&own.display().to_string())).unwrap_or_default();
    assert!(line.starts_with("snug: ") && line.contains("no control socket"), "{stderr}");
}

/// R4, L5: control characters are escaped in `ps` (the table; `--json` keeps them as JSON
/// escapes) and in every `snug: ` line: a command line holding a title-setting OSC and a
/// screen clear shows as `\x1b]0;pwned\x07`, never as raw bytes. Fails without the fix
/// (tried once): `ps` printed `sh -c sleep 70050000 \u{1b}]0;pwned\u{7}\u{1b}[2J` raw.
#[test]
fn l5_control_characters_are_escaped() {
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
    for who in everyone() {
        let dir = workdir(who);
        let a = Live::start(who, dir.path(), &[], &["sh", "-c", &format!("sleep {}", marker()), evil]);
        a.ready(dir.path(), "running");
        let (_, text, _, _) = run(who, dir.path(), &["ps"]);
        let row = text.lines().find(|l| l.contains(&a.name)).unwrap_or_default();
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{who:?}: raw controls: {text:?}");
        assert!(row.contains("\\x1b]0;pwned\\x07\\x1b[2J"), "{who:?}: {row:?}");
        let rows = crate::live::ps(who, dir.path());
        let r = rows.iter().find(|r| r["name"] == a.name.as_str()).expect("json row");
        assert!(r["command"].as_str().is_some_and(|c| c.ends_with(evil)), "{r:?}");
        let (st, _, err, _) = run(who, dir.path(), &["--", &format!("nosuch{evil}")]);
        assert_eq!(code(st), 127, "{err:?}");
        assert!(err.starts_with("snug: ") && !err.contains('\u{1b}'), "{who:?}: {err:?}");
        assert!(err.contains("nosuch\\x1b]0;pwned\\x07"), "{err:?}");
        run(who, dir.path(), &["stop", "--now", &a.name]);
    }
}

/// L5, X4: a run's snug and a client in different pid namespaces cannot pin each other (the
/// kernel gives pid 0 for a peer it cannot see), so `stop` and `signal` are refused with 77
/// and words that say where to ask, both ways: a client in a namespace below the run's, and
/// a run in a namespace below the client's. The run goes on, and a stop from its own
/// namespace still ends it. Root only: `unshare --pid` needs it. Positive control: against
/// the build that read `SO_PEERCRED` through rustix (whose non-zero pid cannot hold 0),
/// both printed "No error information (os error 0)" and exited 71.
#[test]
fn l5_x4_a_client_in_another_pid_namespace_is_told_77() {
    let dir = workdir(Who::Root);
    let snug = crate::common::snug();
    let below = |args: &[&str]| {
        let mut c = std::process::Command::new("unshare");
        c.args(["--pid", "--fork", "--mount-proc", "--kill-child", "--"]).arg(&snug).args(args).current_dir(dir.path());
        c
    };
    let refused = |o: std::process::Output, what: &str| {
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(77), "{what}: {err}");
        assert!(
            err.starts_with("snug: ") && err.contains("another pid namespace") && err.lines().count() == 1,
            "{what}: {err}"
        );
    };
    let mut a = Live::start(Who::Root, dir.path(), &[], &["sleep", &marker()]);
    a.ready(dir.path(), "running");
    for req in [&["stop", &a.name][..], &["signal", &a.name, "TERM"]] {
        refused(below(req).stdin(Stdio::null()).output().expect("unshare"), &format!("client below: {req:?}"));
    }
    assert!(crate::live::listed(Who::Root, dir.path(), &a.name), "the run ended after refused requests");

    let name = crate::live::name();
    let m = marker();
    let script = format!("touch started; exec sleep {m}");
    let mut b = below(&["--name", &name, "--", "sh", "-c", &script]).stdin(Stdio::null()).spawn().expect("unshare");
    assert!(
        crate::common::until(Duration::from_secs(10), || dir.path().join("started").exists()),
        "run below did not start"
    );
    for req in [&["stop", &name][..], &["signal", &name, "TERM"]] {
        let o = crate::live::cmd(Who::Root, dir.path(), req).output().expect("snug");
        refused(o, &format!("run below: {req:?}"));
    }
    assert_eq!(b.try_wait().expect("wait"), None, "the run below ended after refused requests");
    crate::common::kill_if_running(&mut b);

    let (st, out, err, _) = run(Who::Root, dir.path(), &["stop", &a.name]);
    assert!(st.success() && out.contains("killed by SIGTERM"), "control: {out}{err}");
    assert_eq!(code(a.end(Duration::from_secs(5))), 128 + libc::SIGTERM);
}

/// R4: a run whose `/proc` is another pid namespace's (`unshare --pid --fork` without
/// `--mount-proc`, where `/proc/PID` names other processes) is refused before the payload
/// with 69 and a line that names the cause, not the failed write it led to. Positive control:
/// the same run with `--mount-proc` starts. Against the build before, the line was "cannot
/// map the sandbox's user namespace: …" (EPERM or ENOENT). Root only (`unshare --pid`).
#[test]
fn r4_a_proc_of_another_pid_namespace_is_named() {
    let dir = workdir(Who::Root);
    let start = |proc: &[&str]| {
        let mut c = std::process::Command::new("unshare");
        c.args(["--pid", "--fork", "--kill-child"]).args(proc).arg("--").arg(crate::common::snug());
        c.args(["--", "sh", "-c", "touch ran"]).current_dir(dir.path()).stdin(Stdio::null());
        c.output().expect("unshare")
    };
    let o = start(&[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(69), "{err}");
    assert!(err.starts_with("snug: /proc is not this pid namespace's") && err.lines().count() == 1, "{err}");
    assert!(!dir.path().join("ran").exists(), "the payload ran");
    let o = start(&["--mount-proc"]);
    assert!(o.status.success(), "control: {}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.path().join("ran").exists(), "control: the payload did not run");
}
