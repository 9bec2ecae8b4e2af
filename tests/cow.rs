//! Copy-on-write DIR (SPEC W1–W6): with `--cow` the payload's changes never reach DIR during
//! the run; `snug diff` shows them, `snug apply` writes them, `snug discard` drops them. Real
//! bwrap and the kernel's overlayfs, as root and as the unprivileged user (in parallel).
//!
//! Split by concern: `cow/view.rs` (W1–W3: DIR untouched, the diff, apply equals the view),
//! `cow/apply.rs` (W4: conflicts, escapes, protected paths, what is never applied),
//! `cow/kept.rs` (W1's refusals, W5: SIGKILL, masks, W6: ordinary tools), `cow/with.rs`
//! (W1 with `-p @net`, `--net-allow`, `--jobs` and other grants' protected paths),
//! `cow/grants.rs` (P7: a grant inside DIR bound in the overlay).

use crate::common;

mod apply;
mod apply_more;
mod grants;
mod kept;
mod renamed;
mod view;
mod with;

use common::{everyone, run_bounded, snug_cmd, workdir, Out, Who};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Generous bound for one run that ends on its own (2 cores, tests in parallel).
pub const LIMIT: Duration = Duration::from_secs(60);

/// Run `row` as everyone at once; a panic in any fails the test once all have ended.
pub fn each(row: &(dyn Fn(Who) + Sync)) {
    std::thread::scope(|s| {
        for who in everyone() {
            s.spawn(move || row(who));
        }
    });
}

/// One case: DIR, a state directory of its own (`XDG_STATE_HOME`) and a place outside DIR
/// the payload may write (`--rw`): its readiness files and the copy of its own view.
pub struct Case {
    pub who: Who,
    pub dir: tempfile::TempDir,
    pub state: tempfile::TempDir,
    pub side: tempfile::TempDir,
}

impl Case {
    pub fn new(who: Who) -> Case {
        Case { who, dir: workdir(who), state: workdir(who), side: workdir(who) }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn side(&self) -> &Path {
        self.side.path()
    }

    /// `snug ARGS…` as the case's user with its state directory.
    pub fn snug(&self, args: &[&str]) -> Command {
        let mut c = snug_cmd(self.who, self.dir(), args);
        c.env("XDG_STATE_HOME", self.state.path());
        c
    }

    /// `snug ARGS…`, run to its end.
    pub fn run(&self, args: &[&str]) -> Out {
        run_bounded(&mut self.snug(args), LIMIT)
    }

    /// A `--cow` run named `name` of `script` (sh -c) in DIR, the side place writable.
    pub fn cow(&self, name: &str, script: &str) -> Command {
        self.cow_with(name, &[], script)
    }

    /// [`Case::cow`] with more options.
    pub fn cow_with(&self, name: &str, more: &[&str], script: &str) -> Command {
        let side = self.side().to_str().unwrap().to_string();
        let env = format!("SIDE={side}");
        let mut args = vec!["--cow", "--name", name, "--rw", &side, "-e", &env];
        args.extend(more);
        args.extend(["--", "sh", "-c", script]);
        self.snug(&args)
    }

    /// The kept runs' directory.
    pub fn kept(&self) -> PathBuf {
        self.state.path().join("snug/cow")
    }

    /// Write `rel` in DIR with `text`, owned by the case's user.
    pub fn seed(&self, rel: &str, text: &str) {
        let p = self.dir().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        self.own(&p);
    }

    /// chown -R to the case's user.
    pub fn own(&self, p: &Path) {
        if self.who == Who::User {
            let (u, g) = common::test_user();
            let _ = Command::new("chown").arg("-R").arg(format!("{u}:{g}")).arg(p).status();
            let _ = Command::new("chown").arg("-R").arg(format!("{u}:{g}")).arg(self.dir()).status();
        }
    }
}

/// A tree as text, one line per entry: path, type, permission bits, and the content's bytes
/// (a file) or target (a symlink, never followed). Two trees are equal when the texts are.
pub fn tree(root: &Path) -> String {
    let mut out = BTreeMap::new();
    walk(root, Path::new(""), &mut out);
    out.into_iter().map(|(k, v)| format!("{k}\t{v}\n")).collect()
}

fn walk(root: &Path, rel: &Path, out: &mut BTreeMap<String, String>) {
    let mut names: Vec<_> = std::fs::read_dir(root.join(rel)).unwrap().flatten().map(|e| e.file_name()).collect();
    names.sort();
    for n in names {
        let r = rel.join(&n);
        let p = root.join(&r);
        let m = std::fs::symlink_metadata(&p).unwrap();
        let mode = m.permissions().mode() & 0o7777;
        let what = if m.file_type().is_symlink() {
            format!("symlink {:?}", std::fs::read_link(&p).unwrap())
        } else if m.is_dir() {
            format!("dir {mode:o}")
        } else if m.is_file() {
            format!("file {mode:o} {:?}", String::from_utf8_lossy(&std::fs::read(&p).unwrap()))
        } else {
            format!("other {mode:o} {}", m.rdev())
        };
        out.insert(r.display().to_string(), what);
        if m.is_dir() {
            walk(root, &r, out);
        }
    }
}

/// Wait for `path` to exist (the payload's readiness), up to [`LIMIT`].
pub fn wait_for(path: &Path) {
    assert!(common::until(LIMIT, || path.exists()), "{} never appeared", path.display());
}

/// The shell lines that say "ready" in the side place and wait there for "go".
pub fn ready_then_wait() -> &'static str {
    "touch \"$SIDE/ready\"; while [ ! -e \"$SIDE/go\" ]; do sleep 0.02; done"
}

/// What `who` sees as their code for `out`.
pub fn code(out: &Out) -> i32 {
    common::code(out.status)
}
