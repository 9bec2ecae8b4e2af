use super::*;
use crate::policy::Mount;

fn policy(home: &Path) -> Policy {
    let mount = |kind, dest: &Path| Mount { kind, src: None, dest: dest.to_path_buf(), profile: "t".into() };
    Policy {
        profiles: vec!["@home".into()],
        mounts: vec![
            mount(MountKind::Tmpfs, home),
            mount(MountKind::Ro, &home.join(".gitconfig")),
            mount(MountKind::Tmpfs, Path::new("/tmp")),
        ],
        env: Vec::new(),
        net: false,
        target: PathBuf::from("/"),
        home: home.to_path_buf(),
        max_procs: None,
        memory: None,
        create: Vec::new(),
        allow_userns: false,
        unprotect: Vec::new(),
        protected: Vec::new(),
    }
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
    let h = home.display();
    let got: Vec<(String, u64, String)> = s.places.iter().map(|p| (p.path.clone(), p.files, p.keep.clone())).collect();
    assert_eq!(
        got,
        vec![
            (format!("{h}/.local"), 2, format!("{HOST_RUNS} (pip's --user: a virtual environment in DIR)")),
            (format!("{h}/.cache/foo"), 1, "--rw ~/.cache/foo".to_string()),
            (format!("{h}/.cache/pip"), 1, "-p @python".to_string()),
            (format!("{h}/.link"), 1, "--rw ~/.link".to_string()),
        ]
    );
    // Missing on the host (as the sandbox's $HOME is): made first, a file touched.
    assert_eq!(w.keep(&format!("{h}/.hist"), true), "touch ~/.hist and --rw ~/.hist");
    assert_eq!(w.keep(&format!("{h}/.nodir"), false), "mkdir -p ~/.nodir and --rw ~/.nodir");
    assert_eq!(w.keep("/tmp/x", false), "-p @tmp-shared");
    let line = s.line(&home);
    assert!(line.starts_with("the payload wrote 5 files where the sandbox discards them"), "{line}");
    assert!(line.contains("~/.local 2 files (keep: none safe: the host runs"), "{line}");
    assert!(!line.contains("--rw ~/.local"), "O11: never a grant to what the host runs: {line}");
    // O11: no grant to ~, ~/.cargo or an rc file, whatever is there.
    for place in ["", "/.cargo", "/.bashrc", "/.config"] {
        assert_eq!(w.keep(&format!("{h}{place}"), false), HOST_RUNS, "{place}");
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
