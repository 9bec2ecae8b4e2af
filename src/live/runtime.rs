//! snug's runtime directory, where control sockets and lock files live, against the
//! sandboxes and other users (SPEC X4, L5): prepared before bwrap's command line is built,
//! hidden in every sandbox whatever the profiles bind, and never a reason to stop a run.

use crate::error::{failure, POLICY};
use crate::policy::{MountKind, Policy};
use std::path::{Path, PathBuf};

/// This user's runtime directory for this run: created 0700 when missing and checked
/// ([`super::ensure_own_dir`]). One that another user planted, or that cannot be made, does
/// not stop the run (SPEC L5): one `snug: ` line says so and the run goes on without a
/// control socket (`ps`, `stop`, `signal`, `exec` cannot reach it). `--dry-run` creates
/// nothing: it gets the path whatever is there.
pub fn prepare(dry_run: bool) -> Option<PathBuf> {
    if dry_run {
        return Some(super::own_dir());
    }
    match super::ensure_own_dir() {
        Ok(dir) => Some(dir),
        Err(e) => {
            let why = crate::error::one_line(&e);
            crate::log::say!(
                "snug: {why}; this run has no control socket (snug ps, stop, signal and exec cannot reach it): \
                 remove it or set XDG_RUNTIME_DIR"
            );
            None
        }
    }
}

/// `dir` with its parent resolved (`realpath(3)`) but not `dir` itself: the path bwrap's
/// binds show it at. `dir` must be a real directory (no symlink) owned by `uid` that nobody
/// else may write to, else `None`: a planted one holds nothing of snug's (and resolving a
/// planted symlink would hide whatever it points at).
fn resolved_private(dir: &Path, uid: u32) -> Option<PathBuf> {
    if !super::private_dir(dir, uid) {
        return None;
    }
    let parent = std::fs::canonicalize(dir.parent()?).ok()?;
    Some(parent.join(dir.file_name()?))
}

/// The runtime directories no sandbox of this run may see: this user's own (`runtime`,
/// from [`prepare`]); for root, every user's that `ps` scans too, where `near` says a bind
/// could show them ([`super::dirs_to_scan_near`], [`near`]).
pub fn hidden(runtime: Option<&Path>, near: &dyn Fn(&Path, &str) -> bool) -> Vec<PathBuf> {
    let me = rustix::process::geteuid().as_raw();
    let mut out: Vec<PathBuf> = runtime.and_then(|d| resolved_private(d, me)).into_iter().collect();
    if me == 0 {
        for (dir, uid) in super::dirs_to_scan_near(near) {
            out.extend(uid.and_then(|u| resolved_private(&dir, u)));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Each ro and rw bind's source of `policy`, resolved (`realpath(3)`), with its mount's index.
pub fn sources(policy: &Policy) -> Vec<(usize, PathBuf)> {
    let binds = policy.mounts.iter().enumerate().filter(|(_, m)| matches!(m.kind, MountKind::Ro | MountKind::Rw));
    binds.filter_map(|(i, m)| Some((i, std::fs::canonicalize(m.src.as_deref()?).ok()?))).collect()
}

/// Whether a bind of `sources` could show an entry `prefix…` of `dir`, or lie inside one:
/// the `near` of [`hidden`].
pub fn near(sources: &[(usize, PathBuf)], dir: &Path, prefix: &str) -> bool {
    sources.iter().any(|(_, s)| {
        dir.starts_with(s)
            || s.strip_prefix(dir)
                .ok()
                .and_then(|rest| rest.components().next())
                .is_some_and(|first| first.as_os_str().to_str().is_none_or(|name| name.starts_with(prefix)))
    })
}

/// Where, inside the sandbox, a `hidden` directory would show through one of the policy's
/// binds: the paths to mount an empty tmpfs over, after every policy mount (a bind of `/`,
/// `/tmp` with `@tmp-shared`, DIR under `/tmp`, `--ro /run`…), shallowest first, none
/// under another. A bind's source is resolved, so a symlink to a parent is seen through.
///
/// # Errors
/// 77 when a bind's source is inside a hidden directory (a socket or lock file bound on its
/// own, wherever it goes): it cannot be masked and is refused (SPEC X4).
pub fn masks(policy: &Policy, sources: &[(usize, PathBuf)], hidden: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    for (i, src) in sources {
        let (m, src) = (&policy.mounts[*i], src.clone());
        for h in hidden {
            if src.starts_with(h) {
                if src == *h {
                    out.push(m.dest.clone());
                    continue;
                }
                let what = m.src.as_deref().unwrap_or(&src).display().to_string();
                return Err(failure(
                    POLICY,
                    format!(
                        "{what}: inside {}, snug's runtime directory or state directory, which no sandbox may see",
                        h.display()
                    ),
                ));
            }
            let Ok(rest) = h.strip_prefix(&src) else { continue };
            let at = m.dest.join(rest);
            // Only where this bind is what the sandbox shows at that path (a deeper mount,
            // the default private /tmp say, already hides it).
            if crate::bwrap::provider(policy, &at).is_some_and(|(p, _)| p.dest == m.dest) {
                out.push(at);
            }
        }
    }
    out.sort_by_key(|p| p.components().count());
    let mut kept: Vec<PathBuf> = Vec::new();
    for p in out {
        if !kept.iter().any(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Mount;

    fn bind(src: &str, dest: &str) -> Mount {
        Mount { kind: MountKind::Ro, src: Some(src.into()), dest: dest.into(), profile: "t".into() }
    }

    /// X4: a bind of a parent of the runtime directory gets a mask at the directory's place
    /// inside; one under the default private /tmp gets none; a bind of a file inside it is
    /// refused. Fails without the fix: there were no masks (every list empty, the bind of the
    /// socket file accepted).
    #[test]
    fn x4_masks_follow_the_binds() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let h = base.join("snug-9");
        std::fs::create_dir(&h).unwrap();
        std::fs::write(h.join("x.sock"), "").unwrap();
        let plain = crate::bwrap::golden::policy(&crate::bwrap::golden::request(&[], false));
        let mut policy = plain.clone();
        policy.mounts = vec![bind("/", "/")];
        assert_eq!(masks(&policy, &sources(&policy), std::slice::from_ref(&h)).unwrap(), vec![h.clone()]);
        policy.mounts.push(bind(base.to_str().unwrap(), "/elsewhere"));
        let got = masks(&policy, &sources(&policy), std::slice::from_ref(&h)).unwrap();
        assert!(got.contains(&PathBuf::from("/elsewhere/snug-9")), "{got:?}");
        let mut file = policy.clone();
        file.mounts.push(bind(h.join("x.sock").to_str().unwrap(), "/x.sock"));
        assert!(masks(&file, &sources(&file), std::slice::from_ref(&h)).is_err());
        assert!(masks(&plain, &sources(&plain), &[PathBuf::from("/tmp/snug-9")]).unwrap().is_empty());
    }

    /// X4, B1: the directories holding other users' runtime directories are read only when a
    /// bind could show one of their entries (a bind of it or above) or lies inside one named
    /// as theirs are. Positive control: with `near` always false, the root run of
    /// `x4_root_hides_another_users_runtime_directory_under_a_bind_of_tmp` (tests/live) listed
    /// the user's socket under `--ro /tmp`.
    #[test]
    fn x4_b1_near_reads_only_where_a_bind_could_show() {
        let at = |v: &[&str]| v.iter().enumerate().map(|(i, s)| (i, PathBuf::from(s))).collect::<Vec<_>>();
        let tmp = Path::new("/tmp");
        assert!(near(&at(&["/usr", "/"]), tmp, "snug-"));
        assert!(near(&at(&["/tmp"]), tmp, "snug-"));
        assert!(near(&at(&["/tmp/snug-1001/x"]), tmp, "snug-"));
        assert!(!near(&at(&["/usr", "/var/tmp/proj", "/tmp/proj"]), tmp, "snug-"));
        assert!(near(&at(&["/run/user/1000/x"]), Path::new("/run/user"), ""));
        assert!(!near(&at(&["/run/lock"]), Path::new("/run/user"), ""));
    }
}
