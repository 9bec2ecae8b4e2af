//! Sandboxes are isolated from each other (SPEC X4): no sandbox reaches another run's
//! control socket or lock file, whatever it binds, and a connection from inside a sandbox
//! is refused by the run it reaches.

use crate::common::{everyone, marker, workdir, Who};
use crate::live::runs::socket_dir;
use crate::live::{listed, run, Live};

/// A raw client of the control protocol, run inside a sandbox with python3 (snug's own
/// client would give up, as the run's pid is not visible there; an attacker's does not):
/// list the socket's directory, connect, ask `I` (info) and print the reply.
const PROBE: &str = r#"
import os, socket, sys
p = sys.argv[1]
try:
    print("LIST", sorted(n for n in os.listdir(os.path.dirname(p) or ".") if n.endswith((".sock", ".lock"))))
except Exception as e:
    print("LIST", type(e).__name__)
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(p)
    s.send(b"I")
    print("REPLY", s.recv(4096)[:40])
except Exception as e:
    print("FAIL", type(e).__name__)
"#;

/// Run [`PROBE`] against `sock` in a sandbox of `who` with `grants`; its stdout.
fn probe(who: Who, dir: &std::path::Path, grants: &[&str], sock: &str) -> String {
    let mut args: Vec<&str> = grants.to_vec();
    args.extend(["--", "/usr/bin/python3", "-c", PROBE, sock]);
    let (st, out, err, _) = run(who, dir, &args);
    assert!(st.success(), "{who:?} {grants:?}: {out}{err}");
    out
}

/// X4: the runtime directory is hidden in every sandbox, however it is bound in: `--ro` of
/// the directory itself, of its parent (`/run` for root, `/tmp` with `@tmp-shared` for the
/// user, DIR = the parent): inside, no socket or lock file is listed and a connection to
/// the other run's socket fails; the other run goes on. `snug ps` inside lists nothing.
/// Fails without the fix (tried on main): as the user, `LIST ['x4b.lock', 'x4b.sock', …]`
/// and `REPLY b'J{"command":"sleep 30",…` for `--ro` of the directory, `--rw /tmp` and
/// `@tmp-shared`: the sandbox talked to the other run; as root, `--ro /run/snug` did not
/// start (`bwrap: Can't create file at /run/snug/init: Read-only file system`).
#[test]
fn x4_runtime_directory_is_hidden_in_every_sandbox() {
    for who in everyone() {
        let dir = workdir(who);
        let b = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
        b.ready(dir.path(), "running");
        let sdir = socket_dir(who);
        let sock = sdir.join(format!("{}.sock", b.name));
        let sock = sock.to_str().expect("utf-8");
        let sdir_s = sdir.to_str().expect("utf-8").to_string();
        let parent = sdir.parent().expect("parent").to_str().expect("utf-8").to_string();
        let mut cases: Vec<Vec<&str>> = vec![vec!["--ro", &sdir_s], vec!["--rw", &parent]];
        if who == Who::User {
            cases.push(vec!["-p", "@tmp-shared"]);
            cases.push(vec![&parent]); // DIR is /tmp itself: @cwd-rw binds it
        }
        for grants in &cases {
            let out = probe(who, dir.path(), grants, sock);
            assert!(out.contains("LIST []") || out.contains("LIST FileNotFoundError"), "{who:?} {grants:?}: {out}");
            assert!(out.contains("FAIL"), "{who:?} {grants:?}: reached the other run: {out}");
        }
        let (st, out, err, _) = run(who, dir.path(), &["--ro", &sdir_s, "--", "/run/snug/init", "ps", "--json"]);
        assert!(st.success() && !out.contains(&b.name), "{who:?}: ps inside: {out}{err}");
        assert!(listed(who, dir.path(), &b.name), "{who:?}: the other run is gone");
        run(who, dir.path(), &["stop", "--now", &b.name]);
    }
}

/// X4: as root, another user's runtime directory (`/tmp/snug-UID`) is hidden when a bind
/// shows `/tmp` (`--ro /tmp`), though root's own is elsewhere: the root payload, which may
/// read any file, lists nothing there and cannot connect. Positive control: with root's
/// scan of `/tmp` left out, the probe listed the user's run (`LIST ['t….lock', 't….sock']`)
/// and reached its socket (the run answered `err permission denied`).
#[test]
fn x4_root_hides_another_users_runtime_directory_under_a_bind_of_tmp() {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let udir = workdir(Who::User);
    let b = Live::start(Who::User, udir.path(), &[], &["sleep", &marker()]);
    b.ready(udir.path(), "running");
    let sock = socket_dir(Who::User).join(format!("{}.sock", b.name));
    // DIR outside /tmp, so that `--ro /tmp` alone shows the host's /tmp.
    let dir = tempfile::Builder::new().prefix("snug-x4-").tempdir_in("/var/tmp").expect("tempdir");
    let out = probe(Who::Root, dir.path(), &["--ro", "/tmp"], sock.to_str().expect("utf-8"));
    assert!(out.contains("LIST []") || out.contains("LIST FileNotFoundError"), "root --ro /tmp: {out}");
    assert!(out.contains("FAIL"), "root --ro /tmp: reached the user's run: {out}");
    assert!(listed(Who::User, udir.path(), &b.name), "the user's run is gone");
    run(Who::User, udir.path(), &["stop", "--now", &b.name]);
}

/// X4: a run refuses a connection from inside a sandbox even when its socket is there (a
/// hard link in the other sandbox's DIR): `err permission denied`, and the run goes on.
/// A bind of the socket file itself is refused before anything starts (77). Positive
/// control: the same probe from outside (the test itself, in snug's pid namespace) gets
/// its `J{…}` answer through the same link. Fails without the fix (tried on main): the
/// sandboxed probe printed `REPLY b'J{"command":"sleep 70050000",…` (root and user).
#[test]
fn x4_connection_from_inside_a_sandbox_is_refused() {
    for who in everyone() {
        // On the socket's file system, for the hard link (root's /run may be a tmpfs).
        let dir = match who {
            Who::Root => tempfile::Builder::new().prefix("snug-x4-").tempdir_in("/run").expect("tempdir"),
            Who::User => workdir(who),
        };
        let b = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
        b.ready(dir.path(), "running");
        let sock = socket_dir(who).join(format!("{}.sock", b.name));
        let link = dir.path().join(format!("link-{}.sock", marker()));
        std::fs::hard_link(&sock, &link).expect("hard link of the socket");
        let link_s = link.to_str().expect("utf-8");
        let out = probe(who, dir.path(), &[], link_s);
        assert!(out.contains("REPLY b'err permission denied'"), "{who:?}: {out}");
        let outside = crate::common::cmd_as(who, dir.path(), "/usr/bin/python3", &["-c", PROBE, link_s])
            .output()
            .expect("python3");
        let outside = String::from_utf8_lossy(&outside.stdout);
        assert!(outside.contains("REPLY b'J{"), "{who:?}: control from outside: {outside}");
        let sock_s = sock.to_str().expect("utf-8");
        let (st, out, err, _) = run(who, dir.path(), &["--ro", sock_s, "--", "true"]);
        assert_eq!(crate::common::code(st), 77, "{who:?}: a bind of the socket itself: {out}{err}");
        assert!(err.starts_with("snug: ") && err.contains("runtime directory"), "{err}");
        let _ = std::fs::remove_file(&link);
        assert!(listed(who, dir.path(), &b.name), "{who:?}: the run is gone");
        let (st, _, _, _) = run(who, dir.path(), &["stop", &b.name]);
        assert!(st.success());
    }
}
