//! The network lab: a network namespace the test creates, which plays the *host* snug runs
//! on, joined by a veth pair to the root namespace, which plays the *remote* side. Every
//! address in play is one the test created, in documentation ranges (198.51.100.16K/28,
//! 2001:db8:3:K::/64); nothing is sent
//! anywhere else. Needs root (CI is root); callers skip with a message otherwise.
//!
//! Why the host is the lab and not the machine itself: pasta copies the host's address into
//! the sandbox, so the host's own address is not reachable by that address from inside; and
//! the lab's loopback, resolv.conf and gateway are the test's own.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;

/// A TCP server: answers every connection with `hello <tag>` and closes it; with a fourth
/// argument, that many seconds after accepting it (each connection in a thread of its own).
pub const SERVER_PY: &str = r#"
import socket, sys, threading, time
addr, port, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
delay = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port)); s.listen(64)
print("ready", s.getsockname()[1], flush=True)
def greet(c):
    time.sleep(delay); c.sendall(("hello " + tag + "\n").encode()); c.close()
while True:
    c, _ = s.accept()
    if delay:
        threading.Thread(target=greet, args=(c,), daemon=True).start()
    else:
        greet(c)
"#;

/// A UDP DNS responder: `NAME` A → `ADDR`; any other name NXDOMAIN, other types no data.
pub const DNS_PY: &str = r#"
import socket, struct, sys
addr, port, name, answer = sys.argv[1], int(sys.argv[2]), sys.argv[3].lower(), sys.argv[4]
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, port))
print("ready", port, flush=True)
while True:
    q, peer = s.recvfrom(4096)
    if len(q) < 12: continue
    qid, flags = struct.unpack(">HH", q[:4]); i, labels = 12, []
    while i < len(q) and q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace")); i += 1 + q[i]
    qtype = struct.unpack(">H", q[i + 1:i + 3])[0]; question = q[12:i + 5]; rd = flags & 0x0100
    if ".".join(labels).lower() != name:
        s.sendto(struct.pack(">HHHHHH", qid, 0x8183 | rd, 1, 0, 0, 0) + question, peer); continue
    ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(answer) if qtype == 1 else b""
    s.sendto(struct.pack(">HHHHHH", qid, 0x8180 | rd, 1, 1 if ans else 0, 0, 0) + question + ans, peer)
"#;

/// Connect once to each `HOST:PORT` argument (no retry), print `HOST:PORT ok <greeting>` or
/// `HOST:PORT fail <reason>`.
pub const PROBE_PY: &str = r#"
import socket, sys
for arg in sys.argv[1:]:
    host, port = arg.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, int(port))); print(arg, "ok", s.recv(64).decode().strip(), flush=True)
    except OSError as e:
        print(arg, "fail", e.strerror or type(e).__name__, flush=True)
"#;

/// python3 the unprivileged user can run too (not a per-user shim).
pub fn python() -> String {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3".into()
    } else {
        "python3".into()
    }
}

/// An absolute path for `prog` found on the test's PATH (commands below may run with
/// another PATH).
pub fn which(prog: &str) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin"), PathBuf::from("/bin")])
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| prog.to_string())
}

/// Unprivileged pasta opens /dev/net/tun: distributions ship it 0666, these machines 0600.
/// As root, make it 0666 as CI's `scripts/install-deps` does; false when it stays closed.
pub fn tun_ready() -> bool {
    use std::os::unix::fs::PermissionsExt;
    let mode = || std::fs::metadata("/dev/net/tun").map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
    if mode() != 0o666 && is_root() {
        let _ = std::fs::set_permissions("/dev/net/tun", std::fs::Permissions::from_mode(0o666));
    }
    mode() == 0o666
}

/// pasta installed and usable by everyone the rows run as; else why not (skip message).
pub fn skip_reason() -> Option<String> {
    if which("pasta") == "pasta" {
        return Some("pasta is not installed (Debian package passt)".into());
    }
    if !tun_ready() {
        return Some("/dev/net/tun is not 0666, so unprivileged pasta cannot run".into());
    }
    None
}

/// A process the test started (a server); SIGKILLed and reaped on drop.
pub struct Proc {
    child: Child,
    /// What it printed after `ready`: the port.
    pub port: u16,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `cmd`, wait for its `ready PORT` line.
pub fn serve(cmd: &mut Command) -> Proc {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).spawn().expect("start server");
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
    let port = line.strip_prefix("ready ").and_then(|p| p.trim().parse().ok());
    let Some(port) = port else {
        let _ = child.kill();
        panic!("server did not start: {line:?} from {cmd:?}");
    };
    Proc { child, port }
}

/// The lab: namespace `ns` (snug's host) with `198.51.100.(16K+2)` and `2001:db8:3:K::2`,
/// default routes via the root namespace's `198.51.100.(16K+1)` / `2001:db8:3:K::1` (the
/// remote side).
pub struct Lab {
    pub ns: String,
    veth: String,
    pub remote4: String,
    pub remote6: String,
}

fn ip(args: &[&str]) {
    let out = Command::new(which("ip")).args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

impl Lab {
    /// Lab number `k`, 1 to 15 (one per test, so tests in parallel use different /28s);
    /// `None` when not root.
    pub fn new(k: u8) -> Option<Lab> {
        assert!((1..16).contains(&k), "lab {k}: 1 to 15");
        if !is_root() {
            eprintln!("skipped: the network lab needs root (ip netns, veth)");
            return None;
        }
        let tag = std::process::id() % 10000;
        let lab = Lab {
            ns: format!("snug-lab-{tag}-{k}"),
            veth: format!("snl{k}h{tag}"),
            remote4: format!("198.51.100.{}", 16 * u32::from(k) + 1),
            remote6: format!("2001:db8:3:{k}::1"),
        };
        let peer = format!("snl{k}n{tag}");
        let (ns, veth) = (lab.ns.as_str(), lab.veth.as_str());
        ip(&["netns", "add", ns]);
        ip(&["link", "add", veth, "type", "veth", "peer", "name", &peer]);
        ip(&["link", "set", &peer, "netns", ns]);
        ip(&["addr", "add", &format!("{}/28", lab.remote4), "dev", veth]);
        ip(&["addr", "add", &format!("{}/64", lab.remote6), "dev", veth, "nodad"]);
        ip(&["link", "set", veth, "up"]);
        let inside = |args: &[&str]| {
            let mut all = vec!["-n", ns];
            all.extend(args);
            ip(&all);
        };
        inside(&["link", "set", "lo", "up"]);
        inside(&["addr", "add", &format!("198.51.100.{}/28", 16 * u32::from(k) + 2), "dev", &peer]);
        inside(&["addr", "add", &format!("2001:db8:3:{k}::2/64"), "dev", &peer, "nodad"]);
        inside(&["link", "set", &peer, "up"]);
        inside(&["route", "add", "default", "via", &lab.remote4]);
        inside(&["-6", "route", "add", "default", "via", &lab.remote6]);
        Some(lab)
    }

    /// `ip netns exec NS` [with /etc/resolv.conf replaced by `resolv`, in that command's own
    /// mount namespace] `words…`.
    pub fn cmd(&self, resolv: Option<&Path>, words: &[String]) -> Command {
        let mut c = Command::new(which("ip"));
        c.args(["netns", "exec", &self.ns]);
        if let Some(r) = resolv {
            c.args(["sh", "-c", "mount --bind \"$0\" /etc/resolv.conf && exec \"$@\""]).arg(r);
        }
        c.args(words).stdin(Stdio::null());
        c
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Deleting the namespace destroys the peer, and so the pair.
        let _ = Command::new(which("ip")).args(["netns", "del", &self.ns]).output();
        let _ = Command::new(which("ip")).args(["link", "del", &self.veth]).stderr(Stdio::null()).output();
    }
}

/// The words that run snug as `who` with `args` (absolute paths: a lab command's PATH may
/// differ), environment as `snug_cmd` sets it.
pub fn snug_words(who: Who, args: &[&str]) -> Vec<String> {
    let mut w: Vec<String> = match who {
        Who::Root => vec![],
        Who::User => {
            let mut p = as_who(who);
            p[0] = which("setpriv");
            p.extend([
                which("env"),
                format!("HOME=/home/{TEST_USER}"),
                format!("USER={TEST_USER}"),
                format!("LOGNAME={TEST_USER}"),
            ]);
            p
        }
    };
    w.push(snug_for(who).to_string_lossy().into_owned());
    w.extend(args.iter().map(|a| a.to_string()));
    w
}

/// Run `cmd` to its end within `limit`: (shell-style code, stdout, stderr).
pub fn run(cmd: &mut Command, limit: Duration) -> (i32, String, String) {
    let o = run_bounded(cmd, limit);
    (code(o.status), o.out, o.err)
}

/// A file in `dir` with `text`, readable by everyone.
pub fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write file");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    p
}
