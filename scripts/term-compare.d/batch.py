"""Scenarios about how the launcher ends and what the caller's shell or script sees: loops
stopped by ^C, hangup of the terminal, a closed stdout, deaths by signal, /dev/tty prompts in a
pipeline, kill -9 of the launcher. Same conventions as interactive.py.
"""

import os
import re
import signal
import time

import pane as P


def _loop_result(out):
    went_on = [w for w in ("it2", "it3", "LOOPEND") if re.search(rf"^{w}$", out, re.M)]
    return went_on


def loop_interactive(p, C, ctx):
    n = p.last
    p.type(f"for i in 1 2 3; do {C}sleep 5; echo it$i; done; echo LOOPEND")
    time.sleep(1.0)
    p.keys("C-c")
    rc, out = p.prompt_after(n, 18)
    if rc is None:
        return False, "no prompt"
    went = _loop_result(out)
    if went:
        return False, f"loop went on ({', '.join(went)}), rc {rc}"
    return True, f"loop stopped, rc {rc}"


def loop_script(p, C, ctx):
    with open(os.path.join(ctx.work, "loop.sh"), "w") as f:
        f.write(f"for i in 1 2 3; do {C}sleep 5; echo it$i; done; echo LOOPEND\n")
    n = p.last
    p.type("bash loop.sh")
    time.sleep(1.0)
    p.keys("C-c")
    rc, out = p.prompt_after(n, 18)
    if rc is None:
        return False, "no prompt"
    went = _loop_result(out)
    if went:
        return False, f"script went on ({', '.join(went)}), rc {rc}"
    return rc == 130, f"script stopped, rc {rc}"


def _kill_window(via_shell):
    """A second window runs the launcher, its payload ignoring SIGHUP (the disposition
    survives exec); kill-window hangs up the terminal. The launcher is the window's process
    (the session leader) or a job of an interactive bash there. The payload is found by its
    unique argv. Only the payload ignores HUP: a launcher started with HUP ignored would
    rightly keep it ignored, as nohup asks."""
    def scenario(p, C, ctx):
        mark = f"61.{os.getpid() % 1000}{int(via_shell)}{ctx.column_no}"
        payload = ["sleep", mark]
        line = f"{C}sh -c 'trap \"\" HUP; exec sleep {mark}'"
        if via_shell:
            p.tmux("new-window", "-d", "-n", "hup", "-t", "cmp", "--", "bash", "--norc", "--noprofile", "-i")
            time.sleep(0.5)
            p.tmux("send-keys", "-t", "cmp:hup", "-l", line)
            p.tmux("send-keys", "-t", "cmp:hup", "Enter")
        else:
            p.tmux("new-window", "-d", "-n", "hup", "-t", "cmp", "--", "sh", "-c", "exec " + line)
        end = time.monotonic() + 8
        while not P.find(payload) and time.monotonic() < end:
            time.sleep(0.05)
        if not P.find(payload):
            return False, "payload did not start"
        time.sleep(0.3)
        t0 = time.monotonic()
        p.tmux("kill-window", "-t", "cmp:hup")
        while P.find(payload) and time.monotonic() - t0 < 3.0:
            time.sleep(0.02)
        left = P.find(payload)
        took = time.monotonic() - t0
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        if left:
            return False, "payload still there 3 s after the hangup"
        return took <= 1.5, f"payload gone in {took * 1000:.0f} ms"
    scenario.__name__ = "kill_window_shell" if via_shell else "kill_window"
    return scenario


kill_window, kill_window_shell = _kill_window(False), _kill_window(True)


def closed_stdout(p, C, ctx):
    rc, out = p.run(f"{C}sh -c 'echo x' >&-", 8)
    if rc is None:
        return False, "no prompt"
    printed = re.search(r"^x$", out, re.M) is not None
    ctx.notes["closed_rc"] = rc
    ref = ctx.ref.get("closed_rc")
    why = f"rc {rc}" + (", x reached the terminal" if printed else "")
    if ref is None:
        return rc != 0 and not printed, why
    return rc == ref and not printed, why + ("" if rc == ref else f" (without: {ref})")


def _death(sig, want):
    def scenario(p, C, ctx):
        rc, _ = p.run(f"{C}sh -c 'kill -{sig} $$'", 8)
        if rc is None:
            return False, "no prompt"
        return rc == want, f"$? {rc}"
    scenario.__name__ = f"death_{sig.lower()}"
    return scenario


death_term, death_int, death_segv = _death("TERM", 143), _death("INT", 130), _death("SEGV", 139)


def _tty_read(line):
    def scenario(p, C, ctx):
        return tty_read(p, line.format(C=C))
    return scenario


def tty_read(p, line):
    n = p.last
    p.type(line)
    time.sleep(0.8)
    p.type("hello-tty")
    if not p.wait(r"^got:hello-tty$", 4, after=n):
        p.prompt_after(n, 2)
        err = re.search(r"/dev/tty: (.*)$", p.since(n), re.M)
        return False, "read from /dev/tty failed" + (f": {err.group(1).strip()}" if err else "")
    rc, _ = p.prompt_after(n, 4)
    return rc == 0, f"read it, rc {rc}"


tty_read_out = _tty_read("{C}sh -c 'read x </dev/tty && echo got:$x' | cat")
tty_read_in = _tty_read("echo | {C}sh -c 'read x </dev/tty && echo got:$x'")


KILL9 = """STTY_AT_START=$(stty -g)
{C}sh -c 'stty raw -echo; echo RAW; exec sleep {mark}'
echo "after=$?"
sleep 0.2
[ "$(stty -g)" = "$STTY_AT_START" ] && echo STTY=same || echo STTY=changed
read x; echo "got:$x"
"""


def _kill9(shell):
    def scenario(p, C, ctx):
        mark = f"31.{os.getpid() % 1000}{ctx.column_no}"
        with open(os.path.join(ctx.work, "k9.sh"), "w") as f:
            f.write(KILL9.format(C=C, mark=mark))
        n = p.last
        p.type(f"{shell} k9.sh")
        if not p.wait(r"RAW", 8, after=n):
            return False, "payload did not start"
        script = [c for c in P.children(p.pane_pid()) if P.cmdline(c)[:1] == [shell.encode()]]
        launcher = P.children(script[0]) if script else []
        if not launcher:
            return False, "launcher not found"
        os.kill(launcher[0], signal.SIGKILL)
        m = p.wait(r"STTY=(\w+)", 4, after=n)
        if not m:
            return False, "script did not go on after kill -9"
        raw = m.group(1) != "same"
        # ^J, not Enter: a raw terminal maps no CR to NL, and this probes job control only
        # (is the script's read stopped by a foreground group left to the dead launcher?)
        p.type("hello-k9", enter=False)
        p.keys("C-j")
        got = p.wait(r"got:hello-k9", 3, after=n) is not None
        for pid in P.find(["sleep", mark]):
            os.kill(pid, signal.SIGKILL)
        p.prompt_after(n, 3)
        why = ("terminal left raw" if raw else "not raw") + ", " + ("next read works" if got else "next read stuck")
        return (not raw and got), why
    scenario.__name__ = f"kill9_{shell}"
    return scenario


kill9_bash, kill9_dash = _kill9("bash"), _kill9("dash")


STEAL = """import os, select, time
if os.fork() == 0:
    os.setsid()  # out of the caller's session: job control no longer stops its reads
    got, end = b"", time.time() + 3
    while time.time() < end:
        if select.select([0], [], [], 0.1)[0]:
            try:
                got += os.read(0, 1024)
            except OSError:
                break
    open("stolen.out", "wb").write(got)
    os._exit(0)
time.sleep(4)
"""


def steal(p, C, ctx):
    """`C python3 steal.py &`: a process of the payload that leaves the session (setsid) and
    reads its stdin while the person types five lines to their shell (SPEC T11)."""
    with open(os.path.join(ctx.work, "steal.py"), "w") as f:
        f.write(STEAL)
    out_file = os.path.join(ctx.work, "stolen.out")
    if os.path.exists(out_file):
        os.unlink(out_file)
    n = p.last
    p.type(f"{C}/usr/bin/python3 steal.py &")
    p.prompt_after(n, 5)
    time.sleep(1.0)
    for i in range(1, 6):
        p.type(f"echo LINE{i}")
        time.sleep(0.15)
    end = time.monotonic() + 6
    while not os.path.exists(out_file) and time.monotonic() < end:
        time.sleep(0.1)
    time.sleep(0.2)
    stolen = open(out_file, "rb").read() if os.path.exists(out_file) else b""
    ran = len(re.findall(r"^LINE\d$", p.since(n), re.M))
    p.type("wait")  # the background job, so the end check finds no job left
    why = f"{ran}/5 lines ran intact, payload read {len(stolen)} bytes"
    return ran == 5 and not stolen, why
