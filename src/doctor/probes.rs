//! The individual probes of `snug doctor`: each tries the real thing once.

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
    Err(err.lines().next().map_or_else(|| out.status.to_string(), |l| l.trim().to_string()))
}

/// Run `probe` in a forked child and return what it returned as its exit code (0 for
/// success, else an errno). `probe` must only make async-signal-safe calls: the parent
/// may have threads (tests), and only the forking thread exists in the child.
fn in_child(probe: fn() -> i32) -> std::io::Result<i32> {
    // SAFETY: the child runs `probe` (async-signal-safe calls only) and then _exit(2);
    // it never returns into Rust code that could touch locks held by other threads.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: _exit is async-signal-safe and ends the child without unwinding.
        unsafe { libc::_exit(probe().clamp(0, 255)) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a live local.
    while unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    match libc::WIFEXITED(status) {
        true => Ok(libc::WEXITSTATUS(status)),
        false => Err(std::io::Error::other("probe child died of a signal")),
    }
}

/// errno of the calling thread, in a child after fork (async-signal-safe).
fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }.max(1)
}

/// unshare(CLONE_NEWUSER) (unshare(2)) in a child: can this process make a user namespace?
pub(super) fn fork_unshare_user() -> Result<(), std::io::Error> {
    fn probe() -> i32 {
        // SAFETY: unshare takes flags only.
        match unsafe { libc::unshare(libc::CLONE_NEWUSER) } {
            0 => 0,
            _ => errno(),
        }
    }
    match in_child(probe)? {
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
    const PIDFD_SIGNAL_PROCESS_GROUP: libc::c_uint = 0x4;
    fn open_self() -> i32 {
        // SAFETY: pidfd_open takes a pid and flags; the result is checked by callers.
        unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) as i32 }
    }
    fn group_probe() -> i32 {
        // SAFETY: setpgid(0, 0) makes this child a group leader; integers only.
        if unsafe { libc::setpgid(0, 0) } != 0 {
            return errno();
        }
        let fd = open_self();
        if fd < 0 {
            return errno();
        }
        let null: *const libc::siginfo_t = std::ptr::null();
        // SAFETY: `fd` is this child's pidfd; signal 0 only checks that the group exists
        // and may be signalled; pidfd_send_signal(2) allows a NULL siginfo.
        let rc = unsafe { libc::syscall(libc::SYS_pidfd_send_signal, fd, 0, null, PIDFD_SIGNAL_PROCESS_GROUP) };
        if rc == 0 {
            0
        } else {
            errno()
        }
    }
    let fd = open_self();
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return vec![
            row("pidfd_open", Status::Missing, format!("{e} (needs Linux 5.3+)"), true),
            row("pidfd group signals", Status::Missing, "needs pidfd_open", false),
        ];
    }
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    let name = "pidfd group signals";
    let second = match in_child(group_probe) {
        Ok(0) => row(name, Status::Ok, "PIDFD_SIGNAL_PROCESS_GROUP works (Linux 6.9+)", false),
        Ok(libc::EINVAL) => row(
            name,
            Status::Warn,
            "EINVAL: kernel before 6.9; snug signals the group with kill(-pgid) while its init is pinned",
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
