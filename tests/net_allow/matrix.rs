//! N5's conformance matrix: each client with no proxy variable, allowed hosts reached in every
//! try, everything else NXDOMAIN or refused/reset within 50 ms of the connect.

use std::path::Path;

use crate::common::*;
use crate::net_allow::escape::give;
use crate::net_allow::lab::{file, which};
use crate::net_allow::own_lab::{OwnLab, HTTP_PY, PROBE_PY};

const HOSTS: &str = "203.0.113.1 pkgs.example\n2001:db8:2::1 pkgs.example\n203.0.113.2 other.example\n\
                     203.0.113.3 git.example\n2001:db8:2::3 v6only.example\n";

/// The JDK's configuration (java.security), which `@sys` does not show.
const JAVA_CONF: [&str; 1] = ["/etc/java-17-openjdk"];

/// Tries per client: every one must succeed (N3: the first without a retry).
const TRIES: usize = 3;

/// A Java client (`java Fetch.java URL`): prints the status and body.
const FETCH_JAVA: &str = r#"
public class Fetch {
    public static void main(String[] a) throws Exception {
        var c = java.net.http.HttpClient.newHttpClient();
        var r = c.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(a[0])).build(),
                       java.net.http.HttpResponse.BodyHandlers.ofString());
        System.out.println(r.statusCode() + " " + r.body().trim());
    }
}
"#;

/// A Rust client (std's `TcpStream`, the C library's resolver): `fetch_rs HOST:PORT` sends an
/// HTTP/1.0 GET and prints the answer's last line, or `error WHAT`.
const FETCH_RS: &str = r#"
use std::io::{Read, Write};
fn main() {
    let target = std::env::args().nth(1).unwrap_or_default();
    let got = std::net::TcpStream::connect(target.as_str()).and_then(|mut s| {
        s.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    });
    match got {
        Ok(out) => println!("{}", out.lines().last().unwrap_or("")),
        Err(e) => println!("error {e}"),
    }
}
"#;

/// The Rust client built into `dir` as `fetch_rs`; false (with a line) where no rustc is.
fn rust_client(dir: &Path) -> bool {
    let rustc = which("rustc");
    if !Path::new(&rustc).exists() {
        eprintln!("the Rust client row is skipped: no rustc");
        return false;
    }
    std::fs::write(dir.join("fetch.rs"), FETCH_RS).expect("write");
    let o = std::process::Command::new(rustc).args(["-O", "-o", "fetch_rs", "fetch.rs"]).current_dir(dir).output();
    let ok = o.as_ref().is_ok_and(|o| o.status.success());
    assert!(ok, "rustc: {:?}", o.map(|o| String::from_utf8_lossy(&o.stderr).to_string()));
    ok
}

/// The payload: each client TRIES times, one labelled line each.
fn script(java: bool, rust: bool) -> String {
    let mut s = String::from("unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY no_proxy\n");
    s += &format!("for i in $(seq {TRIES}); do\n");
    s += "echo curl4 $(curl -sS -m 5 http://pkgs.example/ 2>&1)\n";
    s += "echo curl6 $(curl -6 -sS -m 5 http://pkgs.example/ 2>&1)\n";
    s += "echo curlv6only $(curl -sS -m 5 http://v6only.example:8080/ 2>&1)\n";
    s += "echo urllib $(python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://pkgs.example/\").read().decode())' 2>&1)\n";
    s += "echo raw $(python3 probe.py pkgs.example:80 2>&1)\n";
    s += "echo node $(node -e 'fetch(\"http://pkgs.example/\").then(r=>r.text()).then(t=>console.log(t.trim()))' 2>&1)\n";
    s += "rm -rf clone; echo git $(git clone -q http://git.example/repo.git clone 2>&1 && cat clone/README)\n";
    s += "echo wget $(wget -qO- http://pkgs.example/ 2>&1)\n";
    s += "echo socat $(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | socat - TCP:pkgs.example:80 2>&1 | tail -1)\n";
    if java {
        s += "echo java $(java Fetch.java http://pkgs.example/ 2>&1)\n";
    }
    if rust {
        s += "echo rust $(./fetch_rs pkgs.example:80 2>&1)\n";
    }
    s += "done\n";
    if rust {
        s += "echo rust-no-name $(./fetch_rs other.example:80 2>&1)\n";
        s += "echo rust-literal $(./fetch_rs 203.0.113.2:80 2>&1)\n";
    }
    s += "echo no-name $(curl -sS -m 5 http://other.example/ 2>&1)\n";
    s += "echo no-name-py $(python3 probe.py other.example:80 2>&1)\n";
    s += "echo literal $(python3 probe.py 203.0.113.2:80 2>&1)\n";
    s += "echo literal6 $(python3 probe.py [2001:db8:2::1]:80 2>&1)\n";
    s += "echo port $(python3 probe.py pkgs.example:81 2>&1)\n";
    s
}

/// A bare repository with one commit, served over dumb http (`git update-server-info`).
pub fn repo(dir: &Path) {
    let git = |args: &[&str], at: &Path| {
        let o = std::process::Command::new(which("git")).args(args).current_dir(at).output().expect("git");
        assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    let work = dir.join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    git(&["init", "-q", "-b", "main"], &work);
    std::fs::write(work.join("README"), "hello git\n").expect("write");
    git(&["add", "README"], &work);
    git(&["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "one"], &work);
    git(&["clone", "-q", "--bare", "work", "repo.git"], dir);
    git(&["update-server-info"], &dir.join("repo.git"));
}

/// A static file server over `dir` (dumb http for git).
const FILES_PY: &str = r#"
import functools, http.server, sys
addr, port, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer((addr, port), functools.partial(H, directory=root))
print("ready", port, flush=True)
s.serve_forever()
"#;

/// N5: curl (IPv4, IPv6, a host with IPv6 only), python3 urllib, a raw TCP client, Node's
/// fetch, git clone over http, wget, socat, a Rust client (std's `TcpStream`, built here when
/// rustc is at hand) and the JVM's HttpClient (when a JDK is installed), no proxy
/// variables: every try to an allowed host succeeds; a name not allowed is NXDOMAIN; an IP
/// literal and an allowed host's other port fail at once (reset or refused, ≤ 50 ms from the
/// connect). Control: the same probe without snug, in the same namespace, reaches the hosts
/// that snug refused, so the refusals are snug's.
#[test]
fn n5_matrix_every_client_reaches_allowed_hosts_only() {
    let Some(lab) = OwnLab::new(1, HOSTS) else { return };
    let _s4 = lab.serve_remote(HTTP_PY, &["203.0.113.1", "80", "pkgs"]);
    let _s6 = lab.serve_remote(HTTP_PY, &["2001:db8:2::1", "80", "pkgs6"]);
    let _so = lab.serve_remote(HTTP_PY, &["203.0.113.2", "80", "other"]);
    let _v6 = lab.serve_remote(HTTP_PY, &["2001:db8:2::3", "8080", "v6only"]);
    let files = tempfile::Builder::new().prefix("snug-own-git-").tempdir_in("/tmp").expect("tempdir");
    repo(files.path());
    let _git = lab.serve_remote(FILES_PY, &["203.0.113.3", "80", &files.path().to_string_lossy()]);
    let java = std::path::Path::new("/usr/bin/java").exists() && std::path::Path::new("/usr/bin/javac").exists();
    if !java {
        eprintln!("the JVM row is skipped: no JDK (java and javac) installed");
    }

    let probe = [
        crate::net_allow::lab::python(),
        "-c".into(),
        PROBE_PY.into(),
        "other.example:80".into(),
        "203.0.113.2:80".into(),
    ];
    let o = run_bounded(&mut lab.on_host(&probe), std::time::Duration::from_secs(20));
    assert_eq!(o.out.matches(" ok hello other").count(), 2, "control without snug: {}{}", o.out, o.err);

    for who in everyone() {
        let dir = workdir(who);
        let rust = rust_client(dir.path());
        for (name, text) in [("probe.py", PROBE_PY), ("Fetch.java", FETCH_JAVA), ("run.sh", &script(java, rust))] {
            file(dir.path(), name, text);
        }
        give(who, dir.path());
        let args =
            ["--net-allow", "pkgs.example", "--net-allow", "git.example:80", "--net-allow", "v6only.example:8080"];
        let mut all: Vec<&str> = args.to_vec();
        if java {
            all.extend(JAVA_CONF.iter().filter(|p| Path::new(p).exists()).flat_map(|p| ["--ro", p]));
        }
        all.extend(["--", "sh", "run.sh"]);
        let o = run_bounded(&mut lab.snug(who, dir.path(), &all), std::time::Duration::from_secs(120));
        let out = &o.out;
        let count = |label: &str, want: &str| {
            out.lines().filter(|l| l.starts_with(&format!("{label} ")) && l.contains(want)).count()
        };
        for (label, want) in [
            ("curl4", "hello pkgs"),
            ("curl6", "hello pkgs6"),
            ("curlv6only", "hello v6only"),
            ("urllib", "hello pkgs"),
            ("raw", "ok hello pkgs"),
            ("node", "hello pkgs"),
            ("git", "hello git"),
            ("wget", "hello pkgs"),
            ("socat", "hello pkgs"),
        ] {
            assert_eq!(count(label, want), TRIES, "{who:?} {label}: {out}\n{}", o.err);
        }
        if java {
            assert_eq!(count("java", "200 hello pkgs"), TRIES, "{who:?} java: {out}\n{}", o.err);
        }
        if rust {
            assert_eq!(count("rust", "hello pkgs"), TRIES, "{who:?} rust: {out}\n{}", o.err);
            assert_eq!(count("rust-no-name", "error failed to lookup address"), 1, "{who:?}: {out}");
            assert_eq!(count("rust-literal", "error Connection reset"), 1, "{who:?}: {out}");
        }
        assert!(count("no-name", "Could not resolve host") == 1, "{who:?}: {out}");
        assert!(count("no-name-py", "fail NXDOMAIN") == 1, "{who:?}: {out}");
        for label in ["literal", "literal6", "port"] {
            let line = out.lines().find(|l| l.starts_with(&format!("{label} "))).unwrap_or_default();
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words.get(2), Some(&"fail"), "{who:?} {label}: {line}");
            assert!(matches!(words.get(3), Some(&"104") | Some(&"111")), "{who:?} {label}: reset or refused: {line}");
            let ms: f64 = words.get(4).and_then(|m| m.parse().ok()).unwrap_or(f64::MAX);
            assert!(ms <= 50.0, "{who:?} {label}: failed after {ms} ms: {line}");
        }
        assert!(
            o.err.contains("snug: refused ") && o.err.contains("other.example (name not allowed)"),
            "{who:?}: {}",
            o.err
        );
    }
}
