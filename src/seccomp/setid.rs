//! No set-user-ID or set-group-ID file made by a payload that is the host's root (SPEC P11).
//!
//! A root payload's uid 0 and gid 0 are the host's (its user namespace maps every id), so a
//! set-id file it leaves in DIR, owned by uid 0 or group 0, runs as root for any host user
//! who can reach DIR: `PR_SET_NO_NEW_PRIVS` and the sandbox's `nosuid` mounts hold inside
//! only. So when the payload is root (or `--user` with uid 0 or gid 0), `EPERM` for:
//!
//! - `chmod`, `fchmod`, `fchmodat`, `fchmodat2` whose mode has `S_ISUID` or `S_ISGID`;
//! - `open`, `creat`, `openat` that may create (`O_CREAT` or `O_TMPFILE`) with such a mode;
//! - `mknod`, `mknodat` with such a mode.
//!
//! `openat2(2)` and `io_uring_setup(2)`: `ENOSYS`. `openat2`'s mode sits in a structure in
//! memory, which a seccomp filter cannot read, and libc falls back to `openat` on `ENOSYS`
//! as on kernels before 5.6; an io_uring's `IORING_OP_OPENAT` creates files with no system
//! call to judge, and programs fall back to plain calls as on kernels without io_uring.
//! `chown` needs no rule: without CAP_FSETID it clears the set-id bits (`chown(2)`).
//! File capabilities need CAP_SETFCAP, which the payload lacks. The mode is a `umode_t`
//! (`fs/open.c`), so its low 32 bits are all of it. x32 and i386 calls are killed earlier.

use super::bpf::{Asm, To};

/// `S_ISUID | S_ISGID` (`inode(7)`).
pub const SET_ID: u32 = 0o6000;
/// `O_CREAT` and `__O_TMPFILE` (`include/uapi/asm-generic/fcntl.h`, the same on x86-64 and
/// arm64): the flags with which `open` reads its mode.
const MAY_CREATE: u32 = libc::O_CREAT as u32 | 0o2000_0000;
/// `SECCOMP_RET_ERRNO | ENOSYS` (`seccomp(2)`).
const ERRNO_ENOSYS: u32 = 0x0005_0000 | libc::ENOSYS as u32;

/// The rules' labels: the argument that holds the mode, and the open calls' flags.
pub struct Labels {
    mode1: usize,
    mode2: usize,
    mode3: usize,
    open_flags1: usize,
    open_flags2: usize,
}

impl Labels {
    /// Fresh labels in `a`.
    pub fn new(a: &mut Asm) -> Labels {
        Labels { mode1: a.label(), mode2: a.label(), mode3: a.label(), open_flags1: a.label(), open_flags2: a.label() }
    }
}

/// Jumps for the calls these rules judge, with the syscall number loaded.
pub fn dispatch(a: &mut Asm, l: &Labels) {
    for nr in [libc::SYS_openat2, libc::SYS_io_uring_setup] {
        let other = a.label();
        a.jeq(nr as u32, To::Next, To::Label(other));
        a.ret(ERRNO_ENOSYS);
        a.place(other);
    }
    #[cfg(target_arch = "x86_64")]
    {
        for nr in [libc::SYS_chmod, libc::SYS_creat, libc::SYS_mknod] {
            a.jeq(nr as u32, To::Label(l.mode1), To::Next);
        }
        a.jeq(libc::SYS_open as u32, To::Label(l.open_flags1), To::Next);
    }
    a.jeq(libc::SYS_fchmod as u32, To::Label(l.mode1), To::Next);
    for nr in [libc::SYS_fchmodat, libc::SYS_fchmodat2, libc::SYS_mknodat] {
        a.jeq(nr as u32, To::Label(l.mode2), To::Next);
    }
    a.jeq(libc::SYS_openat as u32, To::Label(l.open_flags2), To::Next);
}

/// The rules, placed after every jump to them: the open calls' flags first (no creating
/// flag → `allow`, else on to the mode), then a set-id bit in the mode → `deny`.
pub fn rules(a: &mut Asm, l: &Labels, deny: usize, allow: usize) {
    for (at, flags, mode) in [(l.open_flags1, 1, l.mode2), (l.open_flags2, 2, l.mode3)] {
        a.place(at);
        a.load(super::arg_low(flags));
        a.and(MAY_CREATE);
        a.jeq(0, To::Label(allow), To::Label(mode));
    }
    for (at, arg) in [(l.mode1, 1), (l.mode2, 2), (l.mode3, 3)] {
        a.place(at);
        a.load(super::arg_low(arg));
        a.and(SET_ID);
        a.jeq(0, To::Label(allow), To::Label(deny));
    }
}

#[cfg(test)]
mod tests {
    use super::super::eval::{native, run, Call, ALLOW, ENOSYS, EPERM};

    const CREAT: u64 = (libc::O_CREAT | libc::O_WRONLY) as u64;

    /// P11: with the rules (a root payload), each way to give a file a set-id mode is
    /// refused and the same calls without those bits are not; without them (a caller other
    /// than root) all are allowed. Positive control: the program without the rules allowed
    /// `fchmodat(AT_FDCWD, "idsuid", 04755)`, the call `chmod 4755` makes.
    #[test]
    fn p11_set_id_modes_refused_for_a_root_payload() {
        let p = super::super::program(true).unwrap();
        let n = |nr: i64, args: &[u64]| run(&p, &Call::new(native(), nr as u32, args));
        let cwd = libc::AT_FDCWD as u32 as u64;
        for mode in [0o4755, 0o2755, 0o6755, 0o104_755 | 0xffff_0000_0000_0000] {
            assert_eq!(n(libc::SYS_fchmodat, &[cwd, 0, mode]), EPERM, "fchmodat {mode:o}");
            assert_eq!(n(libc::SYS_fchmodat2, &[cwd, 0, mode, 0]), EPERM, "fchmodat2 {mode:o}");
            assert_eq!(n(libc::SYS_fchmod, &[3, mode]), EPERM, "fchmod {mode:o}");
            assert_eq!(n(libc::SYS_openat, &[cwd, 0, CREAT, mode]), EPERM, "openat {mode:o}");
            assert_eq!(n(libc::SYS_mknodat, &[cwd, 0, 0o100_000 | mode, 0]), EPERM, "mknodat {mode:o}");
            #[cfg(target_arch = "x86_64")]
            {
                assert_eq!(n(libc::SYS_chmod, &[0, mode]), EPERM, "chmod {mode:o}");
                assert_eq!(n(libc::SYS_creat, &[0, mode]), EPERM, "creat {mode:o}");
                assert_eq!(n(libc::SYS_open, &[0, CREAT, mode]), EPERM, "open {mode:o}");
                assert_eq!(n(libc::SYS_mknod, &[0, 0o100_000 | mode, 0]), EPERM, "mknod {mode:o}");
            }
        }
        let tmpfile = libc::O_TMPFILE as u64 | libc::O_RDWR as u64;
        assert_eq!(n(libc::SYS_openat, &[cwd, 0, tmpfile, 0o4755]), EPERM, "O_TMPFILE");
        assert_eq!(n(libc::SYS_openat2, &[cwd, 0, 0, 24]), ENOSYS);
        assert_eq!(n(libc::SYS_io_uring_setup, &[8, 0]), ENOSYS);
        // Ordinary modes, sticky directories and opens that create nothing stay allowed.
        assert_eq!(n(libc::SYS_fchmodat, &[cwd, 0, 0o755]), ALLOW);
        assert_eq!(n(libc::SYS_fchmodat, &[cwd, 0, 0o1777]), ALLOW);
        assert_eq!(n(libc::SYS_fchmod, &[3, 0o644]), ALLOW);
        assert_eq!(n(libc::SYS_openat, &[cwd, 0, CREAT, 0o666]), ALLOW);
        assert_eq!(n(libc::SYS_openat, &[cwd, 0, libc::O_RDONLY as u64, 0o4755]), ALLOW, "no O_CREAT: mode unread");
        assert_eq!(n(libc::SYS_mknodat, &[cwd, 0, 0o10_644, 0]), ALLOW, "a fifo");
        let caller = super::super::program(false).unwrap();
        for (nr, args) in [
            (libc::SYS_fchmodat, [cwd, 0, 0o4755, 0]),
            (libc::SYS_fchmod, [3, 0o2755, 0, 0]),
            (libc::SYS_openat, [cwd, 0, CREAT, 0o4755]),
            (libc::SYS_openat2, [cwd, 0, 0, 24]),
        ] {
            assert_eq!(run(&caller, &Call::new(native(), nr as u32, &args)), ALLOW, "caller: {nr}");
        }
    }
}
