use super::*;
use std::os::unix::fs::{symlink, PermissionsExt};

fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// A temporary directory the caller owns, mode 0755, canonical.
fn base() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = std::fs::canonicalize(t.path()).unwrap();
    (t, p)
}

fn policy(target: &Path, mounts: &[(MountKind, PathBuf)]) -> Policy {
    let mounts = mounts
        .iter()
        .map(|(kind, p)| Mount { kind: *kind, src: Some(p.clone()), dest: p.clone(), profile: "test".into() })
        .collect();
    Policy::bare(target, Path::new("/nonexistent"), mounts)
}

fn error_of(r: anyhow::Result<Vec<Opened>>) -> (i32, String) {
    let e = r.err().expect("refused");
    let code = e.downcast_ref::<crate::error::Failure>().map_or(0, |f| f.code);
    (code, e.to_string())
}

/// The caller's own link in a directory only it may write is followed: the
/// `~/.cargo -> /data/cargo` case.
#[test]
fn p7_walk_follows_the_callers_own_link() {
    let (_t, b) = base();
    std::fs::create_dir_all(b.join("data/cargo/registry")).unwrap();
    symlink(b.join("data/cargo"), b.join(".cargo")).unwrap();
    let w = walk(&b.join(".cargo/registry"), uid()).ok().expect("followed");
    assert_eq!(w.real, b.join("data/cargo/registry"));
    assert_eq!(w.followed.len(), 1);
    assert_eq!(id_of(&w.fd), id_of(rustix::fs::open(&w.real, OFlags::PATH, Mode::empty()).unwrap()));
}

/// `..` and relative targets resolve against the real directory the link lies in.
#[test]
fn p7_walk_resolves_dotdot_in_a_link() {
    let (_t, b) = base();
    std::fs::create_dir_all(b.join("a/b")).unwrap();
    std::fs::create_dir_all(b.join("c")).unwrap();
    symlink("../../c", b.join("a/b/up")).unwrap();
    let w = walk(&b.join("a/b/up"), uid()).ok().expect("followed");
    assert_eq!(w.real, b.join("c"));
}

/// A link in a directory group or others may write is refused, whoever owns it.
#[test]
fn p7_walk_refuses_a_link_where_others_may_write() {
    let (_t, b) = base();
    std::fs::create_dir_all(b.join("shared")).unwrap();
    std::fs::create_dir_all(b.join("secret")).unwrap();
    symlink("../secret", b.join("shared/x")).unwrap();
    std::fs::set_permissions(b.join("shared"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert!(matches!(walk(&b.join("shared/x"), uid()), Err(Walk::Untrusted(..))));
    // Through a directory that is fine itself, the file inside is reached the same way.
    std::fs::set_permissions(b.join("shared"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(walk(&b.join("shared/x"), uid()).is_ok());
}

/// A link inside DIR is refused with 77 naming the grant, the link and its target, however
/// trusted DIR's owner is; so is one inside an rw bind.
#[test]
fn p7_open_refuses_links_inside_dir_and_rw_binds() {
    let (_t, b) = base();
    let dir = b.join("proj");
    std::fs::create_dir_all(dir.join("build")).unwrap();
    std::fs::create_dir_all(b.join(".ssh")).unwrap();
    symlink("../.ssh", dir.join("vendor")).unwrap();
    let p = policy(&dir, &[(MountKind::Rw, dir.clone()), (MountKind::Ro, dir.join("vendor"))]);
    let (code, text) = error_of(open(&p, false));
    assert_eq!(code, POLICY, "{text}");
    assert!(text.contains(&format!("{}", dir.join("vendor").display())) && text.contains("-> ../.ssh"), "{text}");
    assert!(text.contains("inside DIR"), "{text}");

    let cache = b.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    symlink(b.join(".ssh"), cache.join("keys")).unwrap();
    let p = policy(&dir, &[(MountKind::Rw, cache.clone()), (MountKind::Ro, cache.join("keys"))]);
    let (code, text) = error_of(open(&p, false));
    assert_eq!(code, POLICY, "{text}");
    assert!(text.contains("inside the rw bind"), "{text}");
    // Read-only, the same link is the caller's own and is followed.
    let p = policy(&dir, &[(MountKind::Ro, cache.clone()), (MountKind::Ro, cache.join("keys"))]);
    assert_eq!(open(&p, false).expect("followed").len(), 2);
}

/// A path that vanished since the policy was read is 77 naming it; in a dry run one that a
/// toolchain profile would create is no error.
#[test]
fn p7_open_missing_source() {
    let (_t, b) = base();
    let mut p = policy(&b, &[(MountKind::Rw, b.join("gone"))]);
    let (code, text) = error_of(open(&p, false));
    assert_eq!(code, POLICY, "{text}");
    p.create.push(b.join("gone"));
    assert!(open(&p, true).expect("dry run").is_empty());
}

/// Each opened mount gets the next number from the first; the others none.
#[test]
fn p7_numbers_follow_the_opened_order() {
    let (_t, b) = base();
    std::fs::create_dir_all(b.join("a")).unwrap();
    let mut p = policy(&b, &[(MountKind::Ro, b.join("a")), (MountKind::Rw, b.clone())]);
    p.mounts.insert(0, Mount { kind: MountKind::Tmpfs, src: None, dest: "/tmp".into(), profile: "x".into() });
    let opened = open(&p, false).unwrap();
    assert_eq!(numbers(3, &opened, 9), vec![None, Some(9), Some(10)]);
}

/// Init checks the mounts strictly inside DIR whose directory a bind provides (the host's
/// own directory, so its device and inode are snug's), not DIR itself nor one below a tmpfs;
/// what snug recorded matches the host until the path is swapped.
#[test]
fn p7_expected_inside_dir_below_binds_only() {
    let (_t, b) = base();
    let dir = b.join("proj");
    std::fs::create_dir_all(dir.join("build/cache")).unwrap();
    std::fs::create_dir_all(dir.join("node_modules/x")).unwrap();
    let mut p = policy(
        &dir,
        &[
            (MountKind::Rw, dir.clone()),
            (MountKind::Rw, dir.join("build/cache")),
            (MountKind::Ro, dir.join("node_modules/x")),
        ],
    );
    p.mounts.push(Mount { kind: MountKind::Tmpfs, src: None, dest: dir.join("node_modules"), profile: "x".into() });
    let opened = open(&p, false).unwrap();
    let e = expected_inside(&p, &opened);
    assert_eq!(e.iter().map(|e| e.rel.clone()).collect::<Vec<_>>(), [PathBuf::from("build/cache")]);
    assert_eq!(verify::placed(&dir, &e, false), Ok(()));
    std::fs::rename(dir.join("build"), dir.join("build.old")).unwrap();
    std::fs::create_dir_all(dir.join("build/cache")).unwrap();
    assert_eq!(verify::placed(&dir, &e, false), Err(Errno::STALE));
}

/// P7: a tmpfs whose destination lies below a symlink in DIR is refused naming the link,
/// whether the link is the destination itself or a directory above it; a tmpfs below a real
/// directory, or below one not made yet, is bwrap's to mount. Positive control: without
/// the look below DIR, `open` let both through (and the run ended 69 with bwrap's "Can't
/// mount tmpfs").
#[test]
fn p7_tmpfs_below_a_planted_link_refused() {
    let (_t, b) = base();
    let dir = b.join("proj");
    std::fs::create_dir_all(dir.join("real")).unwrap();
    symlink("/etc", dir.join("lnk")).unwrap();
    let tmpfs = |dest: PathBuf| {
        let m = Mount { kind: MountKind::Tmpfs, src: None, dest, profile: "--tmpfs".into() };
        Policy::bare(&dir, Path::new("/nonexistent"), vec![m])
    };
    for dest in [dir.join("lnk"), dir.join("lnk/x")] {
        let (code, text) = error_of(open(&tmpfs(dest.clone()), false));
        assert_eq!(code, POLICY, "{text}");
        let want =
            format!("--tmpfs {}: {} is a symlink (-> /etc) inside DIR", dest.display(), dir.join("lnk").display());
        assert!(text.contains(&want), "{text}");
    }
    assert!(open(&tmpfs(dir.join("real/x")), false).is_ok());
    assert!(open(&tmpfs(dir.join("new/x")), false).is_ok());
}

/// P7: `--rw lnk` with `lnk -> DIR's sibling` planted in DIR is refused naming `lnk`, though
/// the rw bind it would become holds links of its own that another mount meets first.
/// Positive control: checked mount by mount, the refusal named the other mount's link
/// "inside the rw bind".
#[test]
fn p7_a_link_in_dir_is_named_before_links_inside_an_rw_bind() {
    let (_t, b) = base();
    let dir = b.join("proj");
    let sys = b.join("sys");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(sys.join("zone")).unwrap();
    symlink("zone", sys.join("localtime")).unwrap();
    symlink(&sys, dir.join("lnk")).unwrap();
    let p = policy(&dir, &[(MountKind::Ro, sys.join("localtime")), (MountKind::Rw, dir.join("lnk"))]);
    let (code, text) = error_of(open(&p, false));
    assert_eq!(code, POLICY, "{text}");
    assert!(
        text.contains(&format!("{} is a symlink", dir.join("lnk").display())) && text.contains("inside DIR"),
        "{text}"
    );
}
