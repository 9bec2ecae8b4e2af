"""Scenarios a person plays at a terminal: pagers, REPLs, editors, job control, resizing.

Each takes (pane, C, ctx): C is the launcher prefix typed before the command ("" for none,
"/path/snug -- ", "sudo -- "); it returns (ok, why), ok True, False or "note" (a behaviour
recorded, not judged). The pane's end check (tty settings, jobs left) runs afterwards.
"""

import re
import time

PY = "/usr/bin/python3"


def less(p, C, ctx):
    n = p.last
    p.type(f"seq 1000 | {C}less")
    if not p.wait(r"^29$", 8, after=n):
        return False, "less showed no page"
    time.sleep(0.2)
    p.keys("q")
    rc, out = p.prompt_after(n, 5)
    if rc is None:
        return False, "no prompt after q"
    if "Stopped" in out:
        return False, "pager Stopped"
    return (rc == 0, f"rc {rc}")


def cat_eof(p, C, ctx):
    n = p.last
    p.type(f"{C}cat")
    time.sleep(0.3)
    p.type("hello-cat")
    if not p.wait(r"^hello-cat\n(.*\n)*hello-cat$", 5, after=n):
        return False, "line not echoed back by cat"
    p.keys("C-d")
    rc, out = p.prompt_after(n, 5)
    if rc is None:
        return False, "^D did not end cat"
    return rc == 0, f"rc {rc}"


def python_repl(p, C, ctx):
    n = p.last
    p.type(f"{C}{PY} -q")
    if not p.wait(r"^>>>", 8, after=n):
        return False, "no >>> prompt"
    for i in range(1, 4):
        p.keys("C-c")
        if not p.wait(r"(KeyboardInterrupt(.|\n)*){%d}" % i, 3, after=n):
            return False, f"^C #{i}: no KeyboardInterrupt"
        if p.prompt_after(n, 0)[0] is not None:
            return False, f"^C #{i} ended the REPL"
    p.type("print(6*7)")
    if not p.wait(r"^42$", 3, after=n):
        return False, "REPL dead after ^C ^C ^C"
    p.type("exit()")
    rc, _ = p.prompt_after(n, 5)
    if rc is None:
        return False, "exit() did not return"
    return rc == 0, f"3 × KeyboardInterrupt, rc {rc}"


def _stopped(p, n, what):
    rc, out = p.prompt_after(n, 4)
    if rc is None:
        return f"{what}: no prompt after ^Z"
    if "Stopped" not in out:
        return f"{what}: prompt but no 'Stopped' ({out.strip()[-40:]!r})"
    return None


def sleep_jobs(p, C, ctx):
    n = p.last
    p.type(f"{C}sleep 30")
    time.sleep(0.8)
    p.keys("C-z")
    if err := _stopped(p, n, "^Z"):
        return False, err
    n = p.last
    p.type("fg")
    time.sleep(1.0)
    rc, out = p.prompt_after(n, 0)
    if rc is not None:
        return False, f"fg returned at once (rc {rc})"
    p.keys("C-z")
    if err := _stopped(p, n, "2nd ^Z"):
        return False, err
    rc, _ = p.run("bg")
    rc, out = p.run("sleep 0.3; jobs")
    if not re.search(r"Running", out):
        return False, f"after bg: {out.strip()[-50:]!r}"
    rc, out = p.run("kill %1; wait %1; echo W=$?", 5)
    m = re.search(r"^W=(\d+)", out, re.M)
    if not m:
        return False, "kill %1 / wait did not finish"
    return m.group(1) == "143", f"^Z fg ^Z bg run, kill → {m.group(1)}"


def vim(p, C, ctx):
    n = p.last
    p.type(f"{C}vim -u NONE -i NONE -N -n")
    if not p.wait(r"(^~\s*\n){5}", 8, after=n):
        return False, "vim screen not drawn"
    p.type("iHELLO-VIM", enter=False)
    p.keys("Escape")
    time.sleep(0.3)
    p.keys("C-z")
    if err := _stopped(p, n, "^Z"):
        return False, err
    n = p.last
    p.type("fg")
    if not p.wait(r"^HELLO-VIM\s*\n(~\s*\n){3}", 5, after=n) and not p.wait(r"^HELLO-VIM", 0.1):
        return False, "vim not redrawn after fg"
    time.sleep(0.3)
    p.type(":q!")
    rc, out = p.prompt_after(n, 5)
    if rc is None:
        return False, "no prompt after :q!"
    return rc == 0, f"^Z, fg redrawn, rc {rc}"


INNER = r"^bash-[\d.]+[#$]"


def bash_inner(p, C, ctx):
    n = p.last
    p.type(f"{C}bash --norc --noprofile -i")
    if not p.wait(INNER, 8, after=n):
        return False, "no inner prompt"
    if p.wait(r"no job control|cannot set terminal process group", 0.2, after=n):
        return False, "inner bash: no job control"
    p.type("sleep 60")
    time.sleep(0.5)
    p.keys("C-z")
    if not p.wait(r"Stopped\s+sleep 60", 3, after=n):
        return False, "inner ^Z did not stop sleep"
    p.type("jobs; fg")
    time.sleep(0.8)
    p.keys("C-c")
    p.type("echo IN=$?")
    if not p.wait(r"^IN=130", 3, after=n):
        return False, "inner fg + ^C: no IN=130"
    p.type("exit 0")
    rc, _ = p.prompt_after(n, 5)
    if rc is None:
        return False, "outer prompt did not return"
    if p.wait(r"no job control|cannot set terminal process group", 0, after=n):
        return False, "inner bash: no job control"
    return rc == 0, f"^Z jobs fg ^C → 130, rc {rc}"


def sort(p, C, ctx):
    rc, out = p.run(f"printf 'b\\na\\n' | {C}sort", 8)
    if rc is None:
        return False, "no prompt"
    ok = re.search(r"^a\nb$", out, re.M) is not None
    return ok and rc == 0, f"rc {rc}" + ("" if ok else f", got {out.strip()[-20:]!r}")


def resize(p, C, ctx):
    from pane import COLS, ROWS
    n = p.last
    p.type(f"{C}sh -c 'stty size; read x; stty size'")
    if not p.wait(rf"^{ROWS} {COLS}$", 8, after=n):
        return False, "payload's first stty size is not the terminal's"
    p.resize(80, 24)
    time.sleep(0.5)
    p.type("")
    rc, out = p.prompt_after(n, 5)
    p.resize(COLS, ROWS)
    time.sleep(0.2)
    if rc is None:
        return False, "no prompt"
    sizes = re.findall(r"^(\d+ \d+)$", out, re.M)
    return (sizes[-1:] == ["24 80"]), f"payload saw {' → '.join(sizes)}"


def typeahead(p, C, ctx):
    """Keys typed while `CMD sleep 2` runs: with no launcher they wait in the terminal and the
    shell runs them afterwards. Recorded, judged against the none column."""
    n = p.last
    p.type(f"{C}sleep 2")
    time.sleep(0.6)
    p.type("echo TYPED-AHEAD")
    rc, _ = p.prompt_after(n, 6)
    if rc is None:
        return False, "no prompt"
    time.sleep(0.8)
    ran = p.wait(r"^TYPED-AHEAD$", 0.5, after=n) is not None
    what = "typed line ran after" if ran else "typed line lost"
    ctx.notes["typeahead"] = ran
    ref = ctx.ref.get("typeahead")
    return ("note" if ref is None else ran == ref), what


def less_writer(p, C, ctx):
    """The launcher writes into a pipe and the pager reads the terminal (T13)."""
    n = p.last
    p.type(f"{C}seq 1000 | less")
    if not p.wait(r"^29$", 8, after=n):
        return False, "less showed no page"
    time.sleep(0.3)
    p.keys("G")
    if not p.wait(r"^1000$", 3, after=n):
        return False, "G did not reach the end"
    p.keys("q")
    rc, out = p.prompt_after(n, 5)
    if rc is None:
        return False, "no prompt after q"
    if "Stopped" in out:
        return False, "pager Stopped"
    return rc == 0, f"G, q, rc {rc}"


def background_read(p, C, ctx):
    """`C cat &` stops on reading the terminal as a background job does, fg gives it the keys (T8)."""
    n = p.last
    p.type(f"{C}cat &")
    if p.prompt_after(n, 5)[0] is None:
        return False, "no prompt after &"
    time.sleep(1.0)
    rc, out = p.run("jobs", 5)
    if rc is None:
        return False, "`jobs` typed to the shell got no answer (the background job read it?)"
    if not re.search(r"Stopped", out):
        return False, f"not stopped in the background: {out.strip()[-40:]!r}"
    n = p.last
    p.type("fg")
    time.sleep(0.5)
    p.type("bg-line")
    if not p.wait(r"^bg-line\n(.*\n)*bg-line$", 4, after=n):
        return False, "after fg the line did not come back"
    p.keys("C-d")
    rc, _ = p.prompt_after(n, 5)
    if rc is None:
        return False, "^D did not end it"
    return rc == 0, f"Stopped (tty input), fg, rc {rc}"


def drain(p, C, ctx):
    """Every byte written before the payload exits reaches the terminal (T14)."""
    rc, out = p.run(f"{C}seq 20000", 20)
    if rc is None:
        return False, "no prompt"
    last = re.findall(r"^(\d+)$", out, re.M)[-1:]
    return last == ["20000"] and rc == 0, f"last line {last[0] if last else 'none'}, rc {rc}"
