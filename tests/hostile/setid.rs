//! P11: a payload that is the host's root leaves no set-user-ID or set-group-ID file behind
//! and cannot change the host's device nodes that `--dev` shows in /dev.

use crate::common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// Each way to make a set-id file, one line `NAME=set` when it worked, then two ordinary
/// modes that must keep working.
const MAKE_SET_ID: &str = r#"
cp /usr/bin/id a; chmod 4755 a 2>/dev/null && echo a=set
cp /usr/bin/id b; chgrp 0 b; chmod 2755 b 2>/dev/null && echo b=set
install -m 4755 /usr/bin/id c 2>/dev/null && echo c=set
python3 -c 'import os; os.close(os.open("d", os.O_CREAT | os.O_WRONLY, 0o4755))' 2>/dev/null && echo d=set
python3 -c 'import os, stat; os.mknod("e", stat.S_IFREG | 0o4755)' 2>/dev/null && echo e=set
cp /usr/bin/id f; chmod 755 f && echo f=plain
mkdir g; chmod 1777 g && echo g=sticky
echo done
"#;

/// Every file under `dir` whose mode has S_ISUID or S_ISGID.
fn set_id_files(dir: &Path) -> Vec<String> {
    let mut found = vec![];
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let m = e.path().symlink_metadata().expect("stat");
        if m.mode() & 0o6000 != 0 {
            found.push(format!("{} {:o}", e.file_name().to_string_lossy(), m.mode()));
        }
    }
    found
}

/// P11 as root and as `--user 0`: `chmod 4755`, `chmod 2755` of a group-0 file, `install -m
/// 4755`, `os.open` with `O_CREAT` and mode 0o4755 and `mknod` of a set-id regular file are
/// each refused, and no set-id file is left in DIR for a host user to run as root; `chmod
/// 755` and a sticky directory still work. As the unprivileged user (whose set-id files
/// grant nothing) `chmod u+s` and `chmod g+s` of a directory still work.
/// Positive control (the binary without the set-id rules in its seccomp filter): as root
/// every one printed `=set` (a, b, c, d, e), so DIR held set-id files owned by uid 0.
#[test]
fn p11_root_payload_cannot_leave_a_set_id_file() {
    if !is_root() {
        return eprintln!("skipped: root only (the escape needs the host's root)");
    }
    for args in [&["--"][..], &["--user", "0", "--"][..]] {
        let dir = workdir(Who::Root);
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut argv = args.to_vec();
        argv.extend(["sh", "-c", MAKE_SET_ID]);
        let o = run_bounded(&mut snug_cmd(Who::Root, dir.path(), &argv), LIMIT);
        assert!(o.out.contains("done"), "{args:?}: {}{}", o.out, o.err);
        assert!(!o.out.contains("=set"), "{args:?}: a set-id mode was allowed:\n{}", o.out);
        assert!(o.out.contains("f=plain") && o.out.contains("g=sticky"), "{args:?}: {}{}", o.out, o.err);
        assert_eq!(set_id_files(dir.path()), Vec::<String>::new(), "{args:?}: set-id files on the host");
    }
    let dir = workdir(Who::User);
    let script = "cp /usr/bin/id u && chmod u+s u && echo suid=ok; mkdir s && chmod g+s s && echo sgid=ok";
    let o = run_bounded(&mut snug_cmd(Who::User, dir.path(), &["--", "sh", "-c", script]), LIMIT);
    assert!(o.out.contains("suid=ok") && o.out.contains("sgid=ok"), "user: {}{}", o.out, o.err);
    let (uid, _) = test_user();
    let m = std::fs::metadata(dir.path().join("u")).expect("stat u");
    assert_eq!((m.uid(), m.mode() & 0o4000), (uid, 0o4000), "the user's own set-uid file");
}

/// Mode, uid and gid of the host's /dev/full.
fn full_now() -> (u32, u32, u32) {
    let m = std::fs::metadata("/dev/full").expect("stat /dev/full");
    (m.mode(), m.uid(), m.gid())
}

/// The host's /dev/full as it was; put back on drop if a run changed it.
struct FullGuard((u32, u32, u32));

impl Drop for FullGuard {
    fn drop(&mut self) {
        let (mode, uid, gid) = self.0;
        if full_now() != self.0 {
            let _ = std::os::unix::fs::chown("/dev/full", Some(uid), Some(gid));
            let _ = std::fs::set_permissions("/dev/full", std::fs::Permissions::from_mode(mode & 0o7777));
        }
    }
}

/// P11 as root and as `--user 0`: `chmod 600 /dev/full` and `chown 1001 /dev/full` fail
/// inside and the host's /dev/full keeps its mode and owner; /dev/null, /dev/zero,
/// /dev/urandom and /dev/full still read and write as devices, also for the unprivileged
/// user. Positive control (the binary without the read-only node mounts): as root the
/// host's /dev/full became mode 020600 owned by uid 1001 (the guard put it back).
#[test]
fn p11_root_payload_cannot_change_host_device_nodes() {
    let script = "echo x > /dev/null && echo null=ok; [ \"$(head -c1 /dev/urandom | wc -c)\" = 1 ] && echo urandom=ok; \
        [ \"$(head -c4 /dev/zero | wc -c)\" = 4 ] && echo zero=ok; (echo x > /dev/full) 2>/dev/null || echo full=nospace; \
        chmod 600 /dev/full 2>/dev/null; echo chmod=$?; chown 1001 /dev/full 2>/dev/null; echo chown=$?";
    let runs: Vec<(Who, &[&str])> = if is_root() {
        vec![(Who::Root, &["--"][..]), (Who::Root, &["--user", "0", "--"][..]), (Who::User, &["--"][..])]
    } else {
        vec![(Who::Root, &["--"][..])]
    };
    for (who, args) in runs {
        let guard = FullGuard(full_now());
        let dir = workdir(who);
        let mut argv = args.to_vec();
        argv.extend(["sh", "-c", script]);
        let o = run_bounded(&mut snug_cmd(who, dir.path(), &argv), LIMIT);
        assert_eq!(full_now(), guard.0, "{who:?} {args:?}: host /dev/full changed");
        for ok in ["null=ok", "urandom=ok", "zero=ok", "full=nospace"] {
            assert!(o.out.contains(ok), "{who:?} {args:?}: {ok} missing: {}{}", o.out, o.err);
        }
        for refused in ["chmod=", "chown="] {
            let line = o.out.lines().find(|l| l.starts_with(refused)).unwrap_or_default();
            assert!(!line.is_empty() && line != format!("{refused}0"), "{who:?} {args:?}: {line}: {}", o.out);
        }
    }
}
