"""A real terminal to drive: one tmux server of our own (`tmux -L snugcmp-PID-N`), one
window whose pane runs an interactive bash, the "caller's shell", with job control.

The prompt carries a counter and the last status, `[P<n> rc=<status>]# `, so a scenario can wait
for "the next prompt" and read `$?` from the screen without typing anything that would
disturb what it measures. Every wait is bounded: a scenario never hangs the harness.
"""

import os
import re
import signal
import subprocess
import time

PROMPT = re.compile(r"\[P(\d+) rc=(\d+)\][$#]")

RC = r"""
STTY_AT_START=$(stty -g)
PROMPT_COMMAND='R=$?; N=$((N+1))'
PS1='[P$N rc=$R]\$ '
set +o histexpand
unset HISTFILE
"""

COLS, ROWS = 100, 30


class Pane:
    """One tmux server with one session `cmp` and its pane; `as_user` runs it (and so the
    caller's shell and the terminal's owner) as that user."""

    def __init__(self, sock, work, shell=None, as_user=None):
        self.sock, self.work, self.as_user = sock, work, as_user
        rc = os.path.join(work, "caller.rc")
        if not os.path.exists(rc):
            with open(rc, "w") as f:
                f.write(RC)
        shell = shell or ["bash", "--noprofile", "--rcfile", rc, "-i"]
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "cmp", "-x", str(COLS), "-y", str(ROWS),
                  "-c", work, "--", *shell)
        self.tmux("set-option", "-g", "history-limit", "20000")
        self.last = 0  # the highest prompt number seen so far

    def tmux(self, *args, check=True):
        argv = ["tmux", "-L", self.sock, *args]
        if self.as_user:
            argv = ["runuser", "-u", self.as_user, "--"] + argv
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
               "HOME": os.path.expanduser(f"~{self.as_user}" if self.as_user else "~"), "SHELL": "/bin/bash"}
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10, env=env, cwd=self.work)
        if check and r.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:2])}: {r.stderr.strip()}")
        return r.stdout

    # --- input -----------------------------------------------------------------------------
    def keys(self, *keys):
        """tmux key names: "C-c", "C-z", "C-d", "Enter", "Escape"."""
        self.tmux("send-keys", "-t", "cmp", *keys)

    def type(self, text, enter=True):
        """Literal text as typed, then Enter."""
        self.tmux("send-keys", "-t", "cmp", "-l", text)
        if enter:
            self.keys("Enter")

    def run(self, line, timeout=10.0):
        """Type a command at the prompt and wait for the next prompt: (rc, output since) or
        (None, screen) when no prompt came back in time."""
        n = self.last
        self.type(line)
        return self.prompt_after(n, timeout)

    # --- output ----------------------------------------------------------------------------
    def text(self):
        """The whole pane: history and screen, wrapped lines joined, trailing spaces gone."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "cmp", check=False)

    def since(self, n):
        """What the pane shows after prompt n (the whole pane when n is not there)."""
        t = self.text()
        for m in PROMPT.finditer(t):
            if int(m.group(1)) == n:
                return t[m.end():]
        return t

    def wait(self, pattern, timeout=5.0, after=None):
        """The first match of pattern (after prompt `after` when given) within timeout, else None."""
        rx = re.compile(pattern, re.M)
        end = time.monotonic() + timeout
        while True:
            t = self.since(after) if after is not None else self.text()
            m = rx.search(t)
            if m or time.monotonic() > end:
                return m
            time.sleep(0.05)

    def prompt_after(self, n, timeout=10.0):
        """Wait for a prompt numbered above n: (its rc, the text between prompt n and it), or
        (None, the pane) on timeout. Remembers it as the latest prompt."""
        end = time.monotonic() + timeout
        while True:
            t = self.text()
            start, found = 0, None
            for m in PROMPT.finditer(t):
                k = int(m.group(1))
                if k == n:
                    start = m.end()
                if k > n:
                    found = m
            if found:
                self.last = max(self.last, int(found.group(1)))
                return int(found.group(2)), t[start:found.start()]
            if time.monotonic() > end:
                return None, t
            time.sleep(0.05)

    def ready(self, timeout=10.0):
        rc, _ = self.prompt_after(0, timeout)
        return rc is not None

    # --- the terminal itself ---------------------------------------------------------------
    def pane_pid(self):
        return int(self.tmux("display-message", "-p", "-t", "cmp", "#{pane_pid}").strip())

    def server_pid(self):
        return int(self.tmux("display-message", "-p", "#{pid}").strip())

    def resize(self, cols, rows):
        self.tmux("resize-window", "-t", "cmp", "-x", str(cols), "-y", str(rows))

    def after_check(self, timeout=5.0):
        """Common end of every scenario: the caller's shell answers, its terminal's settings
        are what they were when it started, and no job is left (stopped pager, lost fg)."""
        self.prompt_after(self.last, 0.3)  # a prompt the scenario did not wait for
        n = self.last
        self.type('jobs >jobs.out; [ "$(stty -g)" = "$STTY_AT_START" ] && t=same || t=changed;'
                  ' echo "END tty=$t jobs=$(wc -l <jobs.out)"')
        m = self.wait(r"^END tty=(\w+) jobs=(\d+)", timeout, after=n)
        if not m:
            return False, "the caller's shell did not answer at the end"
        if m.group(1) != "same":
            return False, "caller's stty -g changed"
        if m.group(2) != "0":
            return False, f"{m.group(2)} job(s) left: " + open(os.path.join(self.work, "jobs.out")).read().strip()[:60]
        return True, ""

    def close(self):
        self.tmux("kill-server", check=False)


def descendants(root):
    """Pids whose parent chain reaches root (from /proc), root excluded."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def children(pid):
    return [p for p in descendants(pid) if ppid_of(p) == pid]


def ppid_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[:-1]
    except OSError:
        return []


def find(argv):
    """Pids whose command line is exactly argv (list of str)."""
    want = [a.encode() for a in argv]
    return [int(d) for d in os.listdir("/proc") if d.isdigit() and cmdline(int(d)) == want]


def reap_all():
    """Reap whatever ended among our children (we are a subreaper: orphans come here)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_leftovers():
    """SIGKILL every process below the harness (all of them were started by it: the tmux
    servers, and through them the shells, launchers and payloads), then reap them."""
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.1)
    reap_all()
