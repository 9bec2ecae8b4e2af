//! W3, W4: what a run renamed or removed stays what the run left, whatever the host does to
//! DIR after it: a renamed directory's contents are kept with the changes (as root the
//! overlay renames a directory by pointing at its old name, `redirect_dir`), and removing a
//! directory is a conflict when the host changed anything inside it since the start.

use super::{code, each, Case};
use crate::common::Who;

/// Root's `mv d1 d2` in the run, then the same `mv` on the host: the kept change of d2 is
/// what the run had, so `diff` shows nothing to do and `apply` keeps `d2/sub/c.txt`. Then a
/// run renames d1 while the host only adds an unrelated file: applying is no conflict.
/// Positive control: against the build that read a renamed directory from its old name at
/// `diff` time, the first case listed `D d2/sub/` and `apply` deleted `c.txt` (exit 0), and
/// the second refused `d2` as "removed on the host since the run started".
#[test]
fn w3_w4_a_renamed_directory_is_kept_as_the_run_left_it() {
    let c = Case::new(Who::Root);
    c.seed("d1/sub/c.txt", "c\n");
    assert_eq!(code(&crate::common::run_bounded(&mut c.cow("w4mv", "mv d1 d2"), super::LIMIT)), 0);
    std::fs::rename(c.dir().join("d1"), c.dir().join("d2")).unwrap();
    let stat = c.run(&["diff", "w4mv", "--stat"]);
    assert!(!stat.out.contains("D d2"), "{}", stat.out);
    let out = c.run(&["apply", "w4mv"]);
    assert_eq!(code(&out), 0, "{}", out.err);
    assert_eq!(std::fs::read_to_string(c.dir().join("d2/sub/c.txt")).unwrap(), "c\n", "c.txt deleted");

    let c = Case::new(Who::Root);
    c.seed("d1/c.txt", "o\n");
    assert_eq!(code(&crate::common::run_bounded(&mut c.cow("w4mv2", "mv d1 d2"), super::LIMIT)), 0);
    std::fs::write(c.dir().join("unrelated"), "").unwrap();
    let out = c.run(&["apply", "w4mv2"]);
    assert_eq!(code(&out), 0, "{}", out.err);
    assert_eq!(std::fs::read_to_string(c.dir().join("d2/c.txt")).unwrap(), "o\n");
    assert!(!c.dir().join("d1").exists(), "d1 left");
}

/// A run removes a directory (`rm -r`, or `mv` away as root) and the host then edits a file
/// deep inside it: `apply` refuses the removal by the edited file's name (exit 1, the edit
/// kept), and `--force` removes it; a removal under which the host changed nothing applies.
/// Positive control: against the build that looked only at the directory's own ctime, the
/// first apply exited 0 and deleted the host's edit.
#[test]
fn w4_removing_a_directory_the_host_changed_inside_is_a_conflict() {
    each(&|who| {
        for (name, script) in [("w4rm", "rm -r d1"), ("w4away", "mv d1 d2")] {
            let c = Case::new(who);
            c.seed("d1/deep/c.txt", "o\n");
            assert_eq!(code(&crate::common::run_bounded(&mut c.cow(name, script), super::LIMIT)), 0);
            std::fs::write(c.dir().join("d1/deep/c.txt"), "HOST\n").unwrap();
            let out = c.run(&["apply", name]);
            assert_eq!(code(&out), 1, "{who:?} {script}: {}", out.err);
            assert!(out.err.contains("d1/deep/c.txt changed on the host"), "{who:?} {script}: {}", out.err);
            assert_eq!(std::fs::read_to_string(c.dir().join("d1/deep/c.txt")).unwrap(), "HOST\n", "{who:?} {script}");
            let out = c.run(&["apply", name, "--force"]);
            assert_eq!(code(&out), 0, "{who:?} {script}: {}", out.err);
            assert!(!c.dir().join("d1").exists(), "{who:?} {script}: --force left d1");
        }
        let c = Case::new(who);
        c.seed("d1/deep/c.txt", "o\n");
        assert_eq!(code(&crate::common::run_bounded(&mut c.cow("w4rm0", "rm -r d1"), super::LIMIT)), 0);
        let out = c.run(&["apply", "w4rm0"]);
        assert_eq!(code(&out), 0, "{who:?} control: {}", out.err);
        assert!(!c.dir().join("d1").exists(), "{who:?} control: d1 left");
    });
}
