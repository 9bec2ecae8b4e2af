use super::*;
use crate::policy::Mount;

fn policy(home: &Path) -> Policy {
    let mount = |kind, dest: &Path| Mount { kind, src: None, dest: dest.to_path_buf(), profile: "t".into() };
    let mounts = vec![
        mount(MountKind::Tmpfs, home),
        mount(MountKind::Ro, &home.join(".gitconfig")),
        mount(MountKind::Tmpfs, Path::new("/tmp")),
    ];
    Policy { profiles: vec!["@home".into()], ..Policy::bare(Path::new("/"), home, mounts) }
}

/// A watched `$HOME` holding what pip --user and a cache write, and a bind's mountpoint.
#[test]
fn o8_summary_groups_by_place_with_the_grant_and_skips_mountpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("h");
    for f in
        [".local/lib/python3/site-packages/x.py", ".local/bin/x", ".cache/pip/http/a", ".cache/foo/b/c", ".gitconfig"]
    {
        let p = home.join(f);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, "x").expect("write");
    }
    std::fs::create_dir_all(home.join("empty/dirs")).expect("mkdir");
    // A symlink is one file, never followed (it leads to the whole of /usr).
    std::os::unix::fs::symlink("/usr", home.join(".link")).expect("symlink");
    let mut w = Watch::new(&policy(&home));
    assert_eq!(w.roots.len(), 2);
    w.roots[0].dir =
        rustix::fs::open(&home, rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY, rustix::fs::Mode::empty())
            .ok();
    let s = w.summary().expect("something discarded");
    assert_eq!((s.files, s.complete), (5, true), "{s:?}");
    let h = |rel: &str| home.join(rel);
    let got: Vec<(PathBuf, u64, String)> = s.places.iter().map(|p| (p.path.clone(), p.files, p.keep.clone())).collect();
    let login = "none offered: the host runs or reads ~/.local/bin (its shell, PATH, build or login); for pip's --user: a virtual environment in DIR";
    assert_eq!(
        got,
        vec![
            (h(".local"), 2, login.to_string()),
            (h(".cache/foo"), 1, "--rw ~/.cache/foo".to_string()),
            (h(".cache/pip"), 1, "-p @python".to_string()),
            (h(".link"), 1, "--rw ~/.link".to_string()),
        ]
    );
    // Missing on the host (as the sandbox's $HOME is): made first, a file touched.
    assert_eq!(w.keep(&h(".hist"), true), "touch ~/.hist and --rw ~/.hist");
    assert_eq!(w.keep(&h(".nodir"), false), "mkdir -p ~/.nodir and --rw ~/.nodir");
    assert_eq!(w.keep(Path::new("/tmp/x"), false), "-p @tmp-shared");
    let line = s.line(&home);
    assert!(line.starts_with("the payload wrote 5 files where the sandbox discards them"), "{line}");
    assert!(line.contains(&format!("~/.local 2 files (keep: {login}), ~/.cache/foo 1 file")), "{line}");
    assert!(!line.contains("--rw ~/.local"), "O11: never a grant to what the host runs: {line}");
    // O11: no grant to ~, ~/.cargo or an rc file, whatever is there.
    for place in ["", ".cargo", ".bashrc", ".config"] {
        assert!(w.keep(&h(place), false).starts_with("none offered: "), "{place}");
    }
    assert!(line.ends_with(", and 1 more"), "{line}");
    w.close();
    assert_eq!(w.summary(), None, "nothing open: no summary");
}

/// Fewer than [`MAX_ENTRIES`] are looked at no matter how many there are: a lower bound.
#[test]
fn o8_walk_is_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("h");
    std::fs::create_dir_all(home.join("many")).expect("mkdir");
    for i in 0..MAX_ENTRIES + 50 {
        std::fs::write(home.join("many").join(i.to_string()), "").expect("write");
    }
    let mut w = Watch::new(&policy(&home));
    w.roots[0].dir =
        rustix::fs::open(&home, rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY, rustix::fs::Mode::empty())
            .ok();
    let s = w.summary().expect("summary");
    assert!(!s.complete && s.files < MAX_ENTRIES as u64, "{} {}", s.files, s.complete);
    assert!(s.line(&home).contains("wrote at least"), "{}", s.line(&home));
}

/// O8: a root is opened inside the sandbox's root and through no symlink. Here the "sandbox
/// root" holds `home` as an absolute symlink to another directory, as a payload that renamed
/// its `/home` and planted one could make it. Positive control: the open snug used before,
/// NOFOLLOW on the last component only, reaches that other directory and would summarise it.
#[test]
fn o8_a_root_behind_a_symlink_is_not_watched() {
    use rustix::fs::{open, openat, Mode, OFlags};
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, host) = (dir.path().join("root"), dir.path().join("host"));
    std::fs::create_dir_all(host.join("u")).expect("mkdir");
    std::fs::write(host.join("u/secret"), "x").expect("write");
    std::fs::create_dir_all(root.join("tmp")).expect("mkdir");
    std::os::unix::fs::symlink(&host, root.join("home")).expect("symlink");
    let fd = open(&root, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).expect("open root");
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW;
    assert!(openat(&fd, "home/u", flags, Mode::empty()).is_ok(), "control: the plain open follows it");
    let mut w = Watch::new(&policy(Path::new("/home/u")));
    w.open_in(&fd);
    assert!(w.roots.iter().find(|r| r.dest == Path::new("/home/u")).is_some_and(|r| r.dir.is_none()));
    assert!(w.roots.iter().find(|r| r.dest == Path::new("/tmp")).is_some_and(|r| r.dir.is_some()), "/tmp opens");
    assert_eq!(w.summary(), None, "nothing of the host's directory is summarised");
}

/// O11, O10: a name the payload chose is quoted in every suggested command, so pasting it runs
/// nothing (checked with a real `sh`: the command creates the file of that very name and
/// nothing else runs); a name that is not UTF-8 comes back as its bytes through bash's
/// `$'…'` quoting and is given as `{"b64": …}` in the report. The rc files, `~/.local/bin`
/// and `~` are never offered. Positive control: the keep built before, `touch ~/NAME`
/// unquoted, printed PWNED when run by sh.
#[test]
fn o11_suggested_commands_are_quoted_and_round_trip() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("h");
    std::fs::create_dir_all(&home).expect("mkdir");
    let w = Watch::new(&policy(&home));
    let evil = ".cache;echo PWNED>&2;#";
    let keep = w.keep(&home.join(evil), true);
    assert_eq!(keep, "touch ~/'.cache;echo PWNED>&2;#' and --rw ~/'.cache;echo PWNED>&2;#'");
    let bytes = std::ffi::OsStr::from_bytes(b"caf\xe9 'x'");
    let keep8 = w.keep(&home.join(bytes), true);
    assert_eq!(keep8, "touch ~/$'caf\\xe9 \\'x\\'' and --rw ~/$'caf\\xe9 \\'x\\''");
    let control = format!("touch ~/{evil}");
    for (cmd, want_pwned) in [(keep.split(" and ").next().unwrap().to_string(), false), (control, true)] {
        let out = std::process::Command::new("bash").arg("-c").arg(&cmd).env("HOME", &home).output().expect("bash");
        let pwned = String::from_utf8_lossy(&out.stderr).contains("PWNED");
        assert_eq!(pwned, want_pwned, "{cmd}: {out:?}");
    }
    assert!(home.join(evil).exists(), "the quoted touch made the file of that name");
    let touch8 = keep8.split(" and ").next().unwrap().to_string();
    let out = std::process::Command::new("bash").arg("-c").arg(&touch8).env("HOME", &home).output().expect("bash");
    assert!(out.status.success(), "{out:?}");
    assert!(home.join(bytes).exists(), "{touch8} made another name");
    let place = Place { path: home.join(bytes), files: 1, keep: keep8 };
    let json = serde_json::to_value(&place).unwrap();
    assert!(json["path"]["b64"].is_string(), "{json}");
    for rel in ["", ".bashrc", ".local/bin", ".profile"] {
        assert!(w.keep(&home.join(rel), true).starts_with("none offered"), "{rel:?} offered");
    }
}
