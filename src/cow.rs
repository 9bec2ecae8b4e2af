//! Copy-on-write DIR (SPEC W1–W6): with `--cow` (or `cow = true`) the payload sees DIR
//! read-write through an overlay whose lower layer is DIR and whose upper layer is kept under
//! the user's state directory; nothing reaches DIR until `snug apply`.

pub mod apply;
pub mod changes;
pub mod diff;
pub mod floor;
pub mod freeze;
pub mod grants;
pub mod modes;
pub mod mount;
pub mod plan;
pub mod store;
pub mod trash;

use crate::error::{failure, UNAVAILABLE};
use std::path::{Path, PathBuf};
use store::Kept;

/// A `--cow` run: its kept directory and what nest mounts.
pub struct Run {
    /// `STATE/cow/NAME`.
    pub kept: Kept,
    /// DIR, canonical: the lower layer and the mount point.
    pub dir: PathBuf,
    /// As root (`redirect_dir=on`) or as a user (`userxattr`).
    pub root: bool,
    /// The grants inside DIR whose source is in DIR, bound by path in the overlay, relative
    /// to DIR: walked again there once it is mounted ([`grants::expected`]).
    pub inside: Vec<PathBuf>,
    /// The overlay's helper once started early ([`Run::mount_early`]).
    pending: std::cell::Cell<Option<mount::Pending>>,
    /// The start is snug's own clock's ([`floor`] unavailable): the overlay waits for the
    /// coarse clock to pass it.
    wait_for_clock: bool,
    /// The run's lock on its kept directory ([`store::hold`]), held until snug exits.
    _running: std::os::fd::OwnedFd,
}

impl Run {
    /// Start mounting the overlay in `nest` (its pidfd, host pid and setup pipe) as soon as
    /// nest has exec'd bwrap, while snug goes on ([`mount::start`]).
    ///
    /// # Errors
    /// As [`mount::start`].
    pub fn mount_early(
        &self,
        (nest, pid, watch): (std::os::fd::BorrowedFd<'_>, snug_core::Pid, std::os::fd::BorrowedFd<'_>),
    ) -> anyhow::Result<()> {
        let started = self.started_for_clock();
        self.pending.set(Some(mount::start((nest, pid, Some(watch)), &self.dir, &self.options(), self.root, started)?));
        Ok(())
    }

    /// The overlay mounted at DIR in the namespaces of `nest` (pidfd, host pid): the early
    /// helper's result when it was started for this nest, else mounted now.
    ///
    /// # Errors
    /// As [`mount::Pending::join`].
    pub fn mount(&self, nest: std::os::fd::BorrowedFd<'_>, nest_pid: snug_core::Pid) -> anyhow::Result<()> {
        let helper = match self.pending.take().filter(|p| p.nest == nest_pid) {
            Some(early) => early,
            // nest is ready: no setup pipe to watch.
            None => {
                mount::start((nest, nest_pid, None), &self.dir, &self.options(), self.root, self.started_for_clock())?
            }
        };
        helper.join(&self.dir)
    }

    /// What the coarse clock must reach before the overlay is mounted: the start, or 0 when
    /// the start is a ctime floor ([`floor`]).
    fn started_for_clock(&self) -> u128 {
        match self.wait_for_clock {
            true => self.kept.meta.as_ref().map_or(0, |m| m.started_ns),
            false => 0,
        }
    }

    /// The overlay's mount data ([`mount::options`]).
    pub fn options(&self) -> String {
        mount::options(&self.dir, &self.kept.upper(), &self.kept.work(), self.root)
    }
}

/// What `--dry-run` says of `--cow`: the overlay's layers, as a mount(8) command line.
pub fn dry_run_line(dir: &Path, name: &str) -> Vec<String> {
    let kept = store::base().map(|b| b.join(name)).unwrap_or_else(|_| PathBuf::from("STATE/snug/cow").join(name));
    let root = rustix::process::geteuid().is_root();
    let data = mount::options(dir, &kept.join("upper"), &kept.join("work"), root);
    ["mount", "-t", "overlay", "overlay", "-o", &data, &dir.to_string_lossy()].iter().map(|s| s.to_string()).collect()
}

/// `policy` without its writable binds at or below DIR: what the protected paths are
/// planned for in a `--cow` run, whose DIR the overlay keeps unwritten.
pub fn outside(policy: &crate::policy::Policy) -> crate::policy::Policy {
    let mut p = policy.clone();
    p.mounts.retain(|m| !(m.kind == crate::policy::MountKind::Rw && m.dest.starts_with(&policy.target)));
    p
}

/// The mode word `snug ps` shows for a run, with `+cow` for a `--cow` run.
pub fn mode_word(word: &'static str, cow: bool) -> &'static str {
    match (word, cow) {
        ("terminal-fg", true) => "terminal-fg+cow",
        ("terminal-bg", true) => "terminal-bg+cow",
        ("detached", true) => "detached+cow",
        (w, _) => w,
    }
}

/// [`prepare`] for the run named `name`, which is drawn again when `generated` and changes
/// are kept under it ([`store::free_name`]; the record learns the new name).
///
/// # Errors
/// As [`prepare`].
pub fn start(
    name: &mut String,
    generated: bool,
    dir: &Path,
    record: &mut crate::report::RunRecord,
    draw: impl Fn() -> String,
) -> anyhow::Result<Run> {
    if generated {
        *name = store::free_name(std::mem::take(name), draw);
        record.name(name);
    }
    let command = record.context().command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    prepare(name, dir, command, record.wall_start())
}

/// `snug diff|apply|discard` (SPEC W3, W4): what to print on stdout and the exit code.
///
/// # Errors
/// Their errors: an unknown name, a PATH outside DIR, an unreadable kept change.
pub fn command(c: crate::cli::cow::CowCommand) -> anyhow::Result<(String, i32)> {
    use crate::cli::cow::CowCommand as C;
    Ok(match c {
        C::List => (diff::list(), 0),
        C::Names => (diff::names(), 0),
        C::Diff { name, stat, paths } => (diff::show(&name, stat, &paths)?, 0),
        C::Apply { name, paths, partial, force, unprotect } => {
            let ask = apply::Ask { name: &name, paths: &paths, partial, force, unprotect: &unprotect };
            (String::new(), apply::apply(&ask)?)
        }
        C::Discard { name } => {
            let kept = store::find(&name)?;
            store::not_running(&kept)?;
            store::remove(&kept)?;
            trash::sweep(&store::base()?);
            (format!("discarded {name}\n"), 0)
        }
    })
}

/// `statfs(2)` magic numbers (`linux/magic.h`).
const OVERLAYFS_SUPER_MAGIC: i64 = 0x794c_7630;
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// Prepare run `name` over DIR `dir`: the state directory checked (not inside DIR, on a
/// filesystem that holds overlayfs' upper layer) and `STATE/cow/NAME` made. Nothing is
/// copied: the cost does not depend on DIR's size (SPEC B10). A host file changed from the
/// run's start on is a conflict (W4): the start is a ctime stamped now where the filesystems
/// allow it ([`floor`]), else `started`, snug's own, which the overlay waits for the coarse
/// clock to pass ([`mount::start`]).
///
/// # Errors
/// 69 saying which and what to set (`XDG_STATE_HOME`) where the state directory cannot hold
/// the layer; 64 when changes named `name` are kept already; 71 when it cannot be made.
pub fn prepare(name: &str, dir: &Path, command: Vec<String>, started: std::time::SystemTime) -> anyhow::Result<Run> {
    let base = store::base()?;
    let set = "set XDG_STATE_HOME to a directory outside DIR on a local filesystem (ext4, xfs, btrfs)";
    if resolved(&base).starts_with(dir) {
        return Err(failure(
            UNAVAILABLE,
            format!(
                "--cow: the state directory {} is inside DIR, where the payload could rewrite the kept changes: {set}",
                base.display()
            ),
        ));
    }
    let os = |e: std::io::Error| {
        failure(crate::error::OS_ERROR, format!("--cow: {}: {}", base.display(), crate::error::io_text(&e)))
    };
    let mut b = std::fs::DirBuilder::new();
    std::os::unix::fs::DirBuilderExt::mode(b.recursive(true), 0o700);
    b.create(&base).map_err(os)?;
    let root = rustix::process::geteuid().is_root();
    let fs = rustix::fs::statfs(&base).map_err(|e| os(e.into()))?.f_type as i64;
    let refused = match fs {
        OVERLAYFS_SUPER_MAGIC => Some("overlayfs, which cannot hold an overlay's upper layer"),
        // Extended attributes in the user namespace on tmpfs came with Linux 6.6.
        TMPFS_MAGIC if !root && !kernel_at_least(6, 6) => {
            Some("tmpfs, which holds no user extended attributes before Linux 6.6")
        }
        _ => None,
    };
    if let Some(why) = refused {
        return Err(failure(UNAVAILABLE, format!("--cow: the state directory {} is on {why}: {set}", base.display())));
    }
    let mut kept = store::create(&base, name)?;
    let running = match store::hold(&kept) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = store::remove(&kept);
            return Err(os(e));
        }
    };
    // The merged view's root is the upper layer's: give it DIR's mode (and, as root, owner).
    // That chmod is also the start's stamp where the filesystems allow it ([`floor`]).
    let upper = kept.upper();
    let floor = floor::available(dir, fs);
    let synced = std::fs::metadata(dir).and_then(|m| {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if root {
            std::os::unix::fs::chown(&upper, Some(m.uid()), Some(m.gid()))?;
        }
        let chmod = || std::fs::set_permissions(&upper, std::fs::Permissions::from_mode(m.mode() & 0o7777));
        match floor {
            true => floor::stamp(&upper, chmod).map(Some),
            false => chmod().map(|()| None),
        }
    });
    let stamped = match synced {
        Ok(s) => s,
        Err(e) => {
            let _ = store::remove(&kept);
            return Err(os(e));
        }
    };
    let started_ns =
        stamped.unwrap_or_else(|| started.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    let started = crate::report::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_nanos(started_ns as u64));
    let meta = store::Meta { dir: dir.to_path_buf(), started, started_ns, command, root, applied: Default::default() };
    if let Err(e) = store::write_meta(&mut kept, meta) {
        let _ = store::remove(&kept);
        return Err(os(e));
    }
    trash::sweep_in_background(base);
    let wait_for_clock = stamped.is_none();
    Ok(Run {
        kept,
        dir: dir.to_path_buf(),
        root,
        inside: Vec::new(),
        pending: std::cell::Cell::new(None),
        wait_for_clock,
        _running: running,
    })
}

/// For `snug doctor` (SPEC W6): whether `--cow` can mount its overlay here, whether
/// rename(2) of a directory that existed before the run works in it, and the detail.
pub fn limits() -> (bool, bool, String) {
    if rustix::process::geteuid().is_root() {
        return (true, true, "overlay as root with redirect_dir=on: renaming a directory that existed works".into());
    }
    if !kernel_at_least(5, 11) {
        return (false, false, "needs Linux 5.11 for an overlay in a user namespace (userxattr)".into());
    }
    let fuse = crate::bwrap::find_program("fuse-overlayfs")
        .map_or(String::new(), |p| format!(" ({} is installed and refuses the same rename: not used)", p.display()));
    let detail = format!(
        "overlay with userxattr, which refuses redirect_dir: rename(2) of a directory that existed before the \
         run fails with EXDEV (mv copies instead; git mv of a directory fails){fuse}"
    );
    (true, false, detail)
}

/// `p` with its longest existing prefix resolved (`realpath(3)`), the rest as written.
fn resolved(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = p.to_path_buf();
    loop {
        if let Ok(r) = std::fs::canonicalize(&at) {
            return rest.iter().rev().fold(r, |acc: PathBuf, c| acc.join(c));
        }
        match (at.file_name().map(|n| n.to_os_string()), at.parent()) {
            (Some(n), Some(parent)) => {
                rest.push(n);
                at = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// The kernel's release is `major.minor` or later (`uname(2)`).
pub(crate) fn kernel_at_least(major: u32, minor: u32) -> bool {
    let u = rustix::system::uname();
    let r = u.release().to_string_lossy();
    let mut it = r.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse::<u32>().ok());
    (it.next().unwrap_or(0), it.next().unwrap_or(0)) >= (major, minor)
}

/// At the run's end (SPEC W2): the line to print and the report's `changes`, or `None`
/// (and the kept directory removed) when the payload changed nothing.
pub fn finish(run: &Run) -> Option<(String, serde_json::Value)> {
    let changes = match freeze::at_end(&run.kept, &run.dir).and_then(|()| changes::collect(&run.kept.upper(), &run.dir))
    {
        Ok(c) => c,
        Err(e) => {
            let q = crate::quote::quote(&run.kept.name).into_owned();
            let line = format!(
                "--cow: the kept changes {q} could not be read ({}); snug discard {q}",
                crate::error::one_line(&e)
            );
            return Some((line, serde_json::json!({ "name": run.kept.name, "error": crate::error::one_line(&e) })));
        }
    };
    if changes.is_empty() {
        let _ = trash::discard(&run.kept);
        return None;
    }
    let (a, m, d) = changes::counts(&changes);
    let q = crate::quote::quote(&run.kept.name).into_owned();
    let line = format!(
        "DIR kept as it was; the payload's changes are kept aside ({a} added, {m} modified, {d} deleted): \
         snug diff {q} shows them, snug apply {q} writes them into DIR, snug discard {q} drops them"
    );
    const SHOWN: usize = 100;
    let paths: Vec<serde_json::Value> = changes
        .iter()
        .take(SHOWN)
        // O10: a name that is not UTF-8 as `{"b64": …}` of its bytes, never with U+FFFD.
        .map(|c| serde_json::json!({ "kind": c.kind.word(), "path": crate::quote::text::Text::os(c.path.as_os_str()) }))
        .collect();
    let value = serde_json::json!({
        "name": run.kept.name,
        "added": a, "modified": m, "deleted": d,
        "total": changes.len(), "paths": paths,
        "diff": format!("snug diff {q}"), "apply": format!("snug apply {q}"), "discard": format!("snug discard {q}"),
    });
    Some((line, value))
}
