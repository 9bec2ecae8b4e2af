//! A run's basics: where the payload starts and with what (R1), the
//! caller's descriptors passed through untouched (R2), snug's own failures (R4), and what
//! the default sandbox grants (P1, in `run_basics/default_view.rs`), each as root and as the
//! unprivileged user.

use crate::common;

mod default_view;

use common::*;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Bound for one run that ends on its own.
pub const LIMIT: Duration = Duration::from_secs(10);

/// `snug ARGS…` as `who` in `dir`, run to the end.
pub fn snug_run(who: Who, dir: &Path, args: &[&str]) -> Out {
    run_bounded(&mut snug_cmd(who, dir, args), LIMIT)
}

/// The run ended with 0.
pub fn ok(who: Who, o: &Out) {
    assert!(o.status.success(), "{who:?}: {:?} {}", o.status, o.err);
}

/// R1: the payload starts in DIR, given or by default the current directory.
#[test]
fn r1_payload_starts_in_dir() {
    for who in everyone() {
        let (dir, elsewhere) = (workdir(who), workdir(who));
        let o = snug_run(who, dir.path(), &["--", "pwd"]);
        ok(who, &o);
        assert_eq!(o.out.trim_end(), dir.path().to_str().unwrap(), "{who:?}");
        let o = snug_run(who, elsewhere.path(), &[dir.path().to_str().unwrap(), "--", "pwd"]);
        ok(who, &o);
        assert_eq!(o.out.trim_end(), dir.path().to_str().unwrap(), "{who:?}: DIR given");
    }
}

/// R1: without CMD snug runs `$SHELL`, else `/bin/sh` (here reading its script from stdin).
#[test]
fn r1_default_command_is_the_shell() {
    for who in everyone() {
        let dir = workdir(who);
        for shell in [Some("/bin/bash"), None] {
            let mut c = snug_cmd(who, dir.path(), &[]);
            match shell {
                Some(s) => c.env("SHELL", s),
                None => c.env_remove("SHELL"),
            };
            c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
            let mut child = c.spawn().expect("spawn snug");
            child.stdin.take().unwrap().write_all(b"echo \"ran $0\"; exit 4\n").unwrap();
            let o = child.wait_with_output().unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            assert_eq!(
                (o.status.code(), out.trim_end()),
                (Some(4), format!("ran {}", shell.unwrap_or("/bin/sh")).as_str()),
                "{who:?}"
            );
        }
    }
}

/// The CPUs a process may run on (`Cpus_allowed_list` of `/proc/PID/status`, `proc(5)`).
fn cpus_allowed(status: &str) -> String {
    let line = status.lines().find(|l| l.starts_with("Cpus_allowed_list:"));
    line.map(|l| l["Cpus_allowed_list:".len()..].trim().to_string()).unwrap_or_default()
}

/// B1, R1: snug keeps nest off its own CPU while both start (`sched_setaffinity(2)` on nest)
/// and gives the affinity back before bwrap has its options: the payload may run on the
/// caller's CPUs, all of them, also when the caller was narrowed (`taskset`). Positive
/// control: without `Apart::restore` the payload ran on the caller's CPUs but snug's
/// ("0-1" → "1" here), and this test failed.
#[test]
fn b1_r1_the_payload_runs_on_the_callers_cpus() {
    let all = cpus_allowed(&std::fs::read_to_string("/proc/self/status").unwrap());
    let first = all.split([',', '-']).next().unwrap().to_string();
    for who in everyone() {
        let dir = workdir(who);
        for narrowed in [None, Some(first.clone())] {
            let mut c = snug_cmd(who, dir.path(), &["--", "cat", "/proc/self/status"]);
            if let Some(cpu) = &narrowed {
                let cpu: usize = cpu.parse().unwrap();
                use std::os::unix::process::CommandExt;
                // SAFETY: between fork and exec the child only fills a local mask and makes
                // one system call, both async-signal-safe.
                unsafe {
                    c.pre_exec(move || {
                        let mut set: libc::cpu_set_t = std::mem::zeroed();
                        libc::CPU_SET(cpu, &mut set);
                        match libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) {
                            0 => Ok(()),
                            _ => Err(std::io::Error::last_os_error()),
                        }
                    });
                }
            }
            let o = run_bounded(&mut c, LIMIT);
            ok(who, &o);
            let want = narrowed.clone().unwrap_or_else(|| all.clone());
            assert_eq!(cpus_allowed(&o.out), want, "{who:?}, caller narrowed to {narrowed:?}");
        }
    }
}

/// 100 MiB from xorshift64*, written in 1 MiB blocks.
fn big_file(path: &Path) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..100 {
        for chunk in block.chunks_exact_mut(8) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            chunk.copy_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
        }
        f.write_all(&block).unwrap();
    }
    f.flush().unwrap();
}

fn sha256(stdin: Stdio) -> String {
    let o = Command::new("sha256sum").stdin(stdin).output().expect("sha256sum");
    String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap_or_default().to_string()
}

/// R2: `snug -- cat <f | sha256sum` equals `sha256sum <f` for a 100 MiB file, and the
/// payload's fds 0, 1 and 2 are the very file and pipes the caller passed (same inodes):
/// nothing copied in between.
#[test]
fn r2_stdio_is_passed_through() {
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("big");
    big_file(&file);
    let want = sha256(Stdio::from(std::fs::File::open(&file).unwrap()));
    for who in everyone() {
        let dir = workdir(who);
        let mut c = snug_cmd(who, dir.path(), &["--", "cat"]);
        let mut child = c.stdin(std::fs::File::open(&file).unwrap()).stdout(Stdio::piped()).spawn().unwrap();
        let got = sha256(Stdio::from(child.stdout.take().unwrap()));
        let st = wait_bounded(&mut child, LIMIT).expect("snug ended");
        assert!(st.success() && got == want, "{who:?}: {st:?} sha256 {got} want {want}");

        let mut c = snug_cmd(
            who,
            dir.path(),
            &["--", "stat", "-L", "-c", "%i", "/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2"],
        );
        let r = start(c.stdin(std::fs::File::open(&file).unwrap()));
        let [out_ino, err_ino] =
            [1, 2].map(|fd| std::fs::metadata(format!("/proc/{}/fd/{fd}", r.pid)).map(|m| m.ino()).unwrap_or(0));
        let o = r.finish(LIMIT);
        ok(who, &o);
        let inodes: Vec<u64> = o.out.lines().filter_map(|l| l.parse().ok()).collect();
        assert_eq!(inodes, [std::fs::metadata(&file).unwrap().ino(), out_ino, err_ino], "{who:?}: payload's fds 0 1 2");
    }
}

/// R4: snug's own failures are one `snug: ` line with their code: 77 for an unknown profile,
/// 64 for a usage error; never a panic.
#[test]
fn r4_own_failures_are_one_line_with_their_code() {
    for who in everyone() {
        let dir = workdir(who);
        for (args, want) in [(&["-p", "nosuch", "--", "true"][..], 77), (&["--no-such-flag"][..], 64)] {
            let o = snug_run(who, dir.path(), args);
            assert_eq!(o.status.code(), Some(want), "{who:?} {args:?}: {}", o.err);
            assert!(o.err.starts_with("snug: ") && o.err.lines().count() == 1, "{who:?} {args:?}: stderr {:?}", o.err);
            assert!(!o.err.contains("panicked") && o.out.is_empty(), "{who:?} {args:?}");
        }
    }
}

/// R4, B1: nest looks bwrap up on the caller's PATH itself, while snug makes the cgroups,
/// and picks what snug's own lookup picks: the first regular file with an execute bit (a
/// file without one and a directory named bwrap are passed over), and that one runs. With
/// none on PATH the run ends 69 with one line naming the package. Positive control: nest
/// taking the first place that exists, executable or not, failed here (exit 69: "cannot
/// run bwrap: Permission denied").
#[test]
fn r4_b1_bwrap_is_the_first_executable_file_on_path() {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let real = std::env::split_paths(&path).map(|d| d.join("bwrap")).find(|p| p.is_file()).expect("bwrap on PATH");
    for who in everyone() {
        let dir = workdir(who);
        let base = dir.path();
        let (a, b, c) = (base.join("a"), base.join("b"), base.join("c"));
        for d in [&a, &b, &c] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(a.join("bwrap"), "#!/bin/sh\nexit 99\n").unwrap();
        std::fs::set_permissions(a.join("bwrap"), std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::create_dir(b.join("bwrap")).unwrap();
        let ran = base.join("wrapper-ran");
        // The comment keeps snug's reading of the file (it knows --disable-userns and
        // --ro-bind-fd) true.
        let wrapper = format!(
            "#!/bin/sh\n# passes --disable-userns and --ro-bind-fd on\n: > '{}'\nexec '{}' \"$@\"\n",
            ran.display(),
            real.display()
        );
        std::fs::write(c.join("bwrap"), wrapper).unwrap();
        std::fs::set_permissions(c.join("bwrap"), std::fs::Permissions::from_mode(0o755)).unwrap();
        if who == Who::User {
            let (uid, gid) = test_user();
            for p in [&a, &b, &c, &a.join("bwrap"), &b.join("bwrap"), &c.join("bwrap")] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
            }
        }
        // PATH set by env(1) between setpriv and snug: the test's own lookups keep the caller's.
        let with_path_args = |dirs: &[&Path], args: &[&str]| {
            let path = std::env::join_paths(dirs).unwrap().to_string_lossy().into_owned();
            let mut argv = as_who(who);
            argv.extend(["/usr/bin/env".into(), format!("PATH={path}")]);
            argv.push(snug_for(who).to_string_lossy().into_owned());
            argv.extend(args.iter().map(|a| a.to_string()));
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..]).current_dir(base).stdin(Stdio::null());
            if who == Who::User {
                cmd.env("HOME", format!("/home/{TEST_USER}")).env("USER", TEST_USER).env("LOGNAME", TEST_USER);
            }
            cmd
        };
        let with_path = |dirs: &[&Path]| with_path_args(dirs, &["--", "true"]);
        let (usr, bin) = (Path::new("/usr/bin"), Path::new("/bin"));
        // A directory the user cannot search, first, holding an executable bwrap: neither
        // snug nor nest looks inside (nest looks before its user namespace maps the user's
        // ids, which would let it). Positive control: nest looking after the id maps chose the
        // locked one here (69: "cannot open …/locked/bwrap: Permission denied").
        let locked = base.join("locked");
        std::fs::create_dir(&locked).unwrap();
        let locked_ran = base.join("locked-ran");
        std::fs::write(locked.join("bwrap"), format!("#!/bin/sh\n: > '{}'\n", locked_ran.display())).unwrap();
        std::fs::set_permissions(locked.join("bwrap"), std::fs::Permissions::from_mode(0o755)).unwrap();
        if who == Who::User {
            // The user's own: nest's capabilities cover its files once their ids are mapped.
            let (uid, gid) = test_user();
            for p in [&locked.join("bwrap"), &locked] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
            }
        }
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let first: Vec<&Path> =
            if who == Who::User { vec![&locked, &a, &b, &c, usr, bin] } else { vec![&a, &b, &c, usr, bin] };
        let o = run_bounded(&mut with_path(&first), LIMIT);
        ok(who, &o);
        assert!(ran.exists(), "{who:?}: the wrapper, the first executable bwrap on PATH, did not run");
        assert!(!locked_ran.exists(), "{who:?}: the bwrap in a directory the caller cannot search ran");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        // With none on PATH: 69 and the package, before any error of the policy.
        let none = [&*a, &*b, &base.join("none")];
        for args in [&["--", "true"][..], &["-p", "nosuch", "--", "true"]] {
            let o = run_bounded(&mut with_path_args(&none, args), LIMIT);
            assert_eq!(o.status.code(), Some(69), "{who:?} {args:?}: {}", o.err);
            assert_eq!(o.err, "snug: bwrap not found on PATH: install the Debian package bubblewrap\n", "{who:?}");
        }
        // A bwrap that cannot be exec'd is named by its path.
        let d = base.join("d");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("bwrap"), "#!/nonexistent/interpreter\n").unwrap();
        std::fs::set_permissions(d.join("bwrap"), std::fs::Permissions::from_mode(0o755)).unwrap();
        if who == Who::User {
            let (uid, gid) = test_user();
            std::os::unix::fs::chown(&d, Some(uid), Some(gid)).unwrap();
        }
        let o = run_bounded(&mut with_path(&[&d, usr, bin]), LIMIT);
        assert_eq!(o.status.code(), Some(69), "{who:?}: {}", o.err);
        let want = format!("snug: cannot run {}: No such file or directory", d.join("bwrap").display());
        assert!(o.err.starts_with(&want) && o.err.lines().count() == 1, "{who:?}: {}", o.err);
    }
}
