//! W4: `snug apply` of what ordinary tools leave: read-only directories (a Go module cache),
//! names near NAME_MAX, and one PATH inside directories the run made.

use super::{code, each, Case};
use crate::common::{run_bounded, Who};
use std::os::unix::fs::PermissionsExt;

fn ran(c: &Case, name: &str, script: &str) {
    let out = run_bounded(&mut c.cow(name, script), super::LIMIT);
    assert_eq!(code(&out), 0, "{:?}: {}", c.who, out.err);
}

fn mode(p: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// A tree the payload made read-only (`chmod -R a-w`, as Go leaves its module cache), and a
/// file it wrote in a read-only directory DIR already had (opening it up for the write):
/// `apply` writes both and leaves each directory's mode as the run did (555). Positive
/// control: against the build that set a directory's mode before writing what it holds, the
/// user's apply failed with "permission denied" (71) and left an empty 555 `cache/`.
#[test]
fn w4_read_only_directories_apply_with_their_contents() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("ro/old", "o\n");
        std::fs::set_permissions(c.dir().join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
        ran(
            &c,
            "w4ro",
            "mkdir -p cache/mod/a && echo v > cache/mod/a/f && chmod -R a-w cache && \
             chmod u+w ro && echo n > ro/new && chmod 555 ro",
        );
        let out = c.run(&["apply", "w4ro"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert_eq!(std::fs::read_to_string(c.dir().join("cache/mod/a/f")).unwrap(), "v\n", "{who:?}");
        assert_eq!(std::fs::read_to_string(c.dir().join("ro/new")).unwrap(), "n\n", "{who:?}");
        for d in ["cache", "cache/mod", "cache/mod/a", "ro"] {
            assert_eq!(mode(&c.dir().join(d)), 0o555, "{who:?}: {d}");
        }
        let _ = std::process::Command::new("chmod").args(["-R", "u+w"]).arg(c.dir()).status();
    });
}

/// A file and a symlink whose names are 250 and 251 bytes apply (the temporary name no
/// longer holds the name). Positive control: the build before failed both with "filename
/// too long" (71), every time.
#[test]
fn w4_names_near_name_max_apply() {
    let c = Case::new(Who::Root);
    let long = "x".repeat(250);
    ran(&c, "w4long", &format!("echo new > {long}; ln -s t {long}z"));
    let out = c.run(&["apply", "w4long"]);
    assert_eq!(code(&out), 0, "{}", out.err);
    assert_eq!(std::fs::read_to_string(c.dir().join(&long)).unwrap(), "new\n");
    assert!(std::fs::symlink_metadata(c.dir().join(format!("{long}z"))).unwrap().file_type().is_symlink());
}

/// `apply NAME new/deep/er/z` makes the directories the run made above it, and only those:
/// another new file stays kept. Positive control: the build before failed with "no such
/// file or directory" (71).
#[test]
fn w4_one_path_inside_new_directories_applies() {
    let c = Case::new(Who::Root);
    ran(&c, "w4path", "mkdir -p new/deep/er && echo z > new/deep/er/z && echo o > other && mkdir new/side");
    let out = c.run(&["apply", "w4path", "new/deep/er/z"]);
    assert_eq!(code(&out), 0, "{}", out.err);
    assert_eq!(std::fs::read_to_string(c.dir().join("new/deep/er/z")).unwrap(), "z\n");
    assert!(!c.dir().join("other").exists() && !c.dir().join("new/side").exists(), "more than asked");
    let out = c.run(&["apply", "w4path"]);
    assert_eq!(code(&out), 0, "the rest: {}", out.err);
    assert!(c.dir().join("other").exists() && c.dir().join("new/side").is_dir(), "the rest");
}

/// A file the payload moved (`mv src/f lib/f`, and as root `mv a z` of a directory then a
/// change inside it), applied in two steps: first one new file alone, then the rest. The
/// second apply is no conflict: the directory the first one wrote in changed by snug's hand,
/// not the host's. Positive control: against the build before, the second apply refused
/// `lib/f` as "removed on the host since the run started" (exit 1), and `--partial` deleted
/// `src/f` without writing `lib/f`.
#[test]
fn w4_an_apply_in_two_steps_is_no_conflict_with_itself() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("src/f", "f\n");
        c.seed("a/g", "g\n");
        ran(
            &c,
            "w4two",
            "mkdir lib && mv src/f lib/f && echo n > lib/n && mv a z && echo more >> z/g && echo new > z/new",
        );
        for first in ["lib/n", "z/new"] {
            let out = c.run(&["apply", "w4two", first]);
            assert_eq!(code(&out), 0, "{who:?} {first}: {}", out.err);
        }
        let out = c.run(&["apply", "w4two"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert_eq!(std::fs::read_to_string(c.dir().join("lib/f")).unwrap(), "f\n", "{who:?}");
        assert_eq!(std::fs::read_to_string(c.dir().join("z/g")).unwrap(), "g\nmore\n", "{who:?}");
        assert!(!c.dir().join("src/f").exists() && !c.dir().join("a").exists(), "{who:?}: old names left");
    });
}
