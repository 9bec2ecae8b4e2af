//! The payload's seccomp filter (SPEC X2, T9), loaded by bwrap from a memfd (`--seccomp`).
//!
//! One place lists what is denied, each with `EPERM`:
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`: sharing the caller's terminal must not let the
//!   payload push keystrokes into the caller's shell (`ioctl_tty(2)`, `ioctl_console(2)`).
//! - `ptrace`, `process_vm_readv`, `process_vm_writev`: no reading or steering of other
//!   sandbox processes, init among them.
//! - `kexec_load`, `kexec_file_load`, `bpf`, `perf_event_open`, `userfaultfd`, `add_key`,
//!   `keyctl`, `request_key`: kernel attack surface a payload has no business with (as
//!   flatpak and Docker's default profile deny them).
//!
//! - Signals through descriptors (SPEC X3): `fcntl(F_SETSIG)`, `fcntl(F_SETOWN)`,
//!   `fcntl(F_SETOWN_EX)`, `fcntl(F_SETFL)` with `O_ASYNC` set, and `ioctl(FIOSETOWN)`,
//!   `ioctl(SIOCSPGRP)`, `ioctl(FIOASYNC)`. An inherited open file whose owner is a host
//!   process (`F_SETOWN` by the caller) would otherwise let the payload pick the signal and
//!   switch on signal-driven I/O, and the kernel would send it to that host process
//!   (`fcntl(2)`, "Managing signals"). Leases and dnotify signal only their own setter.
//!   A descriptor the caller already armed (owner and `O_ASYNC` set on the host) keeps
//!   signalling its owner with the signal the caller chose: that is the caller's setup.
//!
//! - New cgroup namespaces (SPEC G3, K1): `CLONE_NEWCGROUP` in `unshare(2)` and `clone(2)`,
//!   and `clone3(2)` answered `ENOSYS` ([`cgroupns`]).
//!
//! - Set-id files and modes from a payload that is the host's root (SPEC P11, [`setid`]).
//!
//! Every other system-call ABI (SPEC X2): the program's first check kills the process on a
//! call whose `AUDIT_ARCH` is not the native one (i386 on x86-64, 32-bit ARM on arm64), and
//! on x86-64 a second kills it on an x32 number (`nr & __X32_SYSCALL_BIT`): x32 shares
//! `AUDIT_ARCH_X86_64` with x86-64 but numbers its calls apart (`x32 ioctl` is 0x40000202,
//! not 16), so the rules keyed by native numbers would never see it (`seccomp(2)`, "Caveats").
//!
//! Never denied: kill, tgkill, setpgid, setsid, the `tcsetpgrp` ioctls, pidfd calls — job
//! control inside the sandbox needs them (SPEC T6, docs/design.md "What not to do").

use anyhow::{Context, Result};
use bpf::{Asm, Insn, To};
use std::os::fd::OwnedFd;

mod bpf;
mod cgroupns;
mod setid;

/// `TIOCSTI` and `TIOCLINUX` from `include/uapi/asm-generic/ioctls.h` (same on x86-64 and arm64).
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;
/// `FIOASYNC` (`include/uapi/asm-generic/ioctls.h`), `FIOSETOWN` and `SIOCSPGRP`
/// (`include/uapi/linux/sockios.h`): the ioctl spellings of `O_ASYNC` and `F_SETOWN`.
const FIOASYNC: u64 = 0x5452;
const FIOSETOWN: u64 = 0x8901;
const SIOCSPGRP: u64 = 0x8902;
/// `F_SETSIG` and `F_SETOWN_EX` (`include/uapi/asm-generic/fcntl.h`), not in the libc crate.
const F_SETSIG: i32 = 10;
const F_SETOWN_EX: i32 = 15;

/// `AUDIT_ARCH_*` of the one ABI the filter's numbers are for (`include/uapi/linux/audit.h`).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;

/// Byte offsets in `struct seccomp_data` (`seccomp(2)`): `nr`, `arch`, and the low 32 bits
/// of `args[n]` (little-endian, as on both ABIs built).
const NR: u32 = 0;
const ARCH: u32 = 4;
const fn arg_low(n: u32) -> u32 {
    16 + 8 * n
}

/// The syscalls denied outright.
fn denied() -> Vec<i64> {
    vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_add_key,
        libc::SYS_keyctl,
        libc::SYS_request_key,
    ]
}

/// `__X32_SYSCALL_BIT` (`arch/x86/include/uapi/asm/unistd.h`): set in every x32 call number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// `SECCOMP_RET_*` (`seccomp(2)`).
const KILL_PROCESS: u32 = 0x8000_0000;
const ALLOW: u32 = 0x7fff_0000;
const ERRNO_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;

/// The filter as classic BPF (`seccomp(2)`): any other `AUDIT_ARCH` killed, on x86-64 any
/// x32 number killed, then the denials by native number; `host_root`: the payload is the
/// host's root ([`crate::identity::Identity::is_host_root`]), which adds [`setid`]'s rules.
///
/// # Errors
/// A jump that does not resolve (a bug here, caught by the unit tests).
pub fn program(host_root: bool) -> Result<Vec<Insn>> {
    build_with(cfg!(target_arch = "x86_64"), true, host_root)
}

/// The program without the x32 guard: what the guard is tested against.
#[cfg(test)]
fn native() -> Result<Vec<Insn>> {
    build_with(false, true, true)
}

/// Assemble the filter. The first three instructions are the arch check (load arch, equal:
/// skip, else kill); `x32` puts the x32 guard right after them. `cgroupns` (off only for
/// its tests' control) and `set_id` add those modules' rules.
fn build_with(x32: bool, cgroupns: bool, set_id: bool) -> Result<Vec<Insn>> {
    let mut a = Asm::default();
    let ns = cgroupns::Labels { flags: a.label() };
    let ids = setid::Labels::new(&mut a);
    let (deny, allow, ioctl, fcntl, native) = (a.label(), a.label(), a.label(), a.label(), a.label());
    a.load(ARCH);
    a.jeq(AUDIT_ARCH, To::Label(native), To::Next);
    a.ret(KILL_PROCESS);
    a.place(native);
    if x32 {
        guard_x32(&mut a);
    }
    a.load(NR);
    for nr in denied() {
        a.jeq(nr as u32, To::Label(deny), To::Next);
    }
    a.jeq(libc::SYS_ioctl as u32, To::Label(ioctl), To::Next);
    a.jeq(libc::SYS_fcntl as u32, To::Label(fcntl), To::Next);
    if cgroupns {
        cgroupns::dispatch(&mut a, &ns);
    }
    if set_id {
        setid::dispatch(&mut a, &ids);
    }
    a.ret(ALLOW);
    // The ioctl request is an `unsigned int` (`ioctl(2)`): compare the low 32 bits only, so a
    // request with junk in the high half cannot slip past.
    a.place(ioctl);
    a.load(arg_low(1));
    for req in [TIOCSTI, TIOCLINUX, FIOASYNC, FIOSETOWN, SIOCSPGRP] {
        a.jeq(req as u32, To::Label(deny), To::Next);
    }
    a.ret(ALLOW);
    fcntl_rules(&mut a, fcntl, deny, allow);
    if cgroupns {
        cgroupns::flags_rule(&mut a, &ns, deny, allow);
    }
    if set_id {
        setid::rules(&mut a, &ids, deny, allow);
    }
    a.place(allow);
    a.ret(ALLOW);
    a.place(deny);
    a.ret(ERRNO_EPERM);
    a.finish()
}

/// A kill for any x32 number. `nr == -1` stays out of it: the kernel turns it into ENOSYS
/// itself, and a tracer uses it to skip a call (libseccomp makes the same exception).
fn guard_x32(a: &mut Asm) {
    let not_x32 = a.label();
    a.load(NR);
    a.jge(X32_SYSCALL_BIT, To::Next, To::Label(not_x32));
    a.jeq(u32::MAX, To::Label(not_x32), To::Next);
    a.ret(KILL_PROCESS);
    a.place(not_x32);
}

/// `fcntl` commands that would aim a signal through a descriptor (SPEC X3): the command is
/// an `int`, compared on its low 32 bits; `F_SETFL` only when it sets `O_ASYNC`.
fn fcntl_rules(a: &mut Asm, at: usize, deny: usize, allow: usize) {
    a.place(at);
    a.load(arg_low(1));
    for c in [F_SETSIG, libc::F_SETOWN, F_SETOWN_EX] {
        a.jeq(c as u32, To::Label(deny), To::Next);
    }
    a.jeq(libc::F_SETFL as u32, To::Next, To::Label(allow));
    a.load(arg_low(2));
    a.and(libc::O_ASYNC as u32);
    a.jeq(libc::O_ASYNC as u32, To::Label(deny), To::Label(allow));
}

/// An empty memfd for bwrap's `--seccomp FD`, which [`fill`] writes the program into: made
/// before nest is cloned (nest passes it on), filled after, while nest starts (SPEC B1).
///
/// # Errors
/// `memfd_create(2)`'s.
pub fn memfd() -> Result<OwnedFd> {
    let fd = rustix::fs::memfd_create(c"snug-seccomp", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(std::io::Error::from)
        .context("memfd_create")?;
    Ok(fd)
}

/// Write the program at offset 0 of `fd` ([`memfd`]) with `pwrite(2)`, which leaves the
/// file offset, shared with nest's copy, at 0 for bwrap's read. Before bwrap has its options:
/// it reads the program only then.
///
/// # Errors
/// The write error, or those of [`program`].
pub fn fill(fd: &OwnedFd, host_root: bool) -> Result<()> {
    let bytes: Vec<u8> = program(host_root)?.iter().flat_map(|i| i.to_bytes()).collect();
    let mut done = 0;
    while done < bytes.len() {
        match rustix::io::pwrite(fd, &bytes[done..], done as u64) {
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(std::io::Error::from(e)).context("writing the seccomp program"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod eval;

#[cfg(test)]
mod tests {
    #[test]
    fn program_builds_for_this_machine() {
        let p = super::program(true).unwrap();
        assert!(p.len() > 10);
    }

    /// X2: job control inside needs these; the list of denials must never grow to them.
    #[test]
    fn x2_job_control_calls_are_never_denied() {
        let denied = super::denied();
        for call in [
            libc::SYS_kill,
            libc::SYS_tgkill,
            libc::SYS_setpgid,
            libc::SYS_setsid,
            libc::SYS_pidfd_open,
            libc::SYS_pidfd_send_signal,
            libc::SYS_ioctl,
        ] {
            assert!(!denied.contains(&call), "syscall {call} must stay allowed");
        }
    }
}

/// X2 for every ABI: the compiled program, run by a BPF interpreter on calls through x86-64,
/// x32 and i386 (arm64 and its 32-bit compat where built).
#[cfg(test)]
mod abi_tests {
    use super::eval::{native, run, Call, ALLOW, EPERM, KILL};
    use super::{TIOCLINUX, TIOCSTI};

    #[test]
    fn x2_native_denials_and_allowances() {
        let p = super::program(true).unwrap();
        let n = |nr: i64, args: &[u64]| run(&p, &Call::new(native(), nr as u32, args));
        assert_eq!(n(libc::SYS_ioctl, &[0, TIOCSTI]), EPERM);
        assert_eq!(n(libc::SYS_ioctl, &[0, TIOCLINUX]), EPERM);
        // High bits of the request are ignored by the kernel; so by the filter.
        assert_eq!(n(libc::SYS_ioctl, &[0, TIOCSTI | 0xdead_0000_0000]), EPERM);
        assert_eq!(n(libc::SYS_fcntl, &[0, libc::F_SETOWN as u64, 1]), EPERM);
        assert_eq!(n(libc::SYS_ptrace, &[]), EPERM);
        assert_eq!(n(libc::SYS_ioctl, &[0, libc::TIOCGWINSZ]), ALLOW);
        assert_eq!(n(libc::SYS_write, &[1]), ALLOW);
        assert_eq!(n(libc::SYS_kill, &[1, 15]), ALLOW);
        assert_eq!(n(-1, &[]), ALLOW, "nr -1 is the kernel's ENOSYS, never a kill");
    }

    /// X2, X3: every denial by native number and each ioctl and fcntl form, the `F_SETFL`
    /// rule only when it sets `O_ASYNC` (fails with the `O_ASYNC` test dropped: F_SETFL with
    /// O_NONBLOCK evaluated to EPERM; with the F_SETFL rule dropped: O_ASYNC to ALLOW).
    #[test]
    fn x2_x3_every_denial_and_only_those() {
        let p = super::program(true).unwrap();
        let n = |nr: i64, args: &[u64]| run(&p, &Call::new(native(), nr as u32, args));
        for nr in super::denied() {
            assert_eq!(n(nr, &[]), EPERM, "syscall {nr}");
        }
        for req in [TIOCSTI, TIOCLINUX, super::FIOASYNC, super::FIOSETOWN, super::SIOCSPGRP] {
            assert_eq!(n(libc::SYS_ioctl, &[0, req]), EPERM, "ioctl {req:#x}");
        }
        for cmd in [super::F_SETSIG, libc::F_SETOWN, super::F_SETOWN_EX] {
            assert_eq!(n(libc::SYS_fcntl, &[0, cmd as u64, 1]), EPERM, "fcntl {cmd}");
        }
        let setfl = |flags: i32| n(libc::SYS_fcntl, &[0, libc::F_SETFL as u64, flags as u64]);
        assert_eq!(setfl(libc::O_ASYNC | libc::O_NONBLOCK), EPERM);
        assert_eq!(setfl(libc::O_NONBLOCK), ALLOW);
        assert_eq!(n(libc::SYS_fcntl, &[0, libc::F_GETFL as u64, 0]), ALLOW);
        assert_eq!(n(libc::SYS_fcntl, &[0, libc::F_GETOWN as u64, 0]), ALLOW);
        assert_eq!(n(libc::SYS_ioctl, &[0, libc::TIOCSPGRP]), ALLOW);
    }

    /// x32 numbers (`arch/x86/entry/syscalls/syscall_64.tbl`, `__X32_SYSCALL_BIT` added):
    /// ioctl 514, ptrace 521, fcntl 72 (shared).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x2_x32_calls_are_not_allowed() {
        const X32: u32 = 0x4000_0000;
        let calls = [
            ("x32 ioctl(TIOCSTI)", Call::new(super::eval::X86_64, X32 | 514, &[0, TIOCSTI])),
            ("x32 fcntl(F_SETOWN)", Call::new(super::eval::X86_64, X32 | 72, &[0, libc::F_SETOWN as u64, 1])),
            ("x32 ptrace", Call::new(super::eval::X86_64, X32 | 521, &[])),
            ("x32 write", Call::new(super::eval::X86_64, X32 | 1, &[1])),
        ];
        // Positive control: the program without the guard lets every one of them through
        // (fails without the x32 guard: each evaluated to ALLOW, 0x7fff0000).
        let bare = super::native().unwrap();
        for (what, c) in &calls {
            assert_eq!(run(&bare, c), ALLOW, "control: {what} is caught without the guard?");
        }
        let p = super::program(true).unwrap();
        for (what, c) in &calls {
            assert_eq!(run(&p, c), KILL, "{what}");
        }
    }

    /// i386 through `int 0x80` on x86-64 (`syscall_32.tbl`): ioctl 54, fcntl 55, fcntl64 221,
    /// ptrace 26, process_vm_writev 348. A foreign arch is killed whatever the call.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x2_i386_calls_are_not_allowed() {
        let p = super::program(true).unwrap();
        // Positive control: without its arch check (the first three instructions) the
        // program reads i386 numbers as x86-64 ones and allows i386 ioctl(TIOCSTI) (54 is
        // setsockopt there) and ptrace (26 is msync).
        let unchecked = &p[3..];
        for nr in [54, 26] {
            assert_eq!(run(unchecked, &Call::new(super::eval::I386, nr, &[0, TIOCSTI])), ALLOW, "control: {nr}");
        }
        let i386 = |nr, args: &[u64]| run(&p, &Call::new(super::eval::I386, nr, args));
        assert_eq!(i386(54, &[0, TIOCSTI]), KILL);
        assert_eq!(i386(54, &[0, TIOCLINUX]), KILL);
        assert_eq!(i386(55, &[0, libc::F_SETOWN as u64, 1]), KILL);
        assert_eq!(i386(221, &[0, libc::F_SETOWN as u64, 1]), KILL);
        assert_eq!(i386(26, &[]), KILL);
        assert_eq!(i386(348, &[]), KILL);
    }

    /// arm64's 32-bit compat ABI (`AUDIT_ARCH_ARM`): ioctl 54, ptrace 26.
    #[cfg(target_arch = "aarch64")]
    #[test]
    fn x2_arm_compat_calls_are_not_allowed() {
        let p = super::program(true).unwrap();
        let arm = |nr, args: &[u64]| run(&p, &Call::new(super::eval::ARM, nr, args));
        assert_eq!(arm(54, &[0, TIOCSTI]), KILL);
        assert_eq!(arm(26, &[]), KILL);
    }
}
