"""Plumbing shared by the bench rows: sample counts, percentiles, spawning snug and reading
what the payload writes to snug's stdout (passed through untouched, SPEC R2)."""

import json
import ctypes
import os
import select
import signal
import subprocess
import time


class Counts:
    """Samples per row. `full` meets the SPEC minimums (B1 ≥ 30 each, B2 ≥ 100, B3/B4 ≥ 30)."""

    def __init__(self, b1, parts, b2, b2_ref, b3, b4, b5_sleep, b6=(30, 20, 5, 10), b7=(32, 10), b8=(1000, 5)):
        self.b1, self.parts, self.b2, self.b2_ref = b1, parts, b2, b2_ref
        self.b3, self.b4, self.b5_sleep = b3, b4, b5_sleep
        # B6 trials per tool: startup, relay, TERM → gone, SIGKILL leftovers
        self.b6_start, self.b6_relay, self.b6_stop, self.b6_leak = b6
        # B7: sandboxes at once, lone runs between the batches (three times)
        self.b7_many, self.b7_lone = b7
        # B8: keystroke round trips per launcher, copies of the big file per launcher
        self.b8 = b8
        self.b1_runs = 5  # B1's alternating rounds, run again and again: each run is a row
        self.tree = 5  # G3 (tree): pairs of a 4000-process teardown, snug and a bare namespace
        self.profile = True  # the perf stage timeline for B1, when perf and root are there

    @staticmethod
    def full():
        return Counts(b1=60, parts=20, b2=120, b2_ref=40, b3=30, b4=30, b5_sleep=5)

    @staticmethod
    def quick():
        q = Counts(b1=8, parts=3, b2=10, b2_ref=5, b3=3, b4=3, b5_sleep=2, b6=(4, 3, 2, 2), b7=(8, 3), b8=(50, 1))
        q.tree = 2
        q.b1_runs = 2
        return q


def alternate(runs, n, warm=3):
    """Round-robin the callables in `runs` n times (after `warm` unrecorded rounds): each
    sees the same machine load. Returns one list of ms per callable."""
    for _ in range(warm):
        for f in runs:
            f()
    got = [[] for _ in runs]
    for _ in range(n):
        for i, f in enumerate(runs):
            got[i].append(f())
    return got


def pct(xs, q):
    """The q-th percentile (0-100) of xs, linear between closest ranks."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def med(xs):
    return pct(xs, 50)


def fmt_ms(x):
    return f"{x:.2f} ms" if x < 10 else f"{x:.1f} ms"


def spread(xs):
    return f"{fmt_ms(med(xs))} ({pct(xs, 10):.2f}–{pct(xs, 90):.2f})"


def now_ns():
    """CLOCK_MONOTONIC, the clock the payload reads inside the sandbox too."""
    return time.monotonic_ns()


# Python ignores these; a child must not inherit that (pasta refuses to start with SIGPIPE
# ignored: "Couldn't install signal handlers").
PY_IGNORED = [signal.SIGPIPE, signal.SIGXFSZ]


def spawn(argv, acts):
    """posix_spawnp (vfork: little and equal cost for every command) with the signal
    dispositions a shell would give it."""
    return os.posix_spawnp(argv[0], argv, os.environ, file_actions=acts, setsigdef=PY_IGNORED)


class Failed(Exception):
    """A run did not end as the row expects; the message says how."""


class Env:
    """The binary under test, the directory it runs in, and ways to start it."""

    def __init__(self, snug, work):
        self.snug = snug
        self.work = work
        self.null = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
        self.py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"

    def dry(self, args):
        """`snug --dry-run --json ARGS`, as the same detached caller the timed runs are."""
        out = subprocess.run(
            [self.snug, "--dry-run", "--json"] + args,
            cwd=self.work, stdin=subprocess.DEVNULL, capture_output=True, check=True,
        ).stdout
        return json.loads(out)

    def timed(self, argv):
        """Wall time in ms of argv from spawn to reaped, with stdin, stdout, stderr /dev/null.

        posix_spawn (vfork) keeps the harness's own cost small and equal for every command.
        Raises Failed on a non-zero status, with the command's stderr from one more run.
        """
        acts = [(os.POSIX_SPAWN_DUP2, self.null, 0), (os.POSIX_SPAWN_DUP2, self.null, 1),
                (os.POSIX_SPAWN_DUP2, self.null, 2)]
        t0 = now_ns()
        pid = spawn(argv, acts)
        _, status = os.waitpid(pid, 0)
        took = (now_ns() - t0) / 1e6
        if status != 0:
            r = subprocess.run(argv, cwd=self.work, stdin=subprocess.DEVNULL, capture_output=True, text=True)
            raise Failed(f"{' '.join(argv[:3])}…: status {status}: {r.stderr.strip()[-300:]}")
        return took

    def timed_usage(self, argv, acts=None, setsid=False):
        """(wall ms, CPU ms, context switches) of argv from spawn to reaped, stdio /dev/null
        unless `acts` says otherwise. CPU and switches are the whole tree's: wait4(2)'s rusage
        folds in every descendant its parent reaped (bwrap reaps init, init the payload), as
        `perf stat`'s inherited task-clock would, at no cost to the run."""
        if acts is None:
            acts = [(os.POSIX_SPAWN_DUP2, self.null, 0), (os.POSIX_SPAWN_DUP2, self.null, 1),
                    (os.POSIX_SPAWN_DUP2, self.null, 2)]
        t0 = now_ns()
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=acts, setsigdef=PY_IGNORED, setsid=setsid)
        _, status, ru = os.wait4(pid, 0)
        took = (now_ns() - t0) / 1e6
        if status != 0:
            raise Failed(f"{' '.join(argv[:3])}…: status {status}")
        return took, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_nvcsw + ru.ru_nivcsw

    def start(self, argv):
        """argv in its own session with stdout a pipe we read, stdin /dev/null (detached)."""
        return subprocess.Popen(
            argv, cwd=self.work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )


def _read(p, timeout):
    """(bytes, how) from p's stdout, read unbuffered so nothing waits in Python's buffers: one
    line (how "line"), or what came before a timeout ("timeout") or end of file ("eof")."""
    fd = p.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + timeout
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return buf, "timeout"
        chunk = os.read(fd, 1)
        if not chunk:
            return buf, "eof"
        buf += chunk
    return buf, "line"


def read_opt(p, timeout):
    """One line from p's stdout, or None on end of file or timeout."""
    buf, how = _read(p, timeout)
    return buf.decode().strip() if how == "line" else None


def read_line(p, timeout=10.0):
    """One line from p's stdout; fails the row on timeout (p is killed) or end of file."""
    buf, how = _read(p, timeout)
    if how == "timeout":
        p.kill()
        raise Failed(f"no line from the payload within {timeout} s (got {buf!r})")
    if how == "eof":
        p.wait()
        raise Failed(f"payload's stdout closed early (status {p.returncode}): {p.stderr.read().decode()[-300:]}")
    return buf.decode().strip()


def exited_at(p, timeout=10.0):
    """CLOCK_MONOTONIC ns at which p ended, seen through a pidfd (poll(2) wakes on exit).

    Not Popen.wait(timeout): that polls with sleeps of up to 50 ms and would add them here.
    """
    fd = os.pidfd_open(p.pid)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            p.kill()
            raise Failed(f"snug still running {timeout} s after the signal")
        return now_ns()
    finally:
        os.close(fd)


def finish(p, want, what):
    """Reap p and check it ended as `want` (Popen returncode: -N for death by signal N)."""
    rc = p.wait(timeout=10)
    if rc != want:
        raise Failed(f"{what}: snug ended with {rc}, expected {want}: {p.stderr.read().decode()[-300:]}")


def subreaper(on):
    """prctl(PR_SET_CHILD_SUBREAPER): orphans of the runs (a daemonized pasta, a leaked
    payload) become our children, so the bench can reap and count them."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1 if on else 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
