//! `--report PATH` where another user may have planted something (SPEC O5, X4): a symbolic
//! link is never followed (`O_NOFOLLOW`), and a file in a sticky world-writable directory
//! that neither the caller nor the directory's owner owns is refused, as
//! `fs.protected_regular` would refuse it, whatever the sysctls say (this host has
//! `fs.protected_symlinks` and `fs.protected_regular` at 0).

use crate::common::{code, is_root, run_bounded, snug_cmd, workdir, Who};
use crate::report::{ended_by, LIMIT};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// `snug --report REPORT -- touch ran` as `who` in `dir`: (exit code, stderr).
fn report_to(who: Who, dir: &Path, report: &Path) -> (i32, String) {
    let mut c = snug_cmd(who, dir, &["--report", report.to_str().expect("utf-8"), "--", "touch", "ran"]);
    let out = run_bounded(&mut c, LIMIT);
    (code(out.status), out.err)
}

/// O5, X4: in a sticky world-writable directory (root's, as /tmp), a symlink planted there
/// to a file of the caller's (root: a root-only file) and a file another user owns are
/// refused with 74 before the payload runs, and neither file changes; a symlink in the
/// caller's own directory is refused too. Control: a fresh path in the same directory
/// gets the report. Fails without the fix (tried on main, sysctls at 0): exit 0 for root's
/// `--report` of the planted link, and the root-only file it points at truncated and
/// holding the report (`{"schema":1,…`).
#[test]
fn o5_report_never_follows_a_planted_link_or_file() {
    if !is_root() {
        return;
    }
    for who in [Who::Root, Who::User] {
        let dir = workdir(who);
        let sticky = tempfile::Builder::new().prefix("snug-sticky-").tempdir_in("/tmp").expect("tempdir");
        std::fs::set_permissions(sticky.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        let target = dir.path().join("precious");
        std::fs::write(&target, "precious\n").expect("write");
        if who == Who::User {
            let (uid, gid) = crate::common::test_user();
            std::os::unix::fs::chown(&target, Some(uid), Some(gid)).expect("chown");
        } else {
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        }
        // The planter: the test user against root; `nobody` (neither the user nor the
        // directory's owner) against the user.
        let (planter, planter_ids): (&str, Option<(u32, u32)>) = if who == Who::Root {
            ("user", Some(crate::common::test_user()))
        } else {
            ("nobody", Some((65534, 65534)))
        };
        let link = sticky.path().join("evil.json");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let planted = sticky.path().join("planted.json");
        std::fs::write(&planted, "planted\n").expect("write");
        // Writable by anyone, as a trap would be: only snug's own rule refuses it.
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        if let Some((uid, gid)) = planter_ids {
            std::os::unix::fs::lchown(&link, Some(uid), Some(gid)).expect("lchown");
            std::os::unix::fs::chown(&planted, Some(uid), Some(gid)).expect("chown");
        }
        let (c, err) = report_to(who, dir.path(), &link);
        assert_eq!(c, 74, "{who:?}: a link planted by {planter}: {err}");
        assert!(err.starts_with("snug: cannot write the report to") && err.contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "precious\n", "{who:?}: the target changed");
        let (c, err) = report_to(who, dir.path(), &planted);
        assert_eq!(c, 74, "{who:?}: a file planted by {planter}: {err}");
        assert!(err.contains("sticky directory"), "{err}");
        assert_eq!(std::fs::read_to_string(&planted).expect("read"), "planted\n", "{who:?}");
        assert!(!dir.path().join("ran").exists(), "{who:?}: the payload ran");
        let own_link = dir.path().join("own-link.json");
        std::os::unix::fs::symlink(&target, &own_link).expect("symlink");
        let (c, err) = report_to(who, dir.path(), &own_link);
        assert_eq!(c, 74, "{who:?}: O_NOFOLLOW: {err}");
        let fresh = sticky.path().join(format!("fresh-{who:?}.json"));
        let (c, err) = report_to(who, dir.path(), &fresh);
        assert_eq!((c, err.as_str()), (0, ""), "{who:?}: control");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&fresh).expect("report")).expect("json");
        assert_eq!(ended_by(&v), "payload");
    }
}
