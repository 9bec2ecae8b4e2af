//! N5's bounds: 1024 connections at once and 65,536 names in a run; past them, each is
//! refused and counted, and the payload's other connections keep working.

use std::process::Command;
use std::time::Duration;

use crate::common::*;
use crate::net_allow::escape::give;
use crate::net_allow::lab::{file, python, which};
use crate::net_allow::own_lab::{OwnLab, HTTP_PY};

const HOSTS: &str = "203.0.113.1 pkgs.example\n";

/// Opens 2000 connections at once, then asks on each: how many got an answer; then asks
/// 70,000 distinct allowed names: how many got SERVFAIL; then one more connection.
const LOAD_PY: &str = r#"
import socket, struct, resource
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
addr = socket.getaddrinfo("pkgs.example", 80, socket.AF_INET, socket.SOCK_STREAM)[0][4]
conns = []
for i in range(2000):
    s = socket.socket(); s.settimeout(10); s.connect(addr); conns.append(s)
ok = 0
for s in conns:
    try:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        if s.recv(64): ok += 1
    except OSError:
        pass
for s in conns: s.close()
print("answered", ok, flush=True)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5); u.connect(("192.0.2.53", 53))
servfail = 0
for i in range(70000):
    name = "n%d.bulk.example" % i
    q = struct.pack(">HHHHHH", i & 0xffff, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    u.send(q); r = u.recv(4096)
    if r[3] & 15 == 2: servfail += 1
print("servfail", servfail, flush=True)
s = socket.create_connection(("pkgs.example", 80), timeout=10); s.sendall(b"GET / HTTP/1.0\r\n\r\n")
print("after", s.recv(4096).decode().splitlines()[0], flush=True)
"#;

/// N5: 2000 connections at once: at least 900 and at most 1024 answered (the rest reset),
/// counted in the report as past the bound; 70,000 distinct allowed names: exactly the ones
/// past 65,536 (pkgs.example's included) get SERVFAIL, counted; a connection after that still works.
#[test]
fn n5_bounds_on_connections_and_names_are_counted() {
    let Some(lab) = OwnLab::new(5, HOSTS) else { return };
    let mut server = Command::new(which("ip"));
    server.args(["netns", "exec", &lab.remote, "prlimit", "--nofile=8192", "--", &python(), "-c", HTTP_PY]);
    let _pkgs = crate::net_allow::lab::serve(server.args(["203.0.113.1", "80", "pkgs"]));
    for who in everyone() {
        let dir = workdir(who);
        file(dir.path(), "load.py", LOAD_PY);
        give(who, dir.path());
        let report = dir.path().join("report.json");
        let r = report.to_string_lossy().into_owned();
        let args = [
            "--report",
            &r,
            "--net-allow",
            "pkgs.example",
            "--net-allow",
            "*.bulk.example",
            "--",
            "python3",
            "load.py",
        ];
        let o = run_bounded(&mut lab.snug(who, dir.path(), &args), Duration::from_secs(300));
        let num = |key: &str| -> i64 {
            o.out
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key} ")))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(-1)
        };
        let answered = num("answered");
        assert!((900..=1024).contains(&answered), "{who:?}: {answered} answered: {}\n{}", o.out, o.err);
        // pkgs.example holds one of the 65,536 addresses already.
        assert_eq!(num("servfail"), 70_000 - 65_535, "{who:?}: {}\n{}", o.out, o.err);
        assert!(o.out.contains("after HTTP/1.0 200"), "{who:?}: {}", o.out);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default()).unwrap_or_default();
        let count = |subject: &str| {
            v["network"]["decisions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|d| d["subject"] == subject)
                .and_then(|d| d["count"].as_i64())
        };
        assert_eq!(count("connections past the bound"), Some(2000 - answered), "{who:?}: {}", o.err);
        assert_eq!(count("names past the bound"), Some(70_000 - 65_535), "{who:?}: {}", o.err);
        assert!(
            o.err.contains("connections past the bound (more than 1024 connections at once)"),
            "{who:?}: {}",
            o.err
        );
    }
}
