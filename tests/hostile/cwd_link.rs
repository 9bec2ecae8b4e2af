//! P7, P10: the current directory as the caller sees it. A payload plants `sub -> TARGET` in
//! its project; the caller later `cd`s into `sub` (the prompt shows the project) and runs
//! snug there. The physical current directory is TARGET, outside the project, so without a
//! check it became the next run's writable DIR.

use crate::common::*;
use std::time::Duration;

/// A run in a project (`.git`) plants `sub -> OUTSIDE`; `cd sub` (the shell's `$PWD` names the
/// link) then `snug -- touch PWNED` is refused with 77 and a line naming the link, and
/// OUTSIDE stays empty. Control: the same from OUTSIDE itself (`cd -P`: `$PWD` is the real
/// path) runs. Positive control: against the build before, the run from `sub` exited 0 and wrote OUTSIDE/PWNED.
#[test]
fn p7_p10_a_link_planted_in_the_project_never_becomes_dir() {
    for who in everyone() {
        let base = workdir(who);
        let (proj, outside) = (base.path().join("proj"), base.path().join("outside"));
        for d in [&proj, &outside] {
            let o = run_bounded(
                cmd_as(who, base.path(), "mkdir", &[&d.to_string_lossy()]).stdin(std::process::Stdio::null()),
                Duration::from_secs(5),
            );
            assert!(o.status.success(), "{who:?}: mkdir: {}", o.err);
        }
        let o = run_bounded(&mut cmd_as(who, &proj, "git", &["init", "-q", "."]), Duration::from_secs(10));
        assert!(o.status.success(), "{who:?}: git init: {}", o.err);
        let plant = format!("ln -s {} sub", outside.display());
        let o = run_bounded(&mut snug_cmd(who, &proj, &["--", "sh", "-c", &plant]), Duration::from_secs(30));
        assert!(o.status.success(), "{who:?}: plant: {}", o.err);
        let sub = proj.join("sub");
        let o = run_bounded(snug_cmd(who, &sub, &["--", "touch", "PWNED"]).env("PWD", &sub), Duration::from_secs(30));
        assert_eq!(o.status.code(), Some(77), "{who:?}: {}", o.err);
        assert!(o.err.starts_with("snug: the current directory is reached through the symlink"), "{who:?}: {}", o.err);
        assert!(o.err.contains("/proj/sub") && o.err.lines().count() == 1, "{who:?}: {}", o.err);
        assert!(!outside.join("PWNED").exists(), "{who:?}: the planted link's target was written");

        let o =
            run_bounded(snug_cmd(who, &outside, &["--", "touch", "OK"]).env("PWD", &outside), Duration::from_secs(30));
        assert!(o.status.success() && outside.join("OK").exists(), "{who:?}: control (cd -P): {}", o.err);
    }
}
