//! N2: pasta's process group, signal state and end, for snug's three ways of ending.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::net::lab::*;

/// Start `ARGV` with SIGINT ignored and SIGUSR1 blocked (as `nohup`-like callers and
/// harnesses do) and SIGPIPE ignored (Python's own setting, which `os.execv` passes on) unless
/// `pipe-dfl`; on a new pty as its controlling terminal (`pty`) or detached; with `kill=MS`,
/// SIGKILL it MS milliseconds after the fork. Print `pid N`, relay the child's output, then
/// `status S` (negative: killed by signal -S).
///
/// The launcher is a child subreaper (`PR_SET_CHILD_SUBREAPER`): whatever of the run
/// outlives the child comes to it as an orphan. It reaps them, printing `orphan PID S COMM`,
/// until it has no child left (`clear MS`, MS after the child's end) or 0.5 s passed (then
/// `alive PID COMM` for each left), then `done`.
const LAUNCH_PY: &str = r#"
import ctypes, os, pty, signal, sys, time
modes, argv = sys.argv[1].split(","), sys.argv[2:]
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
if "pipe-dfl" in modes:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
pid, fd = pty.fork() if "pty" in modes else (os.fork(), None)
if pid == 0:
    os.execv(argv[0], argv)
for m in modes:
    if m.startswith("kill="):  # kept: the moment of the kill is what the sweep varies
        time.sleep(int(m[5:]) / 1000); os.kill(pid, signal.SIGKILL)
print("pid", pid, flush=True)
while fd is not None:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    sys.stdout.write(data.decode(errors="replace").replace("\r", "")); sys.stdout.flush()
print("status", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
comm = lambda p: open(f"/proc/{p}/comm").read().strip() if os.path.exists(f"/proc/{p}/comm") else "?"
class Late(Exception):
    pass
def late(*_):
    raise Late()
signal.signal(signal.SIGALRM, late)
t0 = time.monotonic()
signal.setitimer(signal.ITIMER_REAL, 0.5)
try:
    while True:
        try:
            r = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)  # blocks until an orphan ends
        except ChildProcessError:
            signal.setitimer(signal.ITIMER_REAL, 0)
            print("clear", int((time.monotonic() - t0) * 1000), flush=True); break
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])  # reap and say it whole
        name = comm(r.si_pid)
        print("orphan", r.si_pid, os.waitstatus_to_exitcode(os.waitpid(r.si_pid, 0)[1]), name, flush=True)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGALRM])
except Late:
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            st = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(st[1]) == os.getpid():
            print("alive", d, comm(d), flush=True)
print("done", flush=True)
"#;

/// A process identity that survives pid reuse: pid and start time (`proc(5)` stat field 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ident {
    pub pid: i32,
    start: u64,
}

impl Ident {
    pub fn of(pid: i32) -> Option<Ident> {
        Some(Ident { pid, start: stat(pid)?.start })
    }

    /// Still running (a zombie is not).
    pub fn alive(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.state != 'Z' && s.start == self.start)
    }

    pub fn pgrp(&self) -> i32 {
        stat(self.pid).map_or(-1, |s| s.pgrp)
    }

    /// The foreground group of its controlling terminal (-1: none).
    pub fn tpgid(&self) -> i32 {
        stat(self.pid).map_or(-1, |s| s.tpgid)
    }

    /// A hex mask line of `/proc/PID/status` (`SigBlk`, `SigIgn`).
    pub fn mask(&self, key: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        let v = s.lines().find_map(|l| l.strip_prefix(&format!("{key}:"))).unwrap_or("");
        u64::from_str_radix(v.trim(), 16).unwrap_or(u64::MAX)
    }
}

/// The children of `parent` whose command line names pasta.
pub fn pasta_children(parent: i32) -> Vec<Ident> {
    let mut found = Vec::new();
    for pid in procs() {
        if stat(pid).is_some_and(|s| s.ppid == parent) && cmdline(pid).is_some_and(|c| c.contains("pasta")) {
            found.extend(Ident::of(pid));
        }
    }
    found
}

/// A launched command: its pid and its output lines.
pub struct Launched {
    pub child: Child,
    pub pid: i32,
    lines: std::io::Lines<BufReader<ChildStdout>>,
}

/// Run `argv` under [`LAUNCH_PY`] with `modes` (`pty`, `detached`, `pipe-dfl`, comma-separated).
pub fn launch(modes: &str, argv: &[String]) -> Launched {
    launch_with(modes, argv, Stdio::inherit())
}

/// [`launch`] with the launched program's stderr going to `stderr`.
pub fn launch_with(modes: &str, argv: &[String], stderr: Stdio) -> Launched {
    let mut c = Command::new(python());
    c.args(["-c", LAUNCH_PY, modes]).args(argv);
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(stderr);
    let mut child = spawn_own_group(&mut c);
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let pid = first.strip_prefix("pid ").and_then(|p| p.trim().parse().ok()).expect("launcher pid line");
    Launched { child, pid, lines }
}

impl Launched {
    /// Read lines until one equals `want` (false at EOF).
    pub fn wait_line(&mut self, want: &str) -> bool {
        self.lines.by_ref().map_while(Result::ok).any(|l| l.trim() == want)
    }

    /// The `status` the launcher printed at the end.
    pub fn status(&mut self) -> Option<i32> {
        self.lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("status ").and_then(|s| s.trim().parse().ok()))
    }

    /// After [`Launched::status`]: what outlived the launched process, up to `done`.
    pub fn tail(&mut self) -> Tail {
        let mut t = Tail::default();
        for line in self.lines.by_ref().map_while(Result::ok) {
            let w: Vec<&str> = line.split_whitespace().collect();
            match w.as_slice() {
                ["done"] => break,
                ["orphan", pid, st, comm] => {
                    t.orphans.push((pid.parse().unwrap_or(0), st.parse().unwrap_or(0), comm.to_string()))
                }
                ["clear", ms] => t.clear_ms = ms.parse().ok(),
                ["alive", ..] => t.alive.push(line.clone()),
                _ => {}
            }
        }
        t
    }
}

/// What outlived a launched process: reaped orphans `(pid, status, comm)`, how soon the
/// launcher had no child left (ms), or what was still alive after 0.5 s.
#[derive(Debug, Default)]
pub struct Tail {
    pub orphans: Vec<(i32, i32, String)>,
    pub clear_ms: Option<u64>,
    pub alive: Vec<String>,
}

/// How the run ends.
#[derive(Clone, Copy, Debug)]
enum End {
    /// The payload exits 0 by itself.
    Normal,
    /// TERM to snug, the payload ignores it: grace, teardown, snug dies of TERM.
    Grace,
    /// SIGKILL to snug.
    Kill,
}

/// One N2 scenario for each identity: snug under an ignored INT and a blocked USR1, with the
/// sandbox holding the terminal (`pty`) or detached. While the payload runs, pasta leads its
/// own process group — neither snug's nor the terminal's foreground one — and its SigBlk is
/// 0 and SigIgn 0 but for SIGPIPE, which pasta ignores itself (its `main`). After the end,
/// no pasta of the run is alive 200 ms later; after a normal end or a teardown snug stopped
/// and reaped it itself (it never became an orphan of the launcher, a subreaper), and after
/// a SIGKILL of snug it died of SIGKILL (`PR_SET_PDEATHSIG`).
fn n2_scenario(end: End, pty: bool) {
    if let Some(why) = skip_reason() {
        return eprintln!("skipped: {why}");
    }
    let mark = marker();
    let payload = match end {
        End::Normal => format!("echo ready; sleep 0.{mark}"),
        _ => format!("trap '' TERM; echo ready; sleep {mark}"),
    };
    for who in everyone() {
        let dir = workdir(who);
        let mut run = launch(
            if pty { "pty" } else { "detached" },
            &snug_words(who, &["-p", "@net", &dir.path().to_string_lossy(), "--", "sh", "-c", &payload]),
        );
        assert!(run.wait_line("ready"), "{who:?} {end:?}: payload never started");
        let snug = Ident::of(run.pid).expect("snug runs");
        let pastas = pasta_children(run.pid);
        assert_eq!(pastas.len(), 1, "{who:?} {end:?}: pasta children of snug: {pastas:?}");
        let pasta = pastas[0];
        assert_eq!(pasta.pgrp(), pasta.pid, "{who:?} {end:?}: pasta does not lead its own group");
        assert_ne!(pasta.pgrp(), snug.pgrp(), "{who:?} {end:?}: pasta in snug's group");
        if pty {
            let fg = snug.tpgid();
            assert!(fg > 0, "{who:?}: snug has no terminal");
            assert_ne!(pasta.pgrp(), fg, "{who:?} {end:?}: pasta in the terminal's foreground group");
        }
        // The caller's state did reach snug (S2 keeps INT ignored), and not pasta.
        assert_ne!(snug.mask("SigIgn") & (1 << (libc::SIGINT - 1)), 0, "launcher did not ignore INT");
        assert_eq!(pasta.mask("SigBlk"), 0, "{who:?}: pasta SigBlk");
        assert_eq!(pasta.mask("SigIgn") & !(1 << (libc::SIGPIPE - 1)), 0, "{who:?}: pasta SigIgn");
        match end {
            End::Normal => {}
            End::Grace => kill(run.pid as u32, libc::SIGTERM),
            End::Kill => kill(run.pid as u32, libc::SIGKILL),
        }
        let status = run.status();
        let ended = Instant::now();
        let tail = run.tail();
        let orphans: Vec<(i32, i32)> = tail.orphans.iter().map(|(p, st, _)| (*p, *st)).collect();
        assert!(tail.alive.is_empty(), "{who:?} {end:?}: outlived snug: {tail:?}");
        let _ = wait_bounded(&mut run.child, Duration::from_secs(5));
        let want = match end {
            End::Normal => 0,
            End::Grace => -libc::SIGTERM,
            End::Kill => -libc::SIGKILL,
        };
        assert_eq!(status, Some(want), "{who:?} {end:?}: snug's status");
        // Gone by 200 ms after the end (once gone, this pid and start time never run again).
        let by = (ended + Duration::from_millis(200)).saturating_duration_since(Instant::now());
        let left = !until(by, || !pasta.alive());
        if left {
            kill(pasta.pid as u32, libc::SIGKILL);
        }
        assert!(!left, "{who:?} {end:?}: pasta {} alive 200 ms after snug ended", pasta.pid);
        let pasta_orphan = orphans.iter().find(|(p, _)| *p == pasta.pid).map(|(_, st)| *st);
        match end {
            End::Kill => assert_eq!(pasta_orphan, Some(-libc::SIGKILL), "{who:?}: pasta's end: {orphans:?}"),
            _ => assert_eq!(pasta_orphan, None, "{who:?} {end:?}: snug did not stop and reap pasta: {orphans:?}"),
        }
        reap_leftovers(&format!("sleep {mark}"));
    }
}

#[test]
fn n2_pasta_own_group_sealed_gone_after_normal_end_detached() {
    n2_scenario(End::Normal, false);
}

#[test]
fn n2_pasta_own_group_sealed_gone_after_normal_end_terminal() {
    n2_scenario(End::Normal, true);
}

#[test]
fn n2_pasta_gone_after_grace_teardown_terminal() {
    n2_scenario(End::Grace, true);
}

#[test]
fn n2_pasta_gone_after_sigkill_of_snug_terminal() {
    n2_scenario(End::Kill, true);
}

#[test]
fn n2_pasta_gone_after_sigkill_of_snug_detached() {
    n2_scenario(End::Kill, false);
}

/// Positive control for every N2 assertion, run each time: pasta started the plain way (the
/// same launcher execs it, against a namespace of `unshare -Urn`) leaks the caller's ignored
/// INT and blocked USR1, shares the launcher's process group, outlives the namespace's end,
/// and outlives the SIGKILL of its parent. And why sealing is more than hygiene: this pasta
/// refuses to start at all when its caller ignores SIGPIPE (its `signal(SIGPIPE, SIG_IGN)`
/// returns the old SIG_IGN, which it takes for an error), as a Python parent's `os.execv`
/// leaves it; snug's N2 scenarios run under exactly that caller.
#[test]
fn n2_positive_control_plain_pasta_leaks() {
    if let Some(why) = skip_reason() {
        return eprintln!("skipped: {why}");
    }
    let mark = marker();
    let mut target = Command::new(which("unshare")).args(["-Urn", "sleep", &mark]).spawn().expect("unshare");
    // Only once unshare has set up the namespaces and exec'd sleep is it a target for pasta.
    let comm = || std::fs::read_to_string(format!("/proc/{}/comm", target.id())).unwrap_or_default();
    assert!(until(Duration::from_secs(5), || comm().trim() == "sleep"), "target never became sleep");
    let mut args =
        vec![which("pasta"), "--foreground".into(), "--quiet".into(), "--stderr".into(), "--config-net".into()];
    args.extend(["--pid".into(), "/proc/self/fd/1".into()]);
    if is_root() {
        args.extend(["--runas".into(), "0:0".into()]);
    }
    args.push(target.id().to_string());
    // Its complaint goes to a file, not the test run's output, and is checked there.
    let mut said = tempfile::tempfile().expect("tempfile");
    let mut refused = launch_with("detached", &args, Stdio::from(said.try_clone().expect("dup")));
    assert_eq!(refused.status(), Some(1), "control: pasta started although its caller ignores SIGPIPE");
    let _ = refused.child.wait();
    let mut text = String::new();
    std::io::Seek::rewind(&mut said).expect("rewind");
    std::io::Read::read_to_string(&mut said, &mut text).expect("read");
    assert!(text.contains("Couldn't install signal handlers"), "control: pasta said {text:?}");
    let mut run = launch("detached,pipe-dfl", &args);
    let pasta = Ident::of(run.pid).expect("pasta runs");
    assert!(run.wait_line(&run.pid.to_string()), "control: pasta never configured the namespace");
    assert_ne!(pasta.mask("SigIgn") & (1 << (libc::SIGINT - 1)), 0, "control: INT not ignored in plain pasta");
    assert_ne!(pasta.mask("SigBlk") & (1 << (libc::SIGUSR1 - 1)), 0, "control: USR1 not blocked in plain pasta");
    let launcher = Ident::of(run.child.id() as i32).expect("launcher");
    assert_eq!(pasta.pgrp(), launcher.pgrp(), "control: plain pasta has a group of its own");
    let _ = target.kill();
    let _ = target.wait();
    // Kept: a check that pasta does NOT quit within 0.2 s of its namespace's end.
    std::thread::sleep(Duration::from_millis(200));
    assert!(pasta.alive(), "control: plain pasta quit when its namespace ended");
    let _ = run.child.kill();
    let _ = run.child.wait();
    // Kept: a check that pasta does NOT die within 0.2 s of its parent's SIGKILL.
    std::thread::sleep(Duration::from_millis(200));
    let left = pasta.alive();
    kill(pasta.pid as u32, libc::SIGKILL);
    assert!(left, "control: plain pasta died with its parent");
}
