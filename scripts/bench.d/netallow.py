"""B9: a network of snug's own (`--net-allow`). Start-up beside `snug -- true` and `-p @net`;
then, as root, in a lab of two network namespaces made here (the host snug runs in, and a
remote one with the server on 203.0.113.1, a documentation address; nothing leaves the
machine): the time from connect(2) to the server's first byte, and a 100 MB download, each
from inside snug and from the host itself, side by side; snug's CPU per MB copied."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import peers
from common import Failed, alternate, med, pct, spread

SERVER = r"""
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        n = int(self.path[5:]) if self.path.startswith("/big/") else 6
        self.send_response(200); self.send_header("Content-Length", str(n)); self.end_headers()
        chunk = b"x" * 262144
        while n > 0:
            self.wfile.write(chunk[:min(n, len(chunk))]); n -= len(chunk)
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("203.0.113.1", 80), H); print("ready", flush=True); s.serve_forever()
"""

# Median µs from connect(2) to the first byte of the answer, over N connections.
LATENCY = r"""
import socket, sys, time
addr = socket.getaddrinfo("pkgs.example", 80, socket.AF_INET, socket.SOCK_STREAM)[0][4]
got = []
for i in range(int(sys.argv[1])):
    s = socket.socket(); t = time.monotonic_ns(); s.connect(addr); s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    s.recv(1); got.append((time.monotonic_ns() - t) / 1000); s.close()
got.sort(); print("latency", got[len(got) // 2], got[len(got) // 10], got[len(got) * 9 // 10], flush=True)
"""

MB100 = 100_000_000

# Each client fetches http://pkgs.example/ its own way and prints "ok" (N5's clients that are
# installed here); none is given proxy settings beyond what the launcher puts in its environment.
CLIENTS = [
    ("curl", ["curl", "-sS", "-m", "5", "-o", "/dev/null", "http://pkgs.example/"]),
    ("Python urllib", ["python3", "-c", "import urllib.request as u; u.urlopen('http://pkgs.example/', timeout=5)"]),
    ("Python raw socket", ["python3", "-c", "import socket; s = socket.create_connection(('pkgs.example', 80), 5); "
                           "s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); assert s.recv(1)"]),
    ("Node fetch", ["node", "-e", "fetch('http://pkgs.example/').then(r => r.text()).then(() => 0, "
                    "e => { console.error(e.cause || e); process.exit(1) })"]),
    ("bash /dev/tcp", ["bash", "-c", "exec 3<>/dev/tcp/pkgs.example/80 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 "
                       "&& head -c1 <&3 >/dev/null"]),
]

# Median, p10 and p90 of curl's time to the first byte (connect included), ms, over N requests.
CURL_LATENCY = ("for i in $(seq {n}); do curl -sS -o /dev/null -w '%{{time_starttransfer}}\\n' http://pkgs.example/; done "
                "| sort -n | awk '{{a[NR]=$1}} END {{print a[int(NR/2)+1]*1000, a[int(NR/10)+1]*1000, a[int(NR*9/10)]*1000}}'")


def _ip(*args):
    subprocess.run(["ip"] + list(args), check=True, capture_output=True)


class Lab:
    def __init__(self, work):
        tag = os.getpid() % 10000
        self.host, self.remote = f"snug-b9-{tag}h", f"snug-b9-{tag}r"
        vh, vr = f"snb9h{tag}", f"snb9r{tag}"
        _ip("netns", "add", self.host)
        _ip("netns", "add", self.remote)
        _ip("link", "add", vh, "netns", self.host, "type", "veth", "peer", "name", vr, "netns", self.remote)
        for ns, addr, dev in ((self.host, "198.51.100.2/24", vh), (self.remote, "198.51.100.1/24", vr)):
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "addr", "add", addr, "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
        _ip("-n", self.remote, "addr", "add", "203.0.113.1/32", "dev", "lo")
        _ip("-n", self.host, "route", "add", "default", "via", "198.51.100.1")
        self.hosts = os.path.join(work, "b9-hosts")
        with open(self.hosts, "w") as f:
            # localhost too: sandbox-runtime's bridges (socat) connect to its proxies by that name.
            f.write("127.0.0.1 localhost\n::1 localhost ip6-localhost\n203.0.113.1 pkgs.example\n")
        os.chmod(self.hosts, 0o644)
        self.server = subprocess.Popen(["ip", "netns", "exec", self.remote, "python3", "-c", SERVER],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if self.server.stdout.readline().strip() != "ready":
            raise Failed("the B9 server did not start")

    def on_host(self, argv):
        return ["ip", "netns", "exec", self.host, "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"',
                self.hosts] + argv

    def close(self):
        self.server.kill()
        self.server.wait()
        for ns in (self.host, self.remote):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _out(argv, cwd):
    r = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise Failed(f"{' '.join(argv[:6])}…: status {r.returncode}: {r.stderr.strip()[-300:]}")
    return r.stdout


def _download(env, lab, under_snug):
    """(MB/s, snug's CPU ms or None) of one 100 MB download of pkgs.example."""
    curl = ["curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}\n", f"http://pkgs.example/big/{MB100}"]
    if not under_snug:
        return float(_out(lab.on_host(curl), env.work).split()[-1]) / 1e6, None
    script = f"curl -sS -o /dev/null -w '%{{speed_download}}\\n' http://pkgs.example/big/{MB100}; echo done; read x"
    argv = lab.on_host([env.snug, "--net-allow", "pkgs.example", "--", "sh", "-c", script])
    p = subprocess.Popen(argv, cwd=env.work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    line = p.stdout.readline()[:80]
    try:
        speed = float(line)
    except ValueError:
        p.kill()
        raise Failed(f"the download under snug said {line!r}")
    p.stdout.readline()  # done: snug's CPU is read while the payload waits
    # Run time in ns (schedstat), not utime+stime, whose 10 ms ticks are most of a 100 MB copy.
    with open(f"/proc/{p.pid}/schedstat") as f:
        cpu_ms = int(f.read().split()[0]) / 1e6
    p.stdin.write("\n")
    p.stdin.close()
    p.wait()
    return speed / 1e6, cpu_ms


def b9(env, n):
    rows = []
    k = max(n.b1 // 2, 5)
    runs = [lambda: env.timed([env.snug, "--", "true"]),
            lambda: env.timed([env.snug, "--net-allow", "pkgs.example", "--", "true"])]
    has_pasta = shutil.which("pasta") is not None
    if has_pasta:
        runs.append(lambda: env.timed([env.snug, "-p", "@net", "--", "true"]))
    got = alternate(runs, k)
    plain, own = got[0], got[1]
    more = med(own) - med(plain)
    rows.append({"row": "B9", "figure": f"startup `snug --net-allow pkgs.example -- true`, median (p10–p90), {k} runs each",
                 "snug": spread(own), "ref": f"`snug -- true`: {spread(plain)}"
                 + (f"; `snug -p @net -- true`: {spread(got[2])}" if has_pasta else ""),
                 "ratio": f"+{more:.2f} ms", "target": "≤ +1 ms", "ok": more <= 1.0})
    if os.geteuid() != 0:
        rows.append({"row": "B9", "figure": "connect latency and 100 MB transfer", "snug": "not measured: the lab needs root",
                     "target": "—", "ok": None})
        return rows, []
    lab = Lab(env.work)
    try:
        path = os.path.join(env.work, "latency.py")
        with open(path, "w") as f:
            f.write(LATENCY)
        count = "300"
        host = _out(lab.on_host([env.py, path, count]), env.work).split()
        inside = _out(lab.on_host([env.snug, "--net-allow", "pkgs.example", "--", "python3", path, count]), env.work).split()
        h, s = float(host[1]), float(inside[1])
        rows.append({"row": "B9", "figure": f"connect(2) → first byte of the answer, {count} connections, median µs (p10–p90)",
                     "snug": f"{s:.0f} µs ({float(inside[2]):.0f}–{float(inside[3]):.0f})",
                     "ref": f"from the host: {h:.0f} µs ({float(host[2]):.0f}–{float(host[3]):.0f})",
                     "ratio": f"+{(s - h) / 1000:.2f} ms", "target": "≤ +1 ms", "ok": s - h <= 1000})
        speeds, refs, cpus = [], [], []
        for _ in range(5):
            refs.append(_download(env, lab, False)[0])
            sp, cpu = _download(env, lab, True)
            speeds.append(sp)
            cpus.append(cpu)
        ratio = med(speeds) / med(refs)
        rows.append({"row": "B9", "figure": "100 MB download (curl), MB/s, median of 5 alternating with the host",
                     "snug": f"{med(speeds):.0f} MB/s; snug's CPU {med(cpus) / 100:.2f} ms per MB",
                     "ref": f"from the host: {med(refs):.0f} MB/s", "ratio": f"{ratio:.2f}×", "target": "≥ 0.80×",
                     "ok": ratio >= 0.8})
        try:
            side = srt_side_by_side(env, lab, k)
        except (Failed, OSError, subprocess.SubprocessError) as e:
            side = ("B9: side by side with sandbox-runtime", f"not measured: {e}")
    finally:
        lab.close()
    return rows, [("B9: method", __doc__.replace("\n", " ")), side]


def srt_side_by_side(env, lab, k):
    """B9's figures for snug's `--net-allow` and anthropic's sandbox-runtime (its allowlist
    through its proxies) on the same clients in the same lab: start-up, curl's time to the
    first byte, a 100 MB download, and which clients each serves. A section of BENCH.md."""
    title = "B9: side by side with sandbox-runtime (its allowlist through its proxies)"
    peers.install(lambda msg: print(msg, file=sys.stderr, flush=True))
    srt = peers.srt_bin()
    if not srt:
        return title, "sandbox-runtime could not be installed here (`npm install " + peers.SRT_PACKAGE + "`): not measured."
    st = peers.srt_settings(env.work, ["pkgs.example"])
    tools = [("host", []), ("snug --net-allow", [env.snug, "--net-allow", "pkgs.example", "--"]),
             ("sandbox-runtime", [srt, "--settings", st, "--"])]
    starts = alternate([lambda pre=pre: env.timed(lab.on_host(pre + ["true"])) for _, pre in tools[1:]], max(k // 3, 5))
    lat, speed = {}, {}
    for name, pre in tools:
        lat[name] = _out(lab.on_host(pre + ["sh", "-c", CURL_LATENCY.format(n=100)]), env.work).split()
        script = f"curl -sS -o /dev/null -w '%{{speed_download}}\\n' http://pkgs.example/big/{MB100}"
        speed[name] = med([float(_out(lab.on_host(pre + ["sh", "-c", script]), env.work).split()[-1]) / 1e6
                           for _ in range(3)])
    served = {name: [] for name, _ in tools}
    for client, argv in CLIENTS:
        if not shutil.which(argv[0]):
            continue
        for name, pre in tools:
            r = subprocess.run(lab.on_host(pre + argv), cwd=env.work, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=60)
            served[name].append((client, r.returncode == 0))
    lines = [f"sandbox-runtime {peers.srt_version()} from npm, `srt --settings FILE --` with `allowedDomains: "
             "[\"pkgs.example\"]`, beside `snug --net-allow pkgs.example --`, both in the B9 lab's host namespace "
             "(the server on 203.0.113.1, a documentation address; nothing leaves the machine). Start-up alternates "
             "the two (the host's own is no launcher); time to first byte is curl's `time_starttransfer` "
             "(name lookup, connect and, for sandbox-runtime, its proxy included) over 100 requests in one run of each; the "
             "download is curl's 100 MB, median of 3. A client is served when it fetched the page with no "
             "settings of its own (the launcher's environment as it is).", "",
             "| | start-up `true`, median (p10–p90) | curl: time to first byte, median (p10–p90) | "
             "100 MB download | clients served |", "|---|---|---|---|---|"]
    for i, (name, _) in enumerate(tools):
        start = spread(starts[i - 1]) if i else "—"
        m, lo, hi = (float(x) for x in lat[name][:3])
        ok = [c for c, good in served[name] if good]
        no = [c for c, good in served[name] if not good]
        lines.append(f"| {name} | {start} | {m:.2f} ms ({lo:.2f}–{hi:.2f}) | {speed[name]:.0f} MB/s | "
                     f"{', '.join(ok) or 'none'}" + (f"; not: {', '.join(no)}" if no else "") + " |")
    return title, "\n".join(lines)
