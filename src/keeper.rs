//! The keeper (SPEC T7): a small child of snug that outlives a SIGKILLed snug just long enough
//! to give the caller's terminal its settings back. Forked (no exec) before snug first goes
//! raw, in a process group of its own (a ^C or ^Z to snug's job never reaches it), ignoring
//! the signals a terminal or a shell sends; it reads snug's raw/cooked switches from a pipe
//! and, at EOF (snug is gone, however), restores the saved settings if snug's raw ones are
//! still in place (a program that changed them since keeps its change).

use rustix::fd::{AsRawFd, BorrowedFd, OwnedFd};
use rustix::termios::{SpecialCodeIndex as I, Termios};

/// Control characters carried, in `c_cc` order (`termios(3)`, Linux numbering 0–16).
const CC: [I; 17] = [
    I::VINTR,
    I::VQUIT,
    I::VERASE,
    I::VKILL,
    I::VEOF,
    I::VTIME,
    I::VMIN,
    I::VSWTC,
    I::VSTART,
    I::VSTOP,
    I::VSUSP,
    I::VEOL,
    I::VREPRINT,
    I::VDISCARD,
    I::VWERASE,
    I::VLNEXT,
    I::VEOL2,
];
/// Bytes of one encoded setting: four flag words and the control characters.
pub const ENCODED: usize = 16 + CC.len();
/// One message: a tag (`R` raw, `C` cooked), the saved and the raw settings.
const MESSAGE: usize = 1 + 2 * ENCODED;

/// A setting's flags and control characters as bytes (speeds and line discipline aside: snug
/// never changes them).
pub fn encode(t: &Termios) -> [u8; ENCODED] {
    let mut out = [0u8; ENCODED];
    let flags = [t.input_modes.bits(), t.output_modes.bits(), t.control_modes.bits(), t.local_modes.bits()];
    for (i, f) in flags.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&f.to_le_bytes());
    }
    for (i, c) in CC.iter().enumerate() {
        out[16 + i] = t.special_codes[*c];
    }
    out
}

/// `t` with the flags and control characters of `from` (an [`encode`]d setting; speeds and
/// line discipline stay `t`'s).
pub fn decode_onto(t: &mut Termios, from: &[u8; ENCODED]) {
    use rustix::termios::{ControlModes, InputModes, LocalModes, OutputModes};
    let word = |i: usize| u32::from_le_bytes([from[4 * i], from[4 * i + 1], from[4 * i + 2], from[4 * i + 3]]);
    t.input_modes = InputModes::from_bits_retain(word(0) as _);
    t.output_modes = OutputModes::from_bits_retain(word(1) as _);
    t.control_modes = ControlModes::from_bits_retain(word(2) as _);
    t.local_modes = LocalModes::from_bits_retain(word(3) as _);
    for (i, c) in CC.iter().enumerate() {
        t.special_codes[*c] = from[16 + i];
    }
}

/// snug's end of the keeper's pipe; dropping it (or snug's death) lets the keeper restore
/// and exit.
pub struct Keeper {
    pipe: OwnedFd,
}

impl Keeper {
    /// Fork the keeper for terminal `tty`; `None` when the pipe or the fork fails (snug still
    /// restores on every way out it lives through).
    pub fn start(tty: BorrowedFd<'_>) -> Option<Keeper> {
        use rustix::pipe::{pipe_with, PipeFlags};
        let (r, w) = pipe_with(PipeFlags::CLOEXEC).ok()?;
        let (tty_fd, r_fd) = (tty.as_raw_fd(), r.as_raw_fd());
        // SAFETY: the child makes only async-signal-safe calls (setpgid, sigaction, dup2,
        // close_range, read, tcgetattr, tcsetattr, _exit; `signal-safety(7)`) on integers and
        // stack memory, and never returns. The keeper is not waited for through its pidfd: it
        // outlives snug, or is reaped with snug's other children.
        match unsafe { crate::sys::process::clone3(0) }.ok()? {
            // SAFETY: this is that child; `keep`'s contract is the one above.
            crate::sys::process::Cloned::Child => unsafe { keep(tty_fd, r_fd) },
            crate::sys::process::Cloned::Parent { .. } => {}
        }
        drop(r);
        Some(Keeper { pipe: w })
    }

    fn send(&self, tag: u8, saved: &[u8; ENCODED], raw: &[u8; ENCODED]) {
        let mut msg = [0u8; MESSAGE];
        msg[0] = tag;
        msg[1..1 + ENCODED].copy_from_slice(saved);
        msg[1 + ENCODED..].copy_from_slice(raw);
        // At most PIPE_BUF: one atomic write (`pipe(7)`).
        let _ = rustix::io::write(&self.pipe, &msg);
    }

    /// snug set `raw`, having saved `saved`.
    pub fn raw(&self, saved: &Termios, raw: &Termios) {
        self.send(b'R', &encode(saved), &encode(raw));
    }

    /// snug gave the terminal its settings back.
    pub fn cooked(&self) {
        self.send(b'C', &[0; ENCODED], &[0; ENCODED]);
    }
}

/// The keeper's body (the fork child): never returns.
///
/// # Safety
/// Only in the child of [`crate::sys::process::clone3`], with `tty` and `pipe` open.
unsafe fn keep(tty: i32, pipe: i32) -> ! {
    libc::setpgid(0, 0);
    for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTSTP, libc::SIGHUP, libc::SIGTERM, libc::SIGTTOU, libc::SIGTTIN] {
        libc::signal(sig, libc::SIG_IGN);
    }
    // Nothing of snug's but the terminal and the pipe: the channel, the pty's master and the
    // pipe's write end must close when snug dies.
    libc::dup2(tty, 0);
    libc::dup2(pipe, 1);
    libc::syscall(libc::SYS_close_range, 2u32, u32::MAX, 0u32);
    let mut msg = [0u8; MESSAGE];
    let mut last = [0u8; MESSAGE];
    loop {
        let n = libc::read(1, msg.as_mut_ptr().cast(), MESSAGE);
        if n == MESSAGE as isize {
            last = msg;
        } else if n == 0 || (n < 0 && nestproc::errno() != libc::EINTR) {
            break;
        }
    }
    if last[0] == b'R' {
        if let Some(mut now) = crate::sys::fd::termios_of(0).filter(|now| fields(now) == last[1 + ENCODED..]) {
            set_fields(&mut now, &last[1..1 + ENCODED]);
            libc::tcsetattr(0, libc::TCSADRAIN, &now);
        }
    }
    crate::sys::process::exit_now(0)
}

/// [`encode`] of a libc `termios` (the keeper has no rustix value).
fn fields(t: &libc::termios) -> [u8; ENCODED] {
    let mut out = [0u8; ENCODED];
    for (i, f) in [t.c_iflag, t.c_oflag, t.c_cflag, t.c_lflag].iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&f.to_le_bytes());
    }
    out[16..].copy_from_slice(&t.c_cc[..CC.len()]);
    out
}

fn set_fields(t: &mut libc::termios, from: &[u8]) {
    let word = |i: usize| u32::from_le_bytes([from[4 * i], from[4 * i + 1], from[4 * i + 2], from[4 * i + 3]]);
    t.c_iflag = word(0);
    t.c_oflag = word(1);
    t.c_cflag = word(2);
    t.c_lflag = word(3);
    t.c_cc[..CC.len()].copy_from_slice(&from[16..ENCODED]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// T7: the keeper compares with exactly what snug encodes.
    #[test]
    fn t7_libc_and_rustix_settings_encode_alike() {
        let Ok(pty) = rustix::pty::openpt(rustix::pty::OpenptFlags::RDWR | rustix::pty::OpenptFlags::NOCTTY) else {
            return;
        };
        let t = rustix::termios::tcgetattr(&pty).expect("tcgetattr");
        let l = crate::sys::fd::termios_of(pty.as_raw_fd()).expect("tcgetattr");
        assert_eq!(encode(&t), fields(&l));
    }
}
