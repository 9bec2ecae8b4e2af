//! Plumbing for the relay tests: one run of snug (or of a control launcher) in its own
//! workdir, with a marker, captured stderr and exit times measured from a signal.

use crate::common::{pids_with, reap_leftovers, test_user, workdir, Who, TEST_USER};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The system python, not a shim on the caller's PATH (the sandbox gets a clean PATH).
pub const PY: &str = "/usr/bin/python3";

/// A python payload that records every delivery of the signals it handles (one line with the
/// number per delivery in `got`). Counting goes through `set_wakeup_fd`, which writes one
/// byte per delivery, so two deliveries are never merged into one Python handler call.
/// argv: MARKER EXIT_ON LINGER — after the first signal in the comma list EXIT_ON it keeps
/// recording for LINGER seconds (to catch a duplicate), then exits 0. Writes `ready` once
/// its handlers are installed.
pub const RECORDER: &str = r#"
import os, select, signal, sys, time
exit_on = {int(s) for s in sys.argv[2].split(",") if s}
linger = float(sys.argv[3])
r, w = os.pipe()
os.set_blocking(r, False)
os.set_blocking(w, False)
signal.set_wakeup_fd(w, warn_on_full_buffer=False)
for s in (1, 2, 3, 10, 12, 13, 15, 20, 21, 22, 28):
    signal.signal(s, lambda n, f: None)
got = open("got", "a", buffering=1)
open("ready", "w").close()
end = None
while end is None or time.monotonic() < end:
    select.select([r], [], [], 0.02)
    try:
        data = os.read(r, 64)
    except BlockingIOError:
        data = b""
    for n in data:
        got.write(f"{n}\n")
        if n in exit_on and end is None:
            end = time.monotonic() + linger
sys.exit(0)
"#;

/// The recorder's argv: `python3 -c RECORDER MARK EXIT_ON LINGER`.
pub fn recorder(mark: &str, exit_on: &str, linger: &str) -> Vec<String> {
    [PY, "-c", RECORDER, mark, exit_on, linger].map(String::from).to_vec()
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
    time.sleep(0.05)
    p.send_signal(n)
for s in (1, 2, 15):
    signal.signal(s, fwd)
sys.exit(p.wait())
"#;

/// How to start a run.
#[derive(Clone, Copy, Debug)]
pub struct How {
    pub launcher: Launcher,
    /// Signals set to SIG_IGN in the launcher before exec (what `nohup` does for SIGHUP).
    pub ignore: &'static [i32],
    /// A pty slave to become the launcher's controlling terminal (new session, foreground)
    /// and its stdout; stdin stays /dev/null, so snug is in detached mode.
    pub tty: Option<i32>,
}

impl How {
    pub const fn snug() -> How {
        How { launcher: Launcher::Snug(false), ignore: &[], tty: None }
    }
    pub const fn verbose() -> How {
        How { launcher: Launcher::Snug(true), ignore: &[], tty: None }
    }
    pub const fn bwrap(flags: &'static [&'static str]) -> How {
        How { launcher: Launcher::Bwrap(flags), ignore: &[], tty: None }
    }
    pub const fn naive() -> How {
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

/// `program` as `who` (setpriv execs in place, so the pid is the program's own).
fn command_as(who: Who, program: &str) -> Command {
    match who {
        Who::Root => Command::new(program),
        Who::User => {
            let (uid, gid) = test_user();
            let mut c = Command::new("setpriv");
            c.args([format!("--reuid={uid}"), format!("--regid={gid}"), "--clear-groups".into(), "--".into()]);
            c.arg(program);
            c.env("HOME", format!("/home/{TEST_USER}")).env("USER", TEST_USER).env("LOGNAME", TEST_USER);
            c
        }
    }
}

impl Run {
    /// Start `payload` under `how` as `who`, in a fresh workdir, in its own process group
    /// (or its own session with `how.tty`), stdin /dev/null, stdout to the file `stdout`.
    pub fn start(who: Who, how: How, mark: &str, payload: &[String]) -> Run {
        let dir = workdir(who);
        let d = dir.path().to_str().expect("utf-8 tempdir").to_string();
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
        match how.tty {
            // SAFETY: dup of a descriptor the caller keeps open for the run.
            Some(slave) => c.stdout(unsafe { OwnedFd::from_raw_fd(libc::dup(slave)) }),
            None => c.stdout(out),
        };
        let ignore = how.ignore;
        let tty = how.tty.is_some();
        // SAFETY: only async-signal-safe calls (signal, setsid, setpgid, ioctl) between fork
        // and exec; `ignore` is a static slice.
        unsafe {
            c.pre_exec(move || {
                for &s in ignore {
                    libc::signal(s, libc::SIG_IGN);
                }
                if tty {
                    // Own session with the pty (now fd 1) as controlling terminal, this
                    // process's group in its foreground: ^C typed there signals this group.
                    if libc::setsid() < 0 || libc::ioctl(1, libc::TIOCSCTTY, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::setpgid(0, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
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
        // SAFETY: plain syscall; our unreaped child, so the pid is still its own.
        unsafe { libc::kill(self.pid, sig) };
        t
    }

    /// Send `sig` to the launcher's whole process group (`kill -SIG -- -PGID`).
    pub fn signal_group(&self, sig: i32) -> Instant {
        let t = Instant::now();
        // SAFETY: plain syscall; the group is led by our unreaped child.
        unsafe { libc::kill(-self.pid, sig) };
        t
    }

    /// Whether the launcher is still running (not exited).
    pub fn running(&mut self) -> bool {
        let fd = self.pidfd();
        let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd in this frame, zero timeout; `fd` lives until after the call.
        unsafe { libc::poll(&mut p, 1, 0) == 0 }
    }

    fn pidfd(&self) -> OwnedFd {
        // SAFETY: plain syscall on our unreaped child; the descriptor is owned by the result.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid, 0) };
        assert!(fd >= 0, "pidfd_open: {}", std::io::Error::last_os_error());
        // SAFETY: just created.
        unsafe { OwnedFd::from_raw_fd(fd as i32) }
    }

    /// Wait up to `limit` for the launcher to exit: its status and the moment its exit was
    /// seen (pidfd readable), or `None` past the limit (then it is killed).
    pub fn wait(&mut self, limit: Duration) -> Option<(ExitStatus, Instant)> {
        let fd = self.pidfd();
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one pollfd in this frame.
            let n = unsafe { libc::poll(&mut p, 1, left.as_millis() as i32) };
            if n == 1 {
                let at = Instant::now();
                return Some((self.child.wait().expect("wait"), at));
            }
            if n == 0 {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return None;
            }
        }
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
        self.left().into_iter().filter_map(pgid_of).find(|&g| g != self.pid)
    }
}

/// The process group of `pid` (`/proc/PID/stat` field 5).
pub fn pgid_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(2)?.parse().ok()
}

/// The state letter of `pid` (`/proc/PID/stat` field 3).
pub fn state_of(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        reap_leftovers(&self.mark);
    }
}

/// Milliseconds from `a` to `b`.
pub fn ms(a: Instant, b: Instant) -> u128 {
    b.saturating_duration_since(a).as_millis()
}
