//! Who the payload is (SPEC P11). A caller other than root: that caller, through bwrap's
//! user namespace, which maps the caller's uid alone. Root: the host's root in a user
//! namespace that nest makes and snug maps onto every id of its own (`0 0 4294967295` on a
//! host), so a DIR of another uid (a CI container's checkout of uid 1001, an sdist extracted
//! as root) shows its owners and takes writes, `chown` and `tar x` as without snug; the
//! payload keeps only CAP_CHOWN, CAP_DAC_OVERRIDE and CAP_FOWNER there, nothing in its
//! bounding set beyond them, and bwrap's `PR_SET_NO_NEW_PRIVS` keeps any exec from gaining
//! more (`capabilities(7)`, "Transformation of capabilities during execve()"). `--user
//! UID[:GID]` (root only): that user instead, with no capability at all.
//!
//! bwrap then runs without `--unshare-user` (a user namespace of its own would map uid 0
//! alone, `bwrap(1)`), so its `--disable-userns` is not available: nest writes `0` to
//! `user.max_user_namespaces` of its user namespace instead, the limit `--disable-userns`
//! sets (`user_namespaces(7)`), which the payload, without CAP_SYS_RESOURCE there, cannot
//! raise (SPEC X2).

use crate::error::{failure, USAGE};
use rustix::thread::{CapabilitySet, CapabilitySets};
use std::sync::OnceLock;

mod owners;
pub use owners::unmapped_line;

/// Who the payload runs as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Identity {
    /// snug's caller, not root: bwrap's own user namespace maps that uid alone.
    #[default]
    Caller,
    /// The host's root with [`ROOT_KEEPS`] over nest's fully mapped user namespace.
    Root,
    /// `--user UID[:GID]` as root: that uid and gid, no supplementary group, no capability.
    User {
        /// The payload's uid.
        uid: u32,
        /// The payload's gid.
        gid: u32,
    },
}

/// The capabilities a root payload keeps (SPEC P11): owners, modes and permission checks
/// in DIR as root has them without snug; never CAP_SYS_ADMIN, CAP_SETUID or CAP_FSETID.
pub const ROOT_KEEPS: CapabilitySet =
    CapabilitySet::CHOWN.union(CapabilitySet::DAC_OVERRIDE).union(CapabilitySet::FOWNER);

/// What init holds for itself under `--user` and never passes on: the switch to the user in
/// each child before its exec, and signals to the user's processes, which are not init's uid.
const USER_INIT_HOLDS: CapabilitySet = CapabilitySet::SETUID.union(CapabilitySet::SETGID).union(CapabilitySet::KILL);

/// The `--cap-add` words bwrap gives init for itself alone ([`Identity::cap_words`]), which a
/// `--dry-run` line pasted by hand, without init, leaves out.
pub const INIT_ONLY: [&str; 4] = ["CAP_SETPCAP", "CAP_SETUID", "CAP_SETGID", "CAP_KILL"];

/// The word before the identity in init's arguments.
const WORD: &str = "as=";

impl Identity {
    /// The identity for a run: `user` is `--user`'s value, `root` whether snug's effective
    /// uid is 0.
    ///
    /// # Errors
    /// 64 for `--user` from a caller other than root, or a value that is not `UID[:GID]`
    /// (numbers, or a login name for UID).
    pub fn of(user: Option<&str>, root: bool) -> anyhow::Result<Identity> {
        match (user, root) {
            (None, false) => Ok(Identity::Caller),
            (None, true) => Ok(Identity::Root),
            (Some(_), false) => {
                Err(failure(USAGE, "--user needs snug to run as root (a payload runs as its caller otherwise)"))
            }
            (Some(v), true) => parse_user(v, &|name| crate::passwd::by_name(name).map(|u| u.uid), &primary_gid)
                .ok_or_else(|| failure(USAGE, format!("--user {v:?}: expected UID[:GID], numbers or a login name"))),
        }
    }

    /// snug runs as root: nest makes the user namespace and bwrap none.
    pub fn is_root(self) -> bool {
        self != Identity::Caller
    }

    /// The payload is the host's uid 0 or gid 0 (as root, or `--user` with either), so a
    /// set-id file it makes would be root's on the host: the seccomp filter refuses set-id
    /// modes then (SPEC P11, src/seccomp/setid.rs). A caller other than root is never either.
    pub fn is_host_root(self) -> bool {
        match self {
            Identity::Caller => false,
            Identity::Root => true,
            Identity::User { uid, gid } => uid == 0 || gid == 0,
        }
    }

    /// The word init gets for this identity (none for the caller's).
    pub fn init_word(self) -> Option<String> {
        match self {
            Identity::Caller => None,
            Identity::Root => Some(format!("{WORD}root")),
            Identity::User { uid, gid } => Some(format!("{WORD}{uid}:{gid}")),
        }
    }

    /// The identity among init's arguments ([`Identity::init_word`]).
    pub fn from_init_args(args: &[String]) -> Identity {
        let Some(v) = args.iter().find_map(|a| a.strip_prefix(WORD)) else { return Identity::Caller };
        if v == "root" {
            return Identity::Root;
        }
        let ids = v.split_once(':').and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)));
        ids.map_or(Identity::Root, |(uid, gid)| Identity::User { uid, gid })
    }

    /// bwrap's `--cap-add` words after `--cap-drop ALL`: what init needs to settle the
    /// payload's capabilities ([`settle`]); none for the caller's.
    pub fn cap_words(self) -> Vec<String> {
        let caps: &[&str] = match self {
            Identity::Caller => &[],
            Identity::Root => &["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_SETPCAP"],
            Identity::User { .. } => &["CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_SETPCAP"],
        };
        caps.iter().flat_map(|c| ["--cap-add".to_string(), c.to_string()]).collect()
    }
}

/// `UID[:GID]`: UID a number or a login name (`uid_of`), GID a number, else the user's
/// primary group (`gid_of`), else UID.
fn parse_user(v: &str, uid_of: &dyn Fn(&str) -> Option<u32>, gid_of: &dyn Fn(u32) -> Option<u32>) -> Option<Identity> {
    let (u, g) = match v.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (v, None),
    };
    let uid = match u.parse::<u32>() {
        Ok(n) => n,
        Err(_) if !u.is_empty() => uid_of(u)?,
        Err(_) => return None,
    };
    let gid = match g {
        Some(g) => g.parse::<u32>().ok()?,
        None => gid_of(uid).unwrap_or(uid),
    };
    // The kernel's "no id" (-1) is no user to run as.
    (uid != u32::MAX && gid != u32::MAX).then_some(Identity::User { uid, gid })
}

/// The primary group of `uid` in the host's user database.
fn primary_gid(uid: u32) -> Option<u32> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok().flatten()?;
    Some(user.gid.as_raw())
}

/// Whether nested user namespaces are off in the sandbox bwrap's `argv` makes: bwrap's
/// `--disable-userns`, or, as root (no `--unshare-user`: nest's namespace), unless
/// `allow_userns`, nest's `user.max_user_namespaces = 0`.
pub fn userns_denied(argv: &[String], allow_userns: bool) -> bool {
    let has = |w: &str| argv.iter().any(|a| a == w);
    has("--disable-userns") || (!has("--unshare-user") && !allow_userns)
}

/// The uid and gid maps for nest's user namespace as root: each range of snug's own user
/// namespace onto itself (one line, `0 0 4294967295`, on a host; a container's ranges in a
/// container), read from `/proc/self/uid_map` and `gid_map` (`user_namespaces(7)`).
///
/// # Errors
/// The read's.
pub fn own_maps() -> std::io::Result<(String, String)> {
    let identity = |text: String| -> String {
        text.lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (w.len() == 3).then(|| format!("{} {} {}\n", w[0], w[0], w[2]))
            })
            .collect()
    };
    Ok((
        identity(std::fs::read_to_string("/proc/self/uid_map")?),
        identity(std::fs::read_to_string("/proc/self/gid_map")?),
    ))
}

/// Write `maps` ([`own_maps`]) for the process `pid` (nest, in its new user namespace):
/// snug's capabilities in its own namespace allow any mapped range (`user_namespaces(7)`,
/// "Defining user and group ID mappings"). setgroups stays allowed, for `--user`.
///
/// # Errors
/// The writes'.
pub fn write_maps(pid: snug_core::Pid, (uid, gid): &(String, String)) -> std::io::Result<()> {
    std::fs::write(format!("/proc/{pid}/gid_map"), gid)?;
    std::fs::write(format!("/proc/{pid}/uid_map"), uid)
}

/// The user init switches each child to before its exec; set once by [`settle`].
static PAYLOAD_USER: OnceLock<(u32, u32)> = OnceLock::new();

/// In init, before the payload's process exists: the bounding set down to what the payload
/// may hold ([`ROOT_KEEPS`] as root, nothing under `--user`), then init's own sets down to
/// that (inheritable: what a root payload's exec keeps) plus, under `--user`,
/// [`USER_INIT_HOLDS`]. Nothing for the caller's identity (bwrap left init none).
///
/// # Errors
/// `prctl(PR_CAPBSET_DROP)`'s or `capset(2)`'s.
pub fn settle(identity: Identity) -> Result<(), rustix::io::Errno> {
    let (keep, hold) = match identity {
        Identity::Caller => return Ok(()),
        Identity::Root => (ROOT_KEEPS, CapabilitySet::empty()),
        Identity::User { uid, gid } => {
            let _ = PAYLOAD_USER.set((uid, gid));
            (CapabilitySet::empty(), USER_INIT_HOLDS)
        }
    };
    for cap in CapabilitySet::all().iter().filter(|c| !keep.contains(*c)) {
        match rustix::thread::remove_capability_from_bounding_set(cap) {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {} // INVAL: a capability this kernel lacks
            Err(e) => return Err(e),
        }
    }
    let sets = CapabilitySets { effective: keep | hold, permitted: keep | hold, inheritable: keep };
    rustix::thread::set_capabilities(None, sets)
}

/// In a child of init between fork and exec, under `--user`: the payload's gid as its only
/// group, then its gid and uid (real, effective, saved); the change of uid from 0 clears
/// every capability (`capabilities(7)`, "Effect of user ID changes on capabilities").
/// Returns 0, or the failing call's `errno`. Raw system calls only (async-signal-safe; the
/// C library's wrappers would signal other threads, `nptl(7)`).
///
/// # Safety
/// Only in the child of `fork(2)` of a single-threaded process, before its exec.
pub unsafe fn become_payload_user() -> i32 {
    let Some(&(uid, gid)) = PAYLOAD_USER.get() else { return 0 };
    // SAFETY: three system calls on integers and on `groups`, on the stack.
    unsafe {
        let groups = [gid as libc::gid_t];
        if libc::syscall(libc::SYS_setgroups, 1, groups.as_ptr()) != 0
            || libc::syscall(libc::SYS_setresgid, gid, gid, gid) != 0
            || libc::syscall(libc::SYS_setresuid, uid, uid, uid) != 0
        {
            return nestproc::errno();
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Option<Identity> {
        parse_user(v, &|n| (n == "runner").then_some(1001), &|u| (u == 1001).then_some(127))
    }

    #[test]
    fn p11_user_values() {
        assert_eq!(parse("4242"), Some(Identity::User { uid: 4242, gid: 4242 }));
        assert_eq!(parse("1001"), Some(Identity::User { uid: 1001, gid: 127 }));
        assert_eq!(parse("1001:1001"), Some(Identity::User { uid: 1001, gid: 1001 }));
        assert_eq!(parse("runner:5"), Some(Identity::User { uid: 1001, gid: 5 }));
        for bad in ["", ":5", "5:", "5:x", "nobody-here", "4294967295", "-1"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn p11_user_needs_root() {
        let e = Identity::of(Some("4242"), false).unwrap_err();
        assert_eq!(crate::error::code_of(&e), USAGE);
        assert_eq!(Identity::of(None, false).unwrap(), Identity::Caller);
        assert_eq!(Identity::of(None, true).unwrap(), Identity::Root);
    }

    #[test]
    fn p11_init_word_round_trips() {
        for id in [Identity::Caller, Identity::Root, Identity::User { uid: 7, gid: 8 }] {
            let args: Vec<String> = ["detached".to_string()].into_iter().chain(id.init_word()).collect();
            assert_eq!(Identity::from_init_args(&args), id);
        }
    }

    #[test]
    fn p11_x2_userns_denied() {
        let v = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(userns_denied(&v(&["--unshare-user", "--disable-userns"]), false));
        assert!(!userns_denied(&v(&["--unshare-user"]), true));
        assert!(userns_denied(&v(&["--unshare-pid"]), false));
        assert!(!userns_denied(&v(&["--unshare-pid"]), true));
    }

    #[test]
    fn p11_root_keeps_three() {
        assert_eq!(ROOT_KEEPS.bits().count_ones(), 3);
        for never in [CapabilitySet::SYS_ADMIN, CapabilitySet::SETUID, CapabilitySet::FSETID] {
            assert!(!ROOT_KEEPS.contains(never));
        }
        assert!(Identity::Caller.cap_words().is_empty());
        assert!(!Identity::Root.cap_words().iter().any(|w| w == "CAP_SYS_ADMIN" || w == "CAP_SETUID"));
    }
}
