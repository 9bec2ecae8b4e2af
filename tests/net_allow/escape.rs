//! N6: no way around it. Names that lead to the host's loopback, the metadata address or the
//! host's own address, an IP literal, UDP to an allowed host: refused, each in the report.
//! DNS sent to any address is answered by snug's resolver, from the address asked. N7: the
//! refusals once each on stderr with their counts, every decision in the report and, with
//! `-v`, as it happens with a timestamp.

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use crate::net_allow::lab::{file, python};
use crate::net_allow::own_lab::{OwnLab, HOST4, HTTP_PY, PROBE_PY};

const HOSTS: &str = "203.0.113.1 pkgs.example\n127.0.0.1 loop.example\n169.254.169.254 meta.example\n\
                     198.51.100.2 self.example\n";

/// A UDP echo server.
const ECHO_UDP_PY: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", sys.argv[2], flush=True)
while True:
    d, peer = s.recvfrom(4096); s.sendto(d, peer)
"#;

/// `udp HOST:PORT`: one datagram on a connected socket, `ok` with the echo or `fail ERRNO`;
/// `dns SERVER NAME`: an A question sent to SERVER:53, prints the answer's source address,
/// its response code and the first address in it; `dnstcp` the same over TCP (source
/// `SERVER/tcp`).
const CLIENTS_PY: &str = r#"
import socket, struct, sys
if sys.argv[1] == "udp":
    host, port = sys.argv[2].rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    try:
        s.connect((host, int(port))); s.send(b"ping"); print("udp ok", s.recv(64).decode())
    except OSError as e:
        print("udp fail", e.errno)
else:
    server, name = sys.argv[2], sys.argv[3]
    fam = socket.AF_INET6 if ":" in server else socket.AF_INET
    q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    try:
        if sys.argv[1] == "dnstcp":
            s = socket.create_connection((server, 53), timeout=3); s.sendall(struct.pack(">H", len(q)) + q)
            f = s.makefile("rb"); n = struct.unpack(">H", f.read(2))[0]; r = f.read(n); src = (server + "/tcp",)
        else:
            s = socket.socket(fam, socket.SOCK_DGRAM); s.settimeout(3); s.sendto(q, (server, 53))
            r, src = s.recvfrom(4096)
    except OSError as e:
        print("dns", server, name, "fail", e); sys.exit()
    rcode = r[3] & 15; an = struct.unpack(">H", r[6:8])[0]
    addr = socket.inet_ntoa(r[-4:]) if an else "-"
    print("dns", server, name, "from", src[0], "rcode", rcode, "addr", addr)
"#;

/// N6: a name resolving to 127.0.0.1, to 169.254.169.254 or to the host's own address, an IP
/// literal, and UDP to an allowed host are all refused, each in the report with its reason;
/// an explicit address pattern names the host's own address back in. Control: the same probe
/// without snug, in the same namespace, reaches each of those servers (and the UDP echo), so
/// the refusals are snug's. DNS to 192.0.2.53, 127.0.0.53, ::1 and 2001:db8::53 is answered
/// from the address asked (the source checked), allowed names only: with the reply sent
/// without `IP_PKTINFO`, the answer to 127.0.0.53 came from 127.0.0.1 and this row failed;
/// without `IPV6_FREEBIND`, 2001:db8::53 (local by route, not assigned) got no answer.
#[test]
fn n6_names_leading_to_loopback_metadata_or_the_host_are_refused_n7_and_seen() {
    let Some(lab) = OwnLab::new(2, HOSTS) else { return };
    let host_ns = lab.host.clone();
    let _ = std::process::Command::new("ip")
        .args(["-n", &host_ns, "addr", "add", "169.254.169.254/32", "dev", "lo"])
        .status();
    let _loop = lab.serve_host(HTTP_PY, &["127.0.0.1", "80", "hostloop"]);
    let _meta = lab.serve_host(HTTP_PY, &["169.254.169.254", "80", "meta"]);
    let _self = lab.serve_host(HTTP_PY, &[HOST4, "80", "hostself"]);
    let _pkgs = lab.serve_remote(HTTP_PY, &["203.0.113.1", "80", "pkgs"]);
    let _echo = lab.serve_remote(ECHO_UDP_PY, &["203.0.113.1", "9999"]);
    let targets = ["loop.example:80", "meta.example:80", "self.example:80"];

    let mut control: Vec<String> = vec![python(), "-c".into(), PROBE_PY.into()];
    control.extend(targets.iter().map(|t| t.to_string()));
    let o = run_bounded(&mut lab.on_host(&control), Duration::from_secs(20));
    for want in ["hello hostloop", "hello meta", "hello hostself"] {
        assert!(o.out.contains(want), "control without snug: {want}: {}{}", o.out, o.err);
    }
    let udp = [python(), "-c".into(), CLIENTS_PY.into(), "udp".into(), "pkgs.example:9999".into()];
    let o = run_bounded(&mut lab.on_host(&udp), Duration::from_secs(20));
    assert!(o.out.contains("udp ok ping"), "control without snug: {}{}", o.out, o.err);

    for who in everyone() {
        let dir = workdir(who);
        file(dir.path(), "probe.py", PROBE_PY);
        file(dir.path(), "clients.py", CLIENTS_PY);
        give(who, dir.path());
        let report = dir.path().join("report.json");
        let mut script = format!("python3 probe.py {} {HOST4}:80 pkgs.example:80\n", targets.join(" "));
        script += "python3 clients.py udp pkgs.example:9999\npython3 clients.py udp pkgs.example:80\n";
        script +=
            "python3 clients.py dnstcp 192.0.2.53 pkgs.example\npython3 clients.py dnstcp 192.0.2.53 evil.example\n";
        for server in ["192.0.2.53", "127.0.0.53", "::1", "2001:db8::53"] {
            script += &format!(
                "python3 clients.py dns {server} pkgs.example\npython3 clients.py dns {server} evil.example\n"
            );
        }
        let mut args: Vec<String> =
            ["--report", &report.to_string_lossy(), "-v"].iter().map(|s| s.to_string()).collect();
        for t in ["loop.example", "meta.example", "self.example", "pkgs.example", "pkgs.example:9999"] {
            args.extend(["--net-allow".to_string(), t.to_string()]);
        }
        args.extend(["--".into(), "sh".into(), "-c".into(), script]);
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_bounded(&mut lab.snug(who, dir.path(), &words), Duration::from_secs(60));
        let out = &o.out;
        for t in targets.iter().map(|t| t.to_string()).chain([format!("{HOST4}:80")]) {
            let line = out.lines().find(|l| l.starts_with(&format!("{t} "))).unwrap_or_default();
            assert!(
                line.contains(" fail 104") || line.contains(" fail 111"),
                "{who:?} {t} not refused: {out}\n{}",
                o.err
            );
        }
        assert!(out.contains("pkgs.example:80 ok hello pkgs"), "{who:?}: {out}\n{}", o.err);
        assert!(out.contains("udp fail 111"), "{who:?}: UDP: {out}");
        for server in ["192.0.2.53", "127.0.0.53", "::1", "2001:db8::53"] {
            let ok = format!("dns {server} pkgs.example from {server} rcode 0 addr 198.18.0.");
            let nx = format!("dns {server} evil.example from {server} rcode 3");
            assert!(out.contains(&ok) && out.contains(&nx), "{who:?} {server}: {out}");
        }
        let tcp = [
            "dns 192.0.2.53 pkgs.example from 192.0.2.53/tcp rcode 0",
            "dns 192.0.2.53 evil.example from 192.0.2.53/tcp rcode 3",
        ];
        assert!(tcp.iter().all(|t| out.contains(t)), "{who:?}: DNS over TCP: {out}");
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let decisions = v["network"]["decisions"].as_array().cloned().unwrap_or_default();
        let reason = |subject: &str| {
            decisions.iter().find(|d| d["subject"] == subject).map(|d| d["reason"].as_str().unwrap_or("").to_string())
        };
        assert_eq!(reason("loop.example:80").as_deref(), Some("resolves to loopback"), "{who:?}: {text}");
        assert_eq!(reason("meta.example:80").as_deref(), Some("resolves to a metadata address"), "{who:?}: {text}");
        assert_eq!(reason("self.example:80").as_deref(), Some("resolves to the host's own address"), "{who:?}: {text}");
        assert_eq!(reason(&format!("{HOST4}:80")).as_deref(), Some("address not allowed"), "{who:?}: {text}");
        // A datagram to a port snug serves over TCP (a QUIC client's) is refused and counted.
        // Positive control: before the fix it was refused (`udp fail 111`) but never counted.
        let udp80 = decisions.iter().find(|d| d["subject"] == "pkgs.example:80" && d["reason"] == "UDP not allowed");
        assert!(udp80.is_some(), "{who:?}: UDP to a served port not counted: {text}");
        let allowed = decisions.iter().find(|d| d["subject"] == "pkgs.example:80" && d["allowed"] == true);
        assert!(allowed.is_some_and(|d| d["bytes_in"].as_u64() > Some(0)), "{who:?}: {text}");
        // N7: once each on stderr, with counts; each decision under -v with a timestamp.
        let line = o.err.lines().find(|l| l.starts_with("snug: refused ")).unwrap_or_default();
        for s in [
            "loop.example:80 (resolves to loopback)",
            "evil.example (name not allowed) ×",
            "--net-allow NAME allows one",
        ] {
            assert!(line.contains(s), "{who:?}: {s} not in {line}");
        }
        assert_eq!(line.matches("evil.example").count(), 1, "{who:?}: {line}");
        let verbose = o.err.lines().filter(|l| l.starts_with("snug: [") && l.contains(" ms] net: "));
        assert!(
            verbose.clone().any(|l| l.contains("tcp meta.example:80: refused (resolves to a metadata address)")),
            "{who:?}: {}",
            o.err
        );
        assert!(
            verbose.clone().any(|l| l.contains("tcp pkgs.example:80 via 203.0.113.1:80: allowed")),
            "{who:?}: {}",
            o.err
        );
    }

    // An explicit address pattern names the host's own address back in.
    let who = Who::Root;
    let dir = workdir(who);
    file(dir.path(), "probe.py", PROBE_PY);
    let addr = format!("{HOST4}:80");
    let o = run_bounded(
        &mut lab.snug(who, dir.path(), &["--net-allow", &addr, "--", "python3", "probe.py", &addr]),
        Duration::from_secs(30),
    );
    assert!(o.out.contains("ok hello hostself"), "{}{}", o.out, o.err);
}

/// Hand `dir` to the unprivileged user (its files too).
pub fn give(who: Who, dir: &Path) {
    if who == Who::User {
        let (uid, gid) = test_user();
        let _ = std::process::Command::new("chown").arg("-R").arg(format!("{uid}:{gid}")).arg(dir).status();
    }
}
