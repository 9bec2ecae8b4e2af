//! X2, K5: nested user namespaces are off by default, so a payload, even the host's root,
//! gains no capability over mounts or cgroupfs; with `--allow-userns` (or a profile's
//! `allow_userns`) it may create them, but no cgroup namespace, so it mounts no cgroupfs.

use crate::common::*;
use std::path::PathBuf;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// X2: `unshare -U true` fails inside by default and works with `--allow-userns` and with a
/// profile saying `allow_userns = true`, as root and as the user.
/// Fails without the fix: by default `unshare -U true` exited 0 inside.
#[test]
fn x2_unshare_user_fails_by_default() {
    for who in everyone() {
        let dir = workdir(who);
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--", "unshare", "-U", "true"]), LIMIT);
        assert_ne!(code(o.status), 0, "{who:?}: unshare -U worked inside by default: {}", o.err);
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--allow-userns", "--", "unshare", "-U", "true"]), LIMIT);
        assert_eq!(code(o.status), 0, "{who:?}: --allow-userns: {}", o.err);
        // The profile key, from a profile directory of the test's own.
        let cfg = dir.path().join("cfg/snug/profiles.d");
        std::fs::create_dir_all(&cfg).unwrap();
        std::fs::write(cfg.join("nest.toml"), "allow_userns = true\n").unwrap();
        let mut c = snug_cmd(who, dir.path(), &["-p", "nest", "--", "unshare", "-U", "true"]);
        c.env("XDG_CONFIG_HOME", dir.path().join("cfg"));
        let o = run_bounded(&mut c, LIMIT);
        assert_eq!(code(o.status), 0, "{who:?}: allow_userns = true: {}", o.err);
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["-n", "--", "true"]), LIMIT);
        assert!(o.out.contains("userns:   disabled"), "{who:?}: --dry-run says: {}", o.out);
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &["-n", "--allow-userns", "--", "true"]), LIMIT);
        assert!(o.out.contains("userns:   allowed") && o.out.contains("cgroupfs"), "{who:?}: {}", o.out);
    }
}

/// The payload: create a user, mount and cgroup namespace; mount the freezer and pids
/// hierarchies in its workdir; try to freeze the test's cgroup, lift the test's and its own
/// pids.max; then start up to 60 sleepers. One line per step on stdout.
const ESCAPE: &str = r#"
import ctypes, os, sys, time
victim = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
def say(*a): print(*a, flush=True)
if libc.unshare(0x10000000 | 0x20000 | 0x02000000) != 0:
    say("unshare", os.strerror(ctypes.get_errno()))
for ctl in ("freezer", "pids"):
    os.makedirs(ctl, exist_ok=True)
    if libc.mount(b"none", ctl.encode(), b"cgroup", 0, ctl.encode()) == 0:
        say("mounted", ctl)
def write(path, value):
    try:
        with open(path, "w") as f: f.write(value)
        say("wrote", path)
    except OSError as e:
        say("refused", path, e.strerror)
write(f"freezer/{victim}/freezer.state", "FROZEN")
write(f"pids/{victim}/pids.max", "1000")
write("pids/pids.max", "max")
kids = []
for _ in range(60):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30); os._exit(0)
    kids.append(pid)
say("forks", len(kids))
for k in kids: os.kill(k, 9)
"#;

/// A cgroup the test creates in one v1 hierarchy and removes on drop; no other is touched.
struct TestCgroup(PathBuf);

impl TestCgroup {
    fn new(controller: &str, name: &str) -> Option<TestCgroup> {
        let dir = PathBuf::from("/sys/fs/cgroup").join(controller).join(name);
        std::fs::create_dir(&dir).ok().map(|_| TestCgroup(dir))
    }
    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.0.join(file)).unwrap_or_default().trim().to_string()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("freezer.state"), "THAWED");
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// K5, X2 as root: a payload that tries to mount cgroup v1 hierarchies and write
/// `freezer.state` of a cgroup outside its own, `pids.max` of another and its own, fails:
/// by default it gets no user namespace, and with `--allow-userns` no cgroup namespace, so
/// no mount either way; and `--max-procs 20` holds.
/// Fails without the fix (positive control on the unmodified code): the payload mounted
/// freezer, wrote FROZEN into the test's cgroup (read back FROZEN), lifted its own pids.max
/// to max and started all 60 sleepers under --max-procs 20.
#[test]
fn k5_x2_root_payload_cannot_write_other_cgroups() {
    if !is_root() {
        return eprintln!("skipped: root only (the user cannot write root's cgroups anyway)");
    }
    let name = format!("snug-test-{}", marker());
    let (Some(freezer), Some(pids)) = (TestCgroup::new("freezer", &name), TestCgroup::new("pids", &name)) else {
        return eprintln!("skipped: no cgroup v1 freezer and pids hierarchies here");
    };
    std::fs::write(pids.0.join("pids.max"), "7").expect("pids.max");
    for extra in [&[][..], &["--allow-userns"][..]] {
        let dir = workdir(Who::Root);
        let mut args = vec!["--max-procs", "20"];
        args.extend(extra);
        args.extend(["--", "/usr/bin/python3", "-c", ESCAPE, &name]);
        let o = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &args), LIMIT);
        println!("K5/X2 {extra:?}:\n{}", o.out);
        assert_eq!(freezer.read("freezer.state"), "THAWED", "{extra:?}: the payload froze the test's cgroup");
        assert_eq!(pids.read("pids.max"), "7", "{extra:?}: the payload changed the test's pids.max");
        assert!(!o.out.contains(&format!("wrote freezer/{name}")), "{extra:?}: {}", o.out);
        let forks: usize = o.out.lines().find_map(|l| l.strip_prefix("forks ")?.parse().ok()).unwrap_or(99);
        assert!(forks < 20, "{extra:?}: {forks} sleepers under --max-procs 20: {}{}", o.out, o.err);
        // By default no user namespace; with --allow-userns no cgroup namespace (G3, K1):
        // either way the unshare fails and nothing is mounted.
        assert!(o.out.contains("unshare") && !o.out.contains("mounted"), "{extra:?}: {}{}", o.out, o.err);
    }
}
