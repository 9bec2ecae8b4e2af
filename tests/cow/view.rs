//! W1–W3: what the payload does to DIR stays off DIR, during the run and after; `snug diff`
//! lists each change with its kind and shows text as a unified diff; `snug apply` makes DIR
//! what the payload saw.

use super::{code, each, ready_then_wait, tree, wait_for, Case, LIMIT};
use crate::common::start;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

/// Adds, modifies, deletes, renames a directory, chmods, makes symlinks (one pointing
/// outside DIR) and a hard link, then copies its own view to the side place.
const PAYLOAD: &str = "set -e; echo new > n; echo more >> a; rm g; mv d e; chmod 700 h; \
    ln -s /etc/passwd out; ln -s a lnk; ln n hl; mkdir -p new/deep; echo x > new/deep/f; \
    cp -a . \"$SIDE/view\"; ";

fn seed(c: &Case) {
    c.seed("a", "hello\n");
    c.seed("d/f", "in d\n");
    c.seed("d/sub/g", "deeper\n");
    c.seed("g", "gone\n");
    c.seed("h", "mode\n");
}

/// W1, W2, W3, W4: DIR is byte-identical on the host while the payload sleeps mid-run and
/// after it; the end line and the report's `changes` give the counts and the commands;
/// `diff --stat` lists every change with its kind, `diff` shows `a` as a unified diff;
/// `apply` makes DIR equal to the copy the payload made of its own view, and the run is no
/// longer kept. Positive control: the same payload without `--cow` changes DIR mid-run
/// (the next test); with the overlay's mount left out, this one fails with "DIR changed on
/// the host mid-run".
#[test]
fn w1_payload_changes_stay_off_dir_and_apply_gives_its_view() {
    each(&|who| {
        let c = Case::new(who);
        seed(&c);
        let before = tree(c.dir());
        let report = c.side().join("report.json");
        let script = format!("{PAYLOAD}{}", ready_then_wait());
        let mut cmd = c.cow_with("w1", &["--report", report.to_str().unwrap()], &script);
        let run = start(&mut cmd);
        wait_for(&c.side().join("ready"));
        assert_eq!(tree(c.dir()), before, "{who:?}: DIR changed on the host mid-run");
        std::fs::write(c.side().join("go"), "").unwrap();
        let out = run.finish(LIMIT);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert_eq!(tree(c.dir()), before, "{who:?}: DIR changed on the host after the run");
        // W2: one line with the counts and the commands.
        assert!(out.err.contains("snug diff w1") && out.err.contains("snug apply w1"), "{who:?}: {}", out.err);
        assert!(out.err.contains("deleted"), "{who:?}: {}", out.err);
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let ch = &r["changes"];
        assert_eq!(ch["name"], "w1", "{who:?}: {r}");
        assert!(ch["added"].as_u64().unwrap() >= 6 && ch["deleted"].as_u64().unwrap() >= 2, "{who:?}: {ch}");
        assert_eq!(ch["apply"], "snug apply w1", "{who:?}: {ch}");

        // W3: the list of kept runs, then each change with its kind.
        let list = c.run(&["diff"]);
        assert!(list.out.contains("w1") && list.out.contains(c.dir().to_str().unwrap()), "{who:?}: {}", list.out);
        let stat = c.run(&["diff", "w1", "--stat"]);
        assert_eq!(code(&stat), 0, "{who:?}: {}", stat.err);
        for line in [
            "M a",
            "A n",
            "D g",
            "D d/",
            "A e/",
            "A e/f",
            "A e/sub/g",
            "m h (mode 644 -> 700)",
            "A out -> /etc/passwd",
            "A lnk -> a",
            "A hl",
            "A new/deep/f",
        ] {
            assert!(stat.out.lines().any(|l| l == line), "{who:?}: no {line:?} in\n{}", stat.out);
        }
        let diff = c.run(&["diff", "w1", "a"]);
        assert!(
            diff.out.contains("--- a/a\n+++ b/a\n") && diff.out.contains(" hello\n+more\n"),
            "{who:?}: {}",
            diff.out
        );
        assert!(!diff.out.contains("b/n"), "{who:?}: PATH did not narrow the diff: {}", diff.out);

        // W4: DIR becomes what the payload saw.
        let applied = c.run(&["apply", "w1"]);
        assert_eq!(code(&applied), 0, "{who:?}: {}", applied.err);
        assert_eq!(tree(c.dir()), tree(&c.side().join("view")), "{who:?}: DIR differs from the payload's view");
        let ino = |n: &str| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(c.dir().join(n)).unwrap());
        assert_eq!(ino("n"), ino("hl"), "{who:?}: the payload's hard link is not a link in DIR");
        let list = c.run(&["diff"]);
        assert!(!list.out.contains("w1"), "{who:?}: still kept after apply: {}", list.out);
    });
}

/// Positive control for the row above: without `--cow` the same payload changes DIR.
#[test]
fn w1_control_without_cow_dir_changes() {
    each(&|who| {
        let c = Case::new(who);
        seed(&c);
        let before = tree(c.dir());
        let side = c.side().to_str().unwrap().to_string();
        let env = format!("SIDE={side}");
        let script = format!("{PAYLOAD}{}", ready_then_wait());
        let run = start(&mut c.snug(&["--rw", &side, "-e", &env, "--", "sh", "-c", &script]));
        wait_for(&c.side().join("ready"));
        let mid = tree(c.dir());
        std::fs::write(c.side().join("go"), "").unwrap();
        let out = run.finish(LIMIT);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert_ne!(mid, before, "{who:?}: control: the payload changed nothing");
    });
}

/// W2: a `--cow` run that changed nothing says nothing and keeps nothing.
#[test]
fn w2_no_change_keeps_nothing() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("a", "x\n");
        let out = c.run(&["--cow", "--name", "calm", "--", "cat", "a"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert!(out.err.is_empty(), "{who:?}: said {:?}", out.err);
        // The emptied kept directory goes to `.trash`, which is no run (B10).
        let kept: Vec<_> = std::fs::read_dir(c.kept()).map(|d| d.flatten().collect()).unwrap_or_default();
        let kept: Vec<_> = kept.into_iter().filter(|e| e.file_name() != ".trash").collect();
        assert!(kept.is_empty(), "{who:?}: kept {kept:?}");
        assert_eq!(c.run(&["diff"]).out, "no kept changes\n");
    });
}

/// W3, W4: a binary file is named as such, a type change says what became what, and both
/// directions of a type change apply (a file where a directory was and the reverse, with
/// what the new directory holds). Positive control: with a path under a file that becomes
/// a directory taken for a conflict, apply refused `t/y` with ENOTDIR.
#[test]
fn w3_binary_and_type_changes() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("bin", "a\0b");
        c.seed("t", "was a file\n");
        c.seed("dd/x", "in a directory\n");
        let script = "printf 'c\\0d' > bin; rm t; mkdir t; echo y > t/y; rm -r dd; echo now > dd";
        let out = c.cow("w3", script).output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let diff = c.run(&["diff", "w3"]);
        assert!(diff.out.contains("Binary files a/bin and b/bin differ"), "{who:?}: {}", diff.out);
        let stat = c.run(&["diff", "w3", "--stat"]);
        assert!(stat.out.contains("T t/ (file -> directory)"), "{who:?}: {}", stat.out);
        assert!(stat.out.contains("T dd (directory -> file)"), "{who:?}: {}", stat.out);
        let applied = c.run(&["apply", "w3"]);
        assert_eq!(code(&applied), 0, "{who:?}: {}", applied.err);
        assert_eq!(std::fs::read_to_string(c.dir().join("t/y")).unwrap(), "y\n", "{who:?}");
        assert_eq!(std::fs::read_to_string(c.dir().join("dd")).unwrap(), "now\n", "{who:?}");
        assert_eq!(std::fs::read(c.dir().join("bin")).unwrap(), b"c\0d", "{who:?}");
    });
}

/// W3, O11: names the payload chose are shown with their control characters escaped, in
/// `--stat` and in the unified diff: a name holding `ESC [2K` (erase the line) drives no
/// terminal, and one holding a newline adds no line of its own, so a name cannot fake or
/// hide a change; such names are in ANSI-C quotes, so one with a newline never looks like
/// one holding the four characters `\x0a`, and pasted back it names its file. Without the
/// fix both came out raw: the output held ESC and a line `b` that was no change; with the
/// escapes but no quotes, `a\nb` and `a\x0ab` were shown alike.
#[test]
fn w3_names_are_shown_escaped() {
    each(&|who| {
        let c = Case::new(who);
        let script =
            r#"touch "$(printf 'e\033[2Kx')" "$(printf 'a\nb')" 'a\x0ab'; ln -s "$(printf 't\033]0;x\007')" l"#;
        let out = c.cow("w3n", script).output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let stat = c.run(&["diff", "w3n", "--stat"]);
        assert_eq!(code(&stat), 0, "{who:?}: {}", stat.err);
        assert!(!stat.out.contains('\x1b') && !stat.out.contains('\x07'), "{who:?}: raw control: {:?}", stat.out);
        for line in stat.out.lines() {
            let change = line.len() > 2 && "AMDT".contains(&line[..1]) && &line[1..2] == " ";
            assert!(change || line.ends_with(" deleted"), "{who:?}: a line that is no change: {line:?}");
        }
        assert!(stat.out.contains("A $'a\\x0ab'\n"), "{who:?}: {:?}", stat.out);
        assert!(stat.out.contains("A a\\x0ab\n"), "{who:?}: the literal name: {:?}", stat.out);
        assert!(stat.out.contains("A $'e\\x1b[2Kx'\n"), "{who:?}: {:?}", stat.out);
        assert!(stat.out.contains("4 changes: 4 added"), "{who:?}: {:?}", stat.out);
        let diff = c.run(&["diff", "w3n"]);
        assert_eq!(code(&diff), 0, "{who:?}: {}", diff.err);
        assert!(!diff.out.contains('\x1b') && !diff.out.contains('\x07'), "{who:?}: raw control: {:?}", diff.out);
        assert!(diff.out.contains("diff --snug a/$'a\\x0ab' b/$'a\\x0ab'\n"), "{who:?}: {:?}", diff.out);
        let one = c.run(&["diff", "w3n", "--stat", "a\nb"]);
        assert!(one.out.contains("A $'a\\x0ab'\n") && one.out.contains("1 change"), "{who:?}: {:?}", one.out);
    });
}

/// W2, O10: the report's `changes.paths` gives a name that is not UTF-8 as `{"b64": …}` of
/// its bytes and a valid one as a plain string. Without the fix the name `n\xffx` came out
/// as the string "n\u{fffd}x".
#[test]
fn w2_o10_non_utf8_changed_name_as_b64() {
    each(&|who| {
        let c = Case::new(who);
        let report = c.side().join("report.json");
        let script = r#"touch "$(printf 'n\377x')" plain"#;
        let out = c.cow_with("w2b", &["--report", report.to_str().unwrap()], script).output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let paths = r["changes"]["paths"].as_array().cloned().unwrap_or_default();
        let path_of = |v: &serde_json::Value| v["path"].clone();
        assert!(paths.iter().map(path_of).any(|p| p == serde_json::json!({"b64": "bv94"})), "{who:?}: {paths:?}");
        assert!(paths.iter().map(path_of).any(|p| p == "plain"), "{who:?}: {paths:?}");
        assert!(!r["changes"].to_string().contains('\u{fffd}'), "{who:?}: {}", r["changes"]);
    });
}

/// W3, W4: a payload's 1 GiB sparse file costs `snug diff` neither memory nor time (its size
/// is named instead of its bytes read; `snug diff` runs with 256 MiB of address space) and
/// `snug apply` keeps it sparse in DIR. Without the fix `snug diff` tried to read the whole
/// file (under the limit the read failed and the file was called binary, with no size) and
/// `apply` wrote 1 GiB of real blocks.
#[test]
fn w3_w4_huge_sparse_file_is_cheap_to_diff_and_apply() {
    use std::os::unix::process::CommandExt;
    each(&|who| {
        let c = Case::new(who);
        let out = c.cow("w3s", "truncate -s 1G huge").output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let mut diff = c.snug(&["diff", "w3s"]);
        // SAFETY: setrlimit(2) is async-signal-safe and touches only the child's own limits.
        unsafe {
            diff.pre_exec(|| {
                let lim = libc::rlimit { rlim_cur: 256 << 20, rlim_max: 256 << 20 };
                match libc::setrlimit(libc::RLIMIT_AS, &lim) {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            });
        }
        let since = std::time::Instant::now();
        let d = crate::common::run_bounded(&mut diff, LIMIT);
        let took = since.elapsed();
        assert_eq!(code(&d), 0, "{who:?}: {}", d.err);
        assert!(d.out.contains("(1073741824 bytes: too large to show"), "{who:?}: {}", d.out);
        assert!(took < Duration::from_secs(10), "{who:?}: snug diff took {took:?}");
        let a = c.run(&["apply", "w3s"]);
        assert_eq!(code(&a), 0, "{who:?}: {}", a.err);
        let m = std::fs::metadata(c.dir().join("huge")).unwrap();
        assert_eq!(m.len(), 1 << 30, "{who:?}");
        assert!(m.blocks() * 512 < 16 << 20, "{who:?}: {} bytes of blocks written", m.blocks() * 512);
    });
}

/// W1: `snug exec` into a `--cow` run sees the payload's view (its writes, DIR's untouched
/// host copy unchanged), and `snug ps` shows the run as `+cow`.
#[test]
fn w1_exec_and_ps_see_the_cow_run() {
    each(&|who| {
        let c = Case::new(who);
        c.seed("a", "host\n");
        let name = format!("w1x{}", crate::common::marker());
        let script = format!("echo payload > a; {}", ready_then_wait());
        let run = start(&mut c.cow(&name, &script));
        wait_for(&c.side().join("ready"));
        let seen = c.run(&["exec", &name, "--", "cat", "a"]);
        let ps = c.run(&["ps"]);
        std::fs::write(c.side().join("go"), "").unwrap();
        assert_eq!(code(&run.finish(LIMIT)), 0);
        assert_eq!(seen.out, "payload\n", "{who:?}: {}", seen.err);
        assert_eq!(std::fs::read_to_string(c.dir().join("a")).unwrap(), "host\n", "{who:?}");
        let line = ps.out.lines().find(|l| l.starts_with(&name)).unwrap_or_default().to_string();
        assert!(line.contains("+cow"), "{who:?}: {}", ps.out);
        assert_eq!(code(&c.run(&["discard", &name])), 0);
    });
}

/// W1: the project file's `cow = true` (allowed with `snug allow`) keeps the changes aside
/// as `--cow` does.
#[test]
fn w1_project_file_cow_key() {
    each(&|who| {
        let c = Case::new(who);
        c.seed(".snug.toml", "cow = true\n");
        assert_eq!(code(&c.run(&["allow", "."])), 0);
        let out = c.run(&["--name", "w1p", "--", "sh", "-c", "echo x > made"]);
        assert_eq!(code(&out), 0, "{who:?}: {}", out.err);
        assert!(!c.dir().join("made").exists(), "{who:?}: DIR written");
        assert!(out.err.contains("snug apply w1p"), "{who:?}: {}", out.err);
        assert!(c.run(&["diff", "w1p", "--stat"]).out.contains("A made"), "{who:?}");
    });
}
