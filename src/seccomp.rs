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
//! Never denied: kill, tgkill, setpgid, setsid, the `tcsetpgrp` ioctls, pidfd calls — job
//! control inside the sandbox needs them (SPEC T6, DESIGN.md "What not to do").

use anyhow::{anyhow, Context, Result};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::os::fd::OwnedFd;

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

fn arch() -> Result<TargetArch> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|e| anyhow!("seccomp: {e}"))
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

/// The filter as classic BPF (`seccomp(2)`), through the seccompiler crate.
///
/// # Errors
/// An unsupported architecture (only x86-64 and arm64 are built).
pub fn program() -> Result<BpfProgram> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = denied().into_iter().map(|s| (s, vec![])).collect();
    // The ioctl request is an `unsigned int` (`ioctl(2)`): compare the low 32 bits only, so a
    // request with junk in the high half cannot slip past.
    let ioctl = |req| -> Result<SeccompRule> {
        Ok(SeccompRule::new(vec![SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, req)?])?)
    };
    let ioctls = [TIOCSTI, TIOCLINUX, FIOASYNC, FIOSETOWN, SIOCSPGRP];
    rules.insert(libc::SYS_ioctl, ioctls.into_iter().map(ioctl).collect::<Result<_>>()?);
    rules.insert(libc::SYS_fcntl, fcntl_rules()?);
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch()?)?;
    Ok(filter.try_into()?)
}

/// `fcntl` commands that would aim a signal through a descriptor (SPEC X3): the command is
/// an `int`, compared on its low 32 bits; `F_SETFL` only when it sets `O_ASYNC`.
fn fcntl_rules() -> Result<Vec<SeccompRule>> {
    let cmd = |c: i32| SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, c as u64);
    let mut rules = Vec::new();
    for c in [F_SETSIG, libc::F_SETOWN, F_SETOWN_EX] {
        rules.push(SeccompRule::new(vec![cmd(c)?])?);
    }
    let async_bit = libc::O_ASYNC as u64;
    let sets_async = SeccompCondition::new(2, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(async_bit), async_bit)?;
    rules.push(SeccompRule::new(vec![cmd(libc::F_SETFL)?, sets_async])?);
    Ok(rules)
}

/// The program written to a sealed-off memfd at offset 0, for bwrap's `--seccomp FD`.
///
/// # Errors
/// `memfd_create(2)` or write errors, or those of [`program`].
pub fn memfd() -> Result<OwnedFd> {
    let prog = program()?;
    let fd = rustix::fs::memfd_create(c"snug-seccomp", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(std::io::Error::from)
        .context("memfd_create")?;
    let mut file = std::fs::File::from(fd);
    let mut bytes = Vec::with_capacity(prog.len() * 8);
    for ins in &prog {
        bytes.extend_from_slice(&ins.code.to_ne_bytes());
        bytes.push(ins.jt);
        bytes.push(ins.jf);
        bytes.extend_from_slice(&ins.k.to_ne_bytes());
    }
    file.write_all(&bytes).context("writing the seccomp program")?;
    file.rewind().context("rewinding the seccomp program")?;
    Ok(file.into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn program_builds_for_this_machine() {
        let p = super::program().unwrap();
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
