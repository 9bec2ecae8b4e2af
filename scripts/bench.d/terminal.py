"""B8: what the sandbox's own terminal costs. The caller's terminal is a pty pair opened here:
its slave is the controlling terminal of a fresh session that runs either PROG directly or
`snug -- PROG` (or `sudo -- PROG`, sudo's use_pty, for reference), its master is the person at
the keyboard and the screen, played by this module.

- Round trip: PROG puts its terminal in raw mode and writes back each byte it reads; one byte
  is written to the master and timed until it comes back. Samples alternate between the
  direct and the launched session (both open at once), so load hits both alike.
- Copying: `cat` of a 64 MiB text file to the terminal while the master is drained; the
  launcher's own CPU (utime+stime and schedstat of its process, read once it has exited but
  before it is reaped, so children are not folded in), and wall time against `cat` alone.
- Idle: the launcher's wake-ups while a `sleep` payload does no terminal I/O (B5's 0).
"""

import fcntl
import os
import select
import shutil
import signal
import subprocess
import termios
import time

from common import Failed, med, pct

ECHO = ("import os,tty\ntty.setraw(0)\nos.write(1,b'R')\n"
        "while True:\n b=os.read(0,1)\n if not b or b==b'q': break\n os.write(1,b)\n")
BIG_MIB = 64
BLOCKS = 10  # keystroke samples come in this many blocks, each with fresh sessions


class Term:
    """A pty pair whose slave is the controlling terminal of argv's new session."""

    def __init__(self, argv, cwd, rows=30, cols=100):
        self.m, s = os.openpty()
        fcntl.ioctl(s, termios.TIOCSWINSZ, bytes([rows, 0, cols, 0, 0, 0, 0, 0]))
        self.p = subprocess.Popen(argv, cwd=cwd, stdin=s, stdout=s, stderr=s, start_new_session=True,
                                  preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(s)  # only the session holds the slave now: the master reads EIO once it is gone

    def expect(self, want, timeout=10.0):
        """Read the master until `want` has come (bytes before it are discarded)."""
        buf, end = b"", time.monotonic() + timeout
        while want not in buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.m], [], [], left)[0]:
                raise Failed(f"terminal: no {want!r} within {timeout} s (got {buf[-80:]!r})")
            buf += os.read(self.m, 4096)

    def drain(self, timeout=60.0):
        """Read the master until the session closes the slave; the bytes read."""
        n, end = 0, time.monotonic() + timeout
        while time.monotonic() < end:
            if not select.select([self.m], [], [], 1.0)[0]:
                continue
            try:
                got = os.read(self.m, 1 << 16)
            except OSError:  # EIO: no slave left
                return n
            if not got:
                return n
            n += len(got)
        raise Failed("terminal: output did not end within the timeout")

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(timeout=10)
        os.close(self.m)


def round_trip(t):
    """µs from writing one byte to the master to reading it back."""
    t0 = time.perf_counter_ns()
    os.write(t.m, b"x")
    while True:
        select.select([t.m], [], [], 5.0)
        got = os.read(t.m, 16)
        if got == b"x":
            return (time.perf_counter_ns() - t0) / 1e3
        if got:
            raise Failed(f"terminal: {got!r} came back for one byte written")


def keystrokes(env, launcher, samples):
    """(direct µs list, launched µs list), alternating samples."""
    a = Term([env.py, "-c", ECHO], env.work)
    b = Term(launcher + [env.py, "-c", ECHO], env.work)
    try:
        a.expect(b"R")
        b.expect(b"R")
        time.sleep(0.2)
        direct, launched = [], []
        for _ in range(samples):
            direct.append(round_trip(a))
            launched.append(round_trip(b))
        for t in (a, b):  # one byte back per byte sent: a second echo would fake fast samples
            if select.select([t.m], [], [], 0.1)[0]:
                raise Failed(f"terminal: bytes left after the round trips: {os.read(t.m, 64)!r}")
            os.write(t.m, b"q")
        return direct, launched
    finally:
        a.close()
        b.close()


def cpu_at_exit(p):
    """(utime+stime ms, schedstat run ms) of p's own process once it has exited, before reaping."""
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14, 15 of proc(5)
    try:
        with open(f"/proc/{p.pid}/schedstat") as f:
            run = int(f.read().split()[0]) / 1e6
    except (OSError, ValueError, IndexError):
        run = None
    return ticks * 1000 / os.sysconf("SC_CLK_TCK"), run


def copy_run(env, argv, big):
    """(wall s, launcher's (tick ms, run ms) or None, bytes seen) of argv cat big on a terminal."""
    t0 = time.monotonic()
    t = Term(argv + ["cat", big], env.work)
    try:
        got = t.drain()
        cpu = cpu_at_exit(t.p) if argv else None
        t.p.wait(timeout=10)
        wall = time.monotonic() - t0
        if t.p.returncode != 0:
            raise Failed(f"{' '.join(argv[:1] or ['cat'])}: cat ended with {t.p.returncode}")
        return wall, cpu, got
    finally:
        t.close()


def make_big(work):
    """BIG_MIB MiB of text lines (newline every 64 bytes, as a build log has)."""
    path = os.path.join(work, "big.txt")
    line = (b"0123456789abcdef" * 4)[:63] + b"\n"
    with open(path, "wb") as f:
        f.write(line * (BIG_MIB * 1024 * 1024 // 64))
    return path


def idle_wakeups(env, launcher, secs=2.0):
    """Voluntary context switches of the launcher's process over `secs` of a sleeping payload,
    from 0.5 s after its ready line (start-up done) to 1 s before it ends."""
    t = Term(launcher + ["sh", "-c", f"echo R; exec sleep {secs + 1.5}"], env.work)
    try:
        t.expect(b"R")
        time.sleep(0.5)

        def switches():
            with open(f"/proc/{t.p.pid}/status") as f:
                return int(next(ln for ln in f if ln.startswith("voluntary_ctxt_switches")).split()[1])
        a = switches()
        time.sleep(secs)
        return switches() - a
    finally:
        t.close()


def private_run():
    """As root, a prefix giving snug a /run/snug of its own (a tmpfs in a mount namespace):
    other snug clients on the machine (`snug ls` in someone's test run) connect to every
    control socket there, and each such accept(2) would count as a wake-up. Exec all the way,
    so the pid measured is snug's."""
    if os.getuid() != 0 or not shutil.which("unshare"):
        return []
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
            'mkdir -p /run/snug && mount -t tmpfs -o mode=0700 tmpfs /run/snug && exec "$@"', "sh"]


def launchers(env):
    """(name, argv prefix): snug, and sudo for reference when we are root and it has use_pty."""
    out = [("snug", [env.snug, "--"])]
    if os.getuid() == 0 and shutil.which("sudo"):
        pol = subprocess.run(["sudo", "-n", "-l", "-U", "root"], capture_output=True, text=True).stdout
        if "use_pty" in pol:
            out.append(("sudo", ["sudo", "--"]))
    return out


def tree_of(pid):
    """pid and its descendants (/proc/PID/task/*/children)."""
    out, todo = [pid], [pid]
    while todo:
        x = todo.pop()
        try:
            for t in os.listdir(f"/proc/{x}/task"):
                with open(f"/proc/{x}/task/{t}/children") as f:
                    kids = [int(k) for k in f.read().split()]
                out += kids
                todo += kids
        except OSError:
            pass
    return out


def comm_of(pid):
    """The process's name, "" once it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def switches_of(pid):
    """Voluntary plus involuntary context switches of pid so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return sum(int(ln.split()[1]) for ln in f if "ctxt_switches" in ln)
    except OSError:
        return 0


def per_key(env, launcher, keys=200):
    """What one keystroke costs the launcher's processes (the payload's own not counted),
    counted rather than timed, so that load does not move it: (system calls per key from
    `strace -c -f`, or None without strace; context switches per key, from /proc without
    strace attached; how many of the launcher's processes were woken at all)."""
    t = Term(launcher + [env.py, "-c", ECHO], env.work)
    try:
        t.expect(b"R")
        mine = [p for p in tree_of(t.p.pid) if not comm_of(p).startswith("python")]
        before = {p: switches_of(p) for p in mine}
        for _ in range(keys):
            round_trip(t)
        woke = {p: switches_of(p) - before[p] for p in mine}
        calls = None
        if shutil.which("strace"):
            out = os.path.join(env.work, "b8-strace.txt")
            argv = ["strace", "-c", "-f", "-o", out] + [a for p in mine for a in ("-p", str(p))]
            tr = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
            attached = 0
            while attached < len(mine):
                line = tr.stderr.readline()
                if not line:
                    break
                attached += "attached" in line
            for _ in range(keys):
                round_trip(t)
            tr.send_signal(signal.SIGINT)
            tr.wait(timeout=10)
            with open(out) as f:
                total = [ln.split() for ln in f if ln.rstrip().endswith("total")]
            calls = int(total[-1][3]) / keys if total else None
        os.write(t.m, b"q")
        return calls, sum(woke.values()) / keys, sum(1 for v in woke.values() if v)
    finally:
        t.close()


def b8(env, n):
    samples, copies = n.b8
    rows, lines = [], []
    names = launchers(env)
    # Blocks of fresh sessions, the launchers' blocks alternating: where the scheduler places
    # a pair of processes on the two cores moves a whole block's median by tens of µs, so the
    # cost is the median of the blocks' differences, and snug and sudo see the same load.
    got = {name: ([], [], []) for name, _ in names}
    for _ in range(BLOCKS):
        for name, pre in names:
            bd, bs = keystrokes(env, pre, samples // BLOCKS)
            d, s, diffs = got[name]
            d += bd
            s += bs
            diffs.append(med(bs) - med(bd))
    over = {}
    for name, _ in names:
        d, s, diffs = got[name]
        over_med, over_p99 = med(diffs), pct(s, 99) - pct(d, 99)
        over[name] = (over_med, over_p99)
        rows.append({
            "row": "B8" if name == "snug" else "B8 (sudo)",
            "figure": f"keystroke round trip through {name}'s terminal, {len(s)} samples in {BLOCKS} blocks",
            "snug": f"median {med(s):.0f} µs, p99 {pct(s, 99):.0f} µs",
            "ref": f"same program on the caller's terminal: median {med(d):.0f} µs, p99 {pct(d, 99):.0f} µs",
            "ratio": f"{over_med:+.0f} µs (blocks {', '.join(f'{x:+.0f}' for x in diffs)}; p99 {over_p99:+.0f} µs)",
            "target": "≤ 100 µs over (median)", "ok": over_med <= 100 if name == "snug" else None,
        })
    if "sudo" in over:
        (s_med, s_p99), (u_med, u_p99) = over["snug"], over["sudo"]
        rows.append({
            "row": "B8", "figure": "keystroke overhead, snug against sudo's use_pty, same run (blocks alternating)",
            "snug": f"snug {s_med:+.0f} µs (p99 {s_p99:+.0f} µs)", "ref": f"sudo {u_med:+.0f} µs (p99 {u_p99:+.0f} µs)",
            "ratio": f"{s_med - u_med:+.0f} µs", "target": "snug ≤ sudo (median)", "ok": s_med <= u_med,
        })
    counted = {name: per_key(env, pre) for name, pre in names}
    for name, (calls, woke, procs) in counted.items():
        rows.append({
            "row": "B8" if name == "snug" else "B8 (sudo)",
            "figure": f"what one keystroke costs {name}'s own processes, 200 keys counted (not timed)",
            "snug": (f"{calls:.1f} system calls" if calls is not None else "system calls not counted (no strace)")
            + f", {woke:.2f} context switches, in {procs} process(es)",
            "ref": ", ".join(f"{k}: {c:.1f} calls, {w:.2f} switches" for k, (c, w, _) in counted.items()
                             if k != name and c is not None) or "—",
            "target": "—", "ok": None,
        })
    big = make_big(env.work)
    size = BIG_MIB * 1024 * 1024
    for name, pre in launchers(env):
        walls, bare, cpus = [], [], []
        for _ in range(copies):
            w, cpu, got = copy_run(env, pre, big)
            walls.append(w)
            cpus.append(cpu)
            bare.append(copy_run(env, [], big)[0])
            if got < size:
                raise Failed(f"{name} -- cat: {got} bytes reached the terminal, not {size}")
        tick_ms = med([c[0] for c in cpus]) / BIG_MIB
        run_ms = med([c[1] for c in cpus]) / BIG_MIB if cpus[0][1] is not None else None
        per = run_ms if run_ms is not None else tick_ms
        ratio = med(walls) / med(bare)
        sudo = name != "snug"
        rows.append({
            "row": "B8 (sudo)" if sudo else "B8",
            "figure": f"{name}'s own CPU copying `cat` of {BIG_MIB} MiB to the terminal, {copies} runs",
            "snug": f"{per:.2f} ms/MiB (run time; {tick_ms:.2f} ms/MiB in ticks)",
            "target": "≤ 20 ms/MiB", "ok": None if sudo else per <= 20,
        })
        rows.append({
            "row": "B8 (sudo)" if sudo else "B8",
            "figure": f"wall time of `{name} -- cat` {BIG_MIB} MiB to the terminal, {copies} runs each",
            "snug": f"median {med(walls) * 1000:.0f} ms", "ref": f"`cat` alone: median {med(bare) * 1000:.0f} ms",
            "ratio": f"{ratio:.2f}×", "target": "≤ 1.1×", "ok": None if sudo else ratio <= 1.1,
        })
    wakes = [idle_wakeups(env, private_run() + [env.snug, "--"]) for _ in range(3)]
    rows.append({"row": "B8", "figure": "snug's wake-ups during 2 s of a `sleep` payload at a terminal, 3 runs",
                 "snug": ", ".join(map(str, wakes)), "target": "0 (B5)", "ok": not any(wakes)})
    lines = [
        "The caller's terminal is a pty pair the bench opens; its slave is the controlling terminal of a",
        "new session running the program directly or under the launcher, its master is read and",
        "written by the bench. Round trip: a python program sets its terminal raw and writes back each",
        "byte; the bench writes one byte to the master and times (perf_counter) until it is read back,",
        "alternating one sample on the direct session and one on the launched one, in 10 blocks of",
        "fresh sessions; the cost is the median of the blocks' differences of medians. Copying: `cat` of",
        f"a {BIG_MIB} MiB file of 64-byte lines while the bench drains the master in 64 KiB reads; the launcher's",
        "CPU is its own process's (schedstat run time, and utime+stime in ticks) read after it has",
        "exited and before it is reaped, so the payload's CPU is not folded in; it includes start-up.",
        "Wall time runs from spawn to the end of output and exit, alternating with `cat` alone on a",
        "fresh pty. sudo (its use_pty policy) is measured the same way for reference, when root, its",
        "blocks alternating with snug's. Counted per key (load does not move these): the system calls",
        "of the launcher's own processes (`strace -c -f` attached to each but the payload, 200 keys)",
        "and their context switches (from /proc, strace not attached, another 200 keys).",
        "Idle: voluntary context switches of snug's process over 2 s of a `sleep` payload at the",
        "terminal, run (as root) with a /run/snug of its own so that other snug clients on the machine",
        "probing every control socket there do not wake it.",
    ]
    return rows, [("B8: method", "\n".join(lines))]
