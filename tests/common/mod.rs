//! Shared test plumbing: run the real snug binary as root and as an unprivileged user, find
//! processes by a unique marker, wait with a bound. No mocks: real bwrap, real processes.
#![allow(dead_code)]

mod procs;
mod sys;
pub use procs::*;
pub use sys::*;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The unprivileged account tests run snug as (created when missing, as root).
pub const TEST_USER: &str = "snugtest";

/// Who runs snug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// The test process's own (root in CI).
    Root,
    /// [`TEST_USER`], through `setpriv(1)`, which execs in place so signals hit snug itself.
    User,
}

/// The snug binary under test: `SNUG_UNDER_TEST` when set (`make test` points it at the
/// static binary `make build` ships), else the one cargo built for these tests.
pub fn snug() -> PathBuf {
    std::env::var_os("SNUG_UNDER_TEST").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_snug")), PathBuf::from)
}

/// uid and gid of [`TEST_USER`], creating the account when missing (needs root).
pub fn test_user() -> (u32, u32) {
    let lookup = || {
        let out = Command::new("id").args(["-u", TEST_USER]).output().ok()?;
        let uid = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
        let out = Command::new("id").args(["-g", TEST_USER]).output().ok()?;
        Some((uid, String::from_utf8_lossy(&out.stdout).trim().parse().ok()?))
    };
    if let Some(ids) = lookup() {
        return ids;
    }
    let _ = Command::new("useradd").args(["-m", "-s", "/bin/bash", TEST_USER]).status();
    lookup().expect("cannot create the unprivileged test user (useradd)")
}

/// The identities every row is tested as: root and the test user when running as root,
/// else just the current user.
pub fn everyone() -> Vec<Who> {
    if is_root() {
        vec![Who::Root, Who::User]
    } else {
        vec![Who::Root]
    }
}

/// A fresh directory owned by `who`, to run snug in (its DIR).
pub fn workdir(who: Who) -> tempfile::TempDir {
    let d = tempfile::Builder::new().prefix("snug-test-").tempdir_in("/tmp").expect("tempdir");
    if who == Who::User {
        let (uid, gid) = test_user();
        std::os::unix::fs::chown(d.path(), Some(uid), Some(gid)).expect("chown workdir");
    }
    d
}

/// The snug binary as `who` can run it. For the test user it is a copy in a world-readable
/// directory under /tmp: the build tree may sit below a directory only root may enter
/// (CI clones wherever it likes).
pub fn snug_for(who: Who) -> PathBuf {
    static COPY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if who == Who::Root {
        return snug();
    }
    COPY.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = PathBuf::from(format!("/tmp/snug-bin-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
        let bin = dir.join("snug");
        let tmp = dir.join("snug.tmp");
        // An external cp: a copy written by this process could still be open for writing in a
        // child another test thread forks meanwhile, and exec would fail with ETXTBSY.
        let ok = Command::new("cp").arg(snug()).arg(&tmp).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "copy snug for the test user");
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::rename(&tmp, &bin).expect("rename");
        bin
    })
    .clone()
}

/// The command prefix that runs a program as `who`: empty for root, `setpriv …` for the user.
pub fn as_who(who: Who) -> Vec<String> {
    match who {
        Who::Root => vec![],
        Who::User => {
            let (uid, gid) = test_user();
            vec![
                "setpriv".into(),
                format!("--reuid={uid}"),
                format!("--regid={gid}"),
                "--clear-groups".into(),
                "--".into(),
            ]
        }
    }
}

/// `snug ARGS…` as `who` in `dir`, stdin from /dev/null (detached mode) unless changed.
pub fn snug_cmd(who: Who, dir: &Path, args: &[&str]) -> Command {
    let mut c = match who {
        Who::Root => Command::new(snug()),
        Who::User => {
            let prefix = as_who(who);
            let mut c = Command::new(&prefix[0]);
            c.args(&prefix[1..]);
            c.arg(snug_for(who));
            c.env("HOME", format!("/home/{TEST_USER}")).env("USER", TEST_USER).env("LOGNAME", TEST_USER);
            c
        }
    };
    c.args(args).current_dir(dir).stdin(Stdio::null());
    c
}

/// Start `cmd` in its own process group, so signalling its group never hits the test runner.
pub fn spawn_own_group(cmd: &mut Command) -> Child {
    cmd.process_group(0);
    cmd.spawn().expect("spawn snug")
}

/// SIGKILL and reap `child` if it still runs (a test's clean-up on drop).
pub fn kill_if_running(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Wait for `child` up to `limit`; SIGKILL it (and fail the caller's expectation) past that.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let status = ended_within(child, limit);
    if status.is_none() {
        kill_if_running(child);
    }
    status
}

/// `child`'s status if it ends within `limit`; None (and the child left running) past it.
pub fn ended_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let mut status = None;
    until(limit, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    status
}

/// Wait until `cond` holds, polling every 5 ms, up to `limit`: the poll interval of the
/// tests' readiness waits.
pub fn until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    cond()
}

/// Shell-style code of a status: N for exit N, 128+n for death by signal n.
pub fn code(st: ExitStatus) -> i32 {
    st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
}

/// `PROGRAM ARGS…` as `who` in `dir`, stdin from /dev/null: the same identity and environment
/// [`snug_cmd`] gives snug, for controls that run a program without snug (or under plain bwrap).
pub fn cmd_as(who: Who, dir: &Path, program: &str, args: &[&str]) -> Command {
    let mut c = match who {
        Who::Root => Command::new(program),
        Who::User => {
            let prefix = as_who(who);
            let mut c = Command::new(&prefix[0]);
            c.args(&prefix[1..]).arg(program);
            c.env("HOME", format!("/home/{TEST_USER}")).env("USER", TEST_USER).env("LOGNAME", TEST_USER);
            c
        }
    };
    c.args(args).current_dir(dir).stdin(Stdio::null());
    c
}

/// The words a `sh -c` script uses to run a command as `who` (empty for [`Who::Root`]), with
/// the environment [`snug_cmd`] sets; follow them with the program.
pub fn as_words(who: Who) -> String {
    match who {
        Who::Root => String::new(),
        Who::User => {
            format!("{} env HOME=/home/{TEST_USER} USER={TEST_USER} LOGNAME={TEST_USER} ", as_who(who).join(" "))
        }
    }
}

/// What a finished command printed.
pub struct Out {
    pub status: ExitStatus,
    pub out: String,
    pub err: String,
}

/// A command started with its stdout and stderr captured; [`Running::finish`] collects them.
pub struct Running {
    pub pid: u32,
    rx: std::sync::mpsc::Receiver<std::io::Result<std::process::Output>>,
    what: String,
}

/// Start `cmd` with stdout and stderr piped (unless already set), in its own process group.
pub fn start(cmd: &mut Command) -> Running {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = spawn_own_group(cmd);
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    Running { pid, rx, what: format!("{cmd:?}") }
}

impl Running {
    /// Wait up to `limit` for the end and for both pipes to close (a leaked process that
    /// holds them counts as not finished); SIGKILL the command and panic past that.
    pub fn finish(self, limit: Duration) -> Out {
        match self.rx.recv_timeout(limit) {
            Ok(Ok(o)) => Out {
                status: o.status,
                out: String::from_utf8_lossy(&o.stdout).into_owned(),
                err: String::from_utf8_lossy(&o.stderr).into_owned(),
            },
            Ok(Err(e)) => panic!("{}: {e}", self.what),
            Err(_) => {
                kill(self.pid, libc::SIGKILL);
                panic!("{} did not finish within {limit:?}", self.what)
            }
        }
    }
}

/// [`start`] and [`Running::finish`] in one: run `cmd` to its end, bounded by `limit`.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Out {
    start(cmd).finish(limit)
}

/// Plain bwrap as a launcher without snug's guarantees runs it (for positive controls): no
/// `--die-with-parent`, no init of its own; a new pid namespace (with bwrap's own pid 1) only
/// when `pid_ns`.
pub fn plain_bwrap(who: Who, dir: &Path, pid_ns: bool, cmd: &[&str]) -> Command {
    let mut args = vec!["--ro-bind", "/", "/", "--dev", "/dev"];
    if pid_ns {
        args.extend(["--proc", "/proc", "--unshare-pid"]);
    }
    args.push("--");
    args.extend(cmd);
    cmd_as(who, dir, "bwrap", &args)
}

/// `snug -v ARGS…` as `who` in `dir`, stdout to /dev/null and the log to a file in `dir` (a
/// pipe would stay open as long as a leaked process holds it). Returns the command and the
/// log's path.
pub fn snug_verbose(who: Who, dir: &Path, args: &[&str]) -> (Command, PathBuf) {
    let log = dir.join(format!("snug-{}.log", marker()));
    let mut all = vec!["-v"];
    all.extend(args);
    let mut c = snug_cmd(who, dir, &all);
    c.stdout(Stdio::null()).stderr(std::fs::File::create(&log).expect("log file"));
    (c, log)
}

/// A file's text, empty while it does not exist.
pub fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The number after `key` in a `snug -v` log: `bwrap pid `, `init pid `,
/// `payload started: pid ` (host pids).
pub fn logged_pid(log: &str, key: &str) -> Option<i32> {
    let rest = &log[log.find(key)? + key.len()..];
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}
