//! The individual probes of `snug doctor`: each tries the real thing once.

use snug_core::types::{Signal, WaitStatus};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{row, Row, Status};

/// First line of `PROG --version`.
pub(super) fn version(prog: &Path) -> String {
    match Command::new(prog).arg("--version").stdin(Stdio::null()).output() {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines().next().unwrap_or("no version").trim().to_string()
        }
        Err(e) => format!("--version failed: {e}"),
    }
}

/// Run `bwrap --unshare-user --unshare-pid --ro-bind / / EXTRA… true`: the real thing.
///
/// # Errors
/// bwrap's first error line (or its exit status), or why it could not run.
pub(super) fn try_bwrap(bwrap: &Path, extra: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(bwrap)
        .args(["--unshare-user", "--unshare-pid", "--ro-bind", "/", "/"])
        .args(extra)
        .arg("true")
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(anyhow::anyhow!("{}", err.lines().next().map_or_else(|| out.status.to_string(), |l| l.trim().to_string())))
}

/// What a probe tries in a forked child: each changes the process it runs in.
#[derive(Clone, Copy)]
enum Probe {
    /// `unshare(CLONE_NEWUSER)` (`unshare(2)`): can this process make a user namespace?
    NewUser,
    /// Lead a group of its own, then `pidfd_send_signal(2)` of signal 0 to it with
    /// `PIDFD_SIGNAL_PROCESS_GROUP` (Linux 6.9+, EINVAL before), which rustix does not take.
    GroupSignal,
}

/// `PIDFD_SIGNAL_PROCESS_GROUP` (`include/uapi/linux/pidfd.h`).
const PIDFD_SIGNAL_PROCESS_GROUP: u32 = 0x4;

/// Run `probe` in a child and return its result as the child's exit code (0 for success,
/// else an errno). The child makes only async-signal-safe calls: the parent may have
/// threads (tests), and only the cloning thread exists in the child.
fn in_child(probe: Probe) -> std::io::Result<i32> {
    use crate::sys::process::{clone3, exit_now, Cloned};
    // SAFETY: the child makes only bare system calls (unshare, setpgid, pidfd_open,
    // pidfd_send_signal with signal 0, which only checks that the group may be signalled)
    // and then _exit(2) without unwinding; it never returns into Rust code that could touch
    // locks held by other threads. unshare with CLONE_NEWUSER alone changes only this child's
    // user namespace.
    let pid = match unsafe { clone3(0) }? {
        Cloned::Child => {
            let result = match probe {
                // SAFETY: this child is single-threaded and shares nothing with its parent.
                Probe::NewUser => unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWUSER) }
                    .map(|_| 0)
                    .map_err(|e| e.raw_os_error()),
                Probe::GroupSignal => group_leader().map_err(|e| e.raw_os_error()).and_then(|fd| {
                    crate::sys::signal::pidfd_send(fd.as_fd(), Signal(0), PIDFD_SIGNAL_PROCESS_GROUP)
                        .map(|()| 0)
                        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
                }),
            };
            exit_now(result.unwrap_or_else(|e| e.max(1)).clamp(0, 255))
        }
        Cloned::Parent { pid, .. } => pid,
    };
    match crate::sys::process::wait_ended(pid)? {
        WaitStatus::Exited(code) => Ok(code),
        _ => Err(std::io::Error::other("probe child died of a signal")),
    }
}

/// Lead a group of our own (the flag signals the group the pidfd's process leads) and open
/// a pidfd of ourselves.
fn group_leader() -> rustix::io::Result<std::os::fd::OwnedFd> {
    use rustix::process::{getpid, pidfd_open, setpgid, PidfdFlags};
    setpgid(None, None)?;
    pidfd_open(getpid(), PidfdFlags::empty())
}

/// unshare(CLONE_NEWUSER) (unshare(2)) in a child: can this process make a user namespace?
pub(super) fn fork_unshare_user() -> Result<(), std::io::Error> {
    match in_child(Probe::NewUser)? {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// The sysctls that switch unprivileged user namespaces off (user_namespaces(7), Debian's
/// `kernel.unprivileged_userns_clone`, Ubuntu's AppArmor restriction).
pub(super) fn userns_sysctls() -> Row {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let max = read("/proc/sys/user/max_user_namespaces");
    let clone = read("/proc/sys/kernel/unprivileged_userns_clone");
    let apparmor = read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "absent".to_string());
    let detail = format!(
        "max_user_namespaces={} unprivileged_userns_clone={} apparmor_restrict_unprivileged_userns={}",
        show(&max),
        show(&clone),
        show(&apparmor)
    );
    let blocked = max.as_deref() == Some("0") || clone.as_deref() == Some("0") || apparmor.as_deref() == Some("1");
    if blocked {
        row("userns sysctls", Status::Warn, format!("{detail}: unprivileged users may be refused"), false)
    } else {
        row("userns sysctls", Status::Ok, detail, false)
    }
}

/// pasta opens /dev/net/tun as the calling user: it must be 0666 for non-root callers.
pub(super) fn tun() -> Row {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata("/dev/net/tun") {
        Ok(m) if m.permissions().mode() & 0o006 == 0o006 => {
            row("/dev/net/tun", Status::Ok, format!("mode {:04o}", m.permissions().mode() & 0o7777), false)
        }
        Ok(m) => row(
            "/dev/net/tun",
            Status::Warn,
            format!("mode {:04o}: pasta (-p @net) needs 0666 for unprivileged users", m.permissions().mode() & 0o7777),
            false,
        ),
        Err(e) => row("/dev/net/tun", Status::Warn, format!("{e}: pasta (-p @net) needs it"), false),
    }
}

/// pidfd_open(2) on ourselves; then, in a child that leads its own process group,
/// pidfd_send_signal(2) of signal 0 with `PIDFD_SIGNAL_PROCESS_GROUP` (Linux 6.9+, EINVAL
/// before). The flag signals the group *led by* the pidfd's process (ESRCH for a process
/// that leads none), which is why the probe runs as a group leader, as snug's init does.
pub(super) fn pidfd() -> Vec<Row> {
    if let Err(e) = crate::pidfd::open(crate::sys::process::own()) {
        return vec![
            row("pidfd_open", Status::Missing, format!("{e} (needs Linux 5.3+)"), true),
            row("pidfd group signals", Status::Missing, "needs pidfd_open", false),
        ];
    }
    // Not needed at run time: snug signals single pinned processes without flags, and every
    // relay to the sandbox goes through its init's kill(-1) (README, "How it works"; R6).
    let name = "pidfd group signals";
    let second = match in_child(Probe::GroupSignal) {
        Ok(0) => row(name, Status::Ok, "PIDFD_SIGNAL_PROCESS_GROUP works (Linux 6.9+); snug does not need it", false),
        Ok(libc::EINVAL) => row(
            name,
            Status::Ok,
            "EINVAL: kernel before 6.9; snug does not need it (relays go through its init's kill(-1))",
            false,
        ),
        Ok(e) => row(name, Status::Warn, std::io::Error::from_raw_os_error(e).to_string(), false),
        Err(e) => row(name, Status::Warn, e.to_string(), false),
    };
    vec![row("pidfd_open", Status::Ok, "works", true), second]
}

/// `dev.tty.legacy_tiocsti` (Linux 6.2+): 0 means TIOCSTI cannot inject input at all.
pub(super) fn tiocsti(value: Option<&str>) -> Row {
    let blocked = "snug's seccomp filter blocks TIOCSTI in the sandbox (SPEC T9)";
    match value.map(str::trim) {
        Some("0") => row("legacy_tiocsti", Status::Ok, "0: the kernel refuses TIOCSTI", false),
        Some(v) => row("legacy_tiocsti", Status::Warn, format!("{v}: TIOCSTI allowed; {blocked}"), false),
        None => row("legacy_tiocsti", Status::Warn, format!("absent (kernel < 6.2); {blocked}"), false),
    }
}

/// `-p @net` for real: run this snug (`snug`) with `-p @net` on `true` in a fresh empty
/// directory, which starts a sandbox and attaches pasta to it and waits for the network
/// (what a user's run does). The row carries snug's own error line when that fails.
pub(super) fn pasta_attach(snug: &Path) -> Row {
    let name = "pasta attach";
    let dir = std::env::temp_dir().join(format!("snug-doctor-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&dir) {
        return row(name, Status::Warn, format!("cannot make {}: {e}", dir.display()), false);
    }
    let started = std::time::Instant::now();
    let child = Command::new(snug)
        .args(["-p", "@net"])
        .arg(&dir)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let result = child.and_then(|c| c.wait_with_output());
    let _ = std::fs::remove_dir(&dir);
    match result {
        Ok(out) if out.status.success() => row(
            name,
            Status::Ok,
            format!("snug -p @net -- true configured a sandbox's network in {} ms", started.elapsed().as_millis()),
            false,
        ),
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            let line = err.lines().last().unwrap_or("no message").trim().to_string();
            row(name, Status::Missing, format!("snug -p @net -- true failed ({}): {line}", out.status), false)
        }
        Err(e) => row(name, Status::Missing, format!("cannot run {}: {e}", snug.display()), false),
    }
}
