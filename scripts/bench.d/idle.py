"""B5: snug's own footprint while the payload runs: peak RSS (VmHWM of snug's process, not of
its children, which getrusage(RUSAGE_CHILDREN) or wait4's rusage would fold in) and CPU time.

CPU is read three ways from /proc/<snug>: schedstat's run time in ns (precise), utime+stime
in clock ticks (stat fields 14-15), and voluntary context switches (each wake-up from poll(2)
is one). A snug blocked in the kernel shows 0 on all three.
"""

import os
import time

from common import Failed, read_line, finish
from terminal import private_run


def sample(pid):
    """(run ns, ticks, voluntary switches, VmHWM kB) of pid, or None once it is gone or a zombie.
    Run time and switches are summed over the process's threads (schedstat and status are per
    thread; a worker thread's would otherwise be missed, as the leader only waits then)."""
    try:
        ns, switches = 0, 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns += int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                switches += int(next(ln for ln in f if ln.startswith("voluntary_ctxt_switches")).split()[1])
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14, 15 of stat(5)
        status = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                status[k] = v.split()
        if "VmHWM" not in status:
            return None  # a zombie: no memory left to report
        return ns, ticks, switches, int(status["VmHWM"][0])
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError, StopIteration):
        return None


def b5(env, n):
    # A /run/snug of its own (as root): other snug clients on the machine connect to every
    # control socket there, and each accept(2) would count as a wake-up.
    p = env.start(private_run() + [env.snug, "--", "sh", "-c", f"echo R; exec sleep {n.b5_sleep}"])
    if read_line(p) != "R":
        raise Failed("payload did not say R")
    time.sleep(0.2)  # start-up done: snug now only waits
    a = sample(p.pid)
    t_a = time.monotonic()
    b, last = None, a
    while True:
        time.sleep(0.05)
        got = sample(p.pid)
        if got is None:
            break
        last = got
        if b is None and time.monotonic() - t_a >= n.b5_sleep - 0.5:
            b, t_b = got, time.monotonic()  # the end of the window: the payload is still asleep
    window = (b[0] - a[0]) if b else None
    finish(p, 0, "B5")
    hwm = last[3]
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    rows = [
        {"row": "B5", "figure": "snug's peak RSS (VmHWM of snug itself, last reading before exit)",
         "snug": f"{hwm / 1024:.2f} MiB ({hwm} kB)", "target": "≤ 4 MiB", "ok": hwm <= 4096},
    ]
    if b is None:
        rows.append({"row": "B5", "figure": "snug's CPU while the payload sleeps", "snug": "no window measured",
                     "target": "0", "ok": False})
    else:
        secs = t_b - t_a
        wakes = b[2] - a[2]
        rows.append({
            "row": "B5",
            "figure": f"snug's CPU during {secs:.1f} s of a `sleep {n.b5_sleep}` payload",
            "snug": f"{window / 1e3:.0f} µs run time, {b[1] - a[1]} ticks ({tick_ms:.0f} ms each), "
                    f"{wakes} wake-ups; whole run {last[0] / 1e6:.2f} ms",
            "target": "0 (no polling)", "ok": wakes == 0 and window < 1e5,
        })
    note = "\n".join([
        f"Payload `sh -c 'echo R; exec sleep {n.b5_sleep}'`. From 0.2 s after its ready line, /proc/<snug> is read",
        "every 50 ms until snug is gone: the window's CPU is the difference between the first reading",
        "and the one 0.5 s before the payload ends; the peak is the last VmHWM read before exit (VmHWM",
        "only grows, and after the payload ends snug only tears down). Only snug's own process counts:",
        "getrusage(RUSAGE_CHILDREN) and wait4's rusage would fold in bwrap, init and the payload.",
    ])
    return rows, [("B5: method", note)]


def b5_loop(env, n):
    """B5 with a payload that stops and continues itself in a loop (a helper process sends its
    shell STOP then CONT as fast as it can): snug's CPU over 2 s, as above. Detached, nothing
    acts on such stops, so snug must not wake for them."""
    # The loop is a python helper that ends by itself after 3 s: a shell loop sending STOP and
    # CONT to its parent wedges dash's own `kill $!` afterwards, with or without snug.
    helper = ("import os,signal,time,sys\np=int(sys.argv[1]); e=time.time()+3\n"
              "while time.time()<e:\n    os.kill(p,signal.SIGSTOP); os.kill(p,signal.SIGCONT)")
    loop = f"me=$$; python3 -c '{helper}' $me & echo R; wait"
    p = env.start(private_run() + [env.snug, "--", "sh", "-c", loop])
    if read_line(p) != "R":
        raise Failed("payload did not say R")
    time.sleep(0.3)
    a, t_a = sample(p.pid), time.monotonic()
    time.sleep(2.0)
    b, t_b = sample(p.pid), time.monotonic()
    finish(p, 0, "B5 loop")
    if a is None or b is None:
        return [{"row": "B5", "figure": "snug's CPU while the payload stops and continues itself",
                 "snug": "no window measured", "target": "0", "ok": False}], []
    run_us, wakes = (b[0] - a[0]) / 1e3, b[2] - a[2]
    return [{
        "row": "B5",
        "figure": f"snug's CPU during {t_b - t_a:.1f} s of a payload stopping and continuing itself in a loop",
        "snug": f"{run_us:.0f} µs run time ({run_us / 1e4 / (t_b - t_a):.2f} % of a core), {wakes} wake-ups",
        "target": "0 (no more than the payload's own job-control cost)", "ok": wakes == 0 and run_us < 100,
    }], []
