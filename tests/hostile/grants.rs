//! P7: no grant follows a symlink a payload, a repository or another user could have
//! planted; P9: DIR is never the home directory. Each scene has a HOME of its own in a
//! temporary directory (owned by the user under test), holding a secret `.ssh/id_rsa` and a
//! `.bashrc` the host would run later, and the project `proj` inside it as DIR. Every refusal
//! is checked to have read and written nothing: the secret never reaches the payload's
//! output and `.bashrc` stays byte-identical.
//!
//! Positive controls: each test was run once against the build without P7 and P9 (the same
//! tests, `SNUG_UNDER_TEST` pointing at it); what it saw is in each test's comment.

use crate::common::*;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);
const SECRET: &str = "SECRET-KEY-P7\n";
const BASHRC: &str = "# the host's own rc\nalias ll='ls -l'\n";

/// A HOME with a secret and an rc file, and DIR `proj` inside it, all owned by `who`.
struct Scene {
    who: Who,
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
}

impl Scene {
    fn new(who: Who) -> Scene {
        let tmp = workdir(who);
        let home = std::fs::canonicalize(tmp.path()).unwrap();
        let proj = home.join("proj");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(&proj).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), SECRET).unwrap();
        std::fs::write(home.join(".ssh/marker"), SECRET).unwrap();
        std::fs::write(home.join(".bashrc"), BASHRC).unwrap();
        let s = Scene { who, _tmp: tmp, home, proj };
        s.give();
        s
    }

    /// Hand everything to the user under test.
    fn give(&self) {
        if self.who == Who::User {
            let (uid, gid) = test_user();
            let _ = Command::new("chown").arg("-hR").arg(format!("{uid}:{gid}")).arg(&self.home).status();
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        let h = self.home.to_string_lossy().into_owned();
        vec![
            ("HOME".into(), h.clone()),
            ("XDG_STATE_HOME".into(), format!("{h}/.local/state")),
            ("XDG_CONFIG_HOME".into(), format!("{h}/.config")),
        ]
    }

    /// `snug ARGS…` as the user under test, in DIR, with this HOME.
    fn run(&self, args: &[&str]) -> Out {
        let mut c = snug_cmd(self.who, &self.proj, args);
        c.envs(self.env());
        run_bounded(&mut c, LIMIT)
    }

    fn allow(&self) {
        let o = self.run(&["allow", &self.proj.to_string_lossy()]);
        assert_eq!(o.status.code(), Some(0), "{:?}: allow: {}", self.who, o.err);
    }

    /// Nothing of the home was read or written.
    fn untouched(&self, o: &Out) {
        assert!(!o.out.contains("SECRET") && !o.err.contains("SECRET"), "{:?}: the secret leaked: {}", self.who, o.out);
        let rc = std::fs::read(self.home.join(".bashrc")).unwrap();
        assert_eq!(rc, BASHRC.as_bytes(), "{:?}: the host's .bashrc changed", self.who);
        let listed: Vec<_> = std::fs::read_dir(&self.home).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(!listed.iter().any(|n| n.to_string_lossy().contains("pwned")), "{:?}: {listed:?}", self.who);
    }
}

/// A 77 naming the grant's path and the link's target, with nothing run.
fn refused(s: &Scene, o: &Out, path: &Path, target: &str) {
    assert_eq!(o.status.code(), Some(77), "{:?}: {} {}", s.who, o.err, o.out);
    let want = format!("{}: {} is a symlink (-> {target})", path.display(), path.display());
    assert!(o.err.starts_with("snug: ") && o.err.contains(&want), "{:?}: {}", s.who, o.err);
    assert_eq!(o.err.lines().count(), 1, "{:?}: {}", s.who, o.err);
    assert!(o.out.is_empty(), "{:?}: the payload ran: {}", s.who, o.out);
    s.untouched(o);
}

const ATTACK: &str = "cat vendor/id_rsa; echo pwned >> cache/.bashrc; echo pwned > cache/pwned; true";

/// P7 (a): an allowed `.snug.toml` granting `ro {target}/vendor` and `rw {target}/cache`
/// whose directories the repository later replaces with symlinks (`vendor -> ../.ssh`,
/// `cache -> ..`; the file, so its hash, is unchanged): refused with 77 naming each, nothing
/// read or written. Control: the same grants as real directories run. Without the fix the
/// payload printed the secret and appended to the host's `.bashrc` (exit 0), and the O8
/// summary listed the real `~/.ssh` and `~/.bashrc` as discarded.
#[test]
fn p7_project_grants_refuse_planted_symlinks() {
    for who in everyone() {
        let s = Scene::new(who);
        std::fs::write(s.proj.join(".snug.toml"), "ro = [\"{target}/vendor\"]\nrw = [\"{target}/cache\"]\n").unwrap();
        std::fs::create_dir_all(s.proj.join("vendor")).unwrap();
        std::fs::create_dir_all(s.proj.join("cache")).unwrap();
        s.give();
        s.allow();
        let o = s.run(&["--", "sh", "-c", "ls -d vendor cache"]);
        assert_eq!((o.status.code(), o.out.as_str()), (Some(0), "cache\nvendor\n"), "{who:?} control: {}", o.err);

        std::fs::remove_dir(s.proj.join("vendor")).unwrap();
        std::fs::remove_dir(s.proj.join("cache")).unwrap();
        symlink("../.ssh", s.proj.join("vendor")).unwrap();
        symlink("..", s.proj.join("cache")).unwrap();
        s.give();
        let o = s.run(&["--", "sh", "-c", ATTACK]);
        // Mounts go in path order: cache is met first.
        refused(&s, &o, &s.proj.join("cache"), "..");
        assert!(o.err.contains("inside DIR"), "{who:?}: {}", o.err);
        std::fs::remove_file(s.proj.join("cache")).unwrap();
        std::fs::create_dir(s.proj.join("cache")).unwrap();
        s.give();
        let o = s.run(&["--", "sh", "-c", ATTACK]);
        refused(&s, &o, &s.proj.join("vendor"), "../.ssh");
        // --dry-run refuses the same, and says so before anything runs.
        let o = s.run(&["--dry-run", "--", "true"]);
        assert_eq!(o.status.code(), Some(77), "{who:?}: {}", o.err);
    }
}

/// The `build/cache` scene: an allowed rw grant of `{target}/build/cache` (in `how`), a first
/// run (without the grant) whose payload moves `build` away and plants `build/cache -> ../..`
/// (the home), and a next run with the grant that must be refused with the home's files
/// unchanged.
fn planted_by_a_payload(who: Who, how: &dyn Fn(&Scene) -> Vec<String>) {
    let s = Scene::new(who);
    std::fs::create_dir_all(s.proj.join("build/cache")).unwrap();
    s.give();
    let grant = how(&s);
    let with = |script: &str| {
        let mut a: Vec<String> = grant.clone();
        a.extend(["--", "sh", "-c", script].map(String::from));
        a
    };
    // Planted by a run without the grant (with it, P8 pins `build` as a mount point and the
    // rename fails): DIR is writable in every run.
    let plant = "mv build build.old && mkdir build && ln -s ../.. build/cache && echo planted";
    let o = s.run(&["--no-project", "--", "sh", "-c", plant]);
    assert_eq!((o.status.code(), o.out.as_str()), (Some(0), "planted\n"), "{who:?}: first run: {}", o.err);
    let args = with("cat build/cache/.ssh/id_rsa; echo pwned >> build/cache/.bashrc; true");
    let o = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    refused(&s, &o, &s.proj.join("build/cache"), "../..");
}

/// P7 (b): `.snug.toml` with `rw = ["{target}/build/cache"]`, allowed; the first run's
/// payload plants `build/cache -> ../..`; the next run is refused (77) and the host's
/// `.bashrc` is byte-identical. Without the fix the second run appended to it (exit 0).
#[test]
fn p7_project_rw_grant_replanted_by_a_payload() {
    for who in everyone() {
        planted_by_a_payload(who, &|s| {
            std::fs::write(s.proj.join(".snug.toml"), "rw = [\"{target}/build/cache\"]\n").unwrap();
            s.give();
            s.allow();
            vec![]
        });
    }
}

/// P7 (c): the same with `--rw ./build/cache` on the command line, and with the grant in a
/// user profile (`-p dev`). Without the fix both second runs appended to `.bashrc` (exit 0).
#[test]
fn p7_command_line_and_user_profile_grants_replanted_by_a_payload() {
    for who in everyone() {
        planted_by_a_payload(who, &|_| ["--rw", "./build/cache"].map(String::from).to_vec());
        planted_by_a_payload(who, &|s| {
            let d = s.home.join(".config/snug/profiles.d");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("dev.toml"), "rw = [\"{target}/build/cache\"]\n").unwrap();
            s.give();
            ["-p", "dev"].map(String::from).to_vec()
        });
    }
}

/// P7: a path swapped between snug's walk and bwrap's mount. A thread exchanges `vendor` (a
/// directory holding `marker` = REAL) and `vendor.alt` (a symlink to `..`, the home, whose
/// `marker` is the secret) with `renameat2(RENAME_EXCHANGE)` as fast as it can, while 200 to
/// 1000 runs grant `--ro ./vendor` and print every `marker` they can see (both names, and the
/// home's). Each run either binds the real directory (exit 0, REAL seen under one of the
/// names) or is refused with 77; the secret is never shown. Without the fix the first run
/// that met the symlink printed the secret (bwrap bound the real home over the sandbox's).
#[test]
fn p7_swap_during_start_never_binds_the_target() {
    for who in everyone() {
        let s = Scene::new(who);
        std::fs::create_dir(s.proj.join("vendor")).unwrap();
        std::fs::write(s.proj.join("vendor/marker"), "REAL\n").unwrap();
        symlink("..", s.proj.join("vendor.alt")).unwrap();
        std::fs::write(s.home.join("marker"), SECRET).unwrap();
        s.give();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (a, b) = (cstr(&s.proj.join("vendor")), cstr(&s.proj.join("vendor.alt")));
        let flips = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // SAFETY: two NUL-terminated paths; renameat2 touches nothing else.
                    let r = unsafe {
                        libc::syscall(
                            libc::SYS_renameat2,
                            libc::AT_FDCWD,
                            a.as_ptr(),
                            libc::AT_FDCWD,
                            b.as_ptr(),
                            libc::RENAME_EXCHANGE,
                        )
                    };
                    if r != 0 {
                        break; // the scene is gone: the test failed already
                    }
                    n += 1;
                    std::thread::yield_now();
                }
                n
            })
        };
        // 200 runs, and on until both outcomes were seen (at most 1000): a run binds only
        // when the path is the directory at each of snug's, bwrap's and init's looks, about 1
        // run in 100 at this rate of swaps, so 200 alone missed every time in some runs.
        let (mut bound, mut refused) = (0, 0);
        for k in 0..1000 {
            if k >= 200 && bound > 0 && refused > 0 {
                break;
            }
            // Read until something is seen: a swap between two reads could hide the mount.
            let look = "for i in $(seq 100); do o=$(cat vendor/marker vendor.alt/marker ~/marker 2>/dev/null); \
                        [ -n \"$o\" ] && { echo \"$o\"; break; }; done; true";
            let o = s.run(&["--ro", "./vendor", "--", "sh", "-c", look]);
            assert!(!o.out.contains("SECRET"), "{who:?}: the target was bound: {}", o.out);
            match o.status.code() {
                Some(0) if o.out.contains("REAL") => bound += 1,
                Some(77) => refused += 1,
                c => panic!("{who:?}: neither bound nor refused: {c:?} {} {}", o.out, o.err),
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let n = flips.join().expect("flipper");
        eprintln!("{who:?}: {bound} runs bound the directory, {refused} refused, {n} swaps");
        assert!(
            bound > 0 && refused > 0,
            "{who:?}: the swaps did not meet the runs ({bound} bound, {refused} refused)"
        );
        s.untouched(&Out { status: std::process::ExitStatus::default(), out: String::new(), err: String::new() });
    }
}

fn cstr(p: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// P7: a payload with `@rust` plants a symlink inside its writable cache
/// (`~/.cargo/registry/keys -> ../..`, the home); a later run granting `--rw` of it is
/// refused (77, "inside the rw bind") with the home unchanged. Without the fix the second run
/// got the real home writable over the sandbox's: it printed the secret and appended to
/// `.bashrc` (exit 0).
#[test]
fn p7_link_planted_in_a_toolchain_cache_is_refused() {
    for who in everyone() {
        let s = Scene::new(who);
        std::fs::create_dir_all(s.home.join(".cargo/registry")).unwrap();
        s.give();
        let o = s.run(&["-p", "@rust", "--", "sh", "-c", "ln -s ../.. ~/.cargo/registry/keys && echo planted"]);
        assert_eq!((o.status.code(), o.out.as_str()), (Some(0), "planted\n"), "{who:?}: {}", o.err);
        let keys = s.home.join(".cargo/registry/keys");
        let k = keys.to_string_lossy().into_owned();
        let attack = "cat ~/.ssh/id_rsa; echo pwned >> ~/.bashrc; true";
        let o = s.run(&["-p", "@rust", "--rw", &k, "--", "sh", "-c", attack]);
        refused(&s, &o, &keys, "../..");
        assert!(o.err.contains("inside the rw bind"), "{who:?}: {}", o.err);
    }
}

/// P7: the user's own link (`~/.cargo -> data/cargo`, in the user's home that no one else may
/// write) is followed as before: `@rust` shows the tools and its cache writes land in the
/// link's target. Control for the refusals above: only links a sandbox could plant are refused.
#[test]
fn p7_the_users_own_link_still_works() {
    for who in everyone() {
        let s = Scene::new(who);
        std::fs::create_dir_all(s.home.join("data/cargo/registry")).unwrap();
        std::fs::create_dir_all(s.home.join("data/cargo/bin")).unwrap();
        std::fs::write(s.home.join("data/cargo/bin/cargo"), "#!/bin/sh\necho linked-cargo\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(s.home.join("data/cargo/bin/cargo"), std::fs::Permissions::from_mode(0o755)).unwrap();
        symlink(s.home.join("data/cargo"), s.home.join(".cargo")).unwrap();
        s.give();
        let o = s.run(&["-p", "@rust", "--", "sh", "-c", "cargo && touch ~/.cargo/registry/w && echo ok"]);
        assert_eq!((o.status.code(), o.out.as_str()), (Some(0), "linked-cargo\nok\n"), "{who:?}: {}", o.err);
        assert!(s.home.join("data/cargo/registry/w").exists(), "{who:?}: the cache write missed the link's target");
    }
}

/// P9: DIR may not be the home directory, an ancestor of it, or /: 64, one line saying to
/// choose a project directory, nothing run, the home unchanged. A DIR below the home runs
/// (control). Without the fix the run in the home exited 0 and wrote `.bashrc`.
#[test]
fn p9_dir_may_not_be_home() {
    for who in everyone() {
        let s = Scene::new(who);
        let h = s.home.to_string_lossy().into_owned();
        let parent = s.home.parent().unwrap().to_string_lossy().into_owned();
        for dir in [h.as_str(), parent.as_str(), "/"] {
            let o = s.run(&[dir, "--", "sh", "-c", "echo pwned >> .bashrc"]);
            assert_eq!(o.status.code(), Some(64), "{who:?} {dir}: {} {}", o.err, o.out);
            assert!(o.err.starts_with("snug: DIR ") && o.err.contains("choose a project directory"), "{}", o.err);
            assert_eq!(o.err.lines().count(), 1, "{}", o.err);
            s.untouched(&o);
        }
        let mut c = snug_cmd(who, &s.home, &["--", "sh", "-c", "echo pwned >> .bashrc"]);
        c.envs(s.env());
        let o = run_bounded(&mut c, LIMIT);
        assert_eq!(o.status.code(), Some(64), "{who:?}: cwd = HOME: {}", o.err);
        s.untouched(&o);
        let o = s.run(&["--", "true"]);
        assert_eq!(o.status.code(), Some(0), "{who:?} control: {}", o.err);
    }
}

/// A directory in `s`'s HOME holding a `bwrap` that runs the real one; snug reads the
/// options a bwrap knows from its file, so the script's comment (`names`) is what it knows.
fn wrapper_bwrap(s: &Scene, dir: &str, names: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let real = std::env::split_paths(&path).map(|d| d.join("bwrap")).find(|p| p.is_file()).expect("bwrap on PATH");
    let d = s.home.join(dir);
    std::fs::create_dir(&d).unwrap();
    let script = format!("#!/bin/sh\n# passes {names} on\nexec '{}' \"$@\"\n", real.display());
    std::fs::write(d.join("bwrap"), script).unwrap();
    std::fs::set_permissions(d.join("bwrap"), std::fs::Permissions::from_mode(0o755)).unwrap();
    s.give();
    d
}

/// snug with `args` in `s`'s DIR, with `d` first on PATH.
fn with_path(s: &Scene, d: &Path, args: &[&str]) -> Out {
    let mut argv = as_who(s.who);
    argv.extend(["/usr/bin/env".into(), format!("PATH={}:/usr/bin:/bin", d.display())]);
    argv.push(snug_for(s.who).to_string_lossy().into_owned());
    argv.extend(args.iter().map(|a| a.to_string()));
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]).current_dir(&s.proj).stdin(std::process::Stdio::null()).envs(s.env());
    run_bounded(&mut c, LIMIT)
}

/// X2, P7: a bwrap that binds descriptors but cannot turn nested user namespaces off (a
/// wrapper script that names only `--ro-bind-fd`): a run that needs `--disable-userns` (the
/// unprivileged caller's; root turns them off in nest) is 69 naming what to install, never a
/// payload that can make user namespaces. Control: root's run with the same wrapper starts.
/// Before snug read bwrap's file after handing nest its descriptors, the user's run only
/// warned and exited 0.
#[test]
fn x2_bwrap_without_disable_userns_is_69() {
    for who in everyone() {
        let s = Scene::new(who);
        let o = with_path(&s, &wrapper_bwrap(&s, "bind-fd-only", "--ro-bind-fd"), &["--", "true"]);
        if who == Who::User {
            assert_eq!(o.status.code(), Some(69), "{who:?}: {}", o.err);
            assert!(o.err.starts_with("snug: ") && o.err.contains("--disable-userns"), "{who:?}: {}", o.err);
            assert_eq!(o.err.lines().count(), 1, "{who:?}: {}", o.err);
        } else {
            assert_eq!(o.status.code(), Some(0), "{who:?} control: {}", o.err);
        }
    }
}

/// P7: a bwrap without `--bind-fd` (a wrapper script that names only `--disable-userns`):
/// every run and `snug doctor` say 69, naming the Debian security update. Control: the same
/// wrapper's run with the option named in it starts. Without the fix the run exited 0.
#[test]
fn p7_bwrap_without_bind_fd_is_69() {
    for who in everyone() {
        let s = Scene::new(who);
        let old = wrapper_bwrap(&s, "old", "--disable-userns");
        let new = wrapper_bwrap(&s, "new", "--disable-userns --ro-bind-fd");
        let o = with_path(&s, &old, &["--", "true"]);
        assert_eq!(o.status.code(), Some(69), "{who:?}: {}", o.err);
        assert!(o.err.starts_with("snug: ") && o.err.contains("0.8.0-2+deb12u1"), "{who:?}: {}", o.err);
        let o = with_path(&s, &old, &["doctor"]);
        assert_eq!(o.status.code(), Some(69), "{who:?}: {}", o.out);
        assert!(o.out.contains("bind descriptors") && o.out.contains("0.8.0-2+deb12u1"), "{who:?}: {}", o.out);
        let o = with_path(&s, &new, &["--", "true"]);
        assert_eq!(o.status.code(), Some(0), "{who:?} control: {}", o.err);
    }
}
