//! N5 over TLS and N6's DNS over HTTPS: the clients of the matrix to an https test server
//! whose certificate a CA made here signs (each client given the CA by its own option, no
//! proxy variable), a raw TCP client over IPv6, and DoH to a host no pattern names.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::*;
use crate::net_allow::escape::give;
use crate::net_allow::lab::{file, which};
use crate::net_allow::own_lab::{OwnLab, HTTP_PY};

const HOSTS: &str = "203.0.113.1 pkgs.example\n2001:db8:2::1 pkgs.example\n203.0.113.2 doh.example\n";

/// Tries per client: every one must succeed.
const TRIES: usize = 3;

/// An https server on ADDR:443 with CERT and KEY: `GET /hello` → `hello tls`, other paths
/// files under ROOT (a dumb git repository), `POST /dns-query` a DoH answer (RFC 8484) giving
/// every A question 203.0.113.1 and every other type no answer.
const HTTPS_PY: &str = r#"
import functools, http.server, socket, ssl, struct, sys
addr, cert, key, root = sys.argv[1:5]
class H(http.server.SimpleHTTPRequestHandler):
    def reply(self, body, kind):
        self.send_response(200); self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_GET(self):
        if self.path == "/hello": return self.reply(b"hello tls\n", "text/plain")
        super().do_GET()
    def do_POST(self):
        q = self.rfile.read(int(self.headers["Content-Length"]))
        end = 12
        while q[end]: end += q[end] + 1
        end += 5
        qtype = struct.unpack(">H", q[end - 4:end - 2])[0]
        an = qtype == 1
        r = q[:2] + b"\x81\x80" + struct.pack(">HHHH", 1, int(an), 0, 0) + q[12:end]
        if an: r += b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("203.0.113.1")
        self.reply(r, "application/dns-message")
    def log_message(self, *a): pass
class S(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET
s = S((addr, 443), functools.partial(H, directory=root))
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print("ready 443", flush=True)
s.serve_forever()
"#;

/// A raw TCP client over IPv6: an HTTP/1.0 GET to pkgs.example:80, the last line of the answer.
const RAW6_PY: &str = r#"
import socket
a = socket.getaddrinfo("pkgs.example", 80, socket.AF_INET6, socket.SOCK_STREAM)[0][4]
s = socket.socket(socket.AF_INET6); s.settimeout(5); s.connect(a)
s.sendall(b"GET / HTTP/1.0\r\nHost: pkgs.example\r\n\r\n")
print(b"".join(iter(lambda: s.recv(4096), b"")).decode().splitlines()[-1])
"#;

/// A CA and a certificate it signs for pkgs.example, doh.example and 203.0.113.2, in `dir`:
/// `ca.pem`, `server.pem`, `server.key`.
fn certificates(dir: &Path) {
    let openssl = |args: &[&str]| {
        let o = Command::new(which("openssl")).args(args).current_dir(dir).output().expect("openssl");
        assert!(o.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=snug test CA", "-keyout", "ca.key", "-out", "ca.pem"];
    ca.extend(ec);
    ca.extend(["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"]);
    openssl(&ca);
    let mut req = vec!["req", "-subj", "/CN=pkgs.example", "-keyout", "server.key", "-out", "server.csr"];
    req.extend(ec);
    openssl(&req);
    std::fs::write(
        dir.join("ext"),
        "subjectAltName=DNS:pkgs.example,DNS:doh.example,IP:203.0.113.2\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write");
    openssl(&[
        "x509",
        "-req",
        "-days",
        "2",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-extfile",
        "ext",
    ]);
    for f in ["ca.pem", "server.pem", "server.key"] {
        let _ = Command::new("chmod").arg("644").arg(dir.join(f)).status();
    }
}

/// The payload: each client TRIES times, one labelled line each, then DoH twice.
fn script() -> String {
    let mut s = String::from("unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY no_proxy\n");
    s += &format!("for i in $(seq {TRIES}); do\n");
    s += "echo curl4 $(curl -4 -sS -m 5 --cacert ca.pem https://pkgs.example/hello 2>&1)\n";
    s += "echo curl6 $(curl -6 -sS -m 5 --cacert ca.pem https://pkgs.example/hello 2>&1)\n";
    s += "echo urllib $(python3 -c 'import ssl, urllib.request; c = ssl.create_default_context(cafile=\"ca.pem\"); \
          print(urllib.request.urlopen(\"https://pkgs.example/hello\", context=c).read().decode())' 2>&1)\n";
    s += "echo node $(NODE_EXTRA_CA_CERTS=ca.pem node -e \
          'fetch(\"https://pkgs.example/hello\").then(r=>r.text()).then(t=>console.log(t.trim()))' 2>&1)\n";
    s += "rm -rf clone; echo git $(git -c http.sslCAInfo=ca.pem clone -q https://pkgs.example/repo.git clone 2>&1 \
          && cat clone/README)\n";
    s += "echo raw6 $(python3 raw6.py 2>&1)\n";
    s += "done\n";
    s += "echo doh-name $(curl -sS -m 5 --cacert ca.pem --doh-url https://doh.example/dns-query https://pkgs.example/hello 2>&1)\n";
    s += "echo doh-addr $(curl -sS -m 5 --cacert ca.pem --doh-url https://203.0.113.2/dns-query https://pkgs.example/hello 2>&1)\n";
    s
}

/// N5 over https, N6's DoH: curl (IPv4 and IPv6), python3 urllib, Node's fetch and git clone
/// over https, each given the test CA by its own option and no proxy variable, and a raw TCP
/// client over IPv6: every try reaches the test server through snug. DNS over HTTPS to a host
/// no pattern names fails, by name (NXDOMAIN for the DoH server) and by address (reset), and
/// both are in the report. Control: without snug, in the same namespace, curl reaches the
/// https server, and the same DoH requests resolve pkgs.example and reach it, so the DoH
/// failures are snug's.
#[test]
fn n5_https_clients_with_a_test_ca_n6_doh_to_a_host_not_allowed_fails() {
    let Some(lab) = OwnLab::new(7, HOSTS) else { return };
    let files = tempfile::Builder::new().prefix("snug-own-tls-").tempdir_in("/tmp").expect("tempdir");
    let _ = Command::new("chmod").arg("755").arg(files.path()).status();
    certificates(files.path());
    crate::net_allow::matrix::repo(files.path());
    let at = |f: &str| files.path().join(f).to_string_lossy().to_string();
    let root = files.path().to_string_lossy().to_string();
    let (cert, key) = (at("server.pem"), at("server.key"));
    let _t4 = lab.serve_remote(HTTPS_PY, &["203.0.113.1", &cert, &key, &root]);
    let _t6 = lab.serve_remote(HTTPS_PY, &["2001:db8:2::1", &cert, &key, &root]);
    let _doh = lab.serve_remote(HTTPS_PY, &["203.0.113.2", &cert, &key, &root]);
    let _h6 = lab.serve_remote(HTTP_PY, &["2001:db8:2::1", "80", "pkgs6"]);

    let ca = at("ca.pem");
    let curl = |extra: &[&str]| {
        let mut w: Vec<String> =
            vec![which("curl"), "-sS".into(), "-m".into(), "5".into(), "--cacert".into(), ca.clone()];
        w.extend(extra.iter().map(|s| s.to_string()));
        w.push("https://pkgs.example/hello".into());
        run_bounded(&mut lab.on_host(&w), Duration::from_secs(20))
    };
    for extra in
        [&[][..], &["--doh-url", "https://doh.example/dns-query"], &["--doh-url", "https://203.0.113.2/dns-query"]]
    {
        let o = curl(extra);
        assert!(o.out.contains("hello tls"), "control without snug {extra:?}: {}{}", o.out, o.err);
    }

    for who in everyone() {
        let dir = workdir(who);
        std::fs::copy(files.path().join("ca.pem"), dir.path().join("ca.pem")).expect("copy the CA");
        file(dir.path(), "raw6.py", RAW6_PY);
        file(dir.path(), "run.sh", &script());
        give(who, dir.path());
        let report = dir.path().join("report.json");
        let args = ["--report", &report.to_string_lossy(), "--net-allow", "pkgs.example", "--", "sh", "run.sh"];
        let o = run_bounded(&mut lab.snug(who, dir.path(), &args), Duration::from_secs(120));
        let out = &o.out;
        let count = |label: &str, want: &str| {
            out.lines().filter(|l| l.starts_with(&format!("{label} ")) && l.contains(want)).count()
        };
        for (label, want) in [
            ("curl4", "hello tls"),
            ("curl6", "hello tls"),
            ("urllib", "hello tls"),
            ("node", "hello tls"),
            ("git", "hello git"),
            ("raw6", "hello pkgs6"),
        ] {
            assert_eq!(count(label, want), TRIES, "{who:?} {label}: {out}\n{}", o.err);
        }
        let doh = |label: &str| out.lines().find(|l| l.starts_with(&format!("{label} "))).unwrap_or_default();
        // curl names the DoH server's failure as the name's: `(6) Couldn't resolve host name`.
        for label in ["doh-name", "doh-addr"] {
            assert!(doh(label).contains("curl: (6)") && !doh(label).contains("hello"), "{who:?}: {out}");
        }
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let decisions = v["network"]["decisions"].as_array().cloned().unwrap_or_default();
        let reason = |s: &str| decisions.iter().find(|d| d["subject"] == s).map(|d| d["reason"].clone());
        assert_eq!(reason("doh.example"), Some("name not allowed".into()), "{who:?}: {text}");
        assert_eq!(reason("203.0.113.2:443"), Some("address not allowed".into()), "{who:?}: {text}");
    }
}
