//! `snug exec` without a terminal (SPEC L3): CMD runs inside the live sandbox as one of its
//! processes, with its own status, and goes with the sandbox.

use crate::common::{
    as_words, code, everyone, kill, marker, run_bounded, running, snug_for, spawn_own_group, survivors, until,
    wait_bounded, workdir, Who,
};
use crate::live::{cmd, run, Live, READY};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// L3: CMD sees the sandbox's pid namespace (its pid 1 is the sandbox init, the payload is
/// alive by its in-sandbox pid), starts in the payload's directory, without capabilities,
/// under seccomp; its exit status is exec's (R3). Positive controls: the host's pid 1 has
/// another name, and `kill -0` of a pid the sandbox does not have fails.
#[test]
fn l3_exec_is_inside_the_sandbox() {
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        let script = format!("echo $$ > ppid; cat /proc/1/comm > comm; sleep {m}");
        let a = Live::start(who, dir.path(), &[], &["sh", "-c", &script]);
        a.ready(dir.path(), "running");
        let comm = dir.path().join("comm");
        assert!(until(READY, || std::fs::read_to_string(&comm).is_ok_and(|t| t.ends_with('\n'))), "payload's comm");
        let inner = std::fs::read_to_string(&comm).expect("payload's view of pid 1");
        let (st, out, err, _) = run(who, dir.path(), &["exec", &a.name, "--", "cat", "/proc/1/comm"]);
        assert!(st.success(), "{who:?}: {err}");
        assert_eq!(out, inner, "{who:?}: exec's pid 1 is not the sandbox init");
        let host = std::fs::read_to_string("/proc/1/comm").unwrap_or_default();
        assert_ne!(host, inner, "control: the host's pid 1 has the same name");
        let ppid = std::fs::read_to_string(dir.path().join("ppid")).expect("ppid").trim().to_string();
        let (st, _, err, _) = run(who, dir.path(), &["exec", &a.name, "--", "sh", "-c", "kill -0 $(cat ppid)"]);
        assert!(st.success(), "{who:?}: kill -0 of the payload ({ppid}) from exec: {err}");
        let (st, _, _, _) = run(who, dir.path(), &["exec", &a.name, "sh", "-c", "kill -0 4000000 2>/dev/null"]);
        assert!(!st.success(), "control: kill -0 of a pid the sandbox has not");
        let check = "grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status; exit 9";
        let (st, out, _, _) = run(who, dir.path(), &["exec", &a.name, "--", "sh", "-c", check]);
        assert_eq!(code(st), 9, "{who:?}");
        // As the payload: nothing for a user, root's three (CHOWN, DAC_OVERRIDE, FOWNER, P11).
        let eff = if who == Who::Root { "CapEff:\t000000000000000b" } else { "CapEff:\t0000000000000000" };
        assert!(out.contains(eff) && out.contains("Seccomp:\t2"), "{who:?}: {out}");
        let (st, _, _, _) = run(who, dir.path(), &["exec", &a.name, "--", "sh", "-c", "kill -TERM $$"]);
        assert_eq!(st.signal(), Some(libc::SIGTERM), "{who:?}: R3 for exec");
        let (st, _, err, _) = run(who, dir.path(), &["exec", &a.name, "--", "no-such-command-here"]);
        assert_eq!(code(st), 127, "{err}");
        let (st, _, err, _) = run(who, dir.path(), &["exec", "no-such-run", "--", "true"]);
        assert_eq!(code(st), 64, "{err}");
        run(who, dir.path(), &["stop", "--now", &a.name]);
    }
}

/// L3: an exec'd `sleep` dies with the sandbox, and its `snug exec` ends; a TERM to the
/// `snug exec` process reaches CMD's handler (relayed). Positive control: the exec'd sleep
/// runs until the run is stopped (seen alive first).
#[test]
fn l3_exec_dies_with_the_sandbox_and_gets_signals() {
    for who in everyone() {
        let dir = workdir(who);
        let a = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
        a.ready(dir.path(), "running");
        // A TERM to `snug exec` is relayed to CMD's group.
        let m = marker();
        let trap = format!("trap 'echo X; exit 5' TERM; sleep {m} & wait");
        let mut c = cmd(who, dir.path(), &["exec", &a.name, "--", "sh", "-c", &trap]);
        let mut e = spawn_own_group(c.stdout(Stdio::piped()));
        assert!(until(READY, || running(&format!("sleep {m}"))), "{who:?}: exec'd job never ran");
        kill(e.id(), libc::SIGTERM);
        let st = wait_bounded(&mut e, Duration::from_secs(5)).expect("exec ended");
        let mut out = String::new();
        std::io::Read::read_to_string(&mut e.stdout.take().expect("stdout"), &mut out).ok();
        assert_eq!((st.code(), out.as_str()), (Some(5), "X\n"), "{who:?}");
        let _ = survivors(&format!("sleep {m}"), Instant::now());
        // An exec'd sleep goes with the sandbox.
        let m = marker();
        let mut e = spawn_own_group(&mut cmd(who, dir.path(), &["exec", &a.name, "--", "sleep", &m]));
        assert!(until(READY, || running(&format!("sleep {m}"))), "control: the exec'd sleep never ran");
        let (st, _, _, _) = run(who, dir.path(), &["stop", &a.name]);
        assert!(st.success());
        let st = wait_bounded(&mut e, Duration::from_secs(5)).expect("exec ended with the sandbox");
        assert!(!st.success(), "{who:?}: {st:?}");
        assert!(survivors(&format!("sleep {m}"), Instant::now()).is_empty(), "{who:?}: exec'd sleep outlived the run");
    }
}

/// L3 with `-p @net`: the exec'd command is in the payload's network namespace, with its
/// interface (pasta's), not only loopback. Positive control: the host's namespace differs,
/// so equal inode numbers are not a matter of course. Skipped where pasta is missing (N4).
#[test]
fn l3_exec_shares_the_network_with_net() {
    if !std::path::Path::new("/usr/bin/pasta").exists() {
        return;
    }
    for who in everyone() {
        let dir = workdir(who);
        let script = format!("readlink /proc/self/ns/net > ns; sleep {}", marker());
        let a = Live::start(who, dir.path(), &["-p", "@net"], &["sh", "-c", &script]);
        a.ready(dir.path(), "running");
        let ns = dir.path().join("ns");
        assert!(until(READY, || std::fs::read_to_string(&ns).is_ok_and(|t| t.ends_with('\n'))), "payload's netns");
        let payload = std::fs::read_to_string(&ns).expect("payload's netns");
        let (st, out, err, _) = run(who, dir.path(), &["exec", &a.name, "--", "readlink", "/proc/self/ns/net"]);
        assert!(st.success(), "{who:?}: {err}");
        assert_eq!(out, payload, "{who:?}: exec is in another network namespace");
        let host = std::fs::read_link("/proc/self/ns/net").expect("own netns");
        assert_ne!(host.to_string_lossy().trim(), payload.trim(), "control");
        let (_, out, _, _) = run(who, dir.path(), &["exec", &a.name, "--", "cat", "/proc/net/dev"]);
        let ifaces: Vec<&str> = out.lines().skip(2).filter_map(|l| l.split(':').next()).map(str::trim).collect();
        assert!(ifaces.iter().any(|i| *i != "lo"), "{who:?}: only {ifaces:?}");
        run(who, dir.path(), &["stop", "--now", &a.name]);
    }
}

/// L3, R2: a stdout or stdin the caller of `snug exec` closed is closed for CMD too: its write
/// or read fails, as in a run and as without snug. Positive control once against the build
/// before: CMD's stdout and stdin were /dev/null, the write "succeeded" (`ok`, exit 0, the
/// output gone) and `cat` read an empty stdin (`open`).
#[test]
fn l3_r2_exec_keeps_closed_descriptors_closed() {
    for who in everyone() {
        let dir = workdir(who);
        let a = Live::start(who, dir.path(), &[], &["sleep", &marker()]);
        a.ready(dir.path(), "running");
        let exec = format!("env -u XDG_RUNTIME_DIR {}{} exec {} -- ", as_words(who), snug_for(who).display(), a.name);
        let sh = |script: String| {
            let mut c = std::process::Command::new("sh");
            run_bounded(c.arg("-c").arg(script).current_dir(dir.path()), Duration::from_secs(30))
        };
        let o = sh(format!("{exec}sh -c 'echo x && echo ok >&2 || echo failed >&2' >&-"));
        assert!(o.err.contains("failed") && !o.err.contains("ok"), "{who:?}: {}", o.err);
        let o = sh(format!("{exec}sh -c 'cat 2>/dev/null && echo open || echo closed' <&-"));
        assert_eq!(o.out.trim(), "closed", "{who:?}: {}", o.err);
        run(who, dir.path(), &["stop", "--now", &a.name]);
    }
}
