use super::*;
use std::fs;

/// A policy with DIR = `dir` read-write (the defaults' shape), `extra` mounts after it.
fn policy(dir: &Path, extra: Vec<Mount>) -> Policy {
    let rw = |p: &Path| Mount {
        kind: MountKind::Rw,
        src: Some(p.to_path_buf()),
        dest: p.to_path_buf(),
        profile: "@cwd-rw".into(),
    };
    let mut mounts = vec![rw(dir)];
    mounts.extend(extra);
    mounts.sort_by(|a, b| a.dest.cmp(&b.dest));
    Policy::bare(dir, Path::new("/nonexistent"), mounts)
}

fn repo(dir: &Path) {
    for d in [".git/hooks", ".git/objects", ".git/modules/sub/hooks", ".vscode"] {
        fs::create_dir_all(dir.join(d)).unwrap();
    }
    for f in [".git/config", ".git/HEAD", ".git/modules/sub/config", ".vscode/tasks.json", ".envrc"] {
        fs::write(dir.join(f), "x").unwrap();
    }
}

/// P8: existing paths bound read-only, missing ones a placeholder or watched, each directory
/// between DIR and a protected path bound onto itself, parents before children.
#[test]
fn p8_plan_binds_pins_and_places() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().canonicalize().unwrap();
    repo(&dir);
    let p = plan(&policy(&dir, vec![])).unwrap();
    let j = |s: &str| dir.join(s);
    for b in [".git/hooks", ".git/config", ".git/modules/sub/hooks", ".git/modules/sub/config", ".vscode", ".envrc"] {
        assert!(p.bound.contains(&j(b)), "{b}: {:?}", p.bound);
    }
    let places: Vec<&PathBuf> = p.placeholders.iter().map(|h| &h.path).collect();
    assert_eq!(places, [&j(".idea"), &j(".snug.toml")]);
    let watched: Vec<&PathBuf> = p.watched.iter().map(|w| &w.path).collect();
    assert_eq!(watched, [&j(".git/commondir"), &j(".git/config.worktree"), &j(".gitmodules")]);
    let by = |d: &str| p.mounts.iter().find(|m| m.dest == j(d)).map(|m| (m.kind, m.profile.as_str()));
    assert_eq!(by(".git"), Some((MountKind::Rw, PINNED)));
    assert_eq!(by(".git/modules/sub"), Some((MountKind::Rw, PINNED)));
    assert_eq!(by(".git/hooks"), Some((MountKind::Ro, PROTECTED)));
    assert_eq!(by(".idea"), Some((MountKind::Ro, PLACEHOLDER)));
    assert_eq!(by(".git/objects"), None);
    let at = |d: &str| p.mounts.iter().position(|m| m.dest == j(d)).unwrap();
    assert!(at(".git") < at(".git/hooks") && at(".git/modules") < at(".git/modules/sub/config"));
}

/// P8: `--unprotect` lifts a path and what is below it; a grant inside a protected path is
/// refused (77) naming both, rather than covered or silently lifting it.
#[test]
fn p8_unprotect_lifts_and_a_grant_inside_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().canonicalize().unwrap();
    repo(&dir);
    let mut pol = policy(&dir, vec![]);
    pol.unprotect = vec![dir.join(".git"), dir.join(".envrc")];
    let p = plan(&pol).unwrap();
    assert!(p.bound.iter().all(|b| !b.starts_with(dir.join(".git")) && *b != dir.join(".envrc")), "{:?}", p.bound);
    assert!(p.lifted.contains(&dir.join(".git/hooks")) && p.lifted.contains(&dir.join(".envrc")));
    let grant = Mount {
        kind: MountKind::Rw,
        src: Some(dir.join(".vscode")),
        dest: dir.join(".vscode"),
        profile: "--rw".into(),
    };
    let e = plan(&policy(&dir, vec![grant])).unwrap_err();
    assert_eq!(crate::error::code_of(&e), POLICY);
    assert!(e.to_string().contains("--unprotect"), "{e}");
    // A grant above a protected path lifts nothing: `--rw DIR/.git` keeps its hooks read-only.
    let git =
        Mount { kind: MountKind::Rw, src: Some(dir.join(".git")), dest: dir.join(".git"), profile: "--rw".into() };
    let p = plan(&policy(&dir, vec![git])).unwrap();
    assert!(p.bound.contains(&dir.join(".git/hooks")) && p.bound.contains(&dir.join(".git/config")), "{:?}", p.bound);
    // Under a read-only grant the payload cannot write there anyway: nothing to add.
    let ro = Mount { kind: MountKind::Ro, src: Some(dir.join(".git")), dest: dir.join(".git"), profile: "--ro".into() };
    let p = plan(&policy(&dir, vec![ro])).unwrap();
    assert!(!p.bound.iter().any(|b| b.starts_with(dir.join(".git"))), "{:?}", p.bound);
    assert!(!p.mounts.iter().any(|m| m.dest == dir.join(".git")), "a pin would make the read-only .git writable");
}

/// P8: a `.git` file names a git directory in a writable root: its hooks, config and
/// commondir are protected, and the directory commondir names; a `.git` symlink is watched
/// and what it names protected; a symlink on the way is refused, never followed.
#[test]
fn p8_plan_follows_git_files_never_symlinks() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().canonicalize().unwrap();
    let (main, wt) = (dir.join("main"), dir.join("wt"));
    repo(&main);
    fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
    fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
    fs::create_dir_all(&wt).unwrap();
    fs::write(wt.join(".git"), format!("gitdir: {}\n", main.join(".git/worktrees/wt").display())).unwrap();
    let pol = policy(
        &wt,
        vec![Mount { kind: MountKind::Rw, src: Some(main.clone()), dest: main.clone(), profile: "--rw".into() }],
    );
    let p = plan(&pol).unwrap();
    let g = main.join(".git/worktrees/wt");
    assert!(p.bound.contains(&wt.join(".git")) && p.bound.contains(&g.join("commondir")), "{:?}", p.bound);
    assert!(p.placeholders.iter().any(|h| h.path == g.join("hooks")) && p.bound.contains(&main.join(".git/config")));

    let link = dir.join("linked");
    fs::create_dir_all(&link).unwrap();
    std::os::unix::fs::symlink("../main/.git", link.join(".git")).unwrap();
    let both = |d: &Path| {
        let m = |p: &Path| Mount {
            kind: MountKind::Rw,
            src: Some(p.to_path_buf()),
            dest: p.to_path_buf(),
            profile: "--rw".into(),
        };
        policy(d, vec![m(&main)])
    };
    let p = plan(&both(&link)).unwrap();
    assert!(p.watched.iter().any(|w| w.path == link.join(".git") && w.was.is_some()));
    assert!(p.bound.contains(&main.join(".git/hooks")));

    fs::remove_dir_all(main.join(".git/modules")).unwrap();
    std::os::unix::fs::symlink("/tmp", main.join(".git/modules")).unwrap();
    let e = plan(&policy(&main, vec![])).unwrap_err();
    assert_eq!(crate::error::code_of(&e), POLICY, "{e}");
    assert!(e.to_string().contains(".git/modules"), "{e}");
}

/// P8: a hooks directory the config names (`core.hooksPath`, husky's `.husky/_`) is what git
/// runs: protected like `.git/hooks` when it lies in DIR.
#[test]
fn p8_hooks_path_from_the_config_is_protected() {
    let hooks = |t: &str| git_config::read(t).hooks_path;
    assert_eq!(hooks("[core]\n\tbare = false\n\thooksPath = .husky/_\n"), Some(".husky/_".into()));
    assert_eq!(hooks("[Core]\nHOOKSPATH = \"/x y\" # c\n[user]\nhookspath = no\n"), Some("/x y".into()));
    assert_eq!(hooks("[remote \"core\"]\nhooksPath = no\n"), None);
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().canonicalize().unwrap();
    repo(&dir);
    fs::write(dir.join(".git/config"), "[core]\n\thooksPath = .husky/_\n").unwrap();
    fs::create_dir_all(dir.join(".husky/_")).unwrap();
    let p = plan(&policy(&dir, vec![])).unwrap();
    assert!(p.bound.contains(&dir.join(".husky/_")), "{:?}", p.bound);
    assert!(p.mounts.iter().any(|m| m.dest == dir.join(".husky") && m.profile == PINNED));
}

/// P8: symlinks planted in DIR never carry a bind out of it: `.git` and `.vscode` pointing
/// outside are watched (moved aside after the run if the payload replaces them), and no mount
/// lands outside DIR.
#[test]
fn p8_planted_symlinks_never_move_a_bind_out_of_dir() {
    let t = tempfile::tempdir().unwrap();
    let top = t.path().canonicalize().unwrap();
    let (dir, outside) = (top.join("dir"), top.join("outside"));
    repo(&outside);
    fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink("../outside/.git", dir.join(".git")).unwrap();
    std::os::unix::fs::symlink("../outside/.vscode", dir.join(".vscode")).unwrap();
    let p = plan(&policy(&dir, vec![])).unwrap();
    assert!(p.mounts.iter().all(|m| m.dest.starts_with(&dir)), "{:?}", p.mounts);
    for w in [".git", ".vscode"] {
        assert!(p.watched.iter().any(|x| x.path == dir.join(w) && x.was.is_some()), "{w}: {:?}", p.watched);
    }
}

/// P8: what a git config sends git to — more config it includes, `config.worktree` where the
/// extension is on — and the submodule names whose git directories git would take as found.
#[test]
fn p8_git_config_settings_that_name_more_paths() {
    let t = "[include]\n\tpath = ../.gitconfig\n[includeIf \"gitdir:~/w/\"]\n\tpath = \"~/w.inc\" ; c\n\
             [extensions]\n\tworktreeConfig\n[submodule \"lib/a\"]\n\turl = x\n[submodule \"q\\\"x\"]\n\
             [submodule \"../../evil\"]\n[submodule \"/abs\"]\n[Submodule.old] url = y\n";
    let s = git_config::read(t);
    assert_eq!(s.includes, vec!["../.gitconfig".to_string(), "~/w.inc".to_string()]);
    assert!(s.worktree_config);
    assert_eq!(s.submodules, vec!["lib/a".to_string(), "q\"x".to_string(), "old".to_string()]);
    assert!(!git_config::read("[extensions]\nworktreeConfig = false\n").worktree_config);
    assert!(git_config::read("[extensions] worktreeconfig = yes\n").worktree_config);
}

/// P8: a submodule `.gitmodules` names but whose git directory is not there yet, a file the
/// config includes, and `config.worktree` are protected too: what the payload makes in their
/// place is moved aside (watched), an existing one is bound read-only.
#[test]
fn p8_missing_submodule_gitdirs_includes_and_worktree_config_are_watched() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().canonicalize().unwrap();
    repo(&dir);
    fs::write(
        dir.join(".gitmodules"),
        "[submodule \"sub\"]\n\tpath = sub\n[submodule \"other\"]\n\tpath = o\n\
                                        [submodule \"deep/er\"]\n\tpath = d\n",
    )
    .unwrap();
    fs::write(dir.join(".git/config"), "[include]\n\tpath = ../.gitconfig\n[extensions]\n\tworktreeConfig = true\n")
        .unwrap();
    let p = plan(&policy(&dir, vec![])).unwrap();
    let watched = |r: &str| p.watched.iter().any(|w| w.path == dir.join(r) && w.was.is_none());
    assert!(watched(".git/modules/other") && watched(".git/modules/deep"), "{:?}", p.watched);
    assert!(watched(".gitconfig"), "{:?}", p.watched);
    assert!(p.placeholders.iter().any(|h| h.path == dir.join(".git/config.worktree") && !h.dir));
    assert!(p.bound.contains(&dir.join(".git/modules/sub/hooks")));
    // With no `.git/modules` at all, that directory itself is watched.
    fs::remove_dir_all(dir.join(".git/modules")).unwrap();
    fs::write(dir.join(".gitconfig"), "[core]\n\thooksPath = hooks-dir\n").unwrap();
    let p = plan(&policy(&dir, vec![])).unwrap();
    assert!(p.watched.iter().any(|w| w.path == dir.join(".git/modules")), "{:?}", p.watched);
    assert!(p.bound.contains(&dir.join(".gitconfig")), "{:?}", p.bound);
    assert!(p.watched.iter().any(|w| w.path == dir.join("hooks-dir")), "an included file's hooksPath: {:?}", p.watched);
}
