"""Optional profiling for B1 (needs `perf` and root): where `snug -- true` spends its time,
stage by stage, next to bwrap alone, from scheduler tracepoints recorded system-wide
(fork, exec, exit_group of every process of both trees); and how many poll(2) calls snug
itself makes in one run (a blocked supervisor makes a handful)."""

import os
import re
import shlex
import shutil
import subprocess
import tempfile

from common import med

EVENTS = ("sched:sched_process_exec,sched:sched_process_fork,syscalls:sys_enter_exit_group,sched:sched_process_exit,"
          "syscalls:sys_enter_recvmsg")
LINE = re.compile(r"^\s*(.*?)\s+(\d+)/(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)$")
FIELDS = "comm,pid,tid,time,event,trace"  # pid/tid: a thread's events count for its process

SNUG_STAGES = [
    ("snug's own start-up (exec to clone of nest)", "snug_exec", "nest_fork"),
    ("nest: namespaces, /proc, cgroups, until it asks for the binds' descriptors", "nest_fork", "nest_ready"),
    ("nest waits for snug's policy and the binds' descriptors (P7), then execs bwrap", "nest_ready", "bwrap_exec"),
    ("bwrap before its fork", "bwrap_exec", "sbx_fork"),
    ("bwrap's sandbox set-up (mounts) to exec", "sbx_fork", "init_exec"),
    ("snug's init: start-up, channel hello/go, fork", "init_exec", "pay_fork"),
    ("payload fork to exec", "pay_fork", "pay_exec"),
    ("payload runs (`true`)", "pay_exec", "pay_exit"),
    ("init sees the payload end and exits", "pay_exit", "init_exit"),
    ("sandbox teardown until bwrap exits", "init_exit", "bwrap_exit"),
    ("nest teardown, snug reaps and exits", "bwrap_exit", "snug_exit"),
    ("process exit", "snug_exit", "end"),
]
REF_STAGES = [
    ("bwrap before its fork", "bwrap_exec", "sbx_fork"),
    ("bwrap's sandbox set-up (mounts) to exec", "sbx_fork", "init_exec"),
    ("payload runs (`true`)", "init_exec", "pay_exit"),
    ("sandbox teardown until bwrap exits", "pay_exit", "bwrap_exit"),
    ("process exit", "bwrap_exit", "end"),
]


def available():
    return shutil.which("perf") is not None and os.geteuid() == 0


def parse(text):
    """(ms, pid, event, rest) per line, and the tids that are threads (not their process's
    first), whose sched_process_fork is a thread's creation, not a new process."""
    ev, threads = [], set()
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            pid, tid = int(m.group(2)), int(m.group(3))
            if pid != tid:
                threads.add(tid)
            ev.append((float(m.group(4)) * 1e3, pid, m.group(5).split(":")[1], m.group(6)))
    return [e for e in ev if not (e[2] == "sched_process_fork" and child_of(e[3]) in threads)]


def child_of(rest):
    m = re.search(r"\bchild_pid=(\d+)", rest)
    return int(m.group(1)) if m else None


def runs(ev, driver, snug):
    """Per run, the time of each mark, for the snug runs and the bwrap-alone runs of `driver`."""
    parent, out = {}, {"snug": [], "ref": []}
    for t, pid, name, rest in ev:
        if name == "sched_process_fork":
            m = re.search(r"\bpid=(\d+) child_comm=.* child_pid=(\d+)", rest)
            if m:
                parent[int(m.group(2))] = pid  # the forking process (its thread may be another)
    role, marks = {}, {}  # pid -> role; top pid -> marks
    for t, pid, name, rest in ev:
        if name == "sched_process_exec":
            fn = rest.split()[0].removeprefix("filename=")
            if parent.get(pid) == driver and fn == snug:
                role[pid], marks[pid] = ("snug", pid), {"snug_exec": t}
            elif parent.get(pid) == driver and os.path.basename(fn) == "bwrap":
                role[pid], marks[pid] = ("bwrap", pid), {"bwrap_exec": t}
            elif pid in role:
                kind, top = role[pid]
                mark = {"nest": "bwrap_exec", "sbx": "init_exec", "pay": "pay_exec"}.get(kind)
                if mark:
                    marks[top].setdefault(mark, t)
        elif name == "sched_process_fork":
            m = re.search(r"\bpid=(\d+) child_comm=.* child_pid=(\d+)", rest)
            p, c = pid, int(m.group(2))
            if p in role:
                kind, top = role[p]
                child = {"snug": "nest", "nest": "sbx", "bwrap": "sbx", "sbx": "pay"}.get(kind)
                if child and child + "_fork" not in marks[top]:
                    marks[top][child + "_fork"] = t
                    role[c] = (child, top)
        elif name == "sys_enter_recvmsg" and pid in role and role[pid][0] == "nest":
            # The last receive nest starts before it execs bwrap: the binds' descriptors,
            # which snug sends once its policy is resolved (a wait when they are not there).
            if "bwrap_exec" not in marks[role[pid][1]]:
                marks[role[pid][1]]["nest_ready"] = t
        elif name == "sys_enter_exit_group" and pid in role:
            kind, top = role[pid]
            what = {"snug": "snug_exit", "nest": "bwrap_exit", "bwrap": "bwrap_exit",
                    "sbx": "init_exit" if "snug_exec" in marks[top] else "pay_exit", "pay": "pay_exit"}[kind]
            marks[top].setdefault(what, t)
        elif name == "sched_process_exit" and pid in role and role[pid][1] == pid:
            marks[pid]["end"] = t
    for top, m in marks.items():
        out["snug" if "snug_exec" in m else "ref"].append(m)
    return out


def stage_table(got):
    def col(rs, a, b):
        ds = [r[b] - r[a] for r in rs if a in r and b in r]
        return (f"{med(ds):.2f}", len(ds)) if ds else ("—", 0)

    lines = ["| stage | snug (ms) | bwrap alone (ms) |", "|---|---|---|"]
    ref_by = {name: (a, b) for name, a, b in REF_STAGES}
    for name, a, b in SNUG_STAGES:
        s, _ = col(got["snug"], a, b)
        r = col(got["ref"], *ref_by[name])[0] if name in ref_by else "—"
        lines.append(f"| {name} | {s} | {r} |")
    tot_s = [m["end"] - m["snug_exec"] for m in got["snug"] if "end" in m]
    tot_r = [m["end"] - m["bwrap_exec"] for m in got["ref"] if "end" in m]
    lines.append(f"| **total, exec to exit** | **{med(tot_s):.2f}** | **{med(tot_r):.2f}** |")
    return "\n".join(lines), len(tot_s), len(tot_r)


def own_counts(env, n=10):
    """Per `snug -- true`, snug's own process only (`perf stat --no-inherit`): poll(2) calls
    and CPU time in ms. Two lists."""
    polls, cpu = [], []
    for _ in range(n):
        r = subprocess.run(["perf", "stat", "-x,", "--no-inherit", "-e", "syscalls:sys_enter_poll,task-clock",
                            "--", env.snug, "--", "true"], stdin=subprocess.DEVNULL, capture_output=True, text=True)
        for line in r.stderr.splitlines():
            f = line.split(",")
            if len(f) > 2 and "sys_enter_poll" in f[2] and f[0].isdigit():
                polls.append(int(f[0]))
            elif len(f) > 2 and f[2].startswith("task-clock"):
                cpu.append(float(f[0]))
    return polls, cpu


def profile(env, ref, n=15):
    """Markdown for BENCH.md, or a line saying why it was skipped."""
    if not available():
        return "Skipped: needs `perf` (Debian linux-perf) and root."
    with tempfile.TemporaryDirectory(prefix="snug-bench-perf-") as tmp:
        script, data = os.path.join(tmp, "drive.sh"), os.path.join(tmp, "perf.data")
        body = [f"echo $$ > {tmp}/pid"]
        for _ in range(n):
            body.append(shlex.join([env.snug, "--", "true"]) + " </dev/null >/dev/null")
            body.append(shlex.join(ref) + " </dev/null >/dev/null")
        with open(script, "w") as f:
            f.write("\n".join(body) + "\n")
        rec = subprocess.run(["perf", "record", "-q", "-a", "-o", data, "-e", EVENTS, "--", "sh", script],
                             capture_output=True, text=True)
        if rec.returncode != 0:
            return f"Skipped: `perf record` failed: {rec.stderr.strip()[-200:]}"
        text = subprocess.run(["perf", "script", "-F", FIELDS, "-i", data], capture_output=True, text=True).stdout
        driver = int(open(os.path.join(tmp, "pid")).read())
    got = runs(parse(text), driver, env.snug)
    table, ns, nr = stage_table(got)
    p, cpu = own_counts(env)
    return "\n".join([
        f"Medians over {ns} snug and {nr} bwrap-alone runs, alternating, under `perf record -a` (tracepoints",
        "slow both a little), from fork, exec and exit_group events of each process of the two trees,",
        "and nest's receives (the last one before bwrap's exec is its wait for the binds' descriptors).",
        "Medians of stages need not add up to the median total.",
        "",
        table,
        "",
        f"snug's own process in one `snug -- true` (`perf stat --no-inherit`, {len(p)} runs): poll(2) calls "
        f"median {med(p):.0f} (min {min(p, default=0)}, max {max(p, default=0)}), CPU time median "
        f"{med(cpu):.2f} ms. A supervisor that only blocks makes about five poll calls; hundreds mean it spins.",
    ] + ([
        "",
        "**snug spins.** Seen when this was written: once init exits, its end of the channel is hung up,",
        "poll(2) reports the socket readable (POLLIN|POLLHUP) on every round, recvmsg returns 0, and",
        "the loop goes round until bwrap (pid 1 of the outer namespace) is reaped. On two cores that",
        "spin competes with the sandbox's own teardown (see \"sandbox teardown until bwrap exits\").",
    ] if p and med(p) > 50 else []))
