"""G3 with a large tree (SPEC G3, K5): a 4000-process TERM-ignoring tree under snug, and side by
side a bare pid namespace holding 4000 sleepers that is killed outright (SIGKILL to its pid 1,
`unshare --pid --fork`), which measures what the kernel alone takes to kill and reap that many
processes on this machine at this moment. snug's own share of its teardown is then

    (TERM → snug gone) − 1.000 s grace − (SIGKILL → namespace reaped)

and G3 bounds it at 100 ms. Runs alternate (snug, bare, snug, …) so that both see the same
load. Needs root (`unshare --pid`); skipped otherwise.
"""

import os
import signal
import time

import common
import procs
from common import Failed, exited_at, now_ns, read_line

N = 4000
GRACE_MS = 1000.0
SHARE_MS = 100.0  # G3: snug's share of a large tree's teardown

# A bounded loop, not a bomb: N sleepers, then "ready N" and wait. `IGNORE` makes every one of
# them ignore TERM (the disposition survives exec), so only the teardown ends them.
TREE = ("$SIG{TERM} = 'IGNORE' if $ARGV[0]; $| = 1; my $n = 0; "
        "for (1..%d) { my $p = fork; next unless defined $p; if ($p == 0) { exec 'sleep', '600'; exit 1 } $n++ } "
        "print \"ready $n\\n\"; sleep 600") % N


def snug_sample(env):
    """ms from TERM to snug gone, for snug -- perl TREE (TERM ignored)."""
    p = env.start([env.snug, "--max-procs", str(N + 100), "--", "perl", "-e", TREE, "1"])
    line = read_line(p, timeout=120)
    if line != f"ready {N}":
        p.kill()
        raise Failed(f"snug's tree: {line!r}")
    t0 = now_ns()
    p.send_signal(signal.SIGTERM)
    t1 = exited_at(p, timeout=30)
    p.wait()
    if p.returncode != -signal.SIGTERM:
        raise Failed(f"snug ended with {p.returncode}, not killed by TERM")
    return (t1 - t0) / 1e6


def bare_sample(env):
    """ms from SIGKILL of a bare pid namespace's pid 1 (perl TREE) to that namespace reaped
    (`unshare` returns once the kernel has killed and reaped every process in it)."""
    p = env.start(["unshare", "--pid", "--fork", "--kill-child", "--", "perl", "-e", TREE, "0"])
    line = read_line(p, timeout=120)
    if line != f"ready {N}":
        p.kill()
        raise Failed(f"bare tree: {line!r}")
    init = int(open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()[0])
    t0 = now_ns()
    os.kill(init, signal.SIGKILL)
    t1 = exited_at(p, timeout=30)
    p.wait()
    return (t1 - t0) / 1e6


def g3_tree(env, n):
    if os.getuid() != 0:
        return [{"row": "G3 (tree)", "figure": f"{N}-process teardown", "snug": "skipped: needs root",
                 "target": "—", "ok": None}], []
    common.subreaper(True)
    snug, bare = [], []
    try:
        for _ in range(n.tree):
            snug.append(snug_sample(env))
            time.sleep(0.5)  # kept: lets the last teardown's exit work finish before the next
            bare.append(bare_sample(env))
            time.sleep(0.5)
    finally:
        procs.end_children()
        common.subreaper(False)
    shares = [s - GRACE_MS - b for s, b in zip(snug, bare)]
    med = common.med
    row = {
        "row": "G3 (tree)",
        "figure": f"{N}-process TERM-ignoring tree: TERM → snug gone, minus the 1.0 s grace, minus a bare pid "
                  f"namespace's SIGKILL → reaped with {N} sleepers, run side by side, {len(shares)} pairs",
        "snug": f"TERM → gone median {med(snug):.0f} ms ({min(snug):.0f}–{max(snug):.0f}); snug's share median "
                f"{med(shares):.0f} ms ({min(shares):.0f}–{max(shares):.0f})",
        "ref": f"bare namespace SIGKILL → reaped median {med(bare):.0f} ms ({min(bare):.0f}–{max(bare):.0f})",
        "target": f"share ≤ {SHARE_MS:.0f} ms (median)", "ok": med(shares) <= SHARE_MS,
    }
    note = "\n".join([
        f"snug runs `perl` forking {N} `sleep 600` that ignore TERM (`--max-procs {N + 100}`), says",
        "`ready`, and gets SIGTERM; snug's grace runs out and it tears the sandbox down. Beside it,",
        f"`unshare --pid --fork --kill-child -- perl …` forks the same {N} sleepers (TERM not ignored) and",
        "its pid 1 gets SIGKILL: the time until `unshare` is reaped is the kernel's own cost of killing",
        "and reaping that tree, which G3 adds to snug's bound. Pairs alternate, 0.5 s apart. Times are",
        "from just before kill(2) to the pidfd of snug (or unshare) being readable.",
    ])
    return [row], [("G3 (tree): method", note)]
