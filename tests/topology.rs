//! snug's process tree, tested from outside: nothing snug inherited reaches bwrap, init or
//! the payload (S1–S3); snug ends as the payload did (R3); no sandbox process outlives snug,
//! however it ends (R5, K1–K3); signals sent from inside never leave the sandbox (K4, X1).
//! Every row runs as root and as the unprivileged user. Every signal or teardown row runs its
//! positive control each time: the same scenario without snug or under plain bwrap, where the
//! assertion is shown to fail.

use crate::common;

use common::*;
use sigseal::SigState;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(10);

fn has(mask: u64, sig: i32) -> bool {
    SigState::has(mask, sig)
}

/// Start `cmd` as a careless caller would leave it: `ignore` at SIG_IGN, `block` blocked.
fn inherit<'a>(cmd: &'a mut Command, ignore: &'static [i32], block: &'static [i32]) -> &'a mut Command {
    prelude(cmd, Prelude { ignore, block, ..Prelude::default() })
}

fn sig_state(status: &str) -> SigState {
    SigState::parse(status).unwrap_or_else(|e| panic!("not a /proc status ({e}): {status:?}"))
}

// ---------------------------------------------------------------------------------------
// S — sealed signal state

/// S1: snug started with INT ignored and USR1 blocked; the payload (`cat`, no shell) starts
/// with SigBlk 0 and SigIgn 0. Positive control, each run: the same `cat` run directly and
/// under plain bwrap shows INT ignored and USR1 blocked.
#[test]
fn s1_payload_starts_sealed() {
    let status = ["cat", "/proc/self/status"];
    for who in everyone() {
        let dir = workdir(who);
        for (name, mut c) in [
            ("directly", cmd_as(who, dir.path(), "cat", &status[1..])),
            ("plain bwrap", plain_bwrap(who, dir.path(), true, &status)),
        ] {
            let o = run_bounded(inherit(&mut c, &[libc::SIGINT], &[libc::SIGUSR1]), LIMIT);
            let st = sig_state(&o.out);
            assert!(
                has(st.ignored, libc::SIGINT) && has(st.blocked, libc::SIGUSR1),
                "{who:?}: control {name} should leak: {st:?}"
            );
        }
        let mut c = snug_cmd(who, dir.path(), &["--", "cat", "/proc/self/status"]);
        let o = run_bounded(inherit(&mut c, &[libc::SIGINT], &[libc::SIGUSR1]), LIMIT);
        assert!(o.status.success(), "{who:?}: {:?} {}", o.status, o.err);
        let st = sig_state(&o.out);
        assert_eq!((st.blocked, st.ignored), (0, 0), "{who:?}: payload SigBlk/SigIgn {st:?}");
    }
}

/// S1: bwrap and the sandbox init do not inherit snug's ignored INT or blocked USR1 either
/// (read from /proc while a `sleep` payload runs; bwrap blocks only the SIGCHLD of its own
/// signalfd, init only what its signalfd takes). Positive control, each run: plain bwrap
/// under the same inherited state shows both; once, by mutation: without nest's
/// `sigseal::seal()` this fails with bwrap's SigIgn 0x80001002, SigBlk 0x8034a05.
#[test]
fn s1_bwrap_and_init_start_sealed() {
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        let (mut cmd, log) = snug_verbose(who, dir.path(), &["--", "sleep", &m]);
        let mut child = spawn_own_group(inherit(&mut cmd, &[libc::SIGINT], &[libc::SIGUSR1]));
        // The payload's process is forked before init's hello and sealed before its exec:
        // read its state once it runs `sleep`.
        let up = until(LIMIT, || read_text(&log).contains("payload started") && running(&format!("sleep {m}")));
        let text = read_text(&log);
        let state = |key| logged_pid(&text, key).and_then(|p| SigState::of(p).ok());
        // init's work runs on its main thread, or, under a soft stack limit below 8 MiB, on a
        // worker thread while the main thread blocks every signal by design (so that they
        // reach the worker) and only waits: read the worker's mask when there is one.
        let worker = |p: i32| {
            let tids = std::fs::read_dir(format!("/proc/{p}/task")).ok()?;
            let tids: Vec<i32> = tids.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).collect();
            let tid = tids.iter().copied().find(|t| *t != p).unwrap_or(p);
            SigState::parse(&std::fs::read_to_string(format!("/proc/{p}/task/{tid}/status")).ok()?).ok()
        };
        let (bwrap, payload) = (state("bwrap pid "), state("payload started: pid "));
        let init = logged_pid(&text, "init pid ").and_then(worker);
        kill(child.id(), libc::SIGTERM);
        let end = wait_bounded(&mut child, LIMIT);
        reap_leftovers(&m);
        assert!(up && end.is_some(), "{who:?}: run did not start or end: {text}");
        let bwrap = bwrap.expect("bwrap's state");
        assert_eq!(bwrap.ignored, 0, "{who:?}: bwrap {bwrap:?}");
        assert_eq!(bwrap.blocked & !(1 << (libc::SIGCHLD - 1)), 0, "{who:?}: bwrap {bwrap:?}");
        // init's own state is its runtime's (Rust ignores PIPE) and its signalfd's; it must
        // carry nothing of the caller's.
        let init = init.expect("init's state");
        assert!(!has(init.ignored, libc::SIGINT) && !has(init.blocked, libc::SIGUSR1), "{who:?}: init {init:?}");
        let payload = payload.expect("payload's state");
        assert_eq!((payload.blocked, payload.ignored), (0, 0), "{who:?}: payload {payload:?}");

        let m = marker();
        let mut c = plain_bwrap(who, dir.path(), true, &["sleep", &m]);
        let mut child = spawn_own_group(inherit(c.stdout(Stdio::null()), &[libc::SIGINT], &[libc::SIGUSR1]));
        until(LIMIT, || running(&format!("sleep {m}")));
        let st = SigState::of(child.id() as i32);
        let _ = child.kill();
        let _ = child.wait();
        reap_leftovers(&m);
        let st = st.expect("plain bwrap's state");
        assert!(
            has(st.ignored, libc::SIGINT) && has(st.blocked, libc::SIGUSR1),
            "{who:?}: control plain bwrap should leak: {st:?}"
        );
    }
}

/// S2 (payload side): `nohup snug …` keeps HUP ignored in snug but the payload starts with
/// SigIgn 0, and snug survives a hangup. Positive controls, each run: `nohup cat` shows HUP
/// ignored; without nohup the same hangup ends snug by SIGHUP.
#[test]
fn s2_nohup_reaches_snug_not_the_payload() {
    for who in everyone() {
        let snug = snug_for(who);
        let snug = snug.to_str().unwrap();
        let dir = workdir(who);
        let o = run_bounded(&mut cmd_as(who, dir.path(), "nohup", &["cat", "/proc/self/status"]), LIMIT);
        assert!(has(sig_state(&o.out).ignored, libc::SIGHUP), "{who:?}: control: nohup cat should have HUP ignored");
        let o = run_bounded(&mut cmd_as(who, dir.path(), "nohup", &[snug, "--", "cat", "/proc/self/status"]), LIMIT);
        let st = sig_state(&o.out);
        assert_eq!((st.blocked, st.ignored), (0, 0), "{who:?}: payload under nohup snug {st:?}");

        for nohup in [true, false] {
            // The payload says it runs (a file in DIR), then has 0.6 s left for the hangup.
            let m = marker();
            let ready = format!("ready-{m}");
            let payload = format!("touch {ready}; sleep 0.6; echo done");
            let script = ["--", "sh", "-c", &payload];
            let mut c = if nohup {
                let mut a = vec![snug];
                a.extend(script);
                cmd_as(who, dir.path(), "nohup", &a)
            } else {
                snug_cmd(who, dir.path(), &script)
            };
            let r = start(&mut c);
            assert!(until(LIMIT, || dir.path().join(&ready).exists()), "{who:?}: the payload never started");
            kill(r.pid, libc::SIGHUP);
            let o = r.finish(LIMIT);
            if nohup {
                assert!(
                    o.status.success() && o.out == "done\n",
                    "{who:?}: nohup snug after a hangup: {:?} {:?} {}",
                    o.status,
                    o.out,
                    o.err
                );
            } else {
                assert_eq!(
                    o.status.signal(),
                    Some(libc::SIGHUP),
                    "{who:?}: control: snug without nohup should die of the hangup"
                );
            }
        }
    }
}

/// S3: a caller that ignores SIGCHLD: snug still reports the payload's code and the payload
/// starts with nothing ignored. Positive control, each run: a minimal launcher (spawn +
/// waitpid) under the same state loses its child's status. (Removing snug's own reset of
/// SIGCHLD does not break this: snug learns bwrap's end from a pidfd and the payload's
/// status from init, never from waitpid; the reset is a second line of defence.)
#[test]
fn s3_caller_ignoring_sigchld() {
    let launcher = "import os,sys\npid = os.spawnvp(os.P_NOWAIT, 'sh', ['sh', '-c', 'exit 3'])\nsys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))";
    for who in everyone() {
        let dir = workdir(who);
        let o = run_bounded(
            inherit(&mut cmd_as(who, dir.path(), "python3", &["-c", launcher]), &[libc::SIGCHLD], &[]),
            LIMIT,
        );
        assert_ne!(o.status.code(), Some(3), "{who:?}: control launcher should lose the status: {}", o.err);
        let mut c = snug_cmd(who, dir.path(), &["--", "sh", "-c", "sleep 0.1 & wait $!; echo rc=$?; exit 3"]);
        let o = run_bounded(inherit(&mut c, &[libc::SIGCHLD], &[]), LIMIT);
        assert_eq!((o.status.code(), o.out.as_str()), (Some(3), "rc=0\n"), "{who:?}: {}", o.err);
        let mut c = snug_cmd(who, dir.path(), &["--", "cat", "/proc/self/status"]);
        let o = run_bounded(inherit(&mut c, &[libc::SIGCHLD], &[]), LIMIT);
        assert_eq!(sig_state(&o.out).ignored, 0, "{who:?}: payload inherited an ignored SIGCHLD");
    }
}

// ---------------------------------------------------------------------------------------
// R — how snug ends

/// R3: the payload's exit code is snug's.
#[test]
fn r3_exit_code_is_the_payloads() {
    for who in everyone() {
        let dir = workdir(who);
        for n in [0, 7, 255] {
            let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--", "sh", "-c", &format!("exit {n}")]), LIMIT);
            assert_eq!(o.status.code(), Some(n), "{who:?}: {}", o.err);
        }
    }
}

/// Let cores be written (`RLIMIT_CORE` unlimited), so only snug's own choice can stop one.
fn cores_on(cmd: &mut Command) -> &mut Command {
    prelude(cmd, Prelude { cores: true, ..Prelude::default() })
}

fn cores_in(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir).into_iter().flatten().flatten();
    names.map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("core")).collect()
}

/// R3: a payload killed by TERM or SEGV makes snug die of the same signal, without a core
/// even when the caller allows cores (snug's own cwd is kept apart from DIR, where a
/// payload's core may land). Positive control, each run: `sh -c 'kill -SEGV $$'` run
/// directly under the same limit dumps a core; once, by mutation: without the
/// `RLIMIT_CORE` 0 in `end::die_of` this fails with "snug dumped a core".
#[test]
fn r3_dies_of_the_payloads_signal_without_a_core() {
    for who in everyone() {
        let (cwd, dir) = (workdir(who), workdir(who));
        let o = run_bounded(cores_on(&mut cmd_as(who, cwd.path(), "sh", &["-c", "kill -SEGV $$"])), LIMIT);
        assert!(
            o.status.core_dumped() && !cores_in(cwd.path()).is_empty(),
            "{who:?}: control: no core from a direct SEGV"
        );
        for f in cores_in(cwd.path()) {
            let _ = std::fs::remove_file(cwd.path().join(f));
        }
        let target = dir.path().to_str().unwrap();
        for (sig, script) in [(libc::SIGTERM, "kill -TERM $$"), (libc::SIGSEGV, "kill -SEGV $$")] {
            let mut c = snug_cmd(who, cwd.path(), &[target, "--", "sh", "-c", script]);
            let o = run_bounded(cores_on(&mut c), LIMIT);
            assert_eq!(o.status.signal(), Some(sig), "{who:?} {script}: {:?} {}", o.status, o.err);
            assert!(!o.status.core_dumped(), "{who:?} {script}: snug dumped a core");
            assert_eq!(cores_in(cwd.path()), Vec::<String>::new(), "{who:?} {script}: core file in snug's cwd");
        }
    }
}

/// R3/R4: a payload that cannot run: 127 not found, 126 not executable, one `snug: ` line.
#[test]
fn r3_cannot_run_is_126_or_127() {
    for who in everyone() {
        let dir = workdir(who);
        std::fs::write(dir.path().join("noexec"), "#!/bin/sh\n").unwrap();
        for (cmd, want) in [("/nonexistent", 127), ("./noexec", 126), ("nosuchcmd", 127)] {
            let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--", cmd]), LIMIT);
            assert_eq!(o.status.code(), Some(want), "{who:?} {cmd}: {}", o.err);
            assert!(o.err.starts_with("snug: ") && o.err.lines().count() == 1, "{who:?} {cmd}: stderr {:?}", o.err);
            if cmd == "nosuchcmd" {
                assert_eq!(o.err, "snug: nosuchcmd: command not found\n");
            }
        }
    }
}

/// R3: an executable script without `#!` runs through /bin/sh with its arguments, as
/// `execvp(3)`, `env` and bwrap itself run it, and its exit code is snug's. In-test control:
/// `env` runs the same file the same way. Positive control: fails without the fallback:
/// snug exited 126 with "exec format error".
#[test]
fn r3_a_script_without_a_shebang_runs_through_sh() {
    use std::os::unix::fs::PermissionsExt;
    for who in everyone() {
        let dir = workdir(who);
        let script = dir.path().join("plain");
        std::fs::write(&script, "echo \"plain $1 $2\"\nexit 3\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--", "./plain", "a", "b c"]), LIMIT);
        assert_eq!((o.status.code(), o.out.as_str()), (Some(3), "plain a b c\n"), "{who:?}: {}", o.err);
        let control =
            std::process::Command::new("env").args(["./plain", "a", "b c"]).current_dir(dir.path()).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&control.stdout), o.out, "control: env");
    }
}

/// R4: an executable whose ELF interpreter is not in the sandbox exits 127 with what is
/// missing, not "command not found" for a file that is there (`execve(2)` says ENOENT for
/// both). The file: `true` with its PT_INTERP renamed. In-test control: sh without snug
/// also gives 127. Positive control: fails without the fix: snug said "command not found".
#[test]
fn r4_a_missing_elf_interpreter_is_named() {
    for who in everyone() {
        let dir = workdir(who);
        let elf = std::fs::read("/usr/bin/true").unwrap();
        let interp = b"/lib64/ld-linux-x86-64.so.2";
        let at = elf.windows(interp.len()).position(|w| w == interp).expect("x86-64 true names its loader");
        let mut patched = elf.clone();
        patched[at + interp.len() - 1] = b'9'; // ld-linux-x86-64.so.9: nowhere
        let prog = dir.path().join("noloader");
        std::fs::write(&prog, &patched).unwrap();
        std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--", "./noloader"]), LIMIT);
        assert_eq!(o.status.code(), Some(127), "{who:?}: {}", o.err);
        assert_eq!(o.err, "snug: ./noloader: its ELF interpreter (the dynamic loader) is not in the sandbox\n");
        let sh = std::process::Command::new("sh").args(["-c", "./noloader"]).current_dir(dir.path()).output().unwrap();
        assert_eq!(sh.status.code(), Some(127), "control: sh");
    }
}

// ---------------------------------------------------------------------------------------
// R5, K3 — daemons die with the payload

/// R5/K3: daemons the payload starts (`setsid`, double fork, `disown`, `nohup setsid`) are
/// gone 100 ms after snug exits 0. Each form runs as given (exit at once) and settled (the
/// payload exits only once the test has seen the daemon alive from the host and said so
/// with a file in DIR). Positive control, each run: plain bwrap without a pid namespace
/// leaves the daemon running.
#[test]
fn r5_k3_daemons_die_with_the_payload() {
    let forms = [
        "setsid sleep {m} & {wait}exit 0",
        "(sleep {m} &) ; {wait}exit 0",
        "sleep {m} & disown; {wait}exit 0",
        "nohup setsid sleep {m} >/dev/null 2>&1 & {wait}exit 0",
    ];
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        let script = forms[0].replace("{m}", &m).replace("{wait}", "");
        let mut control = plain_bwrap(who, dir.path(), false, &["sh", "-c", &script]);
        let _ = wait_bounded(&mut spawn_own_group(control.stdout(Stdio::null()).stderr(Stdio::null())), LIMIT);
        until(LIMIT, || running(&format!("sleep {m}")));
        assert!(!survivors(&m, Instant::now()).is_empty(), "{who:?}: control: plain bwrap should leave the daemon");
        for form in forms {
            for settle in [false, true] {
                let m = marker();
                // Bounded: 10 s in steps of 10 ms, then the payload exits anyway.
                let wait =
                    format!("i=0; while [ ! -e seen-{m} ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; ");
                let script = form.replace("{m}", &m).replace("{wait}", if settle { &wait } else { "" });
                let r = start(&mut snug_cmd(who, dir.path(), &["--", "bash", "-c", &script]));
                let seen = !settle || until(LIMIT, || running(&format!("sleep {m}")));
                if settle {
                    std::fs::write(dir.path().join(format!("seen-{m}")), "").expect("write seen");
                }
                let o = r.finish(LIMIT);
                let left = survivors(&m, Instant::now());
                assert!(o.status.success() && seen, "{who:?} {script}: {:?} seen {seen} {}", o.status, o.err);
                assert!(left.is_empty(), "{who:?} {script}: left {left:?}");
            }
        }
    }
}

/// K3: a daemon started during the grace (from the payload's TERM trap) dies too: the
/// sandbox is torn down when the grace ends, and snug exits as the payload did (0). Positive
/// control, each run: plain bwrap without a pid namespace, same TERM: the daemon survives.
#[test]
fn k3_daemon_started_during_the_grace_dies() {
    for who in everyone() {
        let dir = workdir(who);
        let (m, job) = (marker(), marker());
        let script = format!("trap 'setsid sleep {m} & exit 0' TERM; sleep {job} & wait");
        let mut control = plain_bwrap(who, dir.path(), false, &["sh", "-c", &script]);
        let mut child = spawn_own_group(control.stdout(Stdio::null()).stderr(Stdio::null()));
        until(LIMIT, || running(&format!("sleep {job}")));
        // The control's own group, as a terminal or a CI runner signals it.
        kill_group(child.id() as i32, libc::SIGTERM);
        let _ = wait_bounded(&mut child, LIMIT);
        assert!(!survivors(&m, Instant::now()).is_empty(), "{who:?}: control: daemon should survive");
        reap_leftovers(&job);

        let (m, job) = (marker(), marker());
        let script = format!("trap 'setsid sleep {m} & exit 0' TERM; sleep {job} & wait");
        let r = start(&mut snug_cmd(who, dir.path(), &["--", "sh", "-c", &script]));
        until(LIMIT, || running(&format!("sleep {job}")));
        let t = Instant::now();
        kill(r.pid, libc::SIGTERM);
        let seen = until(LIMIT, || running(&format!("sleep {m}")));
        let o = r.finish(LIMIT);
        let took = t.elapsed();
        let (left, left_job) = (survivors(&m, Instant::now()), survivors(&job, Instant::now()));
        eprintln!("{who:?}: grace with a daemon ended after {took:?}");
        assert!(seen, "{who:?}: the trap's daemon never ran");
        assert_eq!(o.status.code(), Some(0), "{who:?}: {:?} {}", o.status, o.err);
        assert!(left.is_empty() && left_job.is_empty(), "{who:?}: left {left:?} {left_job:?}");
    }
}
