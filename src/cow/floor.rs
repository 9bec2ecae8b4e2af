//! The run's start as the kernel stamps the changes after it (SPEC W4's conflicts): a host
//! file whose ctime is the start or later changed during the run. The kernel stamps most
//! ctimes with its coarse clock, up to a tick (4 ms at HZ=250) behind the real time, so a
//! change right after the start could carry an earlier ctime than a start read from the real
//! clock. Where the filesystems have multigrain timestamps (Linux 6.13+: ext4, xfs, btrfs,
//! tmpfs; `Documentation/filesystems/multigrain-ts.rst`), a fine-grained ctime snug causes
//! itself becomes the floor of every coarse one the kernel hands out after it
//! (`ktime_get_coarse_real_ts64_mg`): that ctime is the start, taken at once. Elsewhere the
//! start is snug's own, and the overlay waits for the coarse clock to pass it
//! ([`super::mount::start`]), which costs up to a tick of start-up (SPEC B10).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `statfs(2)` magic numbers (`linux/magic.h`) of the filesystems with multigrain
/// timestamps: ext4, xfs, btrfs, tmpfs.
const MULTIGRAIN: [i64; 4] = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994];

/// Whether `dir` (DIR: where the host's changes are stamped) and the state directory, whose
/// filesystem's `statfs(2)` type is `state_fs` (where snug stamps its own), both have
/// multigrain timestamps.
pub fn available(dir: &Path, state_fs: i64) -> bool {
    let multigrain = |t: i64| MULTIGRAIN.contains(&t);
    super::kernel_at_least(6, 13) && multigrain(state_fs) && rustix::fs::statfs(dir).is_ok_and(|s| multigrain(s.f_type))
}

/// Change `path`'s ctime through `change` (a chmod, say) after a `stat(2)` flagged it as
/// queried, so that the kernel stamps it with its fine-grained clock and makes that the
/// floor of later stamps; returns that ctime in ns since the epoch.
///
/// # Errors
/// `change`'s, or the `stat(2)`s'.
pub fn stamp(path: &Path, change: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<u128> {
    std::fs::symlink_metadata(path)?;
    change()?;
    let m = std::fs::symlink_metadata(path)?;
    Ok(m.ctime() as u128 * 1_000_000_000 + m.ctime_nsec() as u128)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// W4: on a filesystem with multigrain timestamps, every file made after the stamp has a
    /// ctime at or after it, so no change after the start can pass for one before it.
    /// Positive control: with the start read from the real clock instead (what the wait for
    /// the coarse clock made safe), all 300 new files carried earlier ctimes.
    #[test]
    fn w4_changes_after_the_stamp_are_stamped_after_it() {
        let t = tempfile::tempdir().unwrap();
        if !available(t.path(), rustix::fs::statfs(t.path()).unwrap().f_type) {
            eprintln!("skipped: no multigrain timestamps here");
            return;
        }
        let own = t.path().join("own");
        std::fs::create_dir(&own).unwrap();
        let mut earlier = 0;
        for i in 0..300 {
            let start = stamp(&own, || {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o700 | ((i % 2) * 0o050)))
            })
            .unwrap();
            let f = t.path().join(format!("f{i}"));
            std::fs::write(&f, "x").unwrap();
            let m = std::fs::symlink_metadata(&f).unwrap();
            if (m.ctime() as u128 * 1_000_000_000 + m.ctime_nsec() as u128) < start {
                earlier += 1;
            }
        }
        assert_eq!(earlier, 0, "files made after the stamp with an earlier ctime");
    }
}
