//! No new cgroup namespace for the payload (SPEC G3, K1 with `--allow-userns`).
//!
//! A payload allowed user namespaces that makes a cgroup namespace of its own owns it, and
//! may then mount a cgroup v1 hierarchy whose root is the sandbox's own cgroup: in the
//! freezer hierarchy, writing `FROZEN` to that root's `freezer.state` holds bwrap, init and
//! the payload in state D, through SIGTERM and SIGKILL alike, and once snug is killed
//! nothing is left to thaw them. Denying the namespace is what holds: thawing afterwards
//! cannot keep K1. Without a cgroup namespace it owns, no cgroupfs mount is allowed to it
//! (`cgroup1_get_tree` and `cgroup_get_tree` ask for `CAP_SYS_ADMIN` over the user namespace
//! that owns the caller's cgroup namespace, which is bwrap's or the host's), and `setns(2)`
//! into one needs the same capability.
//!
//! - `unshare(2)` and `clone(2)` with `CLONE_NEWCGROUP` in their flags (the first argument
//!   of both on x86-64 and arm64): `EPERM`, as the kernel answers a caller without the
//!   capability.
//! - `clone3(2)`: `ENOSYS`. Its flags sit in a structure in memory, which a seccomp filter
//!   cannot read; glibc's `posix_spawn`, `pthread_create` and `fork`-like paths fall back to
//!   `clone` on `ENOSYS`, as they do on kernels before 5.3.
//!
//! A sandbox run inside the payload cannot have a cgroup namespace of its own either: bwrap's
//! `--unshare-cgroup` and `--unshare-cgroup-try` fail there ("Creating new namespace
//! failed"), and `--dry-run` says so.

use super::bpf::{Asm, To};

/// `CLONE_NEWCGROUP` (`include/uapi/linux/sched.h`).
pub const CLONE_NEWCGROUP: u32 = 0x0200_0000;
/// `SECCOMP_RET_ERRNO | ENOSYS` (`seccomp(2)`).
const ERRNO_ENOSYS: u32 = 0x0005_0000 | libc::ENOSYS as u32;

/// The calls these rules look at, each with the label of its rule.
pub struct Labels {
    /// `unshare` and `clone`: the flags in the first argument.
    pub flags: usize,
}

/// Jumps for the calls this module judges, with the syscall number loaded: `clone3` returns
/// `ENOSYS` here; `unshare` and `clone` go to `labels.flags`.
pub fn dispatch(a: &mut Asm, labels: &Labels) {
    let not_clone3 = a.label();
    a.jeq(libc::SYS_clone3 as u32, To::Next, To::Label(not_clone3));
    a.ret(ERRNO_ENOSYS);
    a.place(not_clone3);
    a.jeq(libc::SYS_unshare as u32, To::Label(labels.flags), To::Next);
    a.jeq(libc::SYS_clone as u32, To::Label(labels.flags), To::Next);
}

/// The flags rule at `labels.flags`: `CLONE_NEWCGROUP` set in the low 32 bits of the first
/// argument → `deny`, else `allow`. The high half carries no namespace flag (`clone(2)`'s
/// flags are an `unsigned long` whose namespace bits are all below bit 32).
pub fn flags_rule(a: &mut Asm, labels: &Labels, deny: usize, allow: usize) {
    a.place(labels.flags);
    a.load(super::arg_low(0));
    a.and(CLONE_NEWCGROUP);
    a.jeq(CLONE_NEWCGROUP, To::Label(deny), To::Label(allow));
}

#[cfg(test)]
mod tests {
    use super::super::eval::{native, run, Call, ALLOW, ENOSYS, EPERM};
    use super::CLONE_NEWCGROUP;

    /// `CLONE_NEWUSER | CLONE_NEWNS`, what a nested sandbox asks for besides.
    const USER_MOUNT: u64 = 0x1000_0000 | 0x0002_0000;

    /// G3, K1: a new cgroup namespace is refused in unshare and clone, whatever else is
    /// asked with it; user and mount namespaces, threads and forks are not; clone3 is
    /// answered ENOSYS. Positive control: the program of the rules without this module
    /// allowed `unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWCGROUP)`, the call the freezing
    /// payload makes first.
    #[test]
    fn g3_k1_no_new_cgroup_namespace() {
        let p = super::super::program(true).unwrap();
        let n = |nr: i64, args: &[u64]| run(&p, &Call::new(native(), nr as u32, args));
        let cg = u64::from(CLONE_NEWCGROUP);
        assert_eq!(n(libc::SYS_unshare, &[cg]), EPERM);
        assert_eq!(n(libc::SYS_unshare, &[cg | USER_MOUNT]), EPERM);
        assert_eq!(n(libc::SYS_clone, &[cg | USER_MOUNT | libc::SIGCHLD as u64]), EPERM);
        assert_eq!(n(libc::SYS_clone, &[cg | 0xffff_ffff_0000_0000]), EPERM);
        assert_eq!(n(libc::SYS_clone3, &[0, 88]), ENOSYS);
        assert_eq!(n(libc::SYS_unshare, &[USER_MOUNT]), ALLOW);
        assert_eq!(n(libc::SYS_unshare, &[0x4000_0000 | 0x2000_0000]), ALLOW, "net and pid");
        assert_eq!(n(libc::SYS_clone, &[libc::SIGCHLD as u64]), ALLOW, "fork");
        let thread =
            (libc::CLONE_VM | libc::CLONE_FS | libc::CLONE_FILES | libc::CLONE_SIGHAND | libc::CLONE_THREAD) as u64;
        assert_eq!(n(libc::SYS_clone, &[thread]), ALLOW, "a thread");
        assert_eq!(n(libc::SYS_setns, &[3, cg]), ALLOW, "setns needs the capability it lacks");
        let bare = super::super::build_with(cfg!(target_arch = "x86_64"), false, false).unwrap();
        let control = run(&bare, &Call::new(native(), libc::SYS_unshare as u32, &[cg | USER_MOUNT]));
        assert_eq!(control, ALLOW, "control: the rule-less program already refuses it?");
    }
}
