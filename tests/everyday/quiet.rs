//! SPEC O11: quiet by default, `-q` quieter still; a summary never names writes nobody misses
//! and never suggests a grant that lets the payload write what the host runs.

use crate::common::{code, workdir, Who};
use crate::everyday::{each, fresh_dir, run, snug_with};

/// O11: shell history, pytest's and V8's temporary files and cargo's bookkeeping are not
/// reported (exit 0, empty stderr); writes to `~/.cargo` and `~/.bashrc` are reported with no
/// grant (never `--rw ~/.cargo`); `-q` drops the summary of what is reported (the report keeps
/// it). Control: a plain file in `/tmp` is summarised with `-p @tmp-shared`. Without the fix
/// the first run, which succeeded, printed "the payload wrote 6 files …: ~/.cargo 2 files
/// (keep: mkdir -p ~/.cargo and --rw ~/.cargo), /tmp/pytest-of-u 1 file …".
#[test]
fn o11_no_noise_no_dangerous_grant_and_q() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let noise = "echo ls > ~/.bash_history; echo x > ~/.python_history; mkdir -p /tmp/pytest-of-u/p0 \
                     /tmp/v8-compile-cache-0 ~/.cargo; echo > /tmp/pytest-of-u/p0/t; echo > /tmp/v8-compile-cache-0/c; \
                     echo > ~/.cargo/.global-cache; echo > ~/.cargo/.package-cache";
        let out = run(&mut snug_with(who, dir.path(), &home, &[], &["--", "sh", "-c", noise]));
        assert_eq!((code(out.status), out.err.as_str()), (0, ""), "{who:?}: noise is not reported");

        let host_runs = "mkdir -p ~/.cargo && echo 'export PATH=/x' > ~/.cargo/env && echo alias > ~/.bashrc";
        let out = run(&mut snug_with(who, dir.path(), &home, &[], &["--", "sh", "-c", host_runs]));
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        assert!(out.err.contains("~/.cargo 1 file (keep: none offered"), "{who:?}: {}", out.err);
        assert!(out.err.contains("~/.bashrc 1 file (keep: none offered"), "{who:?}: {}", out.err);
        assert!(!out.err.contains("--rw ~"), "{who:?}: a grant the host runs: {}", out.err);

        let report = dir.path().join("r.json");
        let plain = ["--report", report.to_str().unwrap(), "--", "sh", "-c", "echo > /tmp/out.txt"];
        let out = run(&mut snug_with(who, dir.path(), &home, &[], &plain));
        assert!(out.err.contains("/tmp/out.txt 1 file (keep: -p @tmp-shared)"), "{who:?} control: {}", out.err);
        let mut q = vec!["-q"];
        q.extend(plain);
        let out = run(&mut snug_with(who, dir.path(), &home, &[], &q));
        assert_eq!((code(out.status), out.err.as_str()), (0, ""), "{who:?}: -q");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(v["discarded"]["files"], 1, "{who:?}: the report keeps it: {v}");
        let _ = std::fs::remove_dir_all(&home);
    });
}
