"""B1's floor and its terminal row: nestfloor (nest without snug) and a no-libc program built
here with cc, the note that explains the floor, and `snug -- true` started at a pty."""

import os
import shutil
import subprocess

from common import alternate, fmt_ms, med, pct, spread


# A program that only exits (x86-64 Linux, no libc): what spawning and reaping costs the harness.
TINY_S = ".globl _start\n_start: mov $60, %eax\n xor %edi, %edi\n syscall\n"


def floor_helpers(work):
    """(nestfloor, tiny) built here with cc, or None when cc is missing or fails: nestfloor
    (scripts/bench.d/nestfloor.c) is nest without snug, tiny an exit with no libc."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nestfloor.c")
    nf, tiny = os.path.join(work, "nestfloor"), os.path.join(work, "tiny")
    with open(tiny + ".s", "w") as f:
        f.write(TINY_S)
    for argv in ([cc, "-O2", "-o", nf, src], [cc, "-nostdlib", "-static", "-o", tiny, tiny + ".s"]):
        if subprocess.run(argv, capture_output=True, timeout=120).returncode != 0:
            return None
    return nf, tiny


def floor_note(wall, floor):
    names = ["`snug -- true`", "bwrap alone", "`snug --version` (ver)", "`nestfloor` bwrap alone (nested)",
             "`nestfloor` alone (nf)", "a program that only exits, no libc (spawn)"]
    lines = [
        "The floor is what the guarantees need on top of bwrap alone: snug's binary exec'd once as snug",
        "and once as init inside (each at least the cost of `snug --version`: the kernel's exec, glibc's",
        "start-up, std's, clap's), and the outer pid and mount namespace that nest makes, with its /proc",
        "and its teardown. `nestfloor` (scripts/bench.d/nestfloor.c, built here with cc) is nest without",
        "snug: clone(2) into a new pid and mount namespace (and user namespace when not root), the mount",
        "tree private, a new /proc, then execve of bwrap alone's exact argv; the parent waits. All six",
        "commands run in the same alternating rounds as B1 (medians, ms):",
        "",
        "| command | median | p10–p90 |",
        "|---|---|---|",
    ]
    for name, w in zip(names, wall):
        lines.append(f"| {name} | {fmt_ms(med(w))} | {pct(w, 10):.2f}–{pct(w, 90):.2f} |")
    lines += [
        "",
        f"floor = 2·ver + nested − nf − spawn = **{fmt_ms(floor)}**: bwrap alone, plus the outer namespace "
        "(nested − nf − bwrap alone + spawn), plus two execs of snug's binary (ver − spawn each). What "
        "`snug -- true` takes beyond it is snug's own work and its hand-offs (policy, cgroups, channel, "
        "init's fork of the payload, supervision, teardown).",
    ]
    return "\n".join(lines)


def tty_rows(env, n, snug, ref, detached_ms, ref_ms):
    """B1 at a terminal: snug (terminal mode: its own pty for the sandbox, SPEC T1) and bwrap
    alone, each spawned as the leader of a new session whose controlling terminal is a fresh
    pty (opened by path after setsid, as a login shell's terminal is), stdio on it."""
    def on_pty(argv):
        m, s = os.openpty()
        try:
            acts = [(os.POSIX_SPAWN_OPEN, 0, os.ttyname(s), os.O_RDWR, 0),
                    (os.POSIX_SPAWN_DUP2, 0, 1), (os.POSIX_SPAWN_DUP2, 0, 2)]
            return env.timed_usage(argv, acts=acts, setsid=True)[0]
        finally:
            os.close(s)
            os.close(m)
    k = max(n.b1 // 2, 4)
    s, r = alternate([lambda: on_pty(snug), lambda: on_pty(ref)], k)
    return [{
        "row": "B1 @tty", "figure": f"startup `snug -- true` at a terminal (a pty), median (p10–p90), {k} runs each",
        "snug": spread(s), "ref": f"bwrap alone at a pty {spread(r)}",
        "ratio": f"{med(s) / med(r):.2f}×; the pty costs snug {med(s) - med(r) - (detached_ms - ref_ms):+.2f} ms "
                 "over its detached overhead",
        "target": "— (B1's bound is detached)", "ok": None,
    }]


