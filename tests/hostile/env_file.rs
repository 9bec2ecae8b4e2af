//! P5 and R4: `--env-file` reads a FIFO or a pipe like a file, at most 1 MiB of anything
//! (`/dev/zero` is one `snug: ` line at once), and an INT, TERM or HUP while snug waits for
//! it ends snug: nothing has started, so snug dies of it (R3).

use crate::common::*;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Generous for a run on 2 busy cores; a hang fails here instead of stalling the suite.
const LIMIT: Duration = Duration::from_secs(30);

/// A FIFO `name` in `dir` that `who` may read.
fn fifo(who: Who, dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    rustix::fs::mkfifoat(rustix::fs::CWD, &path, rustix::fs::Mode::from_raw_mode(0o644)).expect("mkfifo");
    crate::hostile::args::chown_tree(who, dir);
    path
}

/// Write `text` into `path` once a reader has it open: the open is retried (`ENXIO` until
/// then, `fifo(7)`), so a reader that never comes fails the test instead of hanging it.
fn feed(path: std::path::PathBuf, text: &'static str) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let mut opened = None;
        let open = || std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&path);
        until(LIMIT, || {
            opened = open().ok();
            opened.is_some()
        });
        opened.is_some_and(|mut f| f.write_all(text.as_bytes()).is_ok())
    })
}

/// The signals the test process ignores (`SigIgn` of /proc/self/status): snug keeps those
/// ignored (S2), so they are not sent here.
fn ignored_here() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:")).unwrap_or("0");
    u64::from_str_radix(mask.trim(), 16).unwrap_or(0)
}

/// P5: a FIFO written once snug opens it, and a process substitution `<(…)`, each give the
/// payload their variable.
#[test]
fn p5_env_file_from_a_fifo_or_a_pipe() {
    for who in everyone() {
        let dir = workdir(who);
        let path = fifo(who, dir.path(), "job.env");
        let writer = feed(path.clone(), "# from a FIFO\nFROM_FIFO=fifo value\n");
        let args = ["--env-file", path.to_str().unwrap(), "--", "sh", "-c", "echo \"$FROM_FIFO\""];
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &args), LIMIT);
        assert!(writer.join().unwrap(), "{who:?}: snug never opened the FIFO: {}", o.err);
        assert_eq!((code(o.status), o.out.as_str()), (0, "fifo value\n"), "{who:?}: {}", o.err);

        let snug = snug_for(who);
        let script =
            format!("exec {} --env-file <(echo FROM_PIPE=piped) -- sh -c 'echo \"$FROM_PIPE\"'", snug.display());
        let o = run_bounded(&mut cmd_as(who, dir.path(), "bash", &["-c", &script]), LIMIT);
        assert_eq!((code(o.status), o.out.as_str()), (0, "piped\n"), "{who:?}: {}", o.err);
    }
}

/// P5, R3: snug waiting to open a FIFO nobody writes ends on a TERM, INT or HUP, dying of
/// it, within 5 s (it is milliseconds). Readiness: the kernel says snug waits for the FIFO's
/// writer (`wchan` `wait_for_partner`). Positive control, checked: without the fix TERM
/// stayed pending behind snug's blocked mask and the 5 s bound fired.
#[test]
fn p5_r3_a_signal_while_the_env_file_waits_ends_snug() {
    let ignored = ignored_here();
    for who in everyone() {
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            if ignored & (1 << (sig - 1)) != 0 {
                continue;
            }
            let dir = workdir(who);
            let path = fifo(who, dir.path(), "never.env");
            let mut c = snug_cmd(who, dir.path(), &["--env-file", path.to_str().unwrap(), "--", "true"]);
            let mut child = spawn_own_group(c.stdout(Stdio::null()).stderr(Stdio::null()));
            let pid = child.id();
            let wchan = || std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
            let waits = until(LIMIT, || wchan() == "wait_for_partner");
            if !waits {
                kill_if_running(&mut child);
                panic!("{who:?}: snug never waited on the FIFO: wchan {:?}", wchan());
            }
            kill(pid, sig); // snug itself: setpriv execs it in place
            let status = wait_bounded(&mut child, Duration::from_secs(5));
            let died_of = status.and_then(|s| s.signal());
            assert_eq!(died_of, Some(sig), "{who:?} signal {sig}: {status:?}");
        }
    }
}

/// R4: `--env-file /dev/zero` is 64 with one `snug: ` line naming the file and the bound,
/// within 5 s and at most 64 MiB resident (wait4's `ru_maxrss`). Positive control, checked:
/// without the fix snug read /dev/zero until its memory ran out (GBs in those 5 s).
#[test]
#[allow(clippy::zombie_processes, reason = "the child is reaped by wait4, for its rusage")]
fn r4_env_file_dev_zero_is_refused_at_once() {
    for who in everyone() {
        let dir = workdir(who);
        let mut c = snug_cmd(who, dir.path(), &["--env-file", "/dev/zero", "--", "true"]);
        let t = Instant::now();
        let mut child = spawn_own_group(c.stdout(Stdio::null()).stderr(Stdio::piped()));
        let mut err = child.stderr.take().expect("stderr");
        let pid = child.id() as libc::pid_t;
        // SAFETY: `rusage` is plain integers, for which all zeroes is a valid value.
        let (mut raw, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
        let reaped = |raw: &mut i32, usage: &mut libc::rusage| {
            // SAFETY: wait4(2) of our own child, into the caller's locals, which outlive it.
            unsafe { libc::wait4(pid, raw, libc::WNOHANG, usage) == pid }
        };
        let ended = until(Duration::from_secs(5), || reaped(&mut raw, &mut usage));
        if !ended {
            kill_if_running(&mut child);
            panic!("{who:?}: --env-file /dev/zero still running after {:?}", t.elapsed());
        }
        let mut text = String::new();
        err.read_to_string(&mut text).expect("stderr");
        let status = std::process::ExitStatus::from_raw(raw);
        assert_eq!(code(status), 64, "{who:?}: {text}");
        assert_eq!(text.lines().count(), 1, "{who:?}: {text}");
        assert!(text.starts_with("snug: --env-file /dev/zero: larger than 1 MiB"), "{who:?}: {text}");
        assert!(usage.ru_maxrss < 64 * 1024, "{who:?}: peak RSS {} KiB", usage.ru_maxrss);
    }
}
