//! The lab for a network of snug's own: two network namespaces the test makes, joined by a
//! veth pair. `host` is where snug runs (198.51.100.2, 2001:db8:1::2); `remote` holds the
//! servers on documentation addresses on its loopback (203.0.113.K, 2001:db8:2::K) and routes
//! back. Names come from an /etc/hosts bound over the host's in the command's own mount
//! namespace (`ip netns exec` makes one), which snug's host-side resolution reads; the
//! sandbox gets its own (localhost only). Needs root; nothing leaves the namespaces.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::*;
use crate::net_allow::lab::{file, python, which};

/// The host's own address (N6: a name leading there is refused).
pub const HOST4: &str = "198.51.100.2";

/// The two namespaces, removed on drop.
pub struct OwnLab {
    pub host: String,
    pub remote: String,
    /// The hosts file snug's host side reads.
    pub hosts: PathBuf,
    _dir: tempfile::TempDir,
}

fn ip(args: &[&str]) {
    let out = Command::new(which("ip")).args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

impl OwnLab {
    /// Lab `k`, with `hosts` as the host's /etc/hosts; `None` (with a line) when not root.
    pub fn new(k: u8, hosts: &str) -> Option<OwnLab> {
        if !is_root() {
            eprintln!("skipped: the lab needs root (ip netns, veth)");
            return None;
        }
        let tag = std::process::id() % 10000;
        let (host, remote) = (format!("snug-own-{tag}-{k}h"), format!("snug-own-{tag}-{k}r"));
        let (vh, vr) = (format!("sno{k}h{tag}"), format!("sno{k}r{tag}"));
        ip(&["netns", "add", &host]);
        ip(&["netns", "add", &remote]);
        ip(&["link", "add", &vh, "netns", &host, "type", "veth", "peer", "name", &vr, "netns", &remote]);
        let n = |ns: &str, args: &[&str]| {
            let mut all = vec!["-n", ns];
            all.extend(args);
            ip(&all);
        };
        n(&host, &["link", "set", "lo", "up"]);
        n(&remote, &["link", "set", "lo", "up"]);
        n(&host, &["addr", "add", &format!("{HOST4}/24"), "dev", &vh]);
        n(&host, &["addr", "add", "2001:db8:1::2/64", "dev", &vh, "nodad"]);
        n(&remote, &["addr", "add", "198.51.100.1/24", "dev", &vr]);
        n(&remote, &["addr", "add", "2001:db8:1::1/64", "dev", &vr, "nodad"]);
        n(&host, &["link", "set", &vh, "up"]);
        n(&remote, &["link", "set", &vr, "up"]);
        for i in 1..=4 {
            n(&remote, &["addr", "add", &format!("203.0.113.{i}/32"), "dev", "lo"]);
            n(&remote, &["addr", "add", &format!("2001:db8:2::{i}/128"), "dev", "lo", "nodad"]);
        }
        n(&host, &["route", "add", "default", "via", "198.51.100.1"]);
        n(&host, &["-6", "route", "add", "default", "via", "2001:db8:1::1"]);
        let dir = tempfile::Builder::new().prefix("snug-own-lab-").tempdir_in("/tmp").expect("tempdir");
        let hosts = file(dir.path(), "hosts", hosts);
        Some(OwnLab { host, remote, hosts, _dir: dir })
    }

    /// `words` in the host namespace with the lab's /etc/hosts.
    pub fn on_host(&self, words: &[String]) -> Command {
        let mut c = Command::new(which("ip"));
        c.args(["netns", "exec", &self.host, "sh", "-c", "mount --bind \"$0\" /etc/hosts && exec \"$@\""]);
        c.arg(&self.hosts).args(words).stdin(Stdio::null());
        c
    }

    /// snug as `who` in the host namespace, in `dir`, with `args`.
    pub fn snug(&self, who: Who, dir: &Path, args: &[&str]) -> Command {
        let mut c = self.on_host(&crate::net_allow::lab::snug_words(who, args));
        c.current_dir(dir);
        c
    }

    /// A server in the remote namespace: `python3 -c code args…`, ready once it prints
    /// `ready PORT`.
    pub fn serve_remote(&self, code: &str, args: &[&str]) -> crate::net_allow::lab::Proc {
        let mut c = Command::new(which("ip"));
        c.args(["netns", "exec", &self.remote, &python(), "-c", code]).args(args);
        crate::net_allow::lab::serve(&mut c)
    }

    /// A server in the host namespace (where snug itself runs).
    pub fn serve_host(&self, code: &str, args: &[&str]) -> crate::net_allow::lab::Proc {
        let mut c = Command::new(which("ip"));
        c.args(["netns", "exec", &self.host, &python(), "-c", code]).args(args);
        crate::net_allow::lab::serve(&mut c)
    }
}

impl Drop for OwnLab {
    fn drop(&mut self) {
        // Deleting a namespace destroys its end of the pair, and so the pair.
        let _ = Command::new(which("ip")).args(["netns", "del", &self.host]).output();
        let _ = Command::new(which("ip")).args(["netns", "del", &self.remote]).output();
    }
}

/// An HTTP server: `GET` anything → 200 with body `hello TAG`; serves on a thread per
/// connection so a held one does not stop the others.
pub const HTTP_PY: &str = r#"
import http.server, socket, sys, socketserver
addr, port, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello " + tag + "\n").encode()
        if self.path.startswith("/big/"):
            n = int(self.path[5:]); self.send_response(200); self.send_header("Content-Length", str(n)); self.end_headers()
            chunk = b"x" * 65536
            while n > 0:
                self.wfile.write(chunk[:min(n, 65536)]); n -= 65536
            return
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET
s = S((addr, port), H)
print("ready", s.server_address[1], flush=True)
s.serve_forever()
"#;

/// Connect to each `HOST:PORT` (no retry), send an HTTP/1.0 GET, read to the end: `ARG ok LAST-LINE`, or `ARG fail ERRNO MS`
/// where MS is the milliseconds from the `connect(2)` call to the failure (the name resolved
/// before).
pub const PROBE_PY: &str = r#"
import socket, sys, time
for arg in sys.argv[1:]:
    host, port = arg.rsplit(":", 1)
    t = time.monotonic()
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_STREAM)[0]
        s = socket.socket(family, kind, proto); s.settimeout(5)
        t = time.monotonic()
        s.connect(addr)
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        got = b"".join(iter(lambda: s.recv(4096), b"")).decode(errors="replace")
        if not got: raise ConnectionResetError(104, "closed")
        print(arg, "ok", got.splitlines()[-1], flush=True)
    except socket.gaierror as e:
        print(arg, "fail", "NXDOMAIN" if e.errno == socket.EAI_NONAME else e, round((time.monotonic() - t) * 1000, 1), flush=True)
    except OSError as e:
        print(arg, "fail", e.errno, round((time.monotonic() - t) * 1000, 1), flush=True)
"#;
