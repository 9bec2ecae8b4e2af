"""B10 (SPEC W1): what `--cow` costs. Start-up of `snug DIR -- true` with and without `--cow`
on a DIR of 50,000 files (alternating runs: the overlay is mounted, nothing is copied, and a
run that changed nothing keeps nothing); `snug diff --stat` of a run that added 10,000 files;
a C build (`make -j2` of 60 files) in DIR with and without `--cow`, side by side in one run.
The kept changes go to a state directory of the bench's own (`XDG_STATE_HOME`).
"""

import os
import subprocess

import common
from common import Failed, alternate, med, spread

FILES = 50_000
CHANGED = 10_000
SOURCES = 60


def _tree(root, n):
    for i in range(n):
        d = os.path.join(root, f"d{i // 1000:03d}")
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}"), "w") as f:
            f.write("x\n")


def _project(root):
    os.makedirs(root, exist_ok=True)
    for i in range(SOURCES):
        body = "".join(f"int f{i}_{k}(int x) {{ return x * {k} + {i}; }}\n" for k in range(200))
        with open(os.path.join(root, f"s{i}.c"), "w") as f:
            f.write(body)
    objs = " ".join(f"s{i}.o" for i in range(SOURCES))
    with open(os.path.join(root, "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    with open(os.path.join(root, "Makefile"), "w") as f:
        f.write(f"prog: main.o {objs}\n\tcc -o prog main.o {objs}\n%.o: %.c\n\tcc -O2 -c $<\n"
                "clean:\n\trm -f *.o prog\n")


def b10(env, n):
    state = os.path.join(env.work, "b10-state")
    os.makedirs(state, exist_ok=True)
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = state
    try:
        return _rows(env, n, state)
    finally:
        if old is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = old


def _rows(env, n, state):
    big = os.path.join(env.work, "b10-big")
    _tree(big, FILES)
    k = max(5, n.b1 // 3)
    plain, cow = alternate([lambda: env.timed([env.snug, big, "--", "true"]),
                            lambda: env.timed([env.snug, "--cow", big, "--", "true"])], k)
    added = med(cow) - med(plain)
    rows = [{"row": "B10", "figure": f"startup `snug DIR -- true`, DIR of {FILES:,} files, with and without --cow, "
             f"median (p10–p90), {k} runs each",
             "snug": f"--cow {spread(cow)} vs {spread(plain)}: +{added:.2f} ms",
             "target": "≤ +2 ms", "ok": added <= 2.0}]
    run = subprocess.run([env.snug, "--cow", "--name", "b10", big, "--", "sh", "-c",
                          f"mkdir new && cd new && seq 1 {CHANGED} | sed s/^/f/ | xargs touch"],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if run.returncode != 0:
        raise Failed(f"--cow run: {run.stderr.strip()[-300:]}")
    stat = [env.timed([env.snug, "diff", "b10", "--stat"]) for _ in range(3)]
    subprocess.run([env.snug, "discard", "b10"], capture_output=True)
    rows.append({"row": "B10", "figure": f"`snug diff --stat` of a run that added {CHANGED:,} files, median of 3",
                 "snug": common.fmt_ms(med(stat)), "target": "≤ 1 s", "ok": med(stat) <= 1000})
    proj = os.path.join(env.work, "b10-proj")
    _project(proj)

    def plain_build():
        took = env.timed([env.snug, proj, "--", "make", "-s", "-j2", "-C", proj])
        subprocess.run(["make", "-s", "-C", proj, "clean"], capture_output=True)
        return took

    def cow_build():
        took = env.timed([env.snug, "--cow", "--name", "b10b", proj, "--", "make", "-s", "-j2", "-C", proj])
        subprocess.run([env.snug, "discard", "b10b"], capture_output=True)
        return took

    kb = 3 if n.b1 < 30 else 5
    pb, cb = alternate([plain_build, cow_build], kb, warm=1)
    ratio = med(cb) / med(pb)
    rows.append({"row": "B10", "figure": f"C build (`make -j2`, {SOURCES} files) in DIR, with and without --cow, "
                 f"median of {kb}", "snug": f"{common.fmt_ms(med(cb))} vs {common.fmt_ms(med(pb))}: {ratio:.2f}×",
                 "target": "≤ 1.1×", "ok": ratio <= 1.1})
    return rows, []
