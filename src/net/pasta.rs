//! The pasta process: started in its own process group, sealed, dying with snug, pinned by a
//! pidfd; ready once it writes its pid; stopped when the sandbox ends (SPEC N2, N3).

use std::io::Read as _;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::error::{failure, INTERNAL, UNAVAILABLE};
use crate::log::log;
use crate::pidfd::Pinned;
use crate::sys::fds::PASTA_USERNS_FD as USERNS_FD;
use crate::sys::poll::{readable, PollSet};
use snug_core::{Signal, WaitStatus};

/// How long pasta may take to configure the namespace (it takes tens of milliseconds).
pub const READY_WITHIN: Duration = Duration::from_secs(5);
/// How long pasta gets to exit on SIGTERM before SIGKILL.
pub const STOP_WITHIN: Duration = Duration::from_millis(200);

/// A running pasta, attached and ready.
#[derive(Debug)]
pub struct Pasta {
    pin: Pinned,
    /// Its stderr, forwarded as `snug: pasta: …` while it runs; `None` after EOF.
    err: Option<OwnedFd>,
    reaped: bool,
}

/// Start pasta for the sandbox whose init is `init`, with the argv `argv(userns_path)` builds,
/// and wait until it reports the namespace configured.
///
/// # Errors
/// 69 with pasta's own last error line when it exits or stalls before that; 70 when snug
/// cannot inspect init's namespaces.
pub fn start(init: &Pinned, argv: impl FnOnce(&str) -> Vec<String>) -> Result<Pasta> {
    let pid = init.host_pid;
    let net = std::fs::File::open(format!("/proc/{pid}/ns/net")).context("opening the sandbox's network namespace")?;
    let owner = crate::sys::fd::ns_owner(&net).context("ioctl(NS_GET_USERNS) on the sandbox's network namespace")?;
    if init.exited() {
        // The pid may since name another process: what was opened is not known to be init's.
        return Err(failure(INTERNAL, "the sandbox ended before its network was attached"));
    }
    // The owner is init's own user namespace (root without `--disable-userns`): by its /proc
    // path. Otherwise it is an ancestor of init's (unprivileged, or bwrap's `--disable-userns`
    // put init one level further down): pasta inherits snug's descriptor of it at
    // [`USERNS_FD`] and opens it as its own (a root snug's descriptors are closed to a pasta
    // that dropped its capabilities, `ptrace(2)` access mode), and the netns by init's pid
    // only once inside it, where no process outside the sandbox can be found.
    let (userns, pass) = if same_ns(&owner, &format!("/proc/{pid}/ns/user")) {
        (format!("/proc/{pid}/ns/user"), None)
    } else {
        (format!("/proc/self/fd/{USERNS_FD}"), Some(owner.as_raw_fd()))
    };
    // Before pasta makes its interface, which takes the namespace's defaults (see `dad`).
    let own = same_ns(&owner, "/proc/self/ns/user");
    if let Err(e) = super::dad::turn_off(&net, (!own).then_some(&owner)) {
        log!("IPv6 duplicate address detection stays on in the sandbox ({e:#}): a first IPv6 connection may hang");
    }
    let argv = argv(&userns);
    log!("pasta: {}", crate::quote::quote_line(&argv));
    let started = Instant::now();
    let (mut pasta, out) = spawn(&argv, pass)?;
    let ready = pasta.wait_ready(out, started + READY_WITHIN);
    drop((net, owner));
    if let Err(e) = ready {
        pasta.stop();
        return Err(e);
    }
    if init.exited() {
        pasta.stop();
        return Err(failure(INTERNAL, "the sandbox ended while its network was being attached"));
    }
    log!("pasta pid {} configured the network in {} ms", pasta.pin.host_pid, started.elapsed().as_millis());
    Ok(pasta)
}

/// Whether descriptor `fd` and the namespace file at `path` are the same namespace.
fn same_ns(fd: &OwnedFd, path: &str) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let (Ok(theirs), Ok(ours)) = (std::fs::metadata(path), rustix::fs::fstat(fd)) else { return false };
    ours.st_dev == theirs.dev() && ours.st_ino == theirs.ino()
}

/// Fork and exec pasta: own process group (a terminal's ^C, or a kill of snug's group, never
/// reaches it), `PR_SET_PDEATHSIG(SIGKILL)` (dies with snug, also on SIGKILL), sealed signal
/// state (snug blocks INT, TERM, HUP… for its signalfd, and Rust keeps that mask across exec),
/// stdin /dev/null, stdout and stderr pipes to snug. Pinned by a pidfd at once: it is snug's
/// unreaped child, so its pid cannot have been reused.
fn spawn(argv: &[String], userns: Option<i32>) -> Result<(Pasta, std::fs::File)> {
    use crate::sys::process::{clone3, exit_now, Cloned};
    let cstr = |s: &[u8]| std::ffi::CString::new(s).map_err(|_| failure(INTERNAL, "pasta's argv holds a NUL byte"));
    let args = argv.iter().map(|a| cstr(a.as_bytes())).collect::<Result<Vec<_>>>()?;
    let env = std::env::vars_os()
        .map(|(k, v)| cstr(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
        .collect::<Result<Vec<_>>>()?;
    let ptrs = |v: &[std::ffi::CString]| -> Vec<*const libc::c_char> {
        v.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
    };
    let (argp, envp) = (ptrs(&args), ptrs(&env));
    let parent = Pinned::open(crate::sys::process::own()).context("pidfd_open(self)")?;
    let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(std::io::Error::from);
    let (out_r, out_w) = pipe().context("pipe")?;
    let (err_r, err_w) = pipe().context("pipe")?;
    let (fail_r, fail_w) = pipe().context("pipe")?; // the child's errno; EOF once pasta is exec'd
    let null = std::fs::File::open("/dev/null").context("/dev/null")?;
    let (parent_fd, fail_fd) = (parent.raw(), fail_w.as_raw_fd());
    let stdio = [null.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()];
    // SAFETY: the child makes only async-signal-safe system calls (nestproc's setpgid, prctl,
    // poll and close_range; rustix's prlimit64; dup2, fcntl, write, execve, _exit; sigseal's
    // rt_sigaction and rt_sigprocmask) on integers and on memory built before the clone, and
    // never returns. `parent`, the pipes and the user namespace's descriptor outlive it.
    let cloned = unsafe { clone3(0) };
    match cloned {
        // SAFETY: the child body of the clone above, under the same contract.
        Ok(Cloned::Child) => unsafe {
            let fail = |errno: i32| -> ! {
                let frame = crate::sys::codec::encode(0, errno);
                libc::write(fail_fd, frame.as_ptr().cast(), frame.len());
                exit_now(INTERNAL)
            };
            // A snug that died before the prctl took effect would never stop this pasta.
            if let Err(e) = nestproc::own_group_tied_to(std::os::fd::BorrowedFd::borrow_raw(parent_fd)) {
                fail(e.raw_os_error());
            }
            crate::stack::roomy_for_exec();
            if stdio.iter().enumerate().any(|(to, &from)| libc::dup2(from, to as i32) < 0) {
                fail(nestproc::errno());
            }
            match userns {
                // dup2 onto itself would leave close-on-exec set.
                Some(fd) if fd == USERNS_FD => {
                    libc::fcntl(fd, libc::F_SETFD, 0);
                }
                Some(fd) if libc::dup2(fd, USERNS_FD) < 0 => fail(nestproc::errno()),
                _ => {}
            }
            nestproc::cloexec_from(if userns.is_some() { USERNS_FD as u32 + 1 } else { 3 });
            if let Err(e) = sigseal::seal() {
                fail(e.0);
            }
            libc::execve(argp[0], argp.as_ptr(), envp.as_ptr());
            fail(nestproc::errno())
        },
        Ok(Cloned::Parent { pidfd, pid }) => {
            drop((out_w, err_w, fail_w, null, parent));
            let pin = Pinned::cloned(pidfd, pid);
            let mut said = Vec::new();
            let _ = std::fs::File::from(fail_r).take(16).read_to_end(&mut said);
            if let Some((_, errno)) = crate::sys::codec::decode(&said) {
                pin.reap();
                let e = std::io::Error::from_raw_os_error(errno);
                // SPEC R4: descriptors or processes refused now are a run-time OS error (71).
                let code = crate::error::errno_code(errno, UNAVAILABLE);
                return Err(failure(code, format!("cannot run {}: {}", argv[0], crate::error::io_text(&e))));
            }
            // Not reaped here: the pidfd reaps it (`Pasta::stop`).
            Ok((Pasta { pin, err: Some(err_r), reaped: false }, std::fs::File::from(out_r)))
        }
        Err(e) => {
            let code = e.raw_os_error().map_or(UNAVAILABLE, |n| crate::error::errno_code(n, UNAVAILABLE));
            Err(failure(code, format!("cannot run {}: {}", argv[0], crate::error::io_text(&e))))
        }
    }
}

/// The last line of pasta's stderr that says something (not its syslog complaints).
fn last_line(said: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(said);
    let noise = |l: &str| l.starts_with("Failed to send") && l.ends_with("bytes to syslog");
    text.lines().map(str::trim).rev().find(|l| !l.is_empty() && !noise(l)).map(str::to_string)
}

/// pasta's pipes while it starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pipe {
    /// stdout, where the pid file is.
    Out,
    /// stderr.
    Err,
}

impl Pasta {
    /// Poll pasta's stdout (the pid file) and stderr until its pid arrives, it exits, or
    /// `deadline` passes.
    fn wait_ready(&mut self, mut out: std::fs::File, deadline: Instant) -> Result<()> {
        let mut pid_line = Vec::new();
        let mut said = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let last = last_line(&said).map(|l| format!(" (it said: {l})")).unwrap_or_default();
                return Err(failure(
                    UNAVAILABLE,
                    format!("pasta did not configure the network within {} s{last}", READY_WITHIN.as_secs()),
                ));
            }
            let within = left.max(Duration::from_millis(1));
            let mut set = PollSet::default();
            set.watch(Pipe::Out, Some(out.as_fd()), libc::POLLIN);
            set.watch(Pipe::Err, self.err.as_ref().map(|f| f.as_fd()), libc::POLLIN);
            if set.poll(Some(within)).is_err() {
                continue; // EINTR
            }
            let (out_ready, err_ready) = (set.got(Pipe::Out) != 0, set.got(Pipe::Err) != 0);
            if err_ready && !self.read_err(&mut said) {
                self.err = None;
            }
            if !out_ready {
                continue;
            }
            let mut buf = [0u8; 64];
            let n = out.read(&mut buf).unwrap_or(0);
            if n == 0 {
                return Err(self.died(said));
            }
            pid_line.extend_from_slice(&buf[..n]);
            if let Some(end) = pid_line.iter().position(|b| *b == b'\n') {
                let text = String::from_utf8_lossy(&pid_line[..end]).trim().to_string();
                if text.parse::<i32>().ok() != Some(self.pin.host_pid.raw()) {
                    return Err(failure(
                        INTERNAL,
                        format!(
                            "pasta (pid {}) reported pid {text:?}: it is not the process snug started",
                            self.pin.host_pid
                        ),
                    ));
                }
                if let Some(l) = last_line(&said) {
                    log!("pasta said while starting: {l}");
                }
                return Ok(());
            }
        }
    }

    /// Read once from pasta's stderr into `said`; false at EOF.
    fn read_err(&mut self, said: &mut Vec<u8>) -> bool {
        let Some(fd) = &self.err else { return false };
        let mut buf = [0u8; 4096];
        // The caller's poll said readable (data or EOF).
        let n = rustix::io::read(fd, &mut buf).unwrap_or(0);
        if n == 0 {
            return false;
        }
        said.extend_from_slice(&buf[..n]);
        true
    }

    /// pasta closed its stdout before writing its pid: it is exiting. Collect the rest of what
    /// it said (for at most [`STOP_WITHIN`]), make sure it is gone, and make its last line the
    /// error (SPEC N4).
    fn died(&mut self, mut said: Vec<u8>) -> anyhow::Error {
        let until = Instant::now() + STOP_WITHIN;
        while let Some(fd) = &self.err {
            let left = until.saturating_duration_since(Instant::now());
            if !readable(fd, Some(left)) || !self.read_err(&mut said) {
                self.err = None;
            }
        }
        let status = self.stop();
        let mut line = match last_line(&said) {
            Some(l) => format!("pasta: {l}"),
            None => format!("pasta exited before the network was up ({})", describe(status)),
        };
        if line.contains("tun") && !tun_is_open_to_all() {
            line.push_str(" (/dev/net/tun is not mode 0666, which pasta needs when not root; see `snug doctor`)");
        }
        // pasta out of descriptors (or processes, memory) is a run-time OS error (SPEC R4).
        failure(crate::error::bwrap_code(&line), line)
    }

    /// The descriptor the supervisor polls while the sandbox runs: pasta's stderr (readable on
    /// output and at EOF, when pasta exits), while it is open.
    pub fn watch_fd(&self) -> Option<BorrowedFd<'_>> {
        self.err.as_ref().map(|f| f.as_fd())
    }

    /// [`Pasta::watch_fd`] is readable: forward what pasta says; at EOF, report its end.
    pub fn on_readable(&mut self) {
        let mut said = Vec::new();
        let open = self.read_err(&mut said);
        for line in String::from_utf8_lossy(&said).lines() {
            if last_line(line.as_bytes()).is_some() {
                crate::log::say!("snug: pasta: {line}");
            }
        }
        if open {
            return;
        }
        self.err = None;
        if self.pin.exited() && !self.reaped {
            let status = self.stop();
            crate::log::say!("snug: pasta exited ({}): the sandbox has no network any more", describe(status));
        }
    }

    /// Stop pasta: SIGTERM, SIGKILL after [`STOP_WITHIN`], then reap; its wait status the
    /// first time. Idempotent.
    pub fn stop(&mut self) -> Option<WaitStatus> {
        if self.reaped {
            return None;
        }
        if !self.pin.exited() {
            let _ = self.pin.signal(Signal::TERM);
            // The pidfd polls readable once pasta has exited.
            let gone = readable(&self.pin, Some(STOP_WITHIN));
            if !gone {
                log!("pasta ignored SIGTERM for {} ms: SIGKILL", STOP_WITHIN.as_millis());
                let _ = self.pin.signal(Signal::KILL);
            }
        }
        let status = self.pin.reap();
        self.reaped = true;
        log!("pasta stopped ({})", describe(status));
        status
    }
}

impl Drop for Pasta {
    fn drop(&mut self) {
        self.stop();
    }
}

fn describe(status: Option<WaitStatus>) -> String {
    match status {
        Some(WaitStatus::Signaled { sig, .. }) => format!("killed by {}", crate::signals::signame(sig)),
        Some(WaitStatus::Exited(code)) => format!("exit {code}"),
        Some(s) => format!("{s:?}"),
        None => "reaped elsewhere".to_string(),
    }
}

/// Whether /dev/net/tun is read-write for everyone, as distributions ship it.
pub fn tun_is_open_to_all() -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata("/dev/net/tun").is_ok_and(|m| m.permissions().mode() & 0o666 == 0o666)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n4_last_line_skips_syslog_noise() {
        let said = b"Failed to send 42 bytes to syslog\nFailed to open tun socket in namespace\nFailed to send 9 bytes to syslog\n\n";
        assert_eq!(last_line(said).as_deref(), Some("Failed to open tun socket in namespace"));
        assert_eq!(last_line(b"Failed to send 42 bytes to syslog\n"), None);
    }
}
