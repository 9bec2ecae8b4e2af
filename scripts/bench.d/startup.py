"""B1: `snug -- true` against bwrap alone with the command line `snug --dry-run` prints.

The reference keeps every bwrap option snug uses (namespaces, mounts, environment, --as-pid-1)
but drops `--seccomp 5` (that fd exists only inside snug) and runs `true` directly where snug
runs its init (/run/snug/init, which needs snug's channel on fd 3). So the difference is
exactly what snug adds: its own exec, the nest layer, the init, the channel, the teardown.
"""

import fcntl
import json
import os
import shlex
import shutil
import signal
import subprocess
import time

import timeline
from floor import floor_helpers, floor_note, tty_rows
from common import Failed, alternate, fmt_ms, med, now_ns, pct, spawn, spread, subreaper  # noqa: F401 (side.py takes alternate from here)

INIT = "/run/snug/init"


def reference(bwrap, payload):
    """bwrap's argv up to snug's init, without `--seccomp FD`, then `-- payload`."""
    cut = max((k for k in range(len(bwrap) - 1) if bwrap[k] == "--" and bwrap[k + 1] == INIT), default=None)
    if cut is None:
        raise Failed(f"no `-- {INIT}` in the dry-run bwrap argv")
    out, k = [], 0
    while k < cut:
        if bwrap[k] == "--seccomp":
            k += 2
            continue
        out.append(bwrap[k])
        k += 1
    return out, ["--"] + payload


def b1(env, n):
    snug = [env.snug, "--", "true"]
    head, tail = reference(env.dry(["--", "true"])["bwrap"], ["true"])
    ref = head + tail
    helpers = floor_helpers(env.work)
    runs = [snug, ref]
    if helpers:
        nf, tiny = helpers
        # The floor's pieces, alternating with the two above: an exec of snug's binary, nest's
        # namespaces around bwrap alone, nestfloor's own exec, the harness's own spawn.
        runs += [[env.snug, "--version"], [nf] + ref, [nf], [tiny]]
    # Five runs of the same alternating rounds, one after the other: a bound that holds in some
    # runs and not in others is not held, so each run is a row and B1 passes when all do.
    target = "≤ 1.30× and ≤ floor + 0.50 ms"
    rows, held = [], []
    for k in range(n.b1_runs):
        got = alternate([lambda a=a: env.timed_usage(a) for a in runs], n.b1)
        wall = [[g[0] for g in col] for col in got]
        s, r = wall[0], wall[1]
        ratio = med(s) / med(r)
        if helpers:
            ver, nested, nf_alone, spawn = (med(w) for w in wall[2:6])
            # floor = bwrap alone + two execs of snug's binary (snug, then init) + the outer
            # pid namespace: 2·ver + nested − nf_alone − spawn (SPEC B1; BENCH.md says why).
            floor = 2 * ver + nested - nf_alone - spawn
            over = med(s) - floor
            ok = ratio <= 1.3 and over <= 0.5
            ref_text = f"bwrap alone {spread(r)}; floor {fmt_ms(floor)} (itself {floor / med(r):.2f}× bwrap alone)"
            ratio_text = f"{ratio:.2f}× bwrap alone; {over:+.2f} ms over the floor ({med(s) / floor:.2f}×)"
        else:
            floor, ok = None, ratio <= 1.3
            ref_text = f"bwrap alone {spread(r)}; floor not measured (no cc)"
            ratio_text = f"{ratio:.2f}×"
        held.append(ok)
        rows.append({
            "row": "B1" if n.b1_runs == 1 else f"B1 (run {k + 1} of {n.b1_runs})",
            "figure": f"startup `snug -- true`, median (p10–p90), {n.b1} runs each",
            "snug": spread(s), "ref": ref_text, "ratio": ratio_text, "target": target, "ok": ok,
        })
    if n.b1_runs > 1:
        rows.append({"row": "B1", "figure": f"both bounds in every one of the {n.b1_runs} runs above",
                     "snug": f"held in {sum(held)} of {n.b1_runs}", "target": f"{n.b1_runs} of {n.b1_runs}",
                     "ok": all(held)})
    # What follows (the tree's CPU, the floor's pieces, the breakdown) uses the last run.
    cpu = [[g[1] for g in col] for col in got]
    csw = [[g[2] for g in col] for col in got]
    rows.append({
        "row": "B1 (tree)", "figure": "the whole tree's CPU (utime+stime) and context switches per run, "
                                      "from wait4(2)'s rusage of the same runs, median",
        "snug": f"CPU {fmt_ms(med(cpu[0]))}, {med(csw[0]):.0f} switches",
        "ref": f"bwrap alone: CPU {fmt_ms(med(cpu[1]))}, {med(csw[1]):.0f} switches",
        "ratio": f"CPU {med(cpu[0]) / max(med(cpu[1]), 1e-9):.2f}×", "target": "—", "ok": None,
    })
    rows += tty_rows(env, n, snug, ref, med(s), med(r))
    shown = " ".join(shlex.quote(a) for a in ref)
    notes = [("B1: the reference", "\n".join([
        "bwrap alone runs the exact argv `snug --dry-run --json -- true` prints (key `bwrap`), same",
        "directory, same detached stdin, except: `--seccomp 5` is dropped (that descriptor exists only",
        "when snug starts bwrap), and what follows bwrap's `--` (`/run/snug/init --snug-init detached --",
        "true`, whose init needs snug's channel on fd 3) is plain `true`, run by bwrap as pid 1 with the",
        "same namespaces and mounts:",
        "",
        "```",
        shown,
        "```",
    ]))]
    if helpers:
        notes.append(("B1: the floor", floor_note(wall, floor)))
    notes.append(("B1: where snug's startup time goes", breakdown(env, n, head, med(s), med(r))))
    cuts = os.path.join(os.path.dirname(os.path.abspath(__file__)), "b1-cuts.md")
    if os.path.exists(cuts):
        with open(cuts) as f:
            notes.append(("B1: what was cut, what it saved, what did not pay", f.read()))
    if n.profile:
        try:
            prof = timeline.profile(env, ref)
        except Exception as e:  # optional: never costs the measured rows
            prof = f"Skipped: the profile failed ({type(e).__name__}: {e})."
        notes.append(("B1 profile: stages of one run (optional, perf)", prof))
    return rows, notes


def breakdown(env, n, head, snug_ms, ref_ms):
    """Medians of the pieces snug adds, each run alone and alternating with its baseline, to
    explain the B1 ratio without a profiler. Each piece is shown minus its baseline."""
    floor, alone = ["/usr/bin/true"], head + ["--", "true"]
    parts = [
        ("harness floor: spawn and reap `/usr/bin/true`", floor, None),
        ("bwrap alone (the B1 reference)", alone, None),
        ("a second exec of snug's binary, as init is: bwrap … `-- /run/snug/init --version`",
         head + ["--", INIT, "--version"], ([1], [], "bwrap alone")),
    ]
    empty = trivial_rust(env.work, len(parts))
    parts += empty
    std = ([4], [], "the empty static Rust program") if empty else ([0], [], "harness floor")
    parts.append(("snug's exec, std and clap start-up: `snug --version`", [env.snug, "--version"], std))
    parts.append(("snug's CLI, profile and policy, bwrap argv (no seccomp build): `snug --dry-run -- true`",
                  [env.snug, "--dry-run", "--", "true"], ([len(parts) - 1], [], "`snug --version`")))
    unshare = shutil.which("unshare")
    if unshare:
        at = len(parts)
        parts.append(("`unshare -f true` (unshare's own exec and fork)", [unshare, "-f", "true"],
                      ([0], [], "harness floor")))
        user = [] if os.geteuid() == 0 else ["--user", "--map-current-user"]  # as nest does
        parts.append(("a nest-like layer: `unshare -pmf --mount-proc` bwrap … `-- true`",
                      [unshare] + user + ["--pid", "--mount", "--fork", "--mount-proc"] + alone,
                      ([1, at], [0], "bwrap alone and unshare's own cost")))
    helpers = floor_helpers(env.work)
    if helpers and empty:
        # What every glibc process pays before main on this machine (CPUID-based cache and
        # feature probing, `init_cpu_features`): the static empty Rust program over no libc.
        parts.append(("a program that only exits, no libc (`_start: exit(0)`)", [helpers[1]],
                      ([0], [], "harness floor")))
        parts.append(("… the static empty Rust program again, for glibc's start-up", [empty[1][1][0]],
                      ([len(parts) - 1], [], "no libc: glibc's own start-up per exec")))
    parts += cgroup_attach(len(parts))
    got = alternate([lambda a=a: env.timed(a) for _, a, _ in parts], n.parts, warm=1)
    lines = [
        f"Medians of {n.parts} alternating runs each. The B1 runs above: snug {fmt_ms(snug_ms)}, bwrap alone "
        f"{fmt_ms(ref_ms)}, so snug adds {fmt_ms(snug_ms - ref_ms)}.",
        "",
        "| piece | median | p10–p90 | minus its baseline |",
        "|---|---|---|---|",
    ]
    for (name, _, base), xs in zip(parts, got):
        delta = "—"
        if base is not None:
            plus, minus, what = base
            extra = med(xs) - sum(med(got[i]) for i in plus) + sum(med(got[i]) for i in minus)
            delta = f"{extra:+.2f} ms over {what}"
        lines.append(f"| {name} | {fmt_ms(med(xs))} | {pct(xs, 10):.2f}–{pct(xs, 90):.2f} | {delta} |")
    return "\n".join(lines)


def cgroup_attach(at):
    """Rows for what K5's cgroup costs a run as root on a cgroup v1 `pids` hierarchy (this
    host): a child cgroup made below the bench's own, a process moving itself into it, the
    cgroup removed; against the same without the move. Writing a pid to `cgroup.procs` takes
    `cgroup_threadgroup_rwsem` for writing, which waits for an RCU grace period; writing `0`
    to `tasks` moves only the writing thread and skips that lock, which is how snug's nest
    (one thread, before it execs bwrap) enters. Skipped when not root or without v1 pids."""
    if os.geteuid() != 0:
        return []
    own = next((l.split(":", 2)[2] for l in open("/proc/self/cgroup").read().splitlines()
                if l.split(":")[1] == "pids"), None)
    base = "/sys/fs/cgroup/pids"
    if own is None or not os.path.isdir(base + own):
        return []
    d = os.path.join(base + own, f"snug-bench-{os.getpid()}")
    make = f"mkdir -p {d} && sh -c '%s' && rmdir {d}"
    return [
        ("a cgroup made and removed, nothing moved (baseline)", ["sh", "-c", make % "true"], None),
        ("the same with a process moving in through `cgroup.procs` (v1 `pids`: an RCU grace period)",
         ["sh", "-c", make % f"echo $$ > {d}/cgroup.procs"], ([at], [], "the baseline")),
        ("the same through `echo 0 > tasks` (the writing thread alone, as snug's nest enters K5's cgroup)",
         ["sh", "-c", make % f"echo 0 > {d}/tasks"], ([at], [], "the baseline")),
    ]


TRIVIAL = {
    "std": ("fn main() {}\n", []),
    "static": ("fn main() {}\n", ["-C", "target-feature=+crt-static"]),
    "bare": ('#![no_main]\n#[no_mangle]\npub extern "C" fn main(_: i32, _: *const *const u8) -> i32 { 0 }\n',
             ["-C", "target-feature=+crt-static"]),
}


def trivial_rust(work, at):
    """Rows for three empty Rust programs built here with rustc (skipped without it): how much of
    an exec of snug (snug itself, then again as init) is the dynamic loader (what `make build`'s
    static link saves per exec) and what is left of std's runtime set-up (what `#![no_main]`
    would save on top)."""
    rustc = shutil.which("rustc")
    if not rustc:
        return []
    built = {}
    for name, (src, flags) in TRIVIAL.items():
        path = os.path.join(work, f"trivial-{name}")
        with open(path + ".rs", "w") as f:
            f.write(src)
        r = subprocess.run([rustc, "-O", "-C", "panic=abort"] + flags + [path + ".rs", "-o", path],
                           capture_output=True, timeout=120)
        if r.returncode != 0:
            return []
        built[name] = path
    return [
        ("an empty Rust program, dynamic, std's `main` (as `cargo build` links)", [built["std"]],
         ([0], [], "harness floor")),
        ("an empty Rust program, static (`crt-static`), std's `main` (as `make build` links snug)",
         [built["static"]], ([at], [], "the dynamic one")),
        ("an empty Rust program, static and `#![no_main]`", [built["bare"]], ([at + 1], [], "the static std one")),
    ]


def net_available(env):
    """(True, "") when `snug -p @net -- true` exits 0, else (False, why)."""
    try:
        r = subprocess.run([env.snug, "-p", "@net", "--", "true"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return False, "`snug -p @net -- true` did not end within 20 s"
    if r.returncode != 0:
        return False, f"`snug -p @net -- true` exit {r.returncode}: {r.stderr.strip()[:160]}"
    return True, ""


# What snug asks of pasta too (src/net.rs): configure the namespace, forward no ports, no
# gateway mapping. Without --foreground pasta returns once the namespace is configured.
PASTA_FLAGS = ["--config-net", "--quiet", "--no-map-gw", "--tcp-ports", "none", "--udp-ports", "none",
               "--tcp-ns", "none", "--udp-ns", "none"]


def high(fd):
    """A close-on-exec copy of fd at 100 or above; fd itself is closed."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(fd)
    return new


NS_GET_USERNS = 0xB701  # _IO(0xb7, 0x1), include/uapi/linux/nsfs.h


def wait_mapped(pid, within=2.0):
    """Unprivileged, bwrap reports its child's pid before the child has written its own id maps;
    pasta joining the user namespace then fails ("Couldn't switch to pasta namespaces")."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        maps = []
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}") as f:
                maps.append(f.read().strip())
        if all(maps):
            return
        time.sleep(0.0002)
    raise Failed(f"bwrap's child {pid} wrote no uid map within {within} s")


def pasta_by_hand(env, head, tail):
    """(ms to bwrap's exit, ms until pasta is gone too) for bwrap with `--info-fd 3
    --block-fd 4` and pasta attached to bwrap's child by hand.

    `pasta [flags] PID` joins that child's user and network namespaces, configures them and
    returns (daemonized, its pid in a file) once done; then bwrap is released to run the
    payload with the network up (N3). pasta does not notice the namespace is gone (it ran on
    for minutes here), so it is stopped like snug stops its own (SIGTERM) and reaped: we are a
    child subreaper while this runs. The second figure carries the guarantee snug gives (N2).
    """
    info_r, info_w = os.pipe()
    blk_r, blk_w = os.pipe()
    # Sources above 100 (close-on-exec) so the dup2s onto 3 and 4 cannot clobber each other.
    info_w, blk_r = (high(fd) for fd in (info_w, blk_r))
    argv = head + ["--info-fd", "3", "--block-fd", "4"] + tail
    runas = ["--runas", "0:0"] if os.getuid() == 0 else []  # pasta drops root to nobody otherwise
    pidfile = os.path.join(env.work, ".pasta.pid")
    acts = [(os.POSIX_SPAWN_DUP2, env.null, 0), (os.POSIX_SPAWN_DUP2, env.null, 1),
            (os.POSIX_SPAWN_DUP2, env.null, 2), (os.POSIX_SPAWN_DUP2, info_w, 3),
            (os.POSIX_SPAWN_DUP2, blk_r, 4)]
    t0 = now_ns()
    pid = spawn(argv, acts)
    os.close(info_w)
    os.close(blk_r)
    buf = b""
    while b"}" not in buf:
        chunk = os.read(info_r, 4096)
        if not chunk:
            break
        buf += chunk
    os.close(info_r)
    daemon = None
    try:
        child = json.loads(buf[: buf.index(b"}") + 1])["child-pid"]
        wait_mapped(child)
        # The user namespace that owns the network namespace, as snug finds it: bwrap may since
        # have moved its child into a nested one (`pasta PID` would join that and fail).
        netns = os.open(f"/proc/{child}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        owner = fcntl.ioctl(netns, NS_GET_USERNS)
        netns, owner = high(netns), high(owner)  # no dup2 below clobbers the other
        # pasta opens the owner through a descriptor it inherits at 5 (as root too: bwrap's
        # --disable-userns moves its child into a nested user namespace, so the child's own
        # ns/user is not the owner; and pasta, having dropped root's capabilities, may not
        # open our descriptors through /proc/<bench>/fd).
        # As root, bwrap may leave the network namespace owned by our own user namespace,
        # which setns(2) refuses to join again (EINVAL): then pasta is given none, and the
        # network namespace through a descriptor at 6 as well (having dropped root's
        # capabilities, it may not open bwrap's child's /proc entries).
        mine, theirs = os.stat("/proc/self/ns/user"), os.fstat(owner)
        own = (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)
        ns = (["--netns", "/proc/self/fd/6"] if own
              else ["--userns", "/proc/self/fd/5", "--netns", f"/proc/{child}/ns/net"])
        pasta = ["pasta"] + PASTA_FLAGS + runas + ["--pid", pidfile] + ns
        if os.path.exists(pidfile):
            os.unlink(pidfile)
        err = os.open(pidfile + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            pasta_fds = acts[:2] + [(os.POSIX_SPAWN_DUP2, err, 2), (os.POSIX_SPAWN_DUP2, owner, 5),
                                    (os.POSIX_SPAWN_DUP2, netns, 6)]
            status = os.waitpid(spawn(pasta, pasta_fds), 0)[1]
        finally:
            os.close(err)
            os.close(owner)
            os.close(netns)
        if status != 0:
            with open(pidfile + ".err") as f:
                said = f.read().strip().splitlines()[-1:] or [""]
            raise Failed(f"pasta by hand: status {status}: {said[0]}")
        with open(pidfile) as f:
            daemon = int(f.read())
        os.write(blk_w, b"x")
    finally:
        os.close(blk_w)
        _, st = os.waitpid(pid, 0)
        t1 = now_ns()
        if daemon:
            os.kill(daemon, signal.SIGTERM)
            os.waitpid(daemon, 0)
    t2 = now_ns()
    if st != 0:
        raise Failed(f"bwrap + pasta by hand: status {st}")
    return (t1 - t0) / 1e6, (t2 - t0) / 1e6


# Exits 0 only when the sandbox has an IPv4 route (pasta's default route): a header line and more.
ROUTED = ["sh", "-c", "test $(wc -l </proc/net/route) -gt 1"]


def b1_net(env, n):
    figure = "startup `snug -p @net -- true` (pasta)"
    ok, why = net_available(env)
    if not ok:
        row = {"row": "B1 @net", "figure": figure, "snug": f"not measured: @net not available ({why})",
               "ref": "bwrap + pasta by hand", "target": "≤ 1.20×", "ok": None}
        return [row], []
    d = env.dry(["-p", "@net", "--", "true"])
    head, tail = reference(d["bwrap"], ["true"])
    subreaper(True)
    try:
        # The reference really has a network, and the check would see a missing one.
        pasta_by_hand(env, head, ["--"] + ROUTED)
        try:
            env.timed(head + ["--"] + ROUTED)
            raise Failed("the route check passes without pasta: it proves nothing")
        except Failed as e:
            if "proves nothing" in str(e):
                raise
        env.timed([env.snug, "-p", "@net", "--"] + ROUTED)
        bwrap_only = []

        def ref():
            to_bwrap, to_gone = pasta_by_hand(env, head, tail)
            bwrap_only.append(to_bwrap)
            return to_gone

        s, r = alternate([lambda: env.timed([env.snug, "-p", "@net", "--", "true"]), ref], n.b1)
        bwrap_only = bwrap_only[-len(r):]  # drop the warm-up rounds
    finally:
        subreaper(False)
    ratio, ratio_bwrap = med(s) / med(r), med(s) / med(bwrap_only)
    row = {"row": "B1 @net", "figure": figure + f", median (p10–p90), {n.b1} runs each", "snug": spread(s),
           "ref": f"bwrap + pasta by hand, until pasta is gone too: {spread(r)}; until bwrap exits, pasta "
                  f"left running: {spread(bwrap_only)}",
           "ratio": f"{ratio:.2f}× ({ratio_bwrap:.2f}× against bwrap's exit)", "target": "≤ 1.20×",
           "ok": ratio <= 1.2}
    note = "\n".join([
        "snug's own pasta command line (dry-run): `" + " ".join(d.get("pasta", ["(not shown)"])) + "`.",
        "The reference starts bwrap with `--info-fd 3 --block-fd 4`, runs `pasta " + " ".join(PASTA_FLAGS),
        "--pid FILE PID` (`--runas 0:0` as root) against bwrap's child, which returns once the namespace",
        "is configured, then releases bwrap to run `true`. pasta attached this way does not notice the",
        "namespace is gone (it ran on for minutes here), so after bwrap exits it gets SIGTERM and is",
        "reaped, as snug does with its own (N2); pass/fail uses that figure, and the ratio against",
        "bwrap's exit alone is shown beside it. pasta's exit takes tens of milliseconds even on SIGKILL:",
        "closing its tap device waits for RCU in the kernel (`tun_chr_close` → `netdev_run_todo` →",
        "`rcu_barrier`, seen with `perf record -g -e sched:sched_switch`). Checked first: the payload",
        "sees an IPv4 route under snug and under the reference, and none under bwrap alone.",
    ])
    return [row], [("B1 @net: the reference", note)]
