//! Profile files, lookup, list and show (SPEC P2, P3, O3).

use super::*;
use crate::error::code_of;
use crate::host::FakeHost;
use crate::policy::show_in;

#[test]
fn p3_unknown_key_names_file_line_and_key() {
    let err = parse("x", Path::new("/c/x.toml"), "ro = []\nwritable = [\"/a\"]\n").expect_err("unknown key");
    assert_eq!(code_of(&err), POLICY);
    let msg = crate::error::one_line(&err);
    assert!(msg.starts_with("/c/x.toml:2: unknown field `writable`"), "{msg}");
}

#[test]
fn p3_wrong_type_is_policy_error() {
    let err = parse("x", Path::new("/c/x.toml"), "[env]\nA = 1\n").expect_err("type");
    assert_eq!(code_of(&err), POLICY);
    assert!(crate::error::one_line(&err).contains("/c/x.toml:2"));
}

#[test]
fn p2_first_directory_wins() {
    let host =
        FakeHost::new().file("/u/dev.toml", "description = \"user\"").file("/etc/dev.toml", "description = \"system\"");
    let dirs = [PathBuf::from("/u"), PathBuf::from("/etc")];
    let p = load("dev", &dirs, &host).expect("found");
    assert_eq!(p.description, "user");
    assert_eq!(p.source, Source::File(PathBuf::from("/u/dev.toml")));
}

#[test]
fn p3_unknown_names_are_policy_errors() {
    let host = FakeHost::new();
    let dirs = [PathBuf::from("/u")];
    for name in ["nosuch", "@nosuch", "../etc/passwd", ".hidden", ""] {
        let err = load(name, &dirs, &host).expect_err(name);
        assert_eq!(code_of(&err), POLICY, "{name}");
        assert!(!crate::error::one_line(&err).contains('\n'));
    }
}

#[test]
fn p2_config_dirs_follow_xdg() {
    let env = |v: &[(&str, &str)]| v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    let etc = PathBuf::from("/etc/snug/profiles.d");
    assert_eq!(
        config_dirs(&env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")])),
        [PathBuf::from("/x/snug/profiles.d"), etc.clone()]
    );
    assert_eq!(
        config_dirs(&env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "rel")])),
        [PathBuf::from("/h/.config/snug/profiles.d"), etc.clone()]
    );
    assert_eq!(config_dirs(&env(&[])), [etc]);
}

#[test]
fn o3_show_and_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text =
        "description = \"dev tools\"\ninclude = [\"@net\"]\nro = [\"{home}/.gitconfig\"]\n[env]\nEDITOR = \"vi\"\n";
    std::fs::write(dir.path().join("dev.toml"), text).expect("write");
    std::fs::write(dir.path().join("bad.toml"), "nope = 1").expect("write");
    let dirs = [dir.path().to_path_buf()];
    let (home, cwd) = (Path::new("/nonexistent/h"), Path::new("/tmp"));
    let shown = show_in("dev", &dirs, &RealHost, home, cwd).expect("show");
    assert!(shown.contains("include: @net"), "{shown}");
    assert!(shown.contains("ro      /nonexistent/h/.gitconfig  (missing: a run fails)"), "{shown}");
    assert!(shown.contains("env     EDITOR=vi"), "{shown}");
    let sys = show_in("@sys", &dirs, &RealHost, home, cwd).expect("show @sys");
    assert!(sys.contains("/etc/ld.so.cache"), "{sys}");
    let listed = list_in(&dirs).expect("list");
    assert!(listed.contains("@tmp-shared"), "{listed}");
    assert!(listed.contains("dev          dev tools"), "{listed}");
    assert!(listed.contains("bad          (invalid:"), "{listed}");
}

/// P3 (issue: `-p dangle` said "no dangle.toml in …" while `snug profile list` showed the
/// file as a symlink to nothing): the error names the file and its missing target. The
/// control: a name with no file at all is still "unknown profile".
#[test]
fn p3_a_dangling_profile_symlink_is_named_as_one() {
    let host = FakeHost::new().dir("/u").link("/u/dangle.toml", "/nonexistent");
    let dirs = [PathBuf::from("/u")];
    let err = load("dangle", &dirs, &host).expect_err("dangling");
    assert_eq!(code_of(&err), POLICY);
    assert_eq!(crate::error::one_line(&err), "/u/dangle.toml: a symlink to /nonexistent, which does not exist");
    let err = load("nosuch", &dirs, &host).expect_err("missing");
    assert!(crate::error::one_line(&err).starts_with("unknown profile nosuch: no nosuch.toml in /u"));
}
