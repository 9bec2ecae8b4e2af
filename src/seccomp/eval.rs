//! A classic-BPF interpreter for the filter's tests (`Documentation/networking/filter.rst`,
//! the subset seccomp accepts): the compiled program is run on a `struct seccomp_data`
//! (`seccomp(2)`) for each system-call ABI, as the kernel would run it.

use super::bpf::Insn as sock_filter;

/// `SECCOMP_RET_ALLOW` (`seccomp(2)`).
pub const ALLOW: u32 = 0x7fff_0000;
/// `SECCOMP_RET_ERRNO | EPERM`.
pub const EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;
/// `SECCOMP_RET_ERRNO | ENOSYS`.
pub const ENOSYS: u32 = 0x0005_0000 | libc::ENOSYS as u32;
/// `SECCOMP_RET_KILL_PROCESS`.
pub const KILL: u32 = 0x8000_0000;

/// `AUDIT_ARCH_*` (`include/uapi/linux/audit.h`).
pub const X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "x86_64")]
pub const I386: u32 = 3 | 0x4000_0000;
pub const AARCH64: u32 = 183 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
pub const ARM: u32 = 40 | 0x4000_0000;

/// The `AUDIT_ARCH_*` of the ABI this crate is built for.
pub fn native() -> u32 {
    if cfg!(target_arch = "x86_64") {
        X86_64
    } else {
        AARCH64
    }
}

/// One call as the filter sees it: `nr`, `arch` and the six arguments.
pub struct Call {
    pub arch: u32,
    pub nr: u32,
    pub args: [u64; 6],
}

impl Call {
    pub fn new(arch: u32, nr: u32, args: &[u64]) -> Call {
        let mut a = [0; 6];
        a[..args.len()].copy_from_slice(args);
        Call { arch, nr, args: a }
    }

    /// The 32-bit word at byte `off` of `struct seccomp_data` (little-endian, as on the
    /// ABIs built: x86-64 and arm64).
    fn word(&self, off: u32) -> u32 {
        match off {
            0 => self.nr,
            4 => self.arch,
            16..=63 if off.is_multiple_of(4) => {
                let arg = self.args[(off as usize - 16) / 8];
                if off.is_multiple_of(8) {
                    arg as u32
                } else {
                    (arg >> 32) as u32
                }
            }
            _ => panic!("load at offset {off} of seccomp_data"),
        }
    }
}

/// Run `prog` on `call`: the action it returns. Panics on an instruction outside the subset
/// (a test failure, never a guess).
pub fn run(prog: &[sock_filter], call: &Call) -> u32 {
    let (mut a, mut pc) = (0u32, 0usize);
    loop {
        let i = &prog[pc];
        pc += 1;
        match i.code {
            0x20 => a = call.word(i.k), // LD W ABS
            0x00 => a = i.k,            // LD IMM
            0x54 => a &= i.k,           // ALU AND K
            0x44 => a |= i.k,           // ALU OR K
            0x06 => return i.k,         // RET K
            0x16 => return a,           // RET A
            0x05 => pc += i.k as usize, // JA
            0x15 | 0x25 | 0x35 | 0x45 => {
                let taken = match i.code {
                    0x15 => a == i.k,
                    0x25 => a > i.k,
                    0x35 => a >= i.k,
                    _ => a & i.k != 0,
                };
                pc += if taken { i.jt } else { i.jf } as usize;
            }
            c => panic!("BPF code {c:#x} at {}", pc - 1),
        }
    }
}
