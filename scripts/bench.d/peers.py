"""The tools a user would pick instead of snug (SPEC B6), installed when missing: from Debian
(firejail, tini, dumb-init) and from PyPI (sandlock, a Python library: its launcher here is
the few lines a user writes around `Sandbox.run_interactive`). Each peer is an argv prefix
put in front of a payload; a peer that cannot run here carries the reason instead."""

import os
import shutil
import subprocess
import sys

DEBIAN = {"firejail": "firejail", "tini": "tini", "dumb-init": "dumb-init"}

# The launcher a sandlock user writes: Landlock read access to the system, write access to the
# run's directory and /tmp, sandlock's default seccomp blocklist; exit with the payload's status.
SANDLOCK_LAUNCHER = """\
import sys, sandlock
sb = sandlock.Sandbox(fs_readable=["/usr", "/etc", "/proc", "/dev", "/bin", "/lib", "/lib64"],
                      fs_writable=["/tmp"])
sys.exit(sb.run_interactive(sys.argv[1:]))
"""


class Peer:
    """One tool: `prefix + payload` runs the payload under it; `why` is set when it cannot."""

    def __init__(self, name, prefix, what, why=None):
        self.name, self.prefix, self.what, self.why = name, prefix, what, why

    def argv(self, payload):
        return self.prefix + payload


def _run(argv, timeout):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return r.returncode, (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or [""]
    except (OSError, subprocess.SubprocessError) as e:
        return -1, [str(e)]


def install(log):
    """Install what is missing; {tool: why it is still missing} for what could not be."""
    missing = {}
    need = [pkg for tool, pkg in DEBIAN.items() if not shutil.which(tool)]
    if need:
        if os.geteuid() != 0:
            for pkg in need:
                missing[pkg] = "not installed, and installing it needs root (`apt-get install -y " + pkg + "`)"
        else:
            log(f"bench: installing {' '.join(need)} from Debian …")
            rc, said = _run(["apt-get", "install", "-y", "-qq"] + need, 600)
            if rc != 0:
                _run(["apt-get", "update", "-qq"], 600)
                rc, said = _run(["apt-get", "install", "-y", "-qq"] + need, 600)
            for pkg in need:
                if not shutil.which(pkg):
                    missing[pkg] = f"`apt-get install -y {pkg}` failed: {said[0]}"
    if _run([sys.executable, "-c", "import sandlock"], 60)[0] != 0:
        log("bench: installing sandlock from PyPI …")
        rc, said = _run([sys.executable, "-m", "pip", "install", "-q", "sandlock"], 600)
        if rc != 0:
            missing["sandlock"] = f"`pip install sandlock` failed: {said[0]}"
    return missing


def peers(env, head, missing):
    """The peers, each checked once with `true`. `head` is bwrap's argv from snug's dry run
    (the B1 reference, `--die-with-parent` included), without its `--`."""
    launcher = os.path.join(env.work, "sandlock-launch.py")
    with open(launcher, "w") as f:
        f.write(SANDLOCK_LAUNCHER)
    tini, dumb = shutil.which("tini") or "tini", shutil.which("dumb-init") or "dumb-init"
    out = [
        Peer("bwrap alone", head + ["--"], "bubblewrap with snug's own namespaces and mounts (the B1 reference)"),
        Peer("tini + bwrap", [tini, "-s", "--"] + head + ["--"],
             "`tini -s -- bwrap --die-with-parent …` (tini forwards signals to its child, bwrap)"),
        Peer("dumb-init + bwrap", [dumb, "--"] + head + ["--"],
             "`dumb-init -- bwrap --die-with-parent …` (dumb-init forwards signals to its child's "
             "process group: bwrap and the payload)"),
        Peer("firejail", [shutil.which("firejail") or "firejail", "--quiet", "--"],
             "`firejail --quiet --` with its default profile (namespaces, seccomp)"),
        Peer("sandlock", [sys.executable, launcher],
             "sandlock 0.9 from PyPI (Landlock + seccomp, no namespaces) through a 3-line Python launcher"),
    ]
    for p in out:
        tool = {"tini + bwrap": "tini", "dumb-init + bwrap": "dumb-init"}.get(p.name, p.name)
        if tool in missing:
            p.why = missing[tool]
            continue
        rc, said = _run(p.argv(["true"]), 60)
        if rc != 0:
            p.why = f"`{' '.join(p.prefix[:3])} … true` exit {rc}: {said[0]}"
        elif p.name != "sandlock" and _pidns(p.argv(["readlink", "/proc/self/ns/pid"])) == os.readlink(
                "/proc/self/ns/pid"):
            # firejail inside a container or pid namespace runs the payload unconfined, exit 0.
            loud = [a for a in p.prefix if a != "--quiet"]
            p.why = ("it ran the payload unconfined, in the bench's own pid namespace: "
                     f"\"{_run(loud + ['true'], 60)[1][0]}\"")
    return out


def _pidns(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
