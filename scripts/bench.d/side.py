"""B6: snug side by side with the tools a user would pick instead, in the same run, alternating
tool by tool every trial (so each sees the same machine load): startup of `true`, relay of a
TERM to the payload's handler, TERM → gone for a payload that ignores TERM, and what is left
after the launcher is SIGKILLed. Every launcher runs in its own session; the bench is a child
subreaper meanwhile, and ends only processes it started (its children, or ones carrying this
run's unique marker)."""

import os
import signal
import sys
import time

import peers as peerlist
import common
import procs
from common import Failed, fmt_ms, med, now_ns, pct, read_opt
from startup import alternate, reference
from stopping import SETTLE, TRAP

CAP = 3.0  # s after the TERM: a payload still there then is counted as not ended
BOUND = 1.1  # s: G3's bound for TERM → gone


def cleanup(p, mark):
    """The launcher reaped (SIGKILLed after 3 s), marked payloads and adopted orphans ended."""
    try:
        p.wait(timeout=3)
    except Exception:
        p.kill()
        p.wait()
    p.stdout.close()
    p.stderr.close()
    procs.kill_marked(mark)
    procs.end_children()


def relay(env, peer):
    """ms from kill(launcher, TERM) to the payload's handler, or None when it never ran."""
    mark = procs.marker(0)
    p = env.start(peer.argv([env.py, "-c", TRAP, mark]))
    try:
        if read_opt(p, 10) != "R":
            raise Failed(f"{peer.name}: the payload did not say R")
        time.sleep(SETTLE)
        t0 = now_ns()
        os.kill(p.pid, signal.SIGTERM)
        line = read_opt(p, 2.0)
        return (int(line) - t0) / 1e6 if line else None
    finally:
        cleanup(p, mark)


def stop(env, peer):
    """(s until the launcher is gone, s until the payload is gone) after one TERM to the
    launcher; the payload ignores TERM. None for what was still there CAP s later."""
    mark = procs.marker(1000)
    p = env.start(peer.argv(["sh", "-c", f"trap '' TERM; echo R; exec sleep {mark}"]))
    try:
        if read_opt(p, 10) != "R":
            raise Failed(f"{peer.name}: the payload did not say R")
        pay = procs.wait_found(mark, 1, comm="sleep", within=3)
        if not pay:
            raise Failed(f"{peer.name}: no `sleep {mark}` found")
        fds = procs.pidfds(pay + [p.pid])
        time.sleep(SETTLE)
        t0 = now_ns()
        os.kill(p.pid, signal.SIGTERM)
        got = procs.gone_times(fds, CAP)
        launcher = (got[p.pid] - t0) / 1e9 if p.pid in got else None
        ends = [got.get(pid) for pid in pay]
        payload = None if None in ends else (max(ends) - t0) / 1e9
        return launcher, payload
    finally:
        cleanup(p, mark)


def leak(env, peer):
    """(payload processes alive 100 ms after SIGKILL of the launcher, how many there were)."""
    mark = procs.marker(300)
    p = env.start(peer.argv(["sh", "-c", f"sleep {mark} & sleep {mark}"]))
    try:
        if len(procs.wait_found(mark, 2, comm="sleep", within=5)) < 2:
            raise Failed(f"{peer.name}: the two `sleep {mark}` did not start")
        before = len(procs.find(mark))
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        time.sleep(0.1)
        return len(procs.find(mark)), before
    finally:
        cleanup(p, mark)


def status(env, peer, sig):
    """What the launcher's exit status says when the payload itself is killed by `sig`
    (sent to the payload, not the launcher): "exit N", "killed by SIGNAME", or why not known."""
    mark = procs.marker(600 + sig)
    p = env.start(peer.argv(["sh", "-c", f"echo R; exec sleep {mark}"]))
    try:
        if read_opt(p, 10) != "R":
            return "the payload did not start"
        pay = procs.wait_found(mark, 1, comm="sleep", within=3)
        if not pay:
            return "payload not found"
        os.kill(pay[0], sig)
        try:
            rc = p.wait(timeout=CAP)
        except Exception:
            return f"still running {CAP:.0f} s later"
        return f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"
    finally:
        cleanup(p, mark)


def rounds(runs, n):
    """Round-robin: trial i of every tool before trial i+1 of any."""
    got = [[] for _ in runs]
    for _ in range(n):
        for k, f in enumerate(runs):
            got[k].append(f())
    return got


def guarantees(relays, stops, leaks):
    """What the measurements show the tool gives, in words, and whether it gives all of snug's."""
    said, same = [], True
    ran = [x for x in relays if x is not None]
    if len(ran) == len(relays):
        said.append("forwards TERM to the payload's handler")
    elif not ran:
        said.append("TERM never reaches the payload's handler")
        same = False
    else:
        said.append(f"TERM reaches the handler in {len(ran)} of {len(relays)} runs (a race)")
        same = False
    pay = [s[1] for s in stops]
    lau = [s[0] for s in stops]
    if None in pay:
        k = pay.count(None)
        gone = "launcher exits, " if None not in lau else ""
        said.append(f"does not end a TERM-ignoring payload ({gone}payload still running {CAP:.0f} s after the TERM "
                    f"in {k} of {len(pay)} runs)")
        same = False
    elif max(pay) < 0.2:
        said.append("no grace: TERM ends an ignoring payload at once (a handler that needs time is cut off)")
        same = False
    elif max(pay) <= BOUND:
        said.append(f"grace, then kill: an ignoring payload is gone within {BOUND} s")
    else:
        said.append(f"ends an ignoring payload only after {max(pay):.1f} s")
        same = False
    alive = [a for a, _ in leaks]
    if any(alive):
        said.append(f"leaks after SIGKILL: {max(alive)} of {leaks[0][1]} payload processes alive "
                    f"({sum(1 for a in alive if a)} of {len(alive)} runs)")
        same = False
    else:
        said.append("nothing left after SIGKILL")
    return "; ".join(said), same


def b6(env, n):
    missing = peerlist.install(lambda msg: print(msg, file=sys.stderr, flush=True))
    head, _ = reference(env.dry(["--", "true"])["bwrap"], ["true"])
    snug = peerlist.Peer("snug", [env.snug, "--"], "snug with its default profile")
    all_peers = [snug] + peerlist.peers(env, head, missing)
    ok = [p for p in all_peers if p.why is None]
    common.subreaper(True)
    try:
        start = alternate([lambda p=p: env.timed(p.argv(["true"])) for p in ok], n.b6_start, warm=2)
        rel = rounds([lambda p=p: relay(env, p) for p in ok], n.b6_relay)
        stp = rounds([lambda p=p: stop(env, p) for p in ok], n.b6_stop)
        lk = rounds([lambda p=p: leak(env, p) for p in ok], n.b6_leak)
        st = [(status(env, p, signal.SIGINT), status(env, p, signal.SIGTERM)) for p in ok]
    finally:
        procs.end_children()
        common.subreaper(False)
    lines = [
        f"All tools in one run, alternating trial by trial: startup {n.b6_start} runs each, relay "
        f"{n.b6_relay}, TERM → gone {n.b6_stop}, SIGKILL leftovers {n.b6_leak}.",
        "",
        "| tool | startup `true`, median (p10–p90) | × snug | relay TERM → handler, median (p99) | "
        "TERM → gone, ignoring payload, median | leftovers 100 ms after SIGKILL | "
        "its status when the payload is killed by INT; by TERM | what it guarantees (measured) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    snug_start = med(start[0])
    rows, verdicts = [], []
    for i, p in enumerate(ok):
        said, same = guarantees(rel[i], stp[i], lk[i])
        ran = [x for x in rel[i] if x is not None]
        relay_s = (f"{fmt_ms(med(ran))} ({fmt_ms(pct(ran, 99))})" + ("" if len(ran) == len(rel[i]) else
                   f", handler ran {len(ran)}/{len(rel[i])}")) if ran else f"never ran (0/{len(rel[i])})"
        pay = [s[1] for s in stp[i] if s[1] is not None]
        gone_s = f"{med(pay):.4f} s" if pay else "—"
        if len(pay) < len(stp[i]):
            gone_s += f"; {len(stp[i]) - len(pay)}/{len(stp[i])} still running after {CAP:.0f} s"
        leaks = sum(a for a, _ in lk[i])
        lines.append(f"| {p.name} | {fmt_ms(med(start[i]))} ({pct(start[i], 10):.2f}–{pct(start[i], 90):.2f}) | "
                     f"{med(start[i]) / snug_start:.2f}× | {relay_s} | {gone_s} | "
                     f"{leaks} in {len(lk[i])} runs | {st[i][0]}; {st[i][1]} | {said} |")
        if i > 0 and same:
            mine = [x for x in rel[0] if x is not None]
            ahead = med(start[0]) <= med(start[i]) and bool(mine) and med(mine) <= med(ran)
            verdicts.append((p.name, ahead))
    for p in all_peers:
        if p.why is not None:
            lines.append(f"| {p.name} | cannot run here: {p.why} | | | | | | |")
    lines += ["", "The tools: " + "; ".join(f"**{p.name}**: {p.what}" for p in all_peers) + ". sandlock's startup includes "
              "starting the Python interpreter and importing sandlock, as its users pay it."]
    lines += ["", "\n".join([
        "Payloads: relay `python3 -c TRAP MARK` (B2's handler); TERM → gone `sh -c \"trap '' TERM; echo R;",
        "exec sleep MARK\"`, timed from kill(launcher, TERM) until the launcher and every `sleep MARK` are gone",
        f"(pidfds), capped at {CAP:.0f} s; leftovers `sh -c 'sleep MARK & sleep MARK'`, the launcher SIGKILLed once",
        "both sleeps run, then the processes carrying MARK (a unique `sleep` duration) that are alive and",
        "not zombies 100 ms later are counted, then killed. Status: `sh -c 'echo R; exec sleep MARK'`, the",
        "payload's `sleep` itself sent INT (then, in another run, TERM), and the launcher's exit status read (a",
        "shell shows 128+N for a signal N). \"Same guarantees as snug\" means: the handler",
        f"ran every time, an ignoring payload was gone within {BOUND} s every time, nothing was left.",
    ])]
    same = verdicts
    row = {
        "row": "B6", "figure": f"side by side, same run: {len(ok) - 1} peers measured "
                               f"({', '.join(p.name for p in ok[1:])})",
        "snug": f"startup {fmt_ms(snug_start)}, relay {fmt_ms(med([x for x in rel[0] if x is not None] or [0]))}",
        "ref": "; ".join(f"{p.name} {fmt_ms(med(start[i]))}" for i, p in enumerate(ok) if i > 0),
        "ratio": (", ".join(f"{name}: {'ahead' if a else 'behind'}" for name, a in same)
                  if same else "no peer gives snug's guarantees"),
        "target": "ahead of every peer with the same guarantees",
        "ok": all(a for _, a in same),
    }
    rows.append(row)
    return rows, [("B6: side by side with the tools a user would pick instead", "\n".join(lines))]
