//! What the terminal-mode test files share: a caller at a fresh pty, rows run as root and as
//! the test user in parallel, the line typed for snug or for a plain-bwrap control, and
//! finding the payload's process.

use super::{descendants, procs, stat, Term};
use crate::common::{cmdline, everyone, is_root, snug, workdir, Who};
use std::path::Path;
use std::time::{Duration, Instant};

/// Run `row` as everyone and each of `controls` (as root), all at once; a panic in any
/// fails the test once all have ended.
pub fn parallel(row: &(dyn Fn(Who) + Sync), controls: &[&(dyn Fn() + Sync)]) {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || row(who));
        }
        for c in controls {
            s.spawn(*c);
        }
    });
}

/// A caller at a fresh terminal in a fresh DIR owned by `who`. The Term comes first so it
/// is dropped (hung up) before the directory goes.
pub fn caller(who: Who, label: &str) -> (Term, tempfile::TempDir) {
    let dir = workdir(who);
    (Term::start(who, dir.path(), label), dir)
}

/// `snug -- ARGS` as typed at the caller's prompt.
pub fn snug_line(args: &str) -> String {
    format!("{} -- {args}", snug().display())
}

/// The control launcher: plain bwrap over the host's root, DIR writable and current, dying
/// with its parent; `extra` adds e.g. `--new-session`. Runs as root (see the module doc), or
/// when the tests do not run as root, as the current user in a user namespace.
pub fn bwrap_line(dir: &Path, extra: &str, args: &str) -> String {
    let d = dir.display();
    let user = if is_root() { "" } else { "--unshare-user " };
    format!(
        "bwrap {user}--unshare-pid --die-with-parent --ro-bind / / --dev /dev --proc /proc --bind {d} {d} --chdir {d} {extra} -- {args}"
    )
}

/// Pids whose command line (NULs as spaces) starts with `prefix`: the payload itself, not
/// snug, bwrap or init, whose command lines end with the payload's.
pub fn pids_starting(prefix: &str) -> Vec<i32> {
    procs().into_iter().filter(|p| cmdline(*p).is_some_and(|l| l.starts_with(prefix))).collect()
}

/// The host pid of the one process whose command line starts with `prefix`, waiting for it.
pub fn the_pid(t: &mut Term, prefix: &str) -> i32 {
    if !t.until(Duration::from_secs(10), || pids_starting(prefix).len() == 1) {
        t.fail(&format!("not exactly one process starting {prefix:?}: {:?}", pids_starting(prefix)));
    }
    pids_starting(prefix)[0]
}

/// The one process under the caller's shell at `t` whose command line starts with `prefix`
/// (root and user rows run the same payload at once), waiting up to 10 s for it.
pub fn own_pid(t: &mut Term, prefix: &str) -> i32 {
    let shell = t.shell_pid();
    let mine = || -> Vec<i32> {
        descendants(shell).into_iter().filter(|p| cmdline(*p).is_some_and(|l| l.starts_with(prefix))).collect()
    };
    if !t.until(Duration::from_secs(10), || mine().len() == 1) {
        t.fail(&format!("not exactly one process under the caller starting {prefix:?}: {:?}", mine()));
    }
    mine()[0]
}

/// The caller's terminal's device number (`tty_nr` of the caller bash, `proc_pid_stat(5)`).
pub fn caller_tty(t: &Term) -> i32 {
    stat(t.shell_pid()).map_or(0, |s| s.tty_nr)
}

/// `pid` and its ancestors, nearest first.
fn ancestors(pid: i32) -> Vec<i32> {
    let mut found = vec![pid];
    while let Some(s) = stat(*found.last().unwrap_or(&0)) {
        if s.ppid <= 1 || found.contains(&s.ppid) {
            break;
        }
        found.push(s.ppid);
    }
    found
}

/// The outermost snug process `pid` runs under, if any (not the sandbox init, which is
/// snug's binary too): the binary under test, or the test user's copy of it.
pub fn snug_above(pid: i32) -> Option<i32> {
    let up = ancestors(pid);
    let mut bins = vec![snug()];
    if is_root() {
        bins.push(crate::common::snug_for(Who::User));
    }
    bins.iter().find_map(|b| super::outermost(&up, b))
}

/// Whether a key typed at the caller's terminal now reaches `pid`'s process group: `pid` runs
/// (not stopped) in the foreground group of its own controlling terminal (`/proc/PID/stat`:
/// tpgid = pgrp), and, for a process under snug, that terminal is the sandbox's pty and not
/// the caller's, the caller's terminal's foreground is still snug's own job (snug never
/// moves it, T1, T7) and it is in raw mode (snug copies the keys, which the pty's line
/// discipline turns into signals, T2). Without snug (the controls) the terminal is the
/// caller's own. Err: what is not so yet, for the failure message. Positive control: every
/// row that waits for it fails without the sandbox's own terminal (the caller's shared),
/// root and user: "holds
/// the caller's terminal (N) as its controlling terminal".
pub fn keys_reach(t: &Term, pid: i32) -> Result<(), String> {
    let Some(s) = stat(pid) else { return Err(format!("pid {pid} is gone")) };
    if s.state == 'T' || s.state == 't' {
        return Err(format!("stopped: {s:?}"));
    }
    if s.tty_nr == 0 || s.tpgid != s.pgrp {
        return Err(format!("not in its terminal's foreground: {s:?}"));
    }
    let own = caller_tty(t);
    let Some(snug) = snug_above(pid) else {
        return if s.tty_nr == own { Ok(()) } else { Err(format!("not on the caller's terminal ({own}): {s:?}")) };
    };
    if s.tty_nr == own {
        return Err(format!("holds the caller's terminal ({own}) as its controlling terminal: {s:?}"));
    }
    let fg = t.foreground();
    let job = stat(snug).map_or(0, |j| j.pgrp);
    if fg != job {
        return Err(format!("the caller's terminal's foreground is {fg}, not snug's job {job}"));
    }
    if t.canonical() {
        return Err("the caller's terminal is not raw: snug does not copy keys".into());
    }
    Ok(())
}

/// Wait until [`keys_reach`] the one process under the caller's shell whose command line
/// starts with `prefix`, so a key typed now (^C, ^Z) or a line reaches it; its pid. Call after
/// the payload's `ready` line where it has one: that is printed once its handlers are set.
pub fn in_front(t: &mut Term, prefix: &str) -> i32 {
    let pid = own_pid(t, prefix);
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        match keys_reach(t, pid) {
            Ok(()) => return pid,
            Err(why) if Instant::now() >= end => {
                t.fail(&format!("{prefix:?} (pid {pid}): keys do not reach it within 10 s: {why}"))
            }
            Err(_) => t.pump(Duration::from_millis(10)),
        }
    }
}

/// Wait until keys reach (see [`keys_reach`]) a `sleep` (exec'd) under the caller's shell:
/// dash starts it with vfork(2), and a ^Z that lands between that vfork and the exec stops
/// only the child while the shell waits for it uninterruptibly, so no job stop is ever
/// reported, with or without a launcher. Call once the payload holds its terminal (it
/// printed `ready` in front).
pub fn sleep_in_front(t: &mut Term) {
    let shell = t.shell_pid();
    let is_sleep = |p: &i32| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep");
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let mut why = String::from("no sleep under the caller's shell");
        for p in descendants(shell).into_iter().filter(is_sleep) {
            match keys_reach(t, p) {
                Ok(()) => return,
                Err(e) => why = format!("sleep {p}: {e}"),
            }
        }
        if Instant::now() >= end {
            t.fail(&format!("the payload's sleep never ran where keys reach it within 10 s: {why}"));
        }
        t.pump(Duration::from_millis(10));
    }
}

/// Wait until the one process whose command line starts with `prefix` runs in the
/// foreground group of its own controlling terminal (`/proc/PID/stat`: tpgid = pgrp, not
/// stopped), wherever that terminal is (a pty of the sandbox's, for `snug exec`); its pid.
pub fn front_of_its_terminal(t: &mut Term, prefix: &str) -> i32 {
    let pid = the_pid(t, prefix);
    let front = || stat(pid).is_some_and(|s| s.tpgid == s.pgrp && s.state != 'T');
    if !t.until(Duration::from_secs(10), front) {
        t.fail(&format!("{prefix:?} (pid {pid}) not in its terminal's foreground within 10 s: {:?}", stat(pid)));
    }
    pid
}

/// The caller's terminal's node (`st_dev` and `st_rdev` of the caller bash's fd 0,
/// `stat(2)`): the devpts instance and the device in it, so that a pty of the sandbox's own
/// devpts with the same number is not taken for it.
pub fn caller_dev(t: &Term) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{}/fd/0", t.shell_pid())).map_or((0, 0), |m| (m.dev(), m.rdev()))
}

/// The sandbox's processes under `root` (snug, or for a control the caller's shell): its
/// descendants in another pid namespace (bwrap, init, the payload and theirs), not snug's
/// own helpers such as the terminal keeper.
pub fn sandbox_pids(root: i32) -> Vec<i32> {
    let ns = |p: i32| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok();
    let own = ns(root);
    descendants(root).into_iter().filter(|p| ns(*p).is_some_and(|n| Some(n) != own)).collect()
}

/// What of the caller's terminal the sandbox under `root` holds (T11: nothing, by
/// construction): each sandbox process with it as its controlling terminal (`tty_nr`) or with
/// a descriptor of it open (`/proc/PID/fd`), as `pid: what`.
pub fn sandbox_holds_callers_tty(t: &Term, root: i32) -> Vec<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let node = caller_dev(t);
    let tty_nr = caller_tty(t);
    let mut found = Vec::new();
    for p in sandbox_pids(root) {
        // bwrap itself, the host's launcher, stays in the caller's session and so keeps the
        // caller's terminal as its controlling terminal; it holds no descriptor of it and
        // runs no sandbox code (its children are in the sandbox's own session).
        let bwrap = std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e.ends_with("bwrap"));
        if !bwrap && stat(p).is_some_and(|s| s.tty_nr == tty_nr) {
            found.push(format!("{p}: controlling terminal {tty_nr}"));
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{p}/fd")) else { continue };
        for fd in fds.flatten() {
            let Ok(m) = std::fs::metadata(fd.path()) else { continue };
            if m.file_type().is_char_device() && (m.dev(), m.rdev()) == node {
                found.push(format!("{p}: fd {}", fd.file_name().to_string_lossy()));
            }
        }
    }
    found
}
