//! The kernel's values as types: a signal number, a process id, a wait status. Plain `i32`s
//! at the system seam become these, so a signal cannot be passed where a pid is meant.

use std::fmt;

/// A signal number (`signal(7)`); `Signal(0)` is the null signal of `kill(2)`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Signal(pub i32);

/// The signals the core names (x86_64 and aarch64 numbers, `signal(7)`).
impl Signal {
    pub const HUP: Signal = Signal(1);
    pub const INT: Signal = Signal(2);
    pub const QUIT: Signal = Signal(3);
    pub const KILL: Signal = Signal(9);
    pub const USR1: Signal = Signal(10);
    pub const USR2: Signal = Signal(12);
    pub const PIPE: Signal = Signal(13);
    pub const ALRM: Signal = Signal(14);
    pub const TERM: Signal = Signal(15);
    pub const CHLD: Signal = Signal(17);
    pub const CONT: Signal = Signal(18);
    pub const STOP: Signal = Signal(19);
    pub const TSTP: Signal = Signal(20);
    pub const TTIN: Signal = Signal(21);
    pub const TTOU: Signal = Signal(22);
    pub const WINCH: Signal = Signal(28);

    /// The raw number, for the system call.
    pub fn raw(self) -> i32 {
        self.0
    }

    /// One of the four stop signals (STOP, TSTP, TTIN, TTOU; `signal(7)`).
    pub fn is_stop(self) -> bool {
        matches!(self, Signal::STOP | Signal::TSTP | Signal::TTIN | Signal::TTOU)
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "signal {}", self.0)
    }
}

/// A process id in the caller's pid namespace (`credentials(7)`); always > 0.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Pid(pub i32);

impl Pid {
    /// A pid the kernel gave as a number: `None` for 0, which it gives for a process not
    /// visible in the caller's namespace (`SO_PEERCRED`, `ssi_pid`, `getpgid(2)`), or below.
    pub fn new(raw: i32) -> Option<Pid> {
        (raw > 0).then_some(Pid(raw))
    }

    /// The raw number, for the system call.
    pub fn raw(self) -> i32 {
        self.0
    }
}

/// The bare number, as `/proc/PID` paths and logs write it.
impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// An `errno` value (`errno(3)`), as init reports a failed `execve(2)` or its own failure.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Errno(pub i32);

/// A decoded wait status (`waitpid(2)`, `<sys/wait.h>`'s W* macros).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WaitStatus {
    /// `exit(code)`: 0–255.
    Exited(i32),
    /// Killed by a signal; `core` when it dumped core.
    Signaled { sig: Signal, core: bool },
    /// Stopped by a signal (WUNTRACED).
    Stopped(Signal),
    /// Continued by SIGCONT (WCONTINUED).
    Continued,
}

impl WaitStatus {
    /// Decode the `int` that `waitpid(2)` fills in, as glibc's W* macros do.
    pub fn from_raw(raw: i32) -> WaitStatus {
        let sig = raw & 0x7f;
        if raw == 0xffff {
            WaitStatus::Continued
        } else if raw & 0xff == 0x7f {
            WaitStatus::Stopped(Signal((raw >> 8) & 0xff))
        } else if sig == 0 {
            WaitStatus::Exited((raw >> 8) & 0xff)
        } else {
            WaitStatus::Signaled { sig: Signal(sig), core: raw & 0x80 != 0 }
        }
    }

    /// The `int` that `waitpid(2)` would have filled in (the inverse of [`from_raw`](Self::from_raw)).
    pub fn to_raw(self) -> i32 {
        match self {
            WaitStatus::Exited(code) => (code & 0xff) << 8,
            WaitStatus::Signaled { sig, core } => (sig.0 & 0x7f) | if core { 0x80 } else { 0 },
            WaitStatus::Stopped(sig) => ((sig.0 & 0xff) << 8) | 0x7f,
            WaitStatus::Continued => 0xffff,
        }
    }

    /// The exit code a shell gives this status (`sh(1)`: 128 + the signal); `None` while
    /// stopped or continued.
    pub fn shell_code(self) -> Option<i32> {
        match self {
            WaitStatus::Exited(code) => Some(code),
            WaitStatus::Signaled { sig, .. } => Some(128 + sig.0),
            WaitStatus::Stopped(_) | WaitStatus::Continued => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_status_round_trips_the_kernel_encoding() {
        // Values as the kernel writes them (kernel/exit.c, wait_task_stopped/continued).
        let cases = [
            (0x0000, WaitStatus::Exited(0)),
            (0x0300, WaitStatus::Exited(3)),
            (0xff00, WaitStatus::Exited(255)),
            (0x0009, WaitStatus::Signaled { sig: Signal::KILL, core: false }),
            (0x008b, WaitStatus::Signaled { sig: Signal(11), core: true }),
            (0x147f, WaitStatus::Stopped(Signal::TSTP)),
            (0x137f, WaitStatus::Stopped(Signal::STOP)),
            (0xffff, WaitStatus::Continued),
        ];
        for (raw, want) in cases {
            assert_eq!(WaitStatus::from_raw(raw), want, "{raw:#x}");
            assert_eq!(want.to_raw(), raw, "{want:?}");
        }
    }

    /// The raw numbers are the kernel's, and a signal says its number (fails with `raw`
    /// returning a constant, or an empty `Display`).
    #[test]
    fn raw_numbers_and_the_display_are_the_values() {
        assert_eq!(Signal::TERM.raw(), 15);
        assert_eq!(Signal(34).raw(), 34);
        assert_eq!(Pid(4242).raw(), 4242);
        assert_eq!(Pid(1).raw(), 1);
        assert_eq!(Pid::new(7), Some(Pid(7)));
        assert_eq!((Pid::new(0), Pid::new(-1)), (None, None));
        assert_eq!(Signal::HUP.to_string(), "signal 1");
        assert_eq!(format!("/proc/{}/stat", Pid(4242)), "/proc/4242/stat");
    }

    #[test]
    fn shell_codes_are_128_plus_the_signal() {
        assert_eq!(WaitStatus::Exited(7).shell_code(), Some(7));
        assert_eq!(WaitStatus::Signaled { sig: Signal::TERM, core: false }.shell_code(), Some(143));
        assert_eq!(WaitStatus::Stopped(Signal::TSTP).shell_code(), None);
        assert!(Signal::TTIN.is_stop() && !Signal::CONT.is_stop());
    }
}
