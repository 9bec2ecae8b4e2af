//! R4, R7, O5 at odd limits: a tiny `ulimit -s`, a process cap too small to start the
//! payload, bad `-e` names, an `-e NAME` value that is not UTF-8, and the bounds the
//! sandbox hit in `--report`.

use crate::common::*;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// `snug ARGS` as `who` from `sh -c 'PRE; exec snug ARGS'` (a limit set just before).
fn snug_after(who: Who, dir: &std::path::Path, pre: &str, args: &str) -> Out {
    let line = format!("{pre}; exec {} {args}", snug_for(who).display());
    let mut c = Command::new(as_who(who).first().map_or("sh", |s| s.as_str()));
    let prefix = as_who(who);
    if prefix.is_empty() {
        c = Command::new("sh");
    } else {
        c.args(&prefix[1..]).arg("sh");
    }
    // A small environment: at 16 KiB the strings of the test harness's would take a good
    // part of the stack before any code runs (a dynamic build's loader then has none left).
    c.env_clear().env("PATH", "/usr/bin:/bin").env("HOME", "/");
    c.arg("-c").arg(line).current_dir(dir).stdin(std::process::Stdio::null());
    run_bounded(&mut c, LIMIT)
}

/// R4: with `ulimit -s` at 16, 24 and 32 KiB (soft and hard) snug never aborts: it runs, or,
/// where bwrap itself cannot run on so small a stack, exits 71 with one line naming the
/// limit; with only the soft limit that low it runs and the payload gets the caller's limit.
/// Fails without the fix: snug aborted, exit 134 ("thread 'main' has overflowed its
/// stack"), at each of the three sizes.
#[test]
fn r4_tiny_stack_never_aborts() {
    for who in everyone() {
        let dir = workdir(who);
        for kib in [16, 24, 32] {
            let o = snug_after(who, dir.path(), &format!("ulimit -s {kib}"), "-- sh -c 'ulimit -s'");
            println!("R4 {who:?} ulimit -s {kib}: exit {} out {:?} err {:?}", code(o.status), o.out, o.err);
            match code(o.status) {
                0 => assert_eq!(o.out.trim(), kib.to_string(), "{who:?} {kib}"),
                71 => {
                    assert_eq!(o.err.lines().count(), 1, "{who:?} {kib}: {}", o.err);
                    assert!(o.err.starts_with("snug: ") && o.err.contains("ulimit -s"), "{who:?} {kib}: {}", o.err);
                }
                c => panic!("{who:?} ulimit -s {kib}: exit {c}: {}", o.err),
            }
            let o = snug_after(who, dir.path(), &format!("ulimit -S -s {kib}"), "-- sh -c 'ulimit -s'");
            assert_eq!(code(o.status), 0, "{who:?} soft {kib}: {}", o.err);
            assert_eq!(o.out.trim(), kib.to_string(), "{who:?} soft {kib}: the payload gets the caller's limit");
        }
    }
}

/// R4, K5: `--max-procs 1` and `2` leave the payload no process (bwrap and init count): a
/// usage error (64) before anything starts, one line naming the minimum, 3, which runs.
/// Fails without the fix: `--max-procs 1` was accepted and every run ended 71 ("sandbox init
/// failed: resource temporarily unavailable").
#[test]
fn r4_max_procs_below_the_minimum_is_64_naming_it() {
    for who in everyone() {
        let dir = workdir(who);
        for n in ["1", "2"] {
            let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--max-procs", n, "--", "touch", "ran"]), LIMIT);
            assert_eq!(code(o.status), 64, "{who:?} {n}: {}", o.err);
            assert_eq!(o.err.lines().count(), 1, "{who:?}: {}", o.err);
            assert!(o.err.contains("--max-procs") && o.err.contains("3..="), "{who:?}: {}", o.err);
            assert!(!dir.path().join("ran").exists(), "{who:?}: the payload ran");
        }
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--max-procs", "3", "--", "true"]), LIMIT);
        assert_eq!(code(o.status), 0, "{who:?}: the minimum runs: {}", o.err);
    }
}

/// R7: `-e 'Y=<byte 0xff>'` passes the value's bytes to the payload as they are, as root and
/// as the user; a name that is not UTF-8 is a usage error naming the entry. Fails without
/// the fix: "invalid UTF-8 was detected in one or more arguments", exit 64, naming nothing.
#[test]
fn r7_env_value_bytes_pass_as_they_are() {
    use std::os::unix::ffi::OsStrExt;
    for who in everyone() {
        let dir = workdir(who);
        let mut c = snug_cmd(who, dir.path(), &[]);
        c.arg("-e").arg(std::ffi::OsStr::from_bytes(b"Y=a\xffb")).args(["--", "sh", "-c", "printf %s \"$Y\" > y"]);
        let o = run_bounded(&mut c, LIMIT);
        assert_eq!(code(o.status), 0, "{who:?}: {}", o.err);
        assert_eq!(std::fs::read(dir.path().join("y")).unwrap(), b"a\xffb", "{who:?}");
        let mut c = snug_cmd(who, dir.path(), &[]);
        c.arg("-e").arg(std::ffi::OsStr::from_bytes(b"\xff=1")).args(["--", "true"]);
        let o = run_bounded(&mut c, LIMIT);
        assert_eq!(code(o.status), 64, "{who:?}: {}", o.err);
        assert!(o.err.contains("-e $'\\xff=1'") && o.err.contains("not UTF-8"), "{who:?}: {}", o.err);
    }
}

/// R4: `--ro /run` runs (snug's init gets an empty directory at /run/snug, where the host's
/// is bound), as root and as the user; where the host has no /run/snug under such a bind,
/// it is a policy error (77) naming the bind, never 69. Fails without the fix: as the user,
/// 69 with "bwrap: Can't create file at /run/snug/init: Permission denied".
#[test]
fn r4_ro_run_works_or_names_the_mount() {
    for who in everyone() {
        let dir = workdir(who);
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--ro", "/run", "--", "ls", "-A", "/run/snug"]), LIMIT);
        if std::path::Path::new("/run/snug").is_dir() {
            assert_eq!(code(o.status), 0, "{who:?}: {}", o.err);
        } else {
            assert_eq!(code(o.status), 77, "{who:?}: {}", o.err);
        }
        if code(o.status) == 0 {
            assert_eq!(o.out, "init\n", "{who:?}: the host's /run/snug shows through");
        }
    }
}

/// R4: `-e =x` (no name) and `-e 'FOO BAR=1'` are usage errors (64) with one line saying
/// what is wrong. Fails without the fix: `-e =x` exited 77 quoting the empty name, and
/// `-e 'FOO BAR=1'` ran the payload (exit 0).
#[test]
fn r4_bad_env_names_are_usage_errors() {
    let dir = workdir(Who::Root);
    for (entry, says) in
        [("=x", "name is empty"), ("FOO BAR=1", "not a variable name"), ("A\tB", "not a variable name")]
    {
        let o = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &["-e", entry, "--", "true"]), LIMIT);
        assert_eq!(code(o.status), 64, "-e {entry:?}: {}", o.err);
        assert_eq!(o.err.lines().count(), 1, "-e {entry:?}: {}", o.err);
        assert!(o.err.starts_with("snug: -e ") && o.err.contains(says), "-e {entry:?}: {}", o.err);
    }
}

/// R7: `-e NAME` whose value is not UTF-8 reaches the payload byte for byte, as root and as
/// the user. Fails without the fix: exit 64, "-e X: its value is not UTF-8, which snug
/// cannot pass".
#[test]
fn r7_env_value_of_any_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let value = std::ffi::OsStr::from_bytes(b"a\xff\xfe b\x01\xc3(");
    for who in everyone() {
        let dir = workdir(who);
        let mut c = snug_cmd(
            who,
            dir.path(),
            &["-e", "SNUG_T_RAW", "--", "sh", "-c", "printf %s \"$SNUG_T_RAW\" | od -An -tx1"],
        );
        c.env("SNUG_T_RAW", value);
        let o = run_bounded(&mut c, LIMIT);
        assert_eq!(code(o.status), 0, "{who:?}: {}", o.err);
        let want: Vec<String> = value.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
        let got: Vec<&str> = o.out.split_whitespace().collect();
        assert_eq!(got, want, "{who:?}");
    }
}

/// A work directory for root where a memory cgroup can hold `--memory` (`--dry-run` says so);
/// `None` (the test skips) as a user or without one.
fn root_with_memory_cgroup() -> Option<tempfile::TempDir> {
    if !is_root() {
        return None;
    }
    let dir = workdir(Who::Root);
    let plan = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &["-n", "--memory", "64M", "--", "true"]), LIMIT);
    if plan.out.contains("memory    67108864   unavailable") {
        eprintln!("skipped: no memory cgroup here");
        return None;
    }
    Some(dir)
}

/// `snug --report DIR/r.json ARGS…` as root in `dir` with `env` added: what it said, and the
/// report it wrote.
fn reported(dir: &std::path::Path, args: &[&str], env: &[(&str, &std::path::Path)]) -> (Out, serde_json::Value) {
    let report = dir.join("r.json");
    let mut all = vec!["--report", report.to_str().unwrap()];
    all.extend(args);
    let mut c = snug_cmd(Who::Root, dir, &all);
    for (name, value) in env {
        c.env(name, value);
    }
    let o = run_bounded(&mut c, LIMIT);
    let json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    (o, json)
}

/// O5, K5: an OOM kill under `--memory` is `ended_by: "oom"` with the kill counted, and forks
/// refused at the cap are counted, where a cgroup holds the bound (root here). Fails
/// without the fix: `ended_by` was "payload_signal" and the report had no `bounds_hit`.
#[test]
fn o5_oom_and_refused_forks_reported() {
    let Some(dir) = root_with_memory_cgroup() else { return };
    let alloc = "$x = 'x' x (256 * 1024 * 1024)";
    let (o, json) = reported(dir.path(), &["--memory", "64M", "--", "perl", "-e", alloc], &[]);
    println!("O5 oom: {json}");
    assert_eq!(json["ended_by"], "oom", "{}", o.err);
    assert!(json["bounds_hit"]["oom_kills"].as_u64() >= Some(1), "{json}");
    // Control in-test: with room, the same payload ends by itself and nothing is counted.
    let (o, json) = reported(dir.path(), &["--memory", "1G", "--", "perl", "-e", alloc], &[]);
    assert_eq!(
        (json["ended_by"].as_str(), json["bounds_hit"]["oom_kills"].as_u64()),
        (Some("payload"), Some(0)),
        "{}",
        o.err
    );
    let forks = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 5 & done 2>/dev/null; kill $(jobs -p) 2>/dev/null; true";
    let (_, json) = reported(dir.path(), &["--max-procs", "8", "--", "bash", "-c", forks], &[]);
    println!("O5 forks: {}", json["bounds_hit"]);
    assert!(json["bounds_hit"]["forks_refused"].as_u64() >= Some(1), "{json}");
}

/// K5, B1: a bound that only a profile asks for holds as well as one on the command line,
/// though nest starts before the profiles are read: a profile's `memory` needs a cgroup the
/// command line did not foresee (nest is started again with it), and its `max_procs` is
/// written into the cgroup after nest entered it. Fails without the restart in
/// `launch::run` (tried once: the 256 MiB allocation under the profile's 64M ended by
/// itself, `ended_by` "payload").
#[test]
fn k5_b1_a_profiles_bounds_hold() {
    let Some(dir) = root_with_memory_cgroup() else { return };
    let cfg = dir.path().join("cfg/snug/profiles.d");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("small.toml"), "memory = \"64M\"\nmax_procs = 8\n").unwrap();
    let conf = dir.path().join("cfg");
    let run = |payload: &[&str]| {
        let mut args = vec!["-p", "small", "--"];
        args.extend(payload);
        reported(dir.path(), &args, &[("XDG_CONFIG_HOME", &conf)])
    };
    let (o, json) = run(&["perl", "-e", "$x = 'x' x (256 * 1024 * 1024)"]);
    assert_eq!(json["ended_by"], "oom", "{}: {json}", o.err);
    let forks = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 5 & done 2>/dev/null; kill $(jobs -p) 2>/dev/null; true";
    let (o, json) = run(&["bash", "-c", forks]);
    assert!(json["bounds_hit"]["forks_refused"].as_u64() >= Some(1), "{}: {json}", o.err);
}

/// K5: as root where snug can make no pids cgroup (here: a cgroup2 hierarchy without the pids
/// controller mounted over /sys/fs/cgroup, in a mount namespace of the test's own), the
/// `RLIMIT_NPROC` fallback binds nothing, since fork(2) exempts uid 0: the run says the cap
/// is not enforced, and `doctor` warns. Positive control: before, the run said nothing and
/// `doctor` printed "process cap  ok  RLIMIT_NPROC in the sandbox's user namespace" while
/// 34 processes ran under `--max-procs 5`.
#[test]
fn k5_root_without_a_pids_cgroup_is_told_the_cap_does_not_hold() {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let snug = snug_for(Who::Root);
    let script = format!(
        "mount -t cgroup2 none /sys/fs/cgroup || exit 90; \
         grep -qw pids /sys/fs/cgroup/cgroup.subtree_control && exit 91; \
         {s} --max-procs 5 -- true; echo \"rc=$?\"; {s} doctor",
        s = snug.display()
    );
    let o = run_bounded(Command::new("unshare").args(["-m", "sh", "-c", &script]), LIMIT);
    if matches!(code(o.status), 90 | 91) {
        println!("K5: skipped (no cgroup2 to mount here, or it has pids enabled: {})", code(o.status));
        return;
    }
    assert!(o.out.contains("rc=0"), "{} {}", o.out, o.err);
    let said: Vec<&str> = o.err.lines().filter(|l| l.contains("process cap")).collect();
    assert_eq!(said.len(), 1, "{}", o.err);
    assert!(said[0].starts_with("snug: the process cap (--max-procs 5) is not enforced here:"), "{}", said[0]);
    let row = o.out.lines().find(|l| l.contains("process cap")).unwrap_or_default();
    assert!(row.contains("unavailable") && !row.contains(" ok "), "{row}");
}

/// K5, O5, R3: a memory bound filled through tmpfs (pages no process owns), where the OOM
/// killer may take bwrap or init instead of the payload: snug ends as for a payload the OOM
/// killer took (dies of SIGKILL, `ended_by: "oom"`) and says why in one line. Positive
/// control: before, whenever bwrap was the victim, snug exited 70 "the sandbox ended without
/// reporting the payload's status", `ended_by: "snug_error"`, with nothing naming the OOM.
#[test]
fn k5_o5_a_memory_bound_filled_through_tmpfs_ends_as_an_oom() {
    let Some(dir) = root_with_memory_cgroup() else { return };
    let fill = "head -c 200M /dev/zero > $HOME/x; echo wrote $?";
    let (o, json) = reported(dir.path(), &["--memory", "50M", "--", "sh", "-c", fill], &[]);
    println!("K5 tmpfs: exit {} err {:?} {json}", code(o.status), o.err);
    if json["bounds_hit"]["oom_kills"].as_u64() == Some(0) {
        // tmpfs gave ENOSPC first or the payload ended by itself: nothing to judge here.
        assert_eq!(json["ended_by"], "payload", "{json}");
        return;
    }
    assert_eq!(json["ended_by"], "oom", "{} {json}", o.err);
    assert_eq!(code(o.status), 128 + libc::SIGKILL, "{}", o.err);
    assert!(o.err.lines().all(|l| !l.contains("without reporting")), "{}", o.err);
}
