//! Plumbing for the relay tests: one run of snug (or of a control launcher) in its own
//! workdir, with a marker, captured stderr and exit times measured from a signal.

use crate::common::{
    cmd_as, kill, kill_group, kill_if_running, pids_with, prelude, readable, reap_leftovers, stat, workdir, Ctty,
    Prelude, Who,
};
use std::io::Read;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The system python, not a shim on the caller's PATH (the sandbox gets a clean PATH).
pub const PY: &str = "/usr/bin/python3";

/// A python payload that records every delivery of the signals it handles (one line with the
/// number per delivery in `got`). Counting goes through `set_wakeup_fd`, which writes one
/// byte per delivery, so two deliveries are never merged into one Python handler call.
/// argv: MARKER HANDLED EXIT_ON LINGER [spin] — it handles the signals in the comma list
/// HANDLED; after the first signal in the comma list EXIT_ON it keeps recording for LINGER
/// seconds (to catch a duplicate), then exits 0. Writes `ready` once its handlers are
/// installed. With `spin` it polls without sleeping, so it stays on a CPU and takes each
/// signal the moment it arrives: a second delivery close behind the first is then seen, not
/// merged by the kernel into one pending signal.
pub const RECORDER: &str = r#"
import os, select, signal, sys, time
handled = [int(s) for s in sys.argv[2].split(",")]
exit_on = {int(s) for s in sys.argv[3].split(",") if s}
linger = float(sys.argv[4])
wait = 0 if sys.argv[5:] == ["spin"] else 0.02
r, w = os.pipe()
os.set_blocking(r, False)
os.set_blocking(w, False)
signal.set_wakeup_fd(w, warn_on_full_buffer=False)
for s in handled:
    signal.signal(s, lambda n, f: None)
got = open("got", "a", buffering=1)
open("ready", "w").close()
end = None
while end is None or time.monotonic() < end:
    select.select([r], [], [], wait)
    try:
        data = os.read(r, 256)
    except BlockingIOError:
        data = b""
    for n in data:
        got.write(f"{n}\n")
        if n in exit_on and end is None:
            end = time.monotonic() + linger
sys.exit(0)
"#;

/// The signals [`recorder`] handles: those the relay rows send.
const RELAY_ROWS: &[i32] = &[1, 2, 3, 10, 12, 13, 15, 20, 21, 22, 28];

/// The recorder's argv handling `handled`, exiting `linger` s after the first of `exit_on`
/// (a comma list, may be empty), spinning when `spin`.
pub fn recording(mark: &str, handled: &[i32], exit_on: &str, linger: &str, spin: bool) -> Vec<String> {
    let list: Vec<String> = handled.iter().map(i32::to_string).collect();
    let mut argv: Vec<String> = [PY, "-c", RECORDER, mark, &list.join(","), exit_on, linger].map(String::from).to_vec();
    if spin {
        argv.push("spin".into());
    }
    argv
}

/// The recorder's argv for the relay rows: `python3 -c RECORDER MARK … EXIT_ON LINGER`.
pub fn recorder(mark: &str, exit_on: &str, linger: &str) -> Vec<String> {
    recording(mark, RELAY_ROWS, exit_on, linger, false)
}

/// `sh -c SCRIPT`.
pub fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// What runs the payload.
#[derive(Clone, Copy, Debug)]
pub enum Launcher {
    /// snug, with `-v` when true.
    Snug(bool),
    /// Plain bwrap (`--unshare-pid` and these flags, / read-only, the workdir read-write).
    Bwrap(&'static [&'static str]),
    /// A naive relay that shares its process group with the payload, like a launcher that
    /// forwards signals without giving the payload its own group. It forwards INT/HUP/TERM
    /// 50 ms after receiving them (a relay's latency, which keeps the kernel from merging the
    /// forwarded signal with the one the group already delivered).
    NaiveRelay,
}

const NAIVE: &str = r#"
import signal, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:])
def fwd(n, f):
    time.sleep(0.05)  # kept: the relay's latency is this control's behaviour
    p.send_signal(n)
for s in (1, 2, 15):
    signal.signal(s, fwd)
sys.exit(p.wait())
"#;

/// How to start a run.
#[derive(Clone, Copy, Debug)]
pub struct How<'a> {
    pub launcher: Launcher,
    /// Signals set to SIG_IGN in the launcher before exec (what `nohup` does for SIGHUP).
    pub ignore: &'static [i32],
    /// A pty slave to become the launcher's controlling terminal (new session, foreground)
    /// and its stdout; stdin stays /dev/null, so snug is in detached mode.
    pub tty: Option<BorrowedFd<'a>>,
}

impl How<'static> {
    pub const fn snug() -> Self {
        How { launcher: Launcher::Snug(false), ignore: &[], tty: None }
    }
    pub const fn verbose() -> Self {
        How { launcher: Launcher::Snug(true), ignore: &[], tty: None }
    }
    pub const fn bwrap(flags: &'static [&'static str]) -> Self {
        How { launcher: Launcher::Bwrap(flags), ignore: &[], tty: None }
    }
    pub const fn naive() -> Self {
        How { launcher: Launcher::NaiveRelay, ignore: &[], tty: None }
    }
}

/// One running launcher with its payload; dropping it kills what is left of the run.
pub struct Run {
    pub who: Who,
    pub mark: String,
    pub dir: tempfile::TempDir,
    pub child: Child,
    pub pid: i32,
    err: Arc<Mutex<(String, bool)>>,
}

impl Run {
    /// Start `payload` under `how` as `who`, in a fresh workdir, in its own process group
    /// (or its own session with `how.tty`), stdin /dev/null, stdout to the file `stdout`.
    pub fn start(who: Who, how: How<'_>, mark: &str, payload: &[String]) -> Run {
        let dir = workdir(who);
        let d = dir.path().to_str().expect("utf-8 tempdir").to_string();
        // setpriv execs in place, so the pid is the program's own.
        let command_as = |who: Who, program: &str| cmd_as(who, dir.path(), program, &[]);
        let mut c = match how.launcher {
            Launcher::Snug(verbose) => {
                let mut c = command_as(who, crate::common::snug_for(who).to_str().expect("utf-8 path"));
                if verbose {
                    c.arg("-v");
                }
                // SNUG_EXTRA_ARGS="-p @net" runs every relay row with pasta attached (N2, CI).
                c.args(std::env::var("SNUG_EXTRA_ARGS").unwrap_or_default().split_whitespace());
                c.arg("--");
                c
            }
            Launcher::Bwrap(flags) => {
                let mut c = command_as(who, "bwrap");
                if who == Who::User {
                    c.arg("--unshare-user");
                }
                c.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", &d, &d, "--chdir", &d]);
                c.arg("--unshare-pid").args(flags).arg("--");
                c
            }
            Launcher::NaiveRelay => {
                let mut c = command_as(who, PY);
                c.args(["-c", NAIVE]);
                c
            }
        };
        c.args(payload).current_dir(dir.path()).stdin(Stdio::null()).stderr(Stdio::piped());
        let out = std::fs::File::create(dir.path().join("stdout")).expect("stdout file");
        let session = match how.tty {
            Some(slave) => {
                c.stdout(slave.try_clone_to_owned().expect("dup pty slave"));
                // Own session with the pty (now fd 1) as controlling terminal, this
                // process's group in its foreground: ^C typed there signals this group.
                Some(Ctty::Stdout)
            }
            None => {
                c.stdout(out).process_group(0);
                None
            }
        };
        prelude(&mut c, Prelude { ignore: how.ignore, session, ..Prelude::default() });
        let mut child = c.spawn().expect("spawn launcher");
        let err = Arc::new(Mutex::new((String::new(), false)));
        let mut pipe = child.stderr.take().expect("stderr pipe");
        let sink = err.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink.lock().unwrap().0.push_str(&String::from_utf8_lossy(&buf[..n])),
                }
            }
            sink.lock().unwrap().1 = true;
        });
        let pid = child.id() as i32;
        Run { who, mark: mark.to_string(), dir, child, pid, err }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Contents of a file in the workdir ("" when missing).
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// The signal numbers the recorder payload got, in order.
    pub fn got(&self) -> Vec<i32> {
        self.read("got").lines().filter_map(|l| l.trim().parse().ok()).collect()
    }

    /// Wait (up to 10 s, generous for a loaded machine) until the payload wrote each of `files`.
    pub fn ready(&self, files: &[&str]) {
        let ok = crate::common::until(Duration::from_secs(10), || files.iter().all(|f| self.path(f).exists()));
        assert!(ok, "{:?}: payload never wrote {files:?}; stderr: {}", self.who, self.stderr());
    }

    /// Wait (up to 10 s) until `n` processes run `sleep MARK`, exec'd (their command line
    /// starts with it, not a shell's that mentions it): by then each payload shell has set
    /// its traps and forked its child, so a signal cannot land in between (a shell runs a
    /// trap that arrived before it forked a foreground child only after that child ends).
    pub fn sleepers(&self, n: usize) {
        let head = format!("sleep\0{}\0", self.mark);
        let count = || {
            self.left()
                .iter()
                .filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with(head.as_bytes())))
                .count()
        };
        let ok = crate::common::until(Duration::from_secs(10), || count() >= n);
        assert!(ok, "{:?}: {} of {n} `sleep {}` running; stderr: {}", self.who, count(), self.mark, self.stderr());
    }

    /// Send `sig` to the launcher; the moment it was sent.
    pub fn signal(&self, sig: i32) -> Instant {
        let t = Instant::now();
        // Our unreaped child, so the pid is still its own.
        kill(self.pid as u32, sig);
        t
    }

    /// Send `sig` to the launcher's whole process group (`kill -SIG -- -PGID`).
    pub fn signal_group(&self, sig: i32) -> Instant {
        let t = Instant::now();
        // The group is led by our unreaped child.
        kill_group(self.pid, sig);
        t
    }

    /// Whether the launcher is still running (not exited).
    pub fn running(&mut self) -> bool {
        !readable(self.pidfd(), Duration::ZERO)
    }

    /// A pidfd of the launcher (`pidfd_open(2)`): readable once it has exited.
    fn pidfd(&self) -> OwnedFd {
        let pid = rustix::process::Pid::from_raw(self.pid).expect("a pid");
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).expect("pidfd_open")
    }

    /// Wait up to `limit` for the launcher to exit: its status and the moment its exit was
    /// seen (pidfd readable), or `None` past the limit (then it is killed).
    pub fn wait(&mut self, limit: Duration) -> Option<(ExitStatus, Instant)> {
        if readable(self.pidfd(), limit) {
            let at = Instant::now();
            return Some((self.child.wait().expect("wait"), at));
        }
        kill_if_running(&mut self.child);
        None
    }

    /// [`Run::wait`], failing the test past `limit`.
    pub fn end(&mut self, limit: Duration) -> (ExitStatus, Instant) {
        match self.wait(limit) {
            Some(r) => r,
            None => panic!("{:?}: launcher still running after {limit:?}; stderr: {}", self.who, self.stderr()),
        }
    }

    /// Pids still carrying the run's marker (the payload, or a launcher that survived).
    pub fn left(&self) -> Vec<i32> {
        pids_with(&self.mark)
    }

    /// What the launcher wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.err.lock().unwrap().0.clone()
    }

    /// stderr once it is closed (every writer gone), waiting up to 2 s.
    pub fn stderr_all(&self) -> String {
        crate::common::until(Duration::from_secs(2), || self.err.lock().unwrap().1);
        self.stderr()
    }

    /// The process group of the first process carrying the marker whose group is not the
    /// launcher's: the payload's group inside plain bwrap `--new-session`.
    pub fn payload_group(&self) -> Option<i32> {
        self.left().into_iter().filter_map(|p| stat(p).map(|s| s.pgrp)).find(|&g| g != self.pid)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        kill_if_running(&mut self.child);
        reap_leftovers(&self.mark);
    }
}

/// Milliseconds from `a` to `b`.
pub fn ms(a: Instant, b: Instant) -> u128 {
    b.saturating_duration_since(a).as_millis()
}
