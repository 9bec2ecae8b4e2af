"""The tools a user would pick instead of snug (SPEC B6), installed when missing: from Debian
(firejail, tini, dumb-init), from PyPI (sandlock, a Python library: its launcher here is
the few lines a user writes around `Sandbox.run_interactive`) and from npm (anthropic's
sandbox-runtime, `srt`: bwrap on Linux, with socat and ripgrep from Debian). Each peer is an
argv prefix put in front of a payload; a peer that cannot run here carries the reason instead."""

import json
import os
import shutil
import subprocess
import sys

DEBIAN = {"firejail": "firejail", "tini": "tini", "dumb-init": "dumb-init", "socat": "socat", "rg": "ripgrep"}

# sandbox-runtime's npm package, installed (once per machine) below this directory.
SRT_PACKAGE = "@anthropic-ai/sandbox-runtime"
SRT_HOME = os.path.join(os.path.expanduser("~"), ".cache", "snug-bench", "srt")


def srt_bin():
    """The installed `srt`, or None."""
    path = os.path.join(SRT_HOME, "node_modules", ".bin", "srt")
    return path if os.access(path, os.X_OK) else None


def srt_version():
    try:
        with open(os.path.join(SRT_HOME, "node_modules", "@anthropic-ai", "sandbox-runtime", "package.json")) as f:
            return json.load(f).get("version", "?")
    except (OSError, ValueError):
        return "?"


def srt_settings(work, domains=()):
    """A settings file for srt: writes to the run's directory and /tmp, reads anywhere (its
    default), network only to `domains` through its proxies (none: no network)."""
    path = os.path.join(work, f"srt-settings-{len(domains)}.json")
    with open(path, "w") as f:
        json.dump({"filesystem": {"denyRead": [], "allowWrite": [".", "/tmp"], "denyWrite": []},
                   "network": {"allowedDomains": list(domains), "deniedDomains": []}}, f)
    return path

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
            for tool, pkg in DEBIAN.items():
                if pkg in need and not shutil.which(tool):
                    missing[pkg] = f"`apt-get install -y {pkg}` failed: {said[0]}"
    if not srt_bin():
        if not shutil.which("npm"):
            missing["sandbox-runtime"] = "npm is not installed (`apt-get install -y npm`)"
        else:
            log(f"bench: installing {SRT_PACKAGE} from npm …")
            os.makedirs(SRT_HOME, exist_ok=True)
            rc, said = _run(["npm", "install", "--silent", "--prefix", SRT_HOME, SRT_PACKAGE], 600)
            if rc != 0 or not srt_bin():
                missing["sandbox-runtime"] = f"`npm install {SRT_PACKAGE}` failed: {said[0]}"
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
        Peer("sandbox-runtime", [srt_bin() or "srt", "--settings", srt_settings(env.work), "--"],
             f"anthropic's sandbox-runtime {srt_version()} from npm (`srt --settings FILE --`: bwrap, its seccomp "
             "filter, no network but through its proxies; writes to the run's directory and /tmp)"),
    ]
    for p in out:
        tool = {"tini + bwrap": "tini", "dumb-init + bwrap": "dumb-init"}.get(p.name, p.name)
        if p.name == "sandbox-runtime":
            gone = [k for k in ("socat", "ripgrep") if k in missing]
            if gone:
                p.why = f"it needs {' and '.join(gone)}: {missing[gone[0]]}"
                continue
        if tool in missing:
            p.why = missing[tool]
            continue
        rc, said = _run(p.argv(["true"]), 60)
        if rc != 0:
            p.why = f"`{' '.join(p.prefix[:3])} … true` exit {rc}: {said[0]}"
        elif p.name not in ("sandlock",) and _pidns(p.argv(["readlink", "/proc/self/ns/pid"])) == os.readlink(
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
