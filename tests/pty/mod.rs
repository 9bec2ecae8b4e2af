//! A pseudo-terminal driver for the terminal-mode tests (SPEC T1–T9, X2): an interactive bash
//! is the caller, in a session of its own whose controlling terminal is a pty this process
//! created, so the tests need no terminal of their own (CI runs with none and no stdin).
//! The test types at the master side as a person would (`send`, `line`), and waits for what
//! the terminal shows (`expect`), all recorded in a timestamped log printed on failure.
//!
//! For [`Who::User`] the caller bash itself runs as the test user (setpriv execs in place,
//! after `setsid` and `TIOCSCTTY`), so snug and its parent shell are that user, as at a login.
#![allow(dead_code)]

pub mod leader;
pub mod rows;
pub mod scripts;
mod state;

pub use crate::common::{descendants, procs, stat};

use crate::common::{as_who, kill, prelude, readable, test_user, Ctty, Prelude, Who, TEST_USER};
use rustix::pty::OpenptFlags;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The caller's prompt; never part of anything the tests type, so seeing it means bash is
/// reading a command.
pub const PROMPT: &str = "caller$ ";

/// Key strokes, as the terminal's line discipline knows them (`stty -a`).
pub const CTRL_C: &str = "\x03";
pub const CTRL_Z: &str = "\x1a";

/// How long an `expect` waits by default: generous, the machine has 2 cores and tests run
/// in parallel.
const PATIENCE: Duration = Duration::from_secs(12);

/// The login name `who` runs as ([`Who::Root`] is this process's own user).
pub fn user_name(who: Who) -> String {
    match who {
        Who::User => TEST_USER.to_string(),
        Who::Root => {
            let out = Command::new("id").arg("-un").output().expect("id -un");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    }
}

/// A new pty pair (`pty(7)`: posix_openpt, grantpt, unlockpt, then TIOCGPTPEER, which opens
/// the slave without a path lookup, Linux 4.13) with the window `rows`×`cols`; both ends
/// close-on-exec, the slave not anybody's controlling terminal yet.
pub fn open_pty(rows: u16, cols: u16) -> (OwnedFd, OwnedFd) {
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let master = rustix::pty::openpt(flags).expect("posix_openpt");
    rustix::pty::grantpt(&master).expect("grantpt");
    rustix::pty::unlockpt(&master).expect("unlockpt");
    let slave = rustix::pty::ioctl_tiocgptpeer(&master, flags).expect("TIOCGPTPEER");
    set_size(&master, rows, cols);
    (master, slave)
}

/// Give the user `who` runs as its terminal, as login(1) does (root's stays root's).
fn own_tty(who: Who, slave: &OwnedFd) {
    if who == Who::User {
        let (uid, gid) = test_user();
        std::os::unix::fs::fchown(slave, Some(uid), Some(gid)).expect("fchown pty");
    }
}

/// Make `cmd` the leader of a new session whose controlling terminal is `slave`, which is
/// also its stdin, stdout and stderr: as login(1) or a terminal emulator starts a shell.
pub(crate) fn lead_session(cmd: &mut Command, slave: &OwnedFd) {
    let io = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup pty slave"));
    cmd.stdin(io(slave)).stdout(io(slave)).stderr(io(slave));
    prelude(cmd, Prelude { session: Some(Ctty::Stdin), ..Prelude::default() });
}

/// The window size (TIOCSWINSZ, `ioctl_tty(2)`).
fn set_size(fd: impl AsFd, rows: u16, cols: u16) {
    let ws = rustix::termios::Winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
    rustix::termios::tcsetwinsize(fd, ws).expect("TIOCSWINSZ");
}

/// Read what `fd` has now into `out`, `\r` removed where `strip_cr`; false at EOF or EIO
/// (every slave descriptor closed).
fn read_some(fd: impl AsFd, out: &mut Vec<u8>, strip_cr: bool) -> bool {
    let mut buf = [0u8; 4096];
    match rustix::io::read(fd, &mut buf) {
        Ok(n) if n > 0 => {
            out.extend(buf[..n].iter().filter(|b| !strip_cr || **b != b'\r'));
            true
        }
        _ => false,
    }
}

/// Among `pids`, the one running `exe` whose parent does not (a process cloned from it, such
/// as snug's nest before its exec, or snug's init, has the same binary).
pub fn outermost(pids: &[i32], exe: &Path) -> Option<i32> {
    let runs = |p: i32| std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e == exe);
    pids.iter().copied().find(|p| runs(*p) && stat(*p).is_some_and(|s| !runs(s.ppid)))
}

/// One caller at one terminal.
pub struct Term {
    master: OwnedFd,
    shell: Child,
    who: Who,
    /// Everything the terminal showed, `\r` removed.
    out: Vec<u8>,
    /// Where the next `expect` starts looking (the end of the last match).
    mark: usize,
    t0: Instant,
    log: Vec<String>,
    label: String,
}

impl Term {
    /// An interactive `bash --norc --noprofile -i` as `who`, in `dir`, at a fresh 24×80 pty,
    /// with `PS1` = [`PROMPT`]; returns once the first prompt is shown.
    pub fn start(who: Who, dir: &Path, label: &str) -> Term {
        let (master, slave) = open_pty(24, 80);
        let bash = ["bash", "--norc", "--noprofile", "-i"];
        own_tty(who, &slave);
        let home = match who {
            Who::Root => std::env::var("HOME").unwrap_or_else(|_| "/".into()),
            Who::User => format!("/home/{TEST_USER}"),
        };
        let user = user_name(who);
        // setpriv execs in place for the user, so the caller bash keeps the spawned pid.
        let mut words = as_who(who);
        words.extend(bash.map(String::from));
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]);
        // A clean, known environment; the standard directories first so `python3` is the
        // system's (a per-user shim under /root is not the test user's to run).
        let path = format!(
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:{}",
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.env_clear()
            .env("PATH", path)
            .env("HOME", home)
            .env("USER", &user)
            .env("LOGNAME", &user)
            .env("TERM", "dumb")
            .env("PS1", PROMPT)
            .env("HISTFILE", "")
            .env("LANG", "C.UTF-8")
            .current_dir(dir);
        lead_session(&mut cmd, &slave);
        let shell = cmd.spawn().expect("spawn the caller bash");
        drop(cmd);
        drop(slave);
        let label = format!("{label} as {who:?}");
        let mut t = Term { master, shell, who, out: Vec::new(), mark: 0, t0: Instant::now(), log: Vec::new(), label };
        t.expect(PROMPT);
        t
    }

    /// The caller bash's pid (setpriv exec'd in place).
    pub fn shell_pid(&self) -> i32 {
        self.shell.id() as i32
    }

    fn note(&mut self, what: String) {
        let ms = self.t0.elapsed().as_millis();
        self.log.push(format!("{ms:>6} ms  {what}"));
    }

    /// Read what the terminal shows for up to `d` (less if the slave side is gone).
    pub fn pump(&mut self, d: Duration) {
        let end = Instant::now() + d;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if !readable(&self.master, left) {
                return;
            }
            if !read_some(&self.master, &mut self.out, true) {
                // EIO: every slave descriptor is closed. Kept: the time contract, so the
                // callers' polling loops do not spin.
                std::thread::sleep(left);
                return;
            }
            if Instant::now() >= end {
                return;
            }
        }
    }

    /// Type `s` (no newline added).
    pub fn send(&mut self, s: &str) {
        self.note(format!("send {s:?}"));
        let n = rustix::io::write(&self.master, s.as_bytes());
        assert_eq!(n.ok(), Some(s.len()), "write to the pty master");
        self.pump(Duration::from_millis(20));
    }

    /// Type `s` and Enter.
    pub fn line(&mut self, s: &str) {
        self.send(&format!("{s}\n"));
    }

    /// Wait `d`, reading the terminal meanwhile.
    pub fn sleep(&mut self, d: Duration) {
        self.note(format!("sleep {} ms", d.as_millis()));
        self.pump(d);
    }

    /// Wait up to `limit` for `needle` after the mark; move the mark past it. False on timeout.
    pub fn wait_for(&mut self, needle: &str, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        loop {
            if let Some(i) = find(&self.out[self.mark..], needle.as_bytes()) {
                self.mark += i + needle.len();
                self.note(format!("saw {needle:?}"));
                return true;
            }
            if Instant::now() >= end {
                self.note(format!("no {needle:?} within {} ms", limit.as_millis()));
                return false;
            }
            self.pump(Duration::from_millis(10));
        }
    }

    /// Wait for `needle` (see [`Term::wait_for`]); fail the test with the transcript if it
    /// does not come.
    pub fn expect(&mut self, needle: &str) {
        if !self.wait_for(needle, PATIENCE) {
            self.fail(&format!("expected {needle:?} within {} s", PATIENCE.as_secs()));
        }
    }

    /// Fail if `needle` was shown after the mark.
    pub fn reject(&mut self, needle: &str) {
        self.pump(Duration::from_millis(10));
        if self.seen(needle) {
            self.fail(&format!("unexpected {needle:?}"));
        }
        self.note(format!("no {needle:?}, as wanted"));
    }

    /// Whether `needle` was shown after the mark.
    pub fn seen(&self, needle: &str) -> bool {
        find(&self.out[self.mark..], needle.as_bytes()).is_some()
    }

    /// The caller's `$?`: types `echo "@rc:$?:"` and reads the number back.
    pub fn rc(&mut self) -> i32 {
        self.line("echo \"@rc:$?:\"");
        let end = Instant::now() + PATIENCE;
        loop {
            if let Some((code, at)) = find_rc(&self.out[self.mark..]) {
                self.mark += at;
                self.note(format!("$? = {code}"));
                return code;
            }
            if Instant::now() >= end {
                self.fail("no answer to echo $?");
            }
            self.pump(Duration::from_millis(10));
        }
    }

    /// Poll `cond` every 10 ms up to `limit`, reading the terminal meanwhile.
    pub fn until(&mut self, limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
        let end = Instant::now() + limit;
        loop {
            if cond() {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            self.pump(Duration::from_millis(10));
        }
    }

    /// Resize the window as a terminal emulator does: TIOCSWINSZ on the master, after which
    /// the kernel sends SIGWINCH to the foreground process group.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.note(format!("resize to {rows}x{cols}"));
        set_size(&self.master, rows, cols);
        self.pump(Duration::from_millis(20));
    }

    /// Close the terminal, as closing its window does: the kernel hangs up the session
    /// (SIGHUP to the caller bash and the foreground group), and bash sends SIGHUP to its
    /// jobs. Nothing is read from the terminal afterwards.
    pub fn hangup(&mut self) {
        self.note("hangup".into());
        let null = std::fs::File::open("/dev/null").expect("open /dev/null");
        drop(std::mem::replace(&mut self.master, null.into()));
    }

    /// Everything shown since the start, for assertions on the whole run.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.out).into_owned()
    }

    /// Fail the test: `msg`, the step log and the transcript.
    pub fn fail(&mut self, msg: &str) -> ! {
        self.pump(Duration::from_millis(100));
        panic!(
            "[{}] {msg}\n--- steps ---\n{}\n--- terminal ---\n{}\n--- end ---",
            self.label,
            self.log.join("\n"),
            String::from_utf8_lossy(&self.out)
        );
    }
}

impl Drop for Term {
    /// Hang up as a closed terminal window does: bash sends SIGHUP (and SIGCONT) to its jobs;
    /// then make sure bash is gone.
    fn drop(&mut self) {
        kill(self.shell_pid() as u32, libc::SIGHUP);
        let end = Instant::now() + Duration::from_millis(500);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.shell.try_wait() {
                return;
            }
            self.pump(Duration::from_millis(10));
        }
        let _ = self.shell.kill();
        let _ = self.shell.wait();
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The first `@rc:N:` (digits, not the echoed `$?`) in `hay`: the code and the end offset.
fn find_rc(hay: &[u8]) -> Option<(i32, usize)> {
    let tag = b"@rc:";
    let mut from = 0;
    while let Some(i) = find(&hay[from..], tag) {
        let start = from + i + tag.len();
        let digits = hay[start..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && hay.get(start + digits) == Some(&b':') {
            let n = std::str::from_utf8(&hay[start..start + digits]).ok()?.parse().ok()?;
            return Some((n, start + digits + 1));
        }
        from = start;
    }
    None
}
