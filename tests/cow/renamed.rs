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

/// W3: `snug diff NAME PATH` and `snug apply NAME PATH` with a PATH that is neither in DIR nor
/// among the changes (a typo) say so in one `snug: ` line with 64, and apply writes nothing;
/// a PATH in DIR that the run left alone shows nothing, as `git diff` does. Positive control:
/// the build before printed nothing and exited 0 for the typo.
#[test]
fn w3_a_path_neither_in_dir_nor_changed_is_64() {
    let c = Case::new(Who::Root);
    c.seed("a", "a0\n");
    c.seed("b", "b0\n");
    assert_eq!(code(&crate::common::run_bounded(&mut c.cow("w3typo", "echo a1 > a"), super::LIMIT)), 0);
    for verb in ["diff", "apply"] {
        let out = c.run(&[verb, "w3typo", "nosuch"]);
        assert_eq!(code(&out), 64, "{verb}: {}", out.err);
        assert!(out.err.starts_with("snug: nosuch: neither in") && out.err.lines().count() == 1, "{verb}: {}", out.err);
    }
    assert_eq!(std::fs::read_to_string(c.dir().join("a")).unwrap(), "a0\n");
    let out = c.run(&["diff", "w3typo", "b"]);
    assert_eq!((code(&out), out.out.as_str()), (0, ""), "control: {}", out.err);
}

/// W4, W5: a run killed (SIGKILL) after `mv d1 d2`, before its end: its renamed directory is
/// read from d1 at the first `diff`. When the host removed d1 before that, `diff` and
/// `apply` say the contents are not known (exit 1) and write nothing, instead of applying an
/// empty d2; the same for a directory moved into d2 (`mv x/y d2/y`) whose old name the host
/// changed. Control: the same killed run with d1 left alone applies d2 whole. Positive
/// control: against the build that read the old name whatever the host had done, `apply`
/// exited 0 with d2 holding only the payload's new file, d1's files lost.
#[test]
fn w4_w5_a_killed_runs_rename_is_never_read_from_a_changed_host() {
    for host_removes in [true, false] {
        let c = Case::new(Who::Root);
        c.seed("d1/a", "a\n");
        c.seed("d1/s/b", "b\n");
        c.seed("x/y/f", "f\n");
        // d2/y is x/y moved into the renamed directory: it points at its own old name.
        let script = format!("mv d1 d2; echo new > d2/new; mv x/y d2/y; {}", super::ready_then_wait());
        let run = crate::common::start(&mut c.cow("w4kill", &script));
        super::wait_for(&c.side().join("ready"));
        crate::common::kill(run.pid, libc::SIGKILL);
        let _ = run.finish(super::LIMIT);
        if host_removes {
            std::fs::write(c.dir().join("x/y/f"), "HOST\n").unwrap();
            let out = c.run(&["diff", "w4kill"]);
            assert_eq!(code(&out), 1, "x/y changed: {}{}", out.out, out.err);
            assert!(out.err.contains("x/y") && out.err.contains("not known"), "{}", out.err);
            std::fs::remove_dir_all(c.dir().join("d1")).unwrap();
            for verb in ["diff", "apply"] {
                let out = c.run(&[verb, "w4kill"]);
                assert_eq!(code(&out), 1, "{verb}: {}{}", out.out, out.err);
                assert!(
                    out.err.contains("changed on the host") && out.err.contains("not known"),
                    "{verb}: {}",
                    out.err
                );
            }
            assert!(!c.dir().join("d2").exists(), "apply wrote d2");
        } else {
            let out = c.run(&["apply", "w4kill"]);
            assert_eq!(code(&out), 0, "control: {}", out.err);
            let d2 = c.dir().join("d2");
            for (f, t) in [("a", "a\n"), ("s/b", "b\n"), ("new", "new\n"), ("y/f", "f\n")] {
                assert_eq!(std::fs::read_to_string(d2.join(f)).unwrap_or_default(), t, "control: d2/{f}");
            }
            assert!(!c.dir().join("d1").exists(), "control: d1 left");
        }
    }
}
