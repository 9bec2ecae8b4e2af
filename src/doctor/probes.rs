//! The individual probes of `snug doctor`: each tries the real thing once.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{row, Row, Status};

/// First line of `PROG --version`.
pub(super) fn version(prog: &Path) -> String {
    match Command::new(prog)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines()
                .next()
                .unwrap_or("no version")
                .trim()
                .to_string()
        }
        Err(e) => format!("--version failed: {e}"),
    }
}

/// Run `bwrap --unshare-user --unshare-pid --ro-bind / / EXTRA… true`: the real thing.
pub(super) fn try_bwrap(bwrap: &Path, extra: &[&str]) -> Result<(), String> {
    let out = Command::new(bwrap)
        .args(["--unshare-user", "--unshare-pid", "--ro-bind", "/", "/"])
        .args(extra)
        .arg("true")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(err
        .lines()
        .next()
        .map_or_else(|| out.status.to_string(), |l| l.trim().to_string()))
}

/// Fork a child that calls unshare(CLONE_NEWUSER) (unshare(2)); its exit code is the errno.
pub(super) fn fork_unshare_user() -> Result<(), std::io::Error> {
    // SAFETY: the child only calls async-signal-safe functions (unshare, _exit) before it
    // ends, so forking a possibly multi-threaded process is sound.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: async-signal-safe calls only; errno is read through its thread-local
        // location, which is valid in the child.
        unsafe {
            let rc = libc::unshare(libc::CLONE_NEWUSER);
            libc::_exit(if rc == 0 {
                0
            } else {
                (*libc::__errno_location()).clamp(1, 255)
            });
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; `status` is a live local.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (true, errno) => Err(std::io::Error::from_raw_os_error(errno)),
        _ => Err(std::io::Error::other("child died")),
    }
}

/// The sysctls that switch unprivileged user namespaces off (user_namespaces(7), Debian's
/// `kernel.unprivileged_userns_clone`, Ubuntu's AppArmor restriction).
pub(super) fn userns_sysctls() -> Row {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
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
    let blocked = max.as_deref() == Some("0")
        || clone.as_deref() == Some("0")
        || apparmor.as_deref() == Some("1");
    if blocked {
        row(
            "userns sysctls",
            Status::Warn,
            format!("{detail}: unprivileged users may be refused"),
            false,
        )
    } else {
        row("userns sysctls", Status::Ok, detail, false)
    }
}

/// pasta opens /dev/net/tun as the calling user: it must be 0666 for non-root callers.
pub(super) fn tun() -> Row {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata("/dev/net/tun") {
        Ok(m) if m.permissions().mode() & 0o006 == 0o006 => row(
            "/dev/net/tun",
            Status::Ok,
            format!("mode {:04o}", m.permissions().mode() & 0o7777),
            false,
        ),
        Ok(m) => row(
            "/dev/net/tun",
            Status::Warn,
            format!(
                "mode {:04o}: pasta (-p @net) needs 0666 for unprivileged users",
                m.permissions().mode() & 0o7777
            ),
            false,
        ),
        Err(e) => row(
            "/dev/net/tun",
            Status::Warn,
            format!("{e}: pasta (-p @net) needs it"),
            false,
        ),
    }
}

/// pidfd_open(2) on ourselves, then pidfd_send_signal(2) of signal 0 with
/// `PIDFD_SIGNAL_PROCESS_GROUP` (Linux 6.9+; EINVAL before).
pub(super) fn pidfd() -> Vec<Row> {
    const PIDFD_SIGNAL_PROCESS_GROUP: libc::c_uint = 0x4;
    // SAFETY: pidfd_open takes two integers; the result is checked below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) } as libc::c_int;
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return vec![
            row(
                "pidfd_open",
                Status::Missing,
                format!("{e} (needs Linux 5.3+)"),
                true,
            ),
            row(
                "pidfd group signals",
                Status::Missing,
                "needs pidfd_open",
                false,
            ),
        ];
    }
    let null: *const libc::siginfo_t = std::ptr::null();
    // SAFETY: `fd` is our own pidfd, signal 0 only checks permission, a NULL siginfo is
    // allowed by pidfd_send_signal(2).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd,
            0,
            null,
            PIDFD_SIGNAL_PROCESS_GROUP,
        )
    };
    let err = std::io::Error::last_os_error();
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    let first = row("pidfd_open", Status::Ok, "works", true);
    let second = if rc == 0 {
        row(
            "pidfd group signals",
            Status::Ok,
            "PIDFD_SIGNAL_PROCESS_GROUP works (Linux 6.9+)",
            false,
        )
    } else if err.raw_os_error() == Some(libc::EINVAL) {
        let why = "EINVAL: kernel before 6.9; snug signals the group with kill(-pgid) while its init is pinned";
        row("pidfd group signals", Status::Warn, why, false)
    } else {
        row("pidfd group signals", Status::Warn, err.to_string(), false)
    };
    vec![first, second]
}

/// `dev.tty.legacy_tiocsti` (Linux 6.2+): 0 means TIOCSTI cannot inject input at all.
pub(super) fn tiocsti(value: Option<&str>) -> Row {
    let blocked = "snug's seccomp filter blocks TIOCSTI in the sandbox (SPEC T9)";
    match value.map(str::trim) {
        Some("0") => row(
            "legacy_tiocsti",
            Status::Ok,
            "0: the kernel refuses TIOCSTI",
            false,
        ),
        Some(v) => row(
            "legacy_tiocsti",
            Status::Warn,
            format!("{v}: TIOCSTI allowed; {blocked}"),
            false,
        ),
        None => row(
            "legacy_tiocsti",
            Status::Warn,
            format!("absent (kernel < 6.2); {blocked}"),
            false,
        ),
    }
}
