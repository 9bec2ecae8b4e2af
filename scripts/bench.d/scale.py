"""B7: many sandboxes at once. 32 `snug -- sh -c '…; exec sleep 5.MARK'` start together, each
gets a TERM at a random moment 0.2–3 s after its own start; every one must end within G3's
bound of its TERM and leave no payload behind. Startup under that load (until the payload's
first command runs) is compared with lone runs taken before, between and after the batches.

The payload's start is `date +%s%N`, CLOCK_REALTIME (shared with the host like every clock but
the boot-time ones: bwrap makes no time namespace), against `time.time_ns()` taken here just
before the spawn: one exec of `date`, the same in lone and loaded runs.
"""

import collections
import os
import random
import select
import signal
import time

import common
import procs
from common import Failed, fmt_ms, med, pct

BOUND = 1.1  # s, G3: TERM → snug gone, grace included


def lone(env, k):
    """Startup ms of k runs one at a time."""
    out = []
    for _ in range(k):
        t0 = time.time_ns()
        p = env.start([env.snug, "--", "sh", "-c", "date +%s%N"])
        line = p.stdout.readline()
        p.wait()
        p.stdout.close()
        p.stderr.close()
        if p.returncode != 0 or not line.strip().isdigit():
            raise Failed(f"lone run: status {p.returncode}, said {line!r}")
        out.append((int(line) - t0) / 1e6)
    return out


def batch(env, n, ignore, seed):
    """Run n at once; per run (startup ms or None, TERM → gone s or None, status, leaked), and
    the startup ms of probe runs (`snug -- sh -c 'date +%s%N'`, one at a time) started while
    the batch runs, from its last spawn until its last TERM."""
    rng = random.Random(seed)
    trap = "trap '' TERM; " if ignore else ""
    runs, probes, probe = [], [], None
    try:
        for _ in range(n):
            mark = procs.marker(5)
            t0 = time.time_ns()
            p = env.start([env.snug, "--", "sh", "-c", f"{trap}date +%s%N; exec sleep {mark}"])
            runs.append({"p": p, "mark": mark, "t0": t0, "due": time.monotonic() + rng.uniform(0.2, 3.0),
                         "fd": os.pidfd_open(p.pid), "buf": b"", "start": None, "term": None, "end": None})
        deadline = max(r["due"] for r in runs) + 5
        while any(r["end"] is None for r in runs) and time.monotonic() < deadline:
            pending = [r["due"] for r in runs if r["term"] is None and r["end"] is None]
            wait = max(0.0, min(pending) - time.monotonic()) if pending else 0.05
            if probe is None and pending:
                probe = {"t0": time.time_ns(), "p": env.start([env.snug, "--", "sh", "-c", "date +%s%N"])}
            outs = {r["p"].stdout.fileno(): r for r in runs if r["start"] is None and r["end"] is None}
            if probe is not None:
                outs[probe["p"].stdout.fileno()] = probe
            fds = {r["fd"]: r for r in runs if r["end"] is None}
            ready = select.select(list(outs) + list(fds), [], [], min(wait, 0.05))[0]
            now = time.monotonic_ns()
            for fd in ready:
                if fd in fds and fds[fd]["end"] is None:
                    fds[fd]["end"] = now
                elif fd in outs and outs[fd] is probe:
                    line = probe["p"].stdout.readline()
                    probe["p"].wait()
                    probe["p"].stdout.close()
                    probe["p"].stderr.close()
                    if line.strip().isdigit():
                        probes.append((int(line) - probe["t0"]) / 1e6)
                    probe = None
                elif fd in outs:
                    r = outs[fd]
                    chunk = os.read(fd, 64)
                    r["buf"] += chunk
                    if b"\n" in r["buf"]:
                        r["start"] = (int(r["buf"].split(b"\n")[0]) - r["t0"]) / 1e6
                    elif not chunk:
                        r["start"] = False  # stdout closed before the payload said anything
            for r in runs:
                if r["term"] is None and r["end"] is None and time.monotonic() >= r["due"]:
                    r["term"] = time.monotonic_ns()
                    r["p"].send_signal(signal.SIGTERM)  # our child, not yet reaped
        for r in runs:
            if r["end"] is None:
                r["p"].kill()
    finally:
        if probe is not None:
            probe["p"].wait()
        for r in runs:
            r["p"].wait()
            os.close(r["fd"])
            r["p"].stdout.close()
            r["p"].stderr.close()
    time.sleep(0.1)
    out = []
    for r in runs:
        leaked = len(procs.find(r["mark"]))
        procs.kill_marked(r["mark"])
        gone = (r["end"] - r["term"]) / 1e9 if r["term"] is not None and r["end"] is not None else None
        out.append((r["start"] or None, gone, r["p"].returncode, leaked))
    return out, probes


def verdict_row(name, got, ignore):
    gone = [g for _, g, _, _ in got if g is not None]
    missing = len(got) - len(gone)
    leaked = sum(x for _, _, _, x in got)
    statuses = collections.Counter(("killed by " + signal.Signals(-s).name) if s < 0 else f"exit {s}"
                                   for _, _, s, _ in got)
    # The grace applies once the payload runs: a TERM that came before it (no startup sample:
    # snug holds the signal until then, G3) ends `sh` before its `trap` does, at once.
    low = 0.95 if ignore else 0.0
    graced = [g for s, g, _, _ in got if g is not None and s is not None]
    ok = not missing and not leaked and gone and min(graced, default=low) >= low and max(gone) <= BOUND
    what = "payload ignores TERM" if ignore else "payload `sleep` dies of TERM at once"
    return {
        "row": "B7", "figure": f"{name}: {len(got)} `snug -- sleep 5` at once, TERM at a random 0.2–3 s; {what}",
        "snug": (f"TERM → snug gone median {med(gone):.4f} s, max {max(gone):.4f} s" if gone else "none ended")
                + (f"; {len(gone) - len(graced)} got TERM before their payload ran" if len(graced) < len(gone) else "")
                + (f"; {missing} not ended" if missing else "")
                + f"; leftovers {leaked}; " + ", ".join(f"{v}× {k}" for k, v in sorted(statuses.items())),
        "ref": "G3: grace 1.0 s" if ignore else "G3's bound",
        "target": f"all {'1.0–' if ignore else '≤ '}{BOUND} s, 0 leftovers", "ok": bool(ok),
    }


def b7(env, n):
    common.subreaper(True)
    try:
        alone = lone(env, n.b7_lone)
        plain, probes = batch(env, n.b7_many, False, 7)
        alone += lone(env, n.b7_lone)
        ign, more = batch(env, n.b7_many, True, 8)
        probes += more
        alone += lone(env, n.b7_lone)
    finally:
        procs.end_children()
        common.subreaper(False)
    loaded = [s for s, _, _, _ in plain + ign if s]
    early = len(plain) + len(ign) - len(loaded)
    ratio = pct(probes, 90) / pct(alone, 90)
    lone_s = (f"lone runs ({len(alone)}, before, between and after the batches): p50 {fmt_ms(med(alone))}, "
              f"p90 {fmt_ms(pct(alone, 90))}")
    rows = [verdict_row("plain", plain, False), verdict_row("ignoring", ign, True), {
        "row": "B7", "figure": f"startup of a sandbox while the {n.b7_many} run and are torn down (spawn → payload's "
                               f"first command), {len(probes)} probe runs, p50/p90",
        "snug": f"p50 {fmt_ms(med(probes))}, p90 {fmt_ms(pct(probes, 90))}", "ref": lone_s,
        "ratio": f"p90 {ratio:.2f}× (p50 {med(probes) / med(alone):.2f}×)", "target": "p90 ≤ 2× lone",
        "ok": ratio <= 2.0,
    }, {
        "row": "B7 (info)", "figure": f"startup of the {n.b7_many} themselves, spawned back to back on "
                                      f"{os.cpu_count()} cores, {len(loaded)} runs"
                                      + (f" ({early} got their TERM before starting)" if early else ""),
        "snug": f"p50 {fmt_ms(med(loaded))}, p90 {fmt_ms(pct(loaded, 90))}", "ref": lone_s,
        "ratio": f"p90 {pct(loaded, 90) / pct(alone, 90):.2f}×",
        "target": f"— (CPU contention: {n.b7_many} start-ups share the cores)", "ok": None,
    }]
    note = "\n".join([
        f"Two batches of {n.b7_many} `snug -- sh -c 'date +%s%N; exec sleep 5.MARK'` spawned back to back (the",
        "second with `trap '' TERM;` first), each sent SIGTERM at its own uniformly random moment 0.2–3 s",
        "after its spawn (fixed seeds). TERM → gone is from just before kill(2) to snug's pidfd being",
        "readable. Leftovers: processes carrying a run's MARK (a unique `sleep` duration) alive 100 ms after",
        "every snug was reaped. Startup is the payload's `date +%s%N` minus the spawn time; a run whose TERM",
        "came before its payload ran has no startup sample. Probe runs `snug -- sh -c 'date +%s%N'` start",
        "one after another while a batch runs (from its last spawn to its last TERM): that is the startup",
        "\"under that load\" the pass rule uses; the batch's own start-ups, all at once on the machine's",
        f"cores, are shown for information. Lone runs: the probe's command, {n.b7_lone} before, between and",
        "after the batches.",
    ])
    return rows, [("B7: method", note)]
