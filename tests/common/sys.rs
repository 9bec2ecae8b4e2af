//! The system calls the tests make themselves, through rustix and std with owned
//! descriptors: signals to pids and groups, waiting for a descriptor, and the one audited
//! place where a test's child changes its state between fork and exec.

use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `kill(2)` of `pid` with `sig`; errors (a pid already gone) are ignored, as a test's
/// clean-up wants. A number that is no signal (0, glibc's reserved 32 and 33) sends nothing.
pub fn kill(pid: u32, sig: i32) {
    let (Ok(raw), Some(sig)) = (i32::try_from(pid), signal(sig)) else { return };
    if let Some(pid) = Pid::from_raw(raw).filter(|_| raw > 0) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// `kill(-pgid, sig)`: every process of the group `pgid` (`kill(2)`); errors ignored.
pub fn kill_group(pgid: i32, sig: i32) {
    let Some(sig) = signal(sig) else { return };
    if let Some(pgid) = Pid::from_raw(pgid).filter(|_| pgid > 0) {
        let _ = rustix::process::kill_process_group(pgid, sig);
    }
}

/// `sig` as rustix's [`Signal`]: a named one, or a real-time one libc leaves to programs
/// (`SIGRTMIN()..=SIGRTMAX()`, `signal(7)`).
fn signal(sig: i32) -> Option<Signal> {
    Signal::from_named_raw(sig).or_else(|| {
        (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&sig).then(|| {
            // SAFETY: a valid, non-zero signal number that libc does not reserve for itself
            // (it keeps those below SIGRTMIN()).
            unsafe { Signal::from_raw_unchecked(sig) }
        })
    })
}

/// Whether `fd` becomes readable (or hung up) within `limit` (`poll(2)`); EINTR retried.
pub fn readable(fd: impl AsFd, limit: Duration) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let end = Instant::now() + limit;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let timeout = Timespec::try_from(left).ok();
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(timeout.as_ref().unwrap_or(&Timespec { tv_sec: 0, tv_nsec: 0 }))) {
            Ok(n) => return n > 0,
            Err(rustix::io::Errno::INTR) if !left.is_zero() => continue,
            Err(_) => return false,
        }
    }
}

/// Which of the child's standard descriptors becomes its controlling terminal.
#[derive(Clone, Copy, Debug)]
pub enum Ctty {
    Stdin,
    Stdout,
}

/// What a test's child sets up between fork and exec, as a careless caller, `nohup`,
/// login(1) or a terminal emulator leaves it. After `Command`'s own set-up (its stdio, its
/// process group, the signal mask reset), so the state reaches the program.
#[derive(Clone, Copy, Debug, Default)]
pub struct Prelude {
    /// Signals set to SIG_IGN (`signal(2)`), as `nohup` does for SIGHUP.
    pub ignore: &'static [i32],
    /// Signals added to the blocked mask (`sigprocmask(2)`).
    pub block: &'static [i32],
    /// RLIMIT_CORE unlimited (`setrlimit(2)`), so only the program's own choice stops a core.
    pub cores: bool,
    /// Lead a new session (`setsid(2)`) whose controlling terminal is this descriptor, a
    /// pty slave no session has yet (`TIOCSCTTY`, `ioctl_tty(2)`).
    pub session: Option<Ctty>,
}

/// Apply `p` in `cmd`'s child before its exec.
pub fn prelude(cmd: &mut Command, p: Prelude) -> &mut Command {
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe calls
    // (setsid, ioctl and setrlimit as raw syscalls through rustix; sigemptyset, sigaddset,
    // sigprocmask and signal from libc, on a set in its own frame); it allocates nothing
    // and reads only `p`, copied in.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(tty) = p.session {
                rustix::process::setsid()?;
                let fd = match tty {
                    Ctty::Stdin => rustix::stdio::stdin(),
                    Ctty::Stdout => rustix::stdio::stdout(),
                };
                rustix::process::ioctl_tiocsctty(fd)?;
            }
            if p.cores {
                let all = rustix::process::Rlimit { current: None, maximum: None };
                rustix::process::setrlimit(rustix::process::Resource::Core, all)?;
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &s in p.block {
                libc::sigaddset(&mut set, s);
            }
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            for &s in p.ignore {
                libc::signal(s, libc::SIG_IGN);
            }
            Ok(())
        })
    }
}
