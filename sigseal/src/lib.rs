//! Seal the signal state a process hands to the program it execs.
//!
//! A blocked mask and ignored dispositions survive `execve(2)` (see `signal(7)`, "Signal
//! mask and pending signals" and `sigaction(2)`, "A child created via fork(2) inherits a copy
//! of its parent's signal dispositions. During an execve(2), the dispositions of handled
//! signals are reset to the default; the dispositions of ignored signals are left
//! unchanged"). So a launcher started under `nohup`, `trap '' INT`, a non-interactive
//! shell's `&` or a parent that blocks signals would pass that state on to its payload,
//! which then never sees the ^C or TERM it expects. [`seal`] undoes both, and is meant to
//! run in a child between `fork(2)` and `execve(2)`.
//!
//! Rust's `std::process::Command` keeps the parent's blocked mask and resets only
//! SIGPIPE, so this must be called explicitly (from `pre_exec` or an own fork path).

use std::io;

/// Highest signal number the kernel knows (`_NSIG - 1` in `include/uapi/asm-generic/signal.h`).
pub const SIGNAL_MAX: i32 = 64;

/// What [`seal`] could not do: the `errno` of the failing `sigprocmask(2)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("sigprocmask failed with errno {0}")]
pub struct SealError(pub i32);

/// Empty the signal mask and set every ignored disposition (1..=64 but SIGKILL and SIGSTOP)
/// back to `SIG_DFL`.
///
/// Async-signal-safe and allocation-free: it only makes the raw `rt_sigaction(2)` and
/// `rt_sigprocmask(2)` system calls, so it may run between `fork(2)` and `execve(2)`. They are
/// raw because glibc's wrappers refuse its reserved signals 32 and 33, and an inherited
/// `SIG_IGN` on 32 has been seen (a test harness leaves it) and would reach the payload.
///
/// # Errors
/// [`SealError`] when the mask cannot be set; dispositions that cannot be read are skipped.
pub fn seal() -> Result<(), SealError> {
    seal_ignored(ignored())
}

/// The signals this process ignores now (1..=64 but SIGKILL and SIGSTOP), bit `n-1` for
/// signal `n`: 62 raw `rt_sigaction(2)` queries. Async-signal-safe. A disposition that cannot
/// be read counts as not ignored.
pub fn ignored() -> u64 {
    let mut mask = 0u64;
    for sig in 1..=SIGNAL_MAX {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let mut old = KernelSigaction::default();
        if raw(Raw::Action(sig, None, Some(&mut old))).is_ok() && old.handler == libc::SIG_IGN {
            mask |= 1u64 << (sig - 1);
        }
    }
    mask
}

/// [`seal`] when the ignored signals are known: `ignored` as [`ignored`] gave it, read by
/// the parent before `fork(2)` (the child inherits exactly those dispositions), so that the
/// child makes one `rt_sigaction(2)` per ignored signal instead of 62 queries.
/// Async-signal-safe and allocation-free.
///
/// # Errors
/// As [`seal`].
pub fn seal_ignored(ignored: u64) -> Result<(), SealError> {
    for sig in 1..=SIGNAL_MAX {
        if SigState::has(ignored, sig) && sig != libc::SIGKILL && sig != libc::SIGSTOP {
            let _ = raw(Raw::Action(sig, Some(&KernelSigaction::default()), None));
        }
    }
    // The raw rt_sigprocmask(2): glibc's wrapper keeps its own signals 32 and 33 as they were,
    // and a mask inherited with them blocked must not reach the payload either.
    set_mask(libc::SIG_SETMASK, 0).map(|_| ())
}

/// `rt_sigprocmask(2)` on the calling thread with a 64-bit kernel sigset (bit `n-1` for
/// signal `n`, 32 and 33 included, which glibc's `sigprocmask(3)` leaves out); `how` is
/// `SIG_BLOCK`, `SIG_UNBLOCK` or `SIG_SETMASK`. Gives the mask before. Async-signal-safe.
///
/// # Errors
/// [`SealError`] with the kernel's `errno` (`EINVAL` for another `how`).
pub fn set_mask(how: i32, mask: u64) -> Result<u64, SealError> {
    let mut old = 0u64;
    raw(Raw::Mask(how, &mask, &mut old)).map_err(SealError)?;
    Ok(old)
}

/// The disposition of `sig` (`rt_sigaction(2)`, raw: any of 1..=64, the C library's own
/// real-time signals included, which glibc and musl refuse), set to `SIG_DFL` with
/// `dfl_flags` (`SA_NOCLDSTOP` and the like) when given. Gives the handler before
/// (`SIG_DFL`, `SIG_IGN` or a function). Async-signal-safe.
///
/// # Errors
/// [`SealError`] with the kernel's `errno` (`EINVAL` for SIGKILL, SIGSTOP or no signal).
pub fn disposition(sig: i32, dfl_flags: Option<i32>) -> Result<libc::sighandler_t, SealError> {
    let mut old = KernelSigaction::default();
    let new = dfl_flags.map(|f| KernelSigaction { flags: f as libc::c_ulong, ..KernelSigaction::default() });
    raw(Raw::Action(sig, new.as_ref(), Some(&mut old))).map_err(SealError)?;
    Ok(old.handler)
}

/// The two raw system calls of this crate, each with the kernel's own layout.
enum Raw<'a> {
    /// `rt_sigaction(sig, new, old)`; `new` is only ever `SIG_DFL` here.
    Action(i32, Option<&'a KernelSigaction>, Option<&'a mut KernelSigaction>),
    /// `rt_sigprocmask(how, set, old)`.
    Mask(i32, &'a u64, &'a mut u64),
}

/// Make `call` (async-signal-safe: one bare system call); the `errno` on failure.
fn raw(call: Raw<'_>) -> Result<(), i32> {
    let (nr, arg, new, old) = match call {
        Raw::Action(sig, new, old) => (
            libc::SYS_rt_sigaction,
            sig,
            new.map_or(std::ptr::null(), |n| n as *const KernelSigaction).cast::<libc::c_void>(),
            old.map_or(std::ptr::null_mut(), |o| o as *mut KernelSigaction).cast::<libc::c_void>(),
        ),
        Raw::Mask(how, set, old) => (
            libc::SYS_rt_sigprocmask,
            how,
            (set as *const u64).cast::<libc::c_void>(),
            (old as *mut u64).cast::<libc::c_void>(),
        ),
    };
    // SAFETY: each pointer is null or comes from a reference of the layout the call expects
    // (`struct sigaction` of the kernel, or its 8-byte sigset), alive for the call. The only
    // action ever installed is SIG_DFL (handler 0), so no code of ours runs on a signal.
    if unsafe { libc::syscall(nr, arg, new, old, 8usize) } != 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    Ok(())
}

/// `struct sigaction` as the kernel takes it (`include/linux/signal_types.h`, with
/// `SA_RESTORER`, as on x86-64 and arm64); the default value is `SIG_DFL` with no flags.
#[repr(C)]
#[derive(Default)]
struct KernelSigaction {
    handler: libc::sighandler_t,
    flags: libc::c_ulong,
    restorer: usize,
    mask: u64,
}

/// A process's signal state as `/proc/PID/status` reports it (`proc(5)`): bit `n-1` stands
/// for signal `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SigState {
    /// Signals pending for the thread (`SigPnd`).
    pub pending: u64,
    /// Blocked signals (`SigBlk`).
    pub blocked: u64,
    /// Ignored signals (`SigIgn`).
    pub ignored: u64,
    /// Caught signals (`SigCgt`).
    pub caught: u64,
}

impl SigState {
    /// Whether signal `sig` is set in `mask`.
    pub fn has(mask: u64, sig: i32) -> bool {
        (1..=SIGNAL_MAX).contains(&sig) && mask & (1u64 << (sig - 1)) != 0
    }

    /// Parse the text of a `/proc/PID/status` file.
    ///
    /// # Errors
    /// `InvalidData` when a field is missing or not hexadecimal.
    pub fn parse(status: &str) -> io::Result<SigState> {
        let field = |name: &str| -> io::Result<u64> {
            let line = status
                .lines()
                .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("no {name}")))?;
            u64::from_str_radix(line.trim(), 16)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{name}: {e}")))
        };
        Ok(SigState {
            pending: field("SigPnd")?,
            blocked: field("SigBlk")?,
            ignored: field("SigIgn")?,
            caught: field("SigCgt")?,
        })
    }

    /// Read the state of process `pid` (`0` for this process) from `/proc` (for tests and `-v`;
    /// never to decide what to signal).
    ///
    /// # Errors
    /// The read error, or `InvalidData` as for [`SigState::parse`].
    pub fn of(pid: i32) -> io::Result<SigState> {
        let path = if pid == 0 { "/proc/self/status".to_string() } else { format!("/proc/{pid}/status") };
        SigState::parse(&std::fs::read_to_string(path)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn status_of_cat(seal_first: bool) -> SigState {
        status_of_cat_sealed(seal_first, false)
    }

    /// `cat /proc/self/status` from a child that blocks USR1 and ignores INT, HUP and 33,
    /// then seals (with [`seal`], or `known`: [`seal_ignored`] of what [`ignored`] reads).
    fn status_of_cat_sealed(seal_first: bool, known: bool) -> SigState {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new("cat");
        cmd.arg("/proc/self/status");
        // SAFETY: the closure only calls sigaction/sigprocmask (async-signal-safe).
        unsafe {
            cmd.pre_exec(move || {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGUSR1);
                libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                let ign = KernelSigaction { handler: libc::SIG_IGN, ..KernelSigaction::default() };
                let _ = raw(Raw::Action(33, Some(&ign), None));
                if seal_first {
                    let sealed = if known { seal_ignored(ignored()) } else { seal() };
                    sealed.map_err(|e| io::Error::from_raw_os_error(e.0))?;
                }
                Ok(())
            });
        }
        let out = cmd.output().expect("cat runs");
        SigState::parse(&String::from_utf8_lossy(&out.stdout)).expect("status parses")
    }

    /// S1 at the library level. Positive control: the same child without `seal` shows the
    /// blocked USR1 and ignored INT/HUP reach `cat` (the leak this crate exists to stop).
    #[test]
    fn s1_seal_clears_inherited_mask_and_ignores() {
        let leaked = status_of_cat(false);
        assert!(SigState::has(leaked.blocked, libc::SIGUSR1), "control: mask should leak");
        assert!(SigState::has(leaked.ignored, libc::SIGINT), "control: SIG_IGN should leak");
        let sealed = status_of_cat(true);
        assert_eq!(sealed.blocked, 0, "SigBlk");
        assert_eq!(sealed.ignored, 0, "SigIgn");
    }

    /// S1 with the ignored signals read before the fork (what snug's nest does): the same
    /// end state. Positive control: the unsealed child above shows INT, HUP and 33 ignored.
    #[test]
    fn s1_seal_ignored_clears_what_ignored_reads() {
        let leaked = status_of_cat_sealed(false, false);
        assert!(SigState::has(leaked.ignored, 33), "control: SIG_IGN on 33 should leak");
        let sealed = status_of_cat_sealed(true, true);
        assert_eq!((sealed.blocked, sealed.ignored), (0, 0), "SigBlk, SigIgn");
        // This test process: what the kernel says it ignores (Rust ignores SIGPIPE).
        let mine = ignored();
        assert_eq!(mine, SigState::of(0).unwrap().ignored);
        assert!(SigState::has(mine, libc::SIGPIPE));
    }

    #[test]
    fn parse_reads_hex_fields() {
        let s = SigState::parse("Name:\tx\nSigPnd:\t0000000000000000\nSigBlk:\t0000000000000200\nSigIgn:\t0000000000000003\nSigCgt:\t0000000000004000\n").unwrap();
        assert!(SigState::has(s.blocked, libc::SIGUSR1));
        assert!(SigState::has(s.ignored, libc::SIGHUP) && SigState::has(s.ignored, libc::SIGINT));
        assert!(SigState::has(s.caught, libc::SIGTERM));
        assert!(SigState::parse("Name: x\n").is_err());
    }
}
