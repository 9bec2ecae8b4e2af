//! O7: a virtual environment made from pyenv's python links into `~/.pyenv`, which the
//! sandbox hides: the 127 says so and names the profile that shows it.

use crate::common::{code, workdir, Who};
use crate::everyday::{chown_to, each, fresh_dir, run, snug_with};
use std::os::unix::fs::PermissionsExt;

/// O7: `.venv/bin/python3` (a link to `~/.pyenv/versions/…/python3.12`) without `-p @python`
/// exits 127 with a line naming the link's target under `$HOME` and `-p @python`; with the
/// profile it runs (the control). Without the fix the line said "command not found" alone.
#[test]
fn o7_venv_from_pyenv_names_the_hidden_link_and_the_profile() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let bin = home.join(".pyenv/versions/3.12.1/bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let py = bin.join("python3.12");
        std::fs::write(&py, "#!/bin/sh\necho pyenv-python\n").expect("write");
        std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let venv = dir.path().join(".venv/bin");
        std::fs::create_dir_all(&venv).expect("mkdir");
        std::os::unix::fs::symlink(&py, venv.join("python3")).expect("link");
        for p in [home.join(".pyenv"), home.join(".pyenv/versions"), home.join(".pyenv/versions/3.12.1"), bin, py] {
            chown_to(who, &p);
        }
        let out = run(&mut snug_with(who, dir.path(), &home, &[], &["--", ".venv/bin/python3", "-V"]));
        assert_eq!(code(out.status), 127, "{who:?}: {}", out.err);
        assert!(out.err.contains("symbolic link to") && out.err.contains("add -p @python"), "{who:?}: {}", out.err);
        let out = run(&mut snug_with(who, dir.path(), &home, &[], &["-p", "@python", "--", ".venv/bin/python3"]));
        assert_eq!((code(out.status), out.out.as_str()), (0, "pyenv-python\n"), "{who:?} control: {}", out.err);
        let _ = std::fs::remove_dir_all(&home);
    });
}
