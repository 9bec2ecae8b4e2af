"""B2-B4: what a stop request costs. Each sample is one fresh `snug -- PAYLOAD`; the payload
says "R" on stdout once its signal disposition is set, and we signal snug itself with kill(2)."""

import signal
import time

from common import Failed, exited_at, finish, fmt_ms, med, now_ns, pct, read_line

# Handler writes CLOCK_MONOTONIC (shared across pid namespaces) the moment it runs, then exits 0.
TRAP = """
import os, signal, time
def h(sig, frame):
    os.write(1, b"%d\\n" % time.monotonic_ns())
    os._exit(0)
signal.signal(signal.SIGTERM, h)
os.write(1, b"R\\n")
while True:
    signal.pause()
"""

# Ignores TERM (the disposition survives exec) and blocks: only the grace or a cut ends it.
IGNORE = "trap '' TERM; echo R; exec sleep 1000"

# Kept: part of the measured condition (BENCH.md states it), not a readiness wait.
SETTLE = 0.02  # after "R": snug has handled the payload's start report and sits in poll(2)


def relay_sample(env, argv):
    """ms from just before kill(TERM) of argv's process to the payload's handler running."""
    p = env.start(argv)
    if read_line(p) != "R":
        raise Failed("payload did not say R")
    time.sleep(SETTLE)
    t0 = now_ns()
    p.send_signal(signal.SIGTERM)
    t1 = int(read_line(p))
    finish(p, 0, "B2")
    return (t1 - t0) / 1e6


def b2(env, n):
    snug = [env.snug, "--", "python3", "-c", TRAP]
    bare = [env.py, "-c", TRAP]
    s, r = [], []
    for i in range(n.b2):
        s.append(relay_sample(env, snug))
        if i * n.b2_ref // n.b2 != (i + 1) * n.b2_ref // n.b2:
            r.append(relay_sample(env, bare))  # interleaved: the same load for both
    row = {
        "row": "B2", "figure": f"relay latency kill(snug, TERM) → payload's handler, {len(s)} samples",
        "snug": f"median {fmt_ms(med(s))}, p99 {fmt_ms(pct(s, 99))} (p10–p90 {pct(s, 10):.2f}–{pct(s, 90):.2f}, "
                f"max {max(s):.2f})",
        "ref": f"payload without snug: median {fmt_ms(med(r))}, p99 {fmt_ms(pct(r, 99))} ({len(r)} samples)",
        "ratio": f"+{med(s) - med(r):.2f} ms", "target": "median ≤ 2 ms", "ok": med(s) <= 2.0,
    }
    note = "\n".join([
        "Each sample is a fresh `snug -- python3 -c …` whose SIGTERM handler writes",
        "`time.monotonic_ns()` to stdout (snug's own stdout, a pipe to the bench) and exits 0. The bench",
        f"waits for the payload's \"ready\" line, {SETTLE * 1000:.0f} ms more, then takes CLOCK_MONOTONIC and calls",
        "kill(snug, SIGTERM) at once. The reference sends the same signal straight to the same payload",
        "run without snug, interleaved: the floor of signal delivery plus Python running its handler.",
    ])
    return [row], [("B2: method", note)]


def stop_sample(env, second):
    """ms from the (second, when `second`) TERM to snug reaped; the payload ignores TERM."""
    p = env.start([env.snug, "--", "sh", "-c", IGNORE])
    if read_line(p) != "R":
        raise Failed("payload did not say R")
    time.sleep(SETTLE)
    if second:
        p.send_signal(signal.SIGTERM)
        time.sleep(0.1)  # well inside the grace
    t0 = now_ns()
    p.send_signal(signal.SIGTERM)
    t1 = exited_at(p)
    finish(p, -signal.SIGTERM, "B3" if second else "B4")  # snug dies of the signal it got (G3)
    return (t1 - t0) / 1e6


def b3(env, n):
    s = [stop_sample(env, True) for _ in range(n.b3)]
    row = {
        "row": "B3", "figure": f"second-signal cut: 2nd TERM → snug gone, {len(s)} samples",
        "snug": f"median {fmt_ms(med(s))}, p90 {fmt_ms(pct(s, 90))}, max {fmt_ms(max(s))}",
        "target": "≤ 50 ms", "ok": pct(s, 90) <= 50.0,
    }
    return [row], []


def b4(env, n):
    s = [stop_sample(env, False) / 1000 for _ in range(n.b4)]
    row = {
        "row": "B4", "figure": f"ignoring payload: TERM → snug gone, {len(s)} samples",
        "snug": f"median {med(s):.4f} s (p10–p90 {pct(s, 10):.4f}–{pct(s, 90):.4f}, min {min(s):.4f}, "
                f"max {max(s):.4f})",
        "ref": "grace 1.000 s", "ratio": f"+{(med(s) - 1) * 1000:.1f} ms",
        "target": "1.00–1.03 s", "ok": pct(s, 10) >= 1.0 and pct(s, 90) <= 1.03,
    }
    note = "\n".join([
        f"Payload `sh -c \"{IGNORE}\"`. B3 sends SIGTERM, 100 ms later a second one, and times from just",
        "before that second kill(2); B4 times from the only one. The end is seen through a pidfd of",
        "snug (poll(2) wakes when it exits; `Popen.wait` with a timeout would add up to 50 ms of its",
        "own sleeps). Both expect snug to die of SIGTERM (G3, G4).",
    ])
    return [row], [("B3, B4: method", note)]
