"""Finding and ending the processes a bench run started: by a unique marker in their command
line (every payload of B6/B7 carries one), through pidfds so a reused pid is never signalled,
and by reaping whatever was re-parented to the bench while it is a child subreaper."""

import itertools
import os
import select
import signal
import time

_seq = itertools.count(1)


def marker(whole):
    """A unique `sleep` duration: `whole` seconds plus a fraction no other run uses
    (e.g. `300.0412345`), so `sleep MARKER` both sleeps and names its process."""
    return f"{whole}.{os.getpid() % 10000:04d}{next(_seq):05d}"


def _alive(pid):
    """False for a zombie or a gone process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def find(mark, comm=None):
    """Pids of live processes whose command line contains `mark` (and whose comm is `comm`)."""
    want = mark.encode()
    me = os.getpid()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if want not in f.read():
                    continue
            if comm is not None:
                with open(f"/proc/{name}/comm") as f:
                    if f.read().strip() != comm:
                        continue
        except (FileNotFoundError, ProcessLookupError):
            continue
        if _alive(int(name)):
            out.append(int(name))
    return out


def wait_found(mark, count=1, comm=None, within=5.0):
    """Pids carrying `mark` once at least `count` of them run, or what is there at the deadline."""
    deadline = time.monotonic() + within
    while True:
        got = find(mark, comm)
        if len(got) >= count or time.monotonic() > deadline:
            return got
        time.sleep(0.002)


def pidfds(pids):
    """{pid: pidfd} for those still there."""
    out = {}
    for pid in pids:
        try:
            out[pid] = os.pidfd_open(pid)
        except (ProcessLookupError, OSError):
            pass
    return out


def kill_marked(mark):
    """SIGKILL every live process carrying `mark` (through a pidfd, opened after the command
    line was checked); returns how many there were."""
    fds = pidfds(find(mark))
    n = 0
    for pid, fd in fds.items():
        try:
            if _alive(pid):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
                n += 1
        except ProcessLookupError:
            pass
        finally:
            os.close(fd)
    return n


def gone_times(fds, within):
    """{pid: CLOCK_MONOTONIC ns it ended} for pidfds {pid: fd}, waiting at most `within` s; pids
    still running then are missing from the answer. The fds are closed."""
    left = dict(fds)
    out = {}
    deadline = time.monotonic() + within
    while left:
        rest = deadline - time.monotonic()
        if rest <= 0:
            break
        ready = select.select(list(left.values()), [], [], rest)[0]
        t = time.monotonic_ns()
        for pid, fd in list(left.items()):
            if fd in ready:
                out[pid] = t
                del left[pid]
    for fd in fds.values():
        os.close(fd)
    return out


def children():
    """Pids of our own children (started or adopted)."""
    out = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except FileNotFoundError:
            pass
    return out


def end_children(keep=()):
    """SIGKILL and reap every child of ours except `keep`: what a run left behind and was
    re-parented to us (we are its subreaper), or a launcher that did not end."""
    for pid in children():
        if pid in keep:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
