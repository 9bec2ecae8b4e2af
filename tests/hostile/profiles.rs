//! P4 and R4: profile files that are not plain small files, and deep include chains, end
//! snug with 77 at once, one `snug: ` line naming the file; `profile list` marks them.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A config dir below `dir` with the profiles directory made by `make`.
fn config(who: Who, dir: &Path, make: impl FnOnce(&Path)) -> PathBuf {
    let conf = dir.join("conf");
    let profiles = conf.join("snug/profiles.d");
    std::fs::create_dir_all(&profiles).unwrap();
    make(&profiles);
    crate::hostile::args::chown_tree(who, dir);
    conf
}

fn snug_with(who: Who, dir: &Path, conf: &Path, args: &[&str]) -> (Out, Duration) {
    let mut c = snug_cmd(who, dir, args);
    // As in many a Rust developer's shell: errors must not capture backtraces (P4's
    // `profile list` of a 20,000-deep chain took 6–8 s with them, past the bound below).
    c.env("XDG_CONFIG_HOME", conf).env("RUST_BACKTRACE", "1");
    let t = Instant::now();
    // Bounded well above 1 s so a hang fails here rather than stalling the suite.
    let o = run_bounded(&mut c, Duration::from_secs(15));
    (o, t.elapsed())
}

fn refused(who: Who, what: &str, o: &Out, took: Duration, file: &str) {
    assert_eq!(code(o.status), 77, "{who:?} {what}: {}", o.err);
    assert_eq!(o.err.lines().count(), 1, "{who:?} {what}: {}", o.err);
    assert!(o.err.starts_with("snug: ") && o.err.contains(file), "{who:?} {what}: {}", o.err);
    assert!(took < Duration::from_secs(1), "{who:?} {what}: took {took:?}");
}

/// P4: a FIFO named NAME.toml, a symlink to /dev/zero and a 20,000-deep include chain each
/// exit 77 within 1 s. Positive control: before this change the FIFO hung (the test's bound
/// fired), /dev/zero grew until the OOM killer, the chain aborted with 134.
#[test]
fn p4_hostile_profile_files_exit_77_at_once() {
    for who in everyone() {
        let dir = workdir(who);
        let conf = config(who, dir.path(), |p| {
            let mode = rustix::fs::Mode::from_raw_mode(0o644);
            rustix::fs::mkfifoat(rustix::fs::CWD, p.join("fifo.toml"), mode).expect("mkfifo");
            std::os::unix::fs::symlink("/dev/zero", p.join("zero.toml")).unwrap();
            for i in 0..20_000 {
                std::fs::write(p.join(format!("d{i}.toml")), format!("include = [\"d{}\"]\n", i + 1)).unwrap();
            }
            std::fs::write(p.join("big.toml"), vec![b'#'; 1024 * 1024 + 1]).unwrap();
        });
        for (name, file) in [("fifo", "fifo.toml"), ("zero", "zero.toml"), ("d0", "d32.toml"), ("big", "big.toml")] {
            let (o, took) = snug_with(who, dir.path(), &conf, &["-p", name, "--", "true"]);
            refused(who, name, &o, took, file);
            let (o, took) = snug_with(who, dir.path(), &conf, &["profile", "show", name]);
            if name != "d0" {
                refused(who, name, &o, took, file); // show reads one file; includes are not followed
            }
        }
        let (o, took) = snug_with(who, dir.path(), &conf, &["profile", "list"]);
        assert!(o.status.success() && took < Duration::from_secs(5), "{who:?}: {} {took:?}", o.err);
        for (name, why) in
            [("fifo", "not a regular file (a FIFO)"), ("zero", "not a regular file (a device)"), ("big", "larger than")]
        {
            let line = o.out.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap_or_default();
            assert!(line.contains("(invalid: ") && line.contains(why), "{who:?}: {line:?}");
        }
    }
}
