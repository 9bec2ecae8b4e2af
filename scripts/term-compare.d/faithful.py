"""Scenarios of a faithful sandbox terminal (SPEC T14–T17): keys whenever they would arrive
without a launcher, ^S/^Q, output paused while the payload ends, programs sharing the
terminal, resizes in every topology. Same shape as interactive.py: (pane, C, ctx) → (ok, why).
"""

import os
import re
import time

from pane import COLS, ROWS

POLLER = r"""import fcntl, os, termios, time, tty
old, flags = termios.tcgetattr(0), fcntl.fcntl(0, fcntl.F_GETFL)
tty.setcbreak(0)
fcntl.fcntl(0, fcntl.F_SETFL, flags | os.O_NONBLOCK)
print("poller-ready", flush=True)
end = time.monotonic() + 20
while time.monotonic() < end:
    try:
        k = os.read(0, 16).decode()
        print(f"key:{k}:", flush=True)
        if "q" in k:
            break
    except BlockingIOError:
        pass
    time.sleep(0.2)
fcntl.fcntl(0, fcntl.F_SETFL, flags)
termios.tcsetattr(0, termios.TCSADRAIN, old)
"""

STEADY = ("import time\nfor i in range(1, 301):\n    print(f'n{i:03}', flush=True)\n"
          "    time.sleep(0.02)\n")

PAUSED = "echo paused-ready\nwhile [ ! -e \"$1\" ]; do sleep 0.01; done\nseq 1 12000\n"

LINE_ASKER = """name=$1
[ "$2" = - ] || while [ ! -e "$2" ]; do sleep 0.01; done
echo "$name-asks" >/dev/tty
read x </dev/tty
echo "$name-got-$x" >/dev/tty
while [ ! -e "$3" ]; do sleep 0.01; done
"""

KEYS_ASKER = """[ "$2" = - ] || while [ ! -e "$2" ]; do sleep 0.01; done
old=$(stty -g </dev/tty)
stty intr ^G </dev/tty
sh "$(dirname "$0")/line.sh" "$1" - "$3"
stty "$old" </dev/tty
"""

WINCH = r"""import fcntl, os, signal, struct, termios
fd = os.open("/dev/tty", os.O_RDONLY)
def size():
    r, c = struct.unpack("hhhh", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))[:2]
    return f"{c}x{r}"
n = 0
def winch(*_):
    global n
    n += 1
    os.write(2, f"winch{n}={size()};\n".encode())
signal.signal(signal.SIGWINCH, winch)
os.write(2, b"winch-ready\n")
while n < 5:
    signal.pause()
"""


def _script(ctx, name, body):
    path = os.path.join(ctx.work, name)
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, 0o644)
    return path


def poller(p, C, ctx):
    """A cbreak payload reading with O_NONBLOCK between 200 ms sleeps gets a key (T15)."""
    s = _script(ctx, "poller.py", POLLER)
    n = p.last
    p.type(f"{C}python3 {s}")
    if not p.wait(r"^poller-ready", 8, after=n):
        return False, "the poller did not start"
    time.sleep(0.3)
    t0 = time.monotonic()
    p.keys("a")
    got = p.wait(r"^key:a:", 5, after=n)
    ms = (time.monotonic() - t0) * 1000
    p.keys("q")
    rc, _ = p.prompt_after(n, 8)
    if not got:
        return False, "the key never arrived"
    return (ms <= 500 and rc == 0), f"key after {ms:.0f} ms (50 ms polling of the pane included)"


def _inner_prompts(p, n):
    return len(re.findall(r"inner\$ ", p.since(n)))


def pager_inside(p, C, ctx):
    """`C bash -i`, then `seq 3 | less` and `{ seq 3; sleep 3; } | less`, q each (T15)."""
    n = p.last
    p.type(f"{C}env PS1='in''ner$ ' bash --norc --noprofile -i")
    if not p.wait(r"inner\$ ", 8, after=n):
        return False, "no inner prompt"
    done = []
    for line in ["seq 3 | less", "{ seq 3; sleep 3; } | less"]:
        k = _inner_prompts(p, n)
        p.type(line)
        time.sleep(1.0)
        p.keys("q")
        end = time.monotonic() + 8
        while _inner_prompts(p, n) <= k and time.monotonic() < end:
            time.sleep(0.1)
        if _inner_prompts(p, n) <= k:
            return False, f"`{line}`: q did not end less"
        done.append(line)
    p.type("exit")
    rc, _ = p.prompt_after(n, 5)
    return rc == 0, "q ended both pagers"


def ixon(p, C, ctx):
    """^S during steady output: nothing for 1 s; ^Q: the rest, in order (T15)."""
    s = _script(ctx, "steady.py", STEADY)
    n = p.last
    p.type(f"{C}python3 {s}")
    if not p.wait(r"^n010$", 8, after=n):
        return False, "no output"
    p.keys("C-s")
    time.sleep(0.3)
    a = p.since(n)
    time.sleep(1.0)
    grew = len(p.since(n)) - len(a)
    p.keys("C-q")
    rc, out = p.prompt_after(n, 20)
    if rc is None:
        return False, "no prompt after ^Q"
    nums = [int(x) for x in re.findall(r"^n(\d{3})$", out, re.M)]
    in_order = nums == list(range(1, 301))
    return (grew == 0 and in_order), f"{grew} chars shown while paused; {len(nums)} lines after ^Q" + (
        ", in order" if in_order else ", NOT all in order")


def paused_drain(p, C, ctx):
    """60 KB written, payload ended, while paused 5 s: every line after ^Q (T14)."""
    s = _script(ctx, "paused.sh", PAUSED)
    go = os.path.join(ctx.work, f"go-{ctx.column_no}")
    n = p.last
    p.type(f"{C}sh {s} {go}")
    if not p.wait(r"^paused-ready$", 8, after=n):
        return False, "the payload did not start"
    time.sleep(0.3)
    p.keys("C-s")
    open(go, "w").close()
    time.sleep(5)
    p.keys("C-q")
    rc, out = p.prompt_after(n, 20)
    if rc is None:
        return False, "no prompt after ^Q"
    # The pane keeps the last 2000 lines: those must be the last ones, in order.
    nums = [int(x) for x in re.findall(r"^(\d+)$", out, re.M)]
    tail = nums and nums == list(range(12001 - len(nums), 12001))
    return (bool(tail) and rc == 0), (f"lines {nums[0]}–{nums[-1]} shown in order, rc {rc}" if tail
                                      else f"{len(nums)} lines, last {nums[-1] if nums else None}, rc {rc}")


def _shared(p, C, ctx, left, first, gone):
    """`LEFT A | C line.sh B`: `first` asks and is answered before the other asks, `gone`
    leaves first; the end check compares `stty -g` (T16)."""
    _script(ctx, "line.sh", LINE_ASKER)
    _script(ctx, "keys.sh", KEYS_ASKER)
    no = ctx.column_no
    go = {x: os.path.join(ctx.work, f"go-{x}-{no}") for x in "AB"}
    leave = {x: os.path.join(ctx.work, f"leave-{x}-{no}") for x in "AB"}
    second = "B" if first == "A" else "A"
    arg = {x: f"{x} {'-' if x == first else go[x]} {leave[x]}" for x in "AB"}
    n = p.last
    p.type(f"{left} {arg['A']} | {C}sh {ctx.work}/line.sh {arg['B']}")
    for who, key in [(first, "one"), (second, "two")]:
        if who == second:
            open(go[second], "w").close()
        if not p.wait(rf"{who}-asks", 8, after=n):
            return False, f"{who} never asked"
        time.sleep(0.3)
        # LF, not Enter: a plain reader of a terminal that a launcher holds raw gets no
        # newline from CR (no ICRNL there); that difference is not what this row is about.
        p.type(key, enter=False)
        p.keys("C-j")
        if not p.wait(rf"{who}-got-{key}", 5, after=n):
            return False, f"{who} never got its line"
    open(leave[gone], "w").close()
    time.sleep(1.0)
    open(leave["B" if gone == "A" else "A"], "w").close()
    rc, _ = p.prompt_after(n, 8)
    return rc is not None, f"{first} asked first, {gone} left first"


def shared_first_first(p, C, ctx):
    return _shared(p, C, ctx, f"{C}sh {ctx.work}/keys.sh", "A", "A")


def shared_second_first(p, C, ctx):
    return _shared(p, C, ctx, f"{C}sh {ctx.work}/keys.sh", "A", "B")


def shared_plain_read(p, C, ctx):
    return _shared(p, C, ctx, f"sh {ctx.work}/line.sh", "B", "B")


def _resize(p, C, ctx, shape):
    s = _script(ctx, "winch.py", WINCH)
    n = p.last
    p.type(shape.format(C=C, s=s))
    if not p.wait(r"^winch-ready", 8, after=n):
        return False, "the payload did not start"
    time.sleep(0.3)
    seen = 0
    for i in range(1, 6):
        p.resize(70 + i, 20 + i)
        if p.wait(rf"winch{i}={70 + i}x{20 + i};", 3, after=n):
            seen += 1
        else:
            break
    if "cat |" in shape:
        p.keys("C-d")
    rc, _ = p.prompt_after(n, 5 if seen == 5 else 1)
    if rc is None:
        p.keys("C-c")
        p.keys("C-d")
        p.prompt_after(n, 3)
    p.resize(COLS, ROWS)
    time.sleep(0.3)
    return seen == 5, f"{seen} of 5 resizes reported with the new size"


def resize_stdin_null(p, C, ctx):
    return _resize(p, C, ctx, "{C}python3 {s} </dev/null")


def resize_stdout_pipe(p, C, ctx):
    return _resize(p, C, ctx, "{C}python3 {s} | cat")


def resize_stdin_pipe(p, C, ctx):
    return _resize(p, C, ctx, "cat | {C}python3 {s}")
