//! The bwrap(1) command line: one pure function from a [`Policy`] and how snug's init is
//! launched. Golden files in `tests/golden/` pin it (`UPDATE_GOLDEN=1` rewrites them).

mod cgroupns;
use std::path::{Path, PathBuf};

use crate::policy::{Mount, MountKind, Policy};

mod known;
pub use known::{has_bind_fd, has_disable_userns, known, NO_BIND_FD, NO_DISABLE_USERNS};

/// Where snug's own executable is bound inside the sandbox and run as its init (pid 1).
pub const INIT_PATH: &str = "/run/snug/init";

/// How to start the sandbox init.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The bwrap binary (argv[0] of the command line).
    pub bwrap: PathBuf,
    /// snug's own executable on the host, bound read-only at [`INIT_PATH`].
    pub init_exe: PathBuf,
    /// Shared objects init needs (its ELF interpreter and libraries, as paths the binary
    /// names them); each is bound read-only at the same path unless a policy bind already
    /// covers it, so init starts even under `--no-defaults` where there is no /usr.
    pub init_libs: Vec<PathBuf>,
    /// Descriptor holding a compiled seccomp filter, passed as `--seccomp FD`.
    pub seccomp_fd: Option<i32>,
    /// Arguments after init's path, verbatim (the init flag and mode; CMD travels in a memfd).
    pub init_args: Vec<String>,
    /// Paths inside the sandbox where snug's runtime directory would show through a policy
    /// bind: each gets an empty tmpfs after every policy mount (SPEC X4,
    /// [`crate::live::runtime::masks`]).
    pub masks: Vec<PathBuf>,
    /// This bwrap has `--disable-userns` (0.8.0 and later, [`has_disable_userns`]).
    pub disable_userns: bool,
    /// Where the payload starts when not in DIR itself: the current directory inside DIR
    /// (SPEC R1, [`crate::root::start_dir`]).
    pub chdir: Option<PathBuf>,
    /// For each of the policy's mounts, in order, the descriptor bwrap binds it from
    /// (`--bind-fd`, `--ro-bind-fd`; SPEC P7, [`crate::grant_fd`]); empty or `None`: the path.
    pub bind_fds: Vec<Option<i32>>,
    /// Who the payload is (SPEC P11): as root, bwrap runs in nest's fully mapped user
    /// namespace, without one of its own, and gives init what it needs to settle the
    /// payload's capabilities ([`crate::identity`]).
    pub identity: crate::identity::Identity,
}

/// The namespace and privilege options, before the environment and mounts. Each
/// namespace is new (user, ipc, pid, uts, cgroup when possible, net: loopback only until
/// pasta attaches, SPEC N1); `--as-pid-1` because snug's init is pid 1 (docs/design.md, "Init");
/// no `--new-session`: init chooses setsid() or setpgid() by mode (SPEC T, D).
const PROLOGUE: [&str; 13] = [
    "--unshare-user",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--unshare-net",
    "--die-with-parent",
    "--as-pid-1",
    "--cap-drop",
    "ALL",
    "--hostname",
    "snug",
    "--clearenv",
];

/// Build bwrap's argv (first element: the bwrap path). Order: namespaces and privileges
/// (`--clearenv`: the payload's environment travels to init in a memfd, SPEC R7,
/// [`crate::payload_args`]), the policy's mounts in its order, init's binary and
/// libraries, `--seccomp`, `--chdir DIR` (after `--dir DIR` when no mount provides DIR),
/// then `-- /run/snug/init ARGS…`.
pub fn command_line(policy: &Policy, launch: &Launch) -> Vec<String> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut argv = vec![s(&launch.bwrap)];
    // A snug inside another's `--allow-userns` sandbox gets no cgroup namespace (G3, K1).
    let cgroupns = cgroupns::possible();
    let root = launch.identity.is_root();
    let prologue = PROLOGUE.iter().filter(|a| cgroupns || **a != "--unshare-cgroup-try");
    argv.extend(prologue.filter(|a| !root || **a != "--unshare-user").map(|a| a.to_string()));
    argv.extend(launch.identity.cap_words());
    // As root nest turns them off instead (`--disable-userns` needs `--unshare-user`).
    if !policy.allow_userns && launch.disable_userns && !root {
        // SPEC X2: no user namespace inside, so no capability over mounts or cgroupfs even
        // for a payload that is the host's uid 0 (bwrap(1), `--disable-userns`).
        argv.push("--disable-userns".to_string());
    }
    // The protected paths' mounts after every policy mount, so that none covers them (SPEC P8).
    // A policy mount snug opened is bound from its descriptor (SPEC P7); `bind_fds` covers
    // `policy.mounts` only, so the protected ones keep their paths.
    for (i, m) in policy.mounts.iter().chain(&policy.protected).enumerate() {
        let fd = launch.bind_fds.get(i).copied().flatten();
        let src = fd.map(|fd| fd.to_string()).or_else(|| m.src.as_deref().map(s)).unwrap_or_default();
        let dest = s(&m.dest);
        let words: Vec<String> = match (m.kind, fd) {
            (MountKind::Ro, Some(_)) => vec!["--ro-bind-fd".into(), src, dest],
            (MountKind::Rw, Some(_)) => vec!["--bind-fd".into(), src, dest],
            // A placeholder is made just before bwrap runs (SPEC P8); `-try` keeps a pasted
            // `--dry-run` line, for which none was made, runnable.
            (MountKind::Ro, None) if m.profile == crate::protect::PLACEHOLDER => {
                vec!["--ro-bind-try".into(), src, dest]
            }
            (MountKind::Ro, None) => vec!["--ro-bind".into(), src, dest],
            (MountKind::Rw, None) => vec!["--bind".into(), src, dest],
            // Under `--user` the payload is not the tmpfs's owner (root): it writes there as
            // in /tmp (SPEC P11).
            (MountKind::Tmpfs, _) if matches!(launch.identity, crate::identity::Identity::User { .. }) => {
                vec!["--perms".into(), "1777".into(), "--tmpfs".into(), dest]
            }
            (MountKind::Tmpfs, _) => vec!["--tmpfs".into(), dest],
            (MountKind::Symlink, _) => vec!["--symlink".into(), src, dest],
            (MountKind::Dev, _) => vec!["--dev".into(), dest],
            (MountKind::Proc, _) => vec!["--proc".into(), dest],
        };
        argv.extend(words);
    }
    // Before init's bind: root's runtime directory is /run/snug, where init goes.
    for m in &launch.masks {
        argv.extend(["--tmpfs".to_string(), s(m)]);
    }
    argv.extend(["--ro-bind".to_string(), s(&launch.init_exe), INIT_PATH.to_string()]);
    for lib in &launch.init_libs {
        if !covered_by_bind(policy, lib) {
            argv.extend(["--ro-bind".to_string(), s(lib), s(lib)]);
        }
    }
    if let Some(fd) = launch.seccomp_fd {
        argv.extend(["--seccomp".to_string(), fd.to_string()]);
    }
    if !target_exists(policy) {
        // `--no-defaults` without @cwd-rw: bwrap's --chdir would fail on a missing path,
        // so the payload starts in an empty directory at DIR's path (SPEC R1).
        argv.extend(["--dir".to_string(), s(&policy.target)]);
    }
    let start = launch.chdir.as_deref().unwrap_or(&policy.target);
    argv.extend(["--chdir".to_string(), s(start), "--".to_string()]);
    argv.push(INIT_PATH.to_string());
    argv.extend(launch.init_args.iter().cloned());
    argv
}

/// The policy mount that provides `path` inside the sandbox: the deepest one at or above
/// it, following `@sys` symlinks on the way (`/lib64/ld-linux-x86-64.so.2` is provided by
/// the /usr bind when /lib64 -> usr/lib64), a few levels at most. Also returns `path` as
/// resolved through those symlinks.
pub(crate) fn provider<'a>(policy: &'a Policy, path: &Path) -> Option<(&'a Mount, PathBuf)> {
    let mut path = path.to_path_buf();
    for _ in 0..8 {
        let m =
            policy.mounts.iter().filter(|m| path.starts_with(&m.dest)).max_by_key(|m| m.dest.components().count())?;
        match (m.kind, &m.src) {
            (MountKind::Symlink, Some(target)) if m.dest != path => {
                let rest = path.strip_prefix(&m.dest).map(Path::to_path_buf).unwrap_or_default();
                let base = m.dest.parent().unwrap_or(Path::new("/"));
                path = base.join(target).join(rest);
            }
            _ => return Some((m, path)),
        }
    }
    None
}

/// A host file at `path` is visible inside: a ro/rw bind provides it.
fn covered_by_bind(policy: &Policy, path: &Path) -> bool {
    provider(policy, path).is_some_and(|(m, _)| matches!(m.kind, MountKind::Ro | MountKind::Rw))
}

/// DIR exists inside: a bind provides it (it exists on the host), or a mount sits on it.
fn target_exists(policy: &Policy) -> bool {
    provider(policy, &policy.target)
        .is_some_and(|(m, resolved)| matches!(m.kind, MountKind::Ro | MountKind::Rw) || m.dest == resolved)
}

/// What snug says when no bwrap is on PATH (exit 69, SPEC R4).
pub const NO_BWRAP: &str = "bwrap not found on PATH: install the Debian package bubblewrap";

/// Find program `name` on the caller's PATH (execvp(3) rules:
/// the first regular, executable file wins).
pub fn find_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    on_path(name)
        .into_iter()
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// Where `name` may be on the caller's PATH, in PATH's order: each absolute directory
/// joined with `name`. [`find_program`] takes the first executable file of them; nest makes
/// the same choice itself from this list (`start::nest`).
pub fn on_path(name: &str) -> Vec<PathBuf> {
    // Only $PATH (a default when unset), so the caller's PATH decides, for snug and doctor alike.
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path).filter(|d| d.is_absolute()).map(|d| d.join(name)).collect()
}

/// Golden-file checks shared by this module's and [`crate::dryrun`]'s tests.
#[cfg(test)]
pub(crate) mod golden {
    use std::path::PathBuf;

    /// Compare `actual` with `tests/golden/NAME`; with `UPDATE_GOLDEN=1`, rewrite it.
    pub fn check(name: &str, actual: &str) {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
        if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
            std::fs::create_dir_all(path.parent().expect("has parent")).expect("mkdir golden");
            std::fs::write(&path, actual).expect("write golden");
            return;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
        assert!(want == actual, "{} differs (UPDATE_GOLDEN=1 to accept):\n{actual}", path.display());
    }

    /// The fixed request the goldens are built from: HOME /home/u, DIR /home/u/proj/sub.
    pub fn request(profiles: &[&str], no_defaults: bool) -> crate::policy::Request {
        let env = [("HOME", "/home/u"), ("USER", "u"), ("TERM", "xterm"), ("LC_ALL", "C.UTF-8"), ("SECRET", "x")];
        crate::policy::Request {
            profiles: profiles.iter().map(|s| s.to_string()).collect(),
            no_defaults,
            dir: Some(PathBuf::from("proj/sub")),
            host_env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            config_dirs: vec![PathBuf::from("/home/u/.config/snug/profiles.d")],
            grants: Default::default(),
            project: false,
        }
    }

    /// The fixed launch the goldens use.
    pub fn launch() -> super::Launch {
        super::Launch {
            bwrap: PathBuf::from("/usr/bin/bwrap"),
            init_exe: PathBuf::from("/opt/snug/bin/snug"),
            init_libs: ["/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]
                .map(PathBuf::from)
                .to_vec(),
            seccomp_fd: Some(5),
            init_args: ["--snug-init", "detached"].map(String::from).to_vec(),
            masks: vec![],
            disable_userns: true,
            identity: Default::default(),
            chdir: None,
            bind_fds: vec![],
        }
    }

    /// Resolve `req` on the fake Debian host (cwd /home/u) with one user profile `dev`.
    pub fn policy(req: &crate::policy::Request) -> crate::policy::Policy {
        let dev = "description = \"dev\"\nro = [\"{home}/.gitconfig\"]\nrw = [\"{target_parent}/cache\"]\ntmpfs = [\"{target}/node_modules\"]\n[env]\nEDITOR = \"vi\"\n";
        let host = crate::host::FakeHost::debian()
            .cwd("/home/u")
            .file("/home/u/.gitconfig", "")
            .dir("/home/u/proj/cache")
            .file("/home/u/.config/snug/profiles.d/dev.toml", dev);
        crate::policy::resolve_with(req, &host).expect("fixture resolves")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(argv: &[String]) -> String {
        // One option with its operands per line, so golden diffs stay readable.
        let mut out = String::new();
        for a in argv {
            if a.starts_with("--") && !out.is_empty() {
                out.push('\n');
            } else if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&crate::quote::quote(a));
        }
        out.push('\n');
        out
    }

    #[test]
    fn p1_default_policy_golden() {
        let policy = golden::policy(&golden::request(&[], false));
        golden::check("bwrap-defaults.txt", &lines(&command_line(&policy, &golden::launch())));
    }

    #[test]
    fn p2_no_defaults_binds_init_libs_golden() {
        let policy = golden::policy(&golden::request(&["@net"], true));
        let argv = command_line(&policy, &golden::launch());
        assert!(argv.windows(2).any(|w| w[0] == "--ro-bind" && w[1] == "/lib64/ld-linux-x86-64.so.2"));
        golden::check("bwrap-no-defaults.txt", &lines(&argv));
    }

    #[test]
    fn p2_user_profile_golden() {
        let policy = golden::policy(&golden::request(&["dev"], false));
        golden::check("bwrap-dev-profile.txt", &lines(&command_line(&policy, &golden::launch())));
    }

    #[test]
    fn p1_shape_of_the_command_line() {
        let policy = golden::policy(&golden::request(&[], false));
        let mut launch = golden::launch();
        launch.seccomp_fd = None;
        let argv = command_line(&policy, &launch);
        assert_eq!(argv[0], "/usr/bin/bwrap");
        assert_eq!(argv[1..14], PROLOGUE);
        assert!(!argv.iter().any(|a| a == "--new-session" || a == "--seccomp"));
        // libc is under the /usr bind, ld.so under /lib64 -> usr/lib64: neither bound again.
        assert!(!argv.iter().any(|a| a.ends_with(".so.6") || a.ends_with(".so.2")));
        let dd = argv.iter().position(|a| a == "--").expect("--");
        assert_eq!(argv[dd - 2..dd], ["--chdir".to_string(), "/home/u/proj/sub".to_string()]);
        assert_eq!(argv[dd + 1], INIT_PATH);
        assert_eq!(argv[dd + 2..], launch.init_args[..]);
    }

    /// P7: a mount with a descriptor becomes `--ro-bind-fd N DEST` / `--bind-fd N DEST`, the
    /// others stay as they are; no descriptor at all gives the golden's paths.
    #[test]
    fn p7_binds_with_descriptors() {
        let policy = golden::policy(&golden::request(&[], false));
        let mut launch = golden::launch();
        let usr = policy.mounts.iter().position(|m| m.dest == Path::new("/usr")).expect("/usr");
        let dir = policy.mounts.iter().position(|m| m.dest == policy.target).expect("DIR");
        launch.bind_fds = vec![None; policy.mounts.len()];
        launch.bind_fds[usr] = Some(9);
        launch.bind_fds[dir] = Some(10);
        let argv = command_line(&policy, &launch).join(" ");
        assert!(argv.contains(" --ro-bind-fd 9 /usr "), "{argv}");
        assert!(argv.contains(" --bind-fd 10 /home/u/proj/sub "), "{argv}");
        assert!(argv.contains(" --ro-bind /etc/passwd /etc/passwd "), "{argv}");
    }

    #[test]
    fn find_program_finds_sh() {
        assert!(find_program("sh").is_some());
        assert!(find_program("no-such-program-snug").is_none());
    }

    /// The default policy on the real host, run by the real bwrap with /bin/sh standing
    /// in for init: DIR writable, its parent read-only, $HOME empty and writable, /usr
    /// read-only, a cleared environment, only sandbox pids, hostname snug (SPEC P1).
    #[test]
    fn p1_real_bwrap_runs_the_default_policy() {
        let Some(bwrap) = find_program("bwrap") else {
            return eprintln!("skipped: no bwrap");
        };
        let probe = std::process::Command::new(&bwrap)
            .args(["--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "true"])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            return eprintln!("skipped: bwrap cannot create a user namespace here");
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let work = tmp.path().join("w");
        std::fs::create_dir(&work).expect("mkdir");
        let env = [("HOME", "/nonexistent/snug-home"), ("LANG", "C"), ("TOKEN", "secret")];
        let req = crate::policy::Request {
            profiles: vec![],
            no_defaults: false,
            dir: Some(work.clone()),
            host_env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            config_dirs: vec![],
            grants: Default::default(),
            project: false,
        };
        let policy = crate::policy::resolve(&req).expect("resolves");
        let script = "set -e; touch ./ok; if touch ../no 2>/dev/null || touch /usr/no 2>/dev/null; then exit 3; fi; \
            [ -z \"$(ls -A /nonexistent/snug-home)\" ]; touch /nonexistent/snug-home/x; cat /proc/sys/kernel/hostname; \
            ls /proc | grep -c '^[0-9]'; env | cut -d= -f1 | sort | tr '\\n' ' '";
        let launch = Launch {
            bwrap,
            init_exe: PathBuf::from("/bin/sh"),
            init_libs: vec![],
            seccomp_fd: None,
            init_args: vec!["-c".into(), script.into()],
            masks: vec![],
            disable_userns: false,
            chdir: None,
            bind_fds: vec![],
            identity: Default::default(),
        };
        let argv = command_line(&policy, &launch);
        let out = std::process::Command::new(&argv[0]).args(&argv[1..]).env_clear().output().expect("run");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(work.join("ok").exists() && !tmp.path().join("no").exists());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "snug");
        assert!(lines[1].parse::<u32>().is_ok_and(|n| n <= 3), "pids: {}", lines[1]);
        // bwrap's own line carries no environment (it reaches init in a memfd, SPEC R7).
        assert_eq!(lines[2], "PWD ", "environment");
    }
}
