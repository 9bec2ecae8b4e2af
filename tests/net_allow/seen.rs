//! N7 and O9: every decision is seen, attempts on ports snug does not serve included (the
//! kernel refuses those itself), on the stderr line, in the report, under `-v` and as events
//! while the run goes on.

use std::time::Duration;

use serde_json::Value;

use crate::common::*;
use crate::net_allow::escape::give;
use crate::net_allow::lab::file;
use crate::net_allow::own_lab::{OwnLab, HTTP_PY, PROBE_PY};

const HOSTS: &str = "203.0.113.1 pkgs.example\n2001:db8:2::1 pkgs.example\n";

/// `udp HOST:PORT`: one datagram on a connected socket, `udp ok` or `udp fail ERRNO`; `wait
/// PATH TEXT`: until the file at PATH holds TEXT (at most 20 s), then `seen TEXT` or `unseen`.
const CLIENTS_PY: &str = r#"
import socket, sys, time
if sys.argv[1] == "udp":
    host, port = sys.argv[2].rsplit(":", 1)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM); s.settimeout(3)
    try:
        s.connect((host.strip("[]"), int(port))); s.send(b"ping"); s.recv(64); print("udp ok")
    except OSError as e:
        print("udp fail", e.errno)
else:
    end = time.monotonic() + 20
    while time.monotonic() < end:
        try:
            if sys.argv[3] in open(sys.argv[2]).read():
                print("seen", sys.argv[3]); sys.exit()
        except OSError:
            pass
        time.sleep(0.01)
    print("unseen", sys.argv[3])
"#;

/// N7: connections to ports no pattern names (an allowed name's other port, twice; an address
/// at a port nothing serves, IPv4 and IPv6) are refused by the kernel at `connect(2)`
/// (ECONNREFUSED within 50 ms) and still listed once each with their count on the stderr line
/// and in the report, as is UDP to an allowed host and a name asked as A and AAAA (one entry,
/// one count per question), and a 3 MB download arrives whole with its bytes in the report;
/// `-v` shows each with its time; O9: each is a `net` event while the
/// run goes on (the payload, given the stream's directory read-only, waits until its own
/// refusal is in the stream), and so is the
/// allowed connection, with its upstream. Control: the same probes reach a server on those
/// ports without snug, in the same namespace. Without the raw sockets in the sandbox's
/// namespace (the kernel's refusals unseen), the stream never showed the refusal and the stderr
/// line held only the name: this row failed. The `started` event's argv, written by serde as
/// `{"Unix":[bytes]}` per word, failed it too; it is text, as in the report.
#[test]
fn n7_refusals_on_ports_nobody_serves_are_seen_and_o9_streamed() {
    let Some(lab) = OwnLab::new(6, HOSTS) else { return };
    let _s80 = lab.serve_remote(HTTP_PY, &["203.0.113.1", "80", "pkgs"]);
    let _s5432 = lab.serve_remote(HTTP_PY, &["203.0.113.1", "5432", "db"]);
    let _s5432v6 = lab.serve_remote(HTTP_PY, &["2001:db8:2::1", "5432", "db6"]);
    let _s22 = lab.serve_remote(HTTP_PY, &["2001:db8:2::1", "22", "ssh6"]);
    let targets = ["pkgs.example:5432", "203.0.113.1:5432", "[2001:db8:2::1]:22"];
    let mut control = vec![crate::net_allow::lab::python(), "-c".into(), PROBE_PY.into()];
    control.extend(targets.iter().map(|t| t.to_string()));
    let o = run_bounded(&mut lab.on_host(&control), Duration::from_secs(20));
    assert_eq!(o.out.matches(" ok hello ").count(), 3, "control without snug: {}{}", o.out, o.err);

    for who in everyone() {
        let dir = workdir(who);
        let outside = workdir(who);
        file(dir.path(), "probe.py", PROBE_PY);
        file(dir.path(), "clients.py", CLIENTS_PY);
        give(who, dir.path());
        let (report, events) = (outside.path().join("report.json"), outside.path().join("events"));
        let ev = events.to_string_lossy();
        let script = format!(
            "python3 probe.py pkgs.example:5432 pkgs.example:5432 203.0.113.1:5432 [2001:db8:2::1]:22 pkgs.example:80\n\
             python3 clients.py wait {ev} '\"subject\":\"pkgs.example:5432\"'\n\
             python3 clients.py udp pkgs.example:9999\n\
             curl -sS -o big http://pkgs.example/big/3000000 && echo big $(wc -c < big) $(tr -d x < big | wc -c)\n\
             python3 -c 'import socket; socket.getaddrinfo(\"evil.example.\", 80)' 2>/dev/null; echo asked\n"
        );
        let args = [
            "-v",
            "--report",
            &report.to_string_lossy(),
            "--events",
            &ev,
            "--ro",
            &outside.path().to_string_lossy(),
            "--net-allow",
            "pkgs.example",
            "--",
            "sh",
            "-c",
            &script,
        ];
        let o = run_bounded(&mut lab.snug(who, dir.path(), &args), Duration::from_secs(60));
        let out = &o.out;
        for t in targets {
            let line = out.lines().find(|l| l.starts_with(&format!("{t} "))).unwrap_or_default();
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words.get(1..3), Some(&["fail", "111"][..]), "{who:?} {t}: refused at connect: {out}");
            let ms: f64 = words.get(3).and_then(|m| m.parse().ok()).unwrap_or(f64::MAX);
            assert!(ms <= 50.0, "{who:?} {t}: refused after {ms} ms: {line}");
        }
        assert!(out.contains("pkgs.example:80 ok hello pkgs"), "{who:?}: {out}\n{}", o.err);
        assert!(out.lines().any(|l| l.starts_with("seen ")), "{who:?}: not streamed live: {out}");
        assert!(out.contains("udp fail 111") && out.contains("asked"), "{who:?}: {out}");
        // Bulk data moves through splice(2): every byte arrives, and the report counts them.
        assert!(out.contains("big 3000000 0"), "{who:?}: {out}\n{}", o.err);

        let line = o.err.lines().find(|l| l.starts_with("snug: refused ")).unwrap_or_default();
        for s in [
            "pkgs.example:5432 (port not allowed) ×2",
            "203.0.113.1:5432 (address not allowed)",
            "[2001:db8:2::1]:22 (address not allowed)",
            "pkgs.example:9999 (UDP not allowed)",
            "evil.example (name not allowed) ×2",
        ] {
            assert!(line.contains(s), "{who:?}: {s} not in {line}\n{}", o.err);
        }
        assert!(line.starts_with("snug: refused 7 "), "{who:?}: {line}");

        let text = std::fs::read_to_string(&report).unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or_default();
        let decisions = v["network"]["decisions"].as_array().cloned().unwrap_or_default();
        let count = |subject: &str| decisions.iter().find(|d| d["subject"] == subject).map(|d| d["count"].clone());
        assert_eq!(count("pkgs.example:5432"), Some(2.into()), "{who:?}: {text}");
        assert_eq!(count("[2001:db8:2::1]:22"), Some(1.into()), "{who:?}: {text}");
        assert_eq!(count("evil.example"), Some(2.into()), "{who:?}: {text}");
        assert_eq!(v["network"]["refused"], 7, "{who:?}: {text}");
        let down = decisions.iter().find(|d| d["subject"] == "pkgs.example:80" && d["allowed"] == true);
        assert!(down.is_some_and(|d| d["bytes_in"].as_u64() > Some(3_000_000)), "{who:?}: {text}");

        let verbose: Vec<&str> =
            o.err.lines().filter(|l| l.starts_with("snug: [") && l.contains(" ms] net: ")).collect();
        for want in [
            "tcp pkgs.example:5432: refused (port not allowed)",
            "tcp 203.0.113.1:5432: refused (address not allowed)",
            "udp pkgs.example:9999: refused (UDP not allowed)",
            "dns evil.example: refused (name not allowed)",
            "tcp pkgs.example:80 via 203.0.113.1:80: allowed",
        ] {
            assert!(verbose.iter().any(|l| l.contains(want)), "{who:?}: -v lacks {want}: {}", o.err);
        }

        let all: Vec<Value> = std::fs::read_to_string(&events)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        // The started event names the command line as the report does: text.
        let started = all.first().cloned().unwrap_or_default();
        assert!(started["argv"].as_array().is_some_and(|a| a.contains(&"--net-allow".into())), "{started}");
        let stream: Vec<Value> = all.into_iter().filter(|e| e["event"] == "net").collect();
        let refused = |s: &str| stream.iter().filter(|e| e["subject"] == s && e["allowed"] == false).count();
        assert_eq!(refused("pkgs.example:5432"), 2, "{who:?}: {stream:?}");
        assert_eq!(refused("[2001:db8:2::1]:22"), 1, "{who:?}: {stream:?}");
        assert_eq!(refused("pkgs.example:9999"), 1, "{who:?}: {stream:?}");
        assert_eq!(refused("evil.example"), 2, "{who:?}: {stream:?}");
        let ok = stream.iter().find(|e| e["subject"] == "pkgs.example:80").cloned().unwrap_or_default();
        assert_eq!((ok["allowed"].clone(), ok["upstream"].clone()), (true.into(), "203.0.113.1:80".into()), "{ok}");
        assert!(ok["bytes_in"].as_u64() > Some(0) && ok["kind"] == "tcp", "{ok}");
        let port = stream.iter().find(|e| e["subject"] == "pkgs.example:5432").cloned().unwrap_or_default();
        assert_eq!((port["kind"].clone(), port["reason"].clone()), ("tcp".into(), "port not allowed".into()));
    }
}
