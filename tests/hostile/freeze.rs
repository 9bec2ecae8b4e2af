//! G3, K1 with `--allow-userns`: a payload allowed user namespaces cannot freeze its own
//! sandbox (no cgroup namespace of its own, so no cgroupfs it may mount), TERM still ends the
//! run within G3's bound, SIGKILL of snug leaves nothing, and the next run removes the empty
//! cgroups the killed one left.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);

/// The attacker: in a child, unshare user, mount and cgroup namespaces, mount the v1
/// freezer (whose root would be the sandbox's own cgroup) in DIR and write FROZEN there;
/// then the same with user and mount namespaces only (the cgroup namespace stays bwrap's).
/// One line per step in the file `steps`; `ready` last, then it sleeps (argv[1] is the
/// test's marker, for finding what is left).
const FREEZE: &str = r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def say(*a):
    with open("steps", "a") as f: print(*a, file=f, flush=True)
USER, MOUNT, CGROUP = 0x10000000, 0x20000, 0x02000000
for flags, what in ((USER | MOUNT | CGROUP, "user+mount+cgroup"), (USER | MOUNT, "user+mount")):
    pid = os.fork()
    if pid == 0:
        if libc.unshare(flags) != 0:
            say("unshare", what, "refused:", os.strerror(ctypes.get_errno())); os._exit(0)
        os.makedirs("fz", exist_ok=True)
        if libc.mount(b"none", b"fz", b"cgroup", 0, b"freezer") != 0:
            say("mount", what, "refused:", os.strerror(ctypes.get_errno())); os._exit(0)
        say("mounted", what)
        try:
            with open("fz/freezer.state", "w") as f: f.write("FROZEN")
            say("froze", what)
        except OSError as e:
            say("freezer.state refused:", e.strerror)
        os._exit(0)
    os.waitpid(pid, 0)
say("ready")
time.sleep(300)
"#;

/// The cgroups named after snug `pid` in every v1 hierarchy (`snug-PID-START-NS`).
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("snug-{pid}-");
    let mut found = Vec::new();
    for h in std::fs::read_dir("/sys/fs/cgroup").into_iter().flatten().flatten() {
        for e in std::fs::read_dir(h.path()).into_iter().flatten().flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(e.path());
            }
        }
    }
    found
}

/// Thaw every freezer cgroup below `dirs` (what a failing run froze), so that a failure
/// leaves the machine usable.
fn thaw(dirs: &[PathBuf]) {
    for d in dirs.iter().filter(|d| d.starts_with("/sys/fs/cgroup/freezer")) {
        for f in [d.join("freezer.state"), d.join("sandbox/freezer.state")] {
            let _ = std::fs::write(f, "THAWED");
        }
    }
}

/// Start the attacker under `snug -v --allow-userns` as `who` and wait for its `ready`;
/// Err(its steps) when it never gets there (frozen), after thawing it.
fn attack(who: Who, dir: &Path, m: &str) -> (std::process::Child, Result<String, String>) {
    let (mut cmd, _log) = snug_verbose(who, dir, &["--allow-userns", "--", "/usr/bin/python3", "-c", FREEZE, m]);
    let child = spawn_own_group(&mut cmd);
    let steps = dir.join("steps");
    let ready = until(Duration::from_secs(10), || read_text(&steps).contains("ready"));
    let text = read_text(&steps);
    if !ready {
        thaw(&cgroups_of(child.id()));
        return (child, Err(text));
    }
    (child, Ok(text))
}

/// G3, K1 with `--allow-userns`, as root and as the user: the attacker's cgroup namespace is
/// refused (EPERM) and with user and mount namespaces alone the freezer mount is refused;
/// TERM to snug ends the run within 1.1 s, nothing of it left 100 ms later.
/// Positive control, the filter without its cgroup namespace rules: as root the attacker
/// mounted the freezer and wrote FROZEN (steps: `mounted user+mount+cgroup`), bwrap, init
/// and the payload sat in state D and `ready` never came; by hand, TERM to that snug did
/// nothing for as long as the cgroup stayed frozen.
#[test]
fn g3_k1_allow_userns_payload_cannot_freeze_its_sandbox() {
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        let (mut child, steps) = attack(who, dir.path(), &m);
        let steps = steps.unwrap_or_else(|s| {
            kill(child.id(), libc::SIGKILL);
            let _ = child.wait();
            reap_leftovers(&m);
            panic!("{who:?}: the attacker never got to `ready` (frozen?): {s}")
        });
        println!("{who:?}:\n{steps}");
        assert!(steps.contains("unshare user+mount+cgroup refused: Operation not permitted"), "{who:?}: {steps}");
        assert!(!steps.contains("mounted") && !steps.contains("froze"), "{who:?}: {steps}");
        assert!(steps.contains("mount user+mount refused"), "{who:?}: {steps}");
        kill(child.id(), libc::SIGTERM);
        let term = Instant::now();
        let ended = ended_within(&mut child, Duration::from_millis(1100));
        let took = term.elapsed();
        if ended.is_none() {
            kill_if_running(&mut child);
        }
        assert!(ended.is_some(), "{who:?}: snug still ran {took:?} after TERM");
        let left = survivors(&m, Instant::now());
        assert!(left.is_empty(), "{who:?}: left after TERM: {left:?}");
    }
}

/// K1 with `--allow-userns` as root: SIGKILL of snug while the attacker sleeps leaves no
/// process of the run 100 ms later; its cgroups stay (nothing ran to remove them) but are
/// empty, and the next run, even one without `--allow-userns` (which uses only the pids
/// hierarchy), removes them from every hierarchy. Positive control, the sweep limited to the
/// hierarchies the next run uses: the killed run's cgroups in the freezer, cpu, cpuset,
/// blkio, devices and memory hierarchies stayed behind after it.
#[test]
fn k1_allow_userns_sigkill_leaves_nothing_and_next_run_sweeps() {
    if !is_root() {
        return eprintln!("skipped: root only (the user may create no cgroup here)");
    }
    let dir = workdir(Who::Root);
    let m = marker();
    let (mut child, steps) = attack(Who::Root, dir.path(), &m);
    let pid = child.id();
    if let Err(s) = steps {
        kill(pid, libc::SIGKILL);
        let _ = child.wait();
        reap_leftovers(&m);
        panic!("the attacker never got to `ready` (frozen?): {s}");
    }
    let before = cgroups_of(pid);
    kill(pid, libc::SIGKILL);
    let killed = Instant::now();
    let _ = child.wait();
    let left = survivors(&m, killed);
    assert!(left.is_empty(), "alive 100 ms after SIGKILL: {left:?}");
    let stayed = cgroups_of(pid);
    // Another test's snug, started meanwhile in this binary, sweeps them too (every start
    // does): then what is checked below is that sweep's work, and this line says so.
    if stayed.len() < 2 {
        eprintln!("the killed run's cgroups were swept by a run started meanwhile: {before:?}");
    }
    let o = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &["--", "true"]), LIMIT);
    assert_eq!(code(o.status), 0, "the next run: {}", o.err);
    let after = cgroups_of(pid);
    assert!(after.is_empty(), "the next run left the killed run's cgroups: {after:?} (of {stayed:?})");
}

/// G3, X2: a snug run by the user inside another's `--allow-userns` sandbox still runs: it
/// sees that it may make no cgroup namespace and leaves bwrap's `--unshare-cgroup-try` out.
/// (As root a nested snug cannot make its namespaces at all, with or without this: not
/// tested.) Positive control, the nested snug always asking bwrap for a cgroup namespace:
/// exit 69, "bwrap: No permissions to create new namespace".
#[test]
fn g3_nested_snug_runs_under_allow_userns() {
    if !is_root() {
        return eprintln!("skipped: runs as the test user from root");
    }
    let dir = workdir(Who::User);
    let inner = snug_for(Who::User);
    let bin = inner.parent().expect("bin dir").to_str().expect("utf-8");
    let inner = inner.to_str().expect("utf-8");
    let args = ["--allow-userns", "--ro", bin, "--", inner, "--", "echo", "nested-ok"];
    let o = run_bounded(&mut snug_cmd(Who::User, dir.path(), &args), LIMIT);
    assert_eq!((code(o.status), o.out.as_str()), (0, "nested-ok\n"), "{}", o.err);
}
