//! W1 with the rest of snug: `-p @net`, `--net-allow`, `--jobs` and the protected paths of
//! a writable grant outside DIR keep working in a `--cow` run, whose DIR stays unwritten.

use super::{each, Case};
use crate::common::Who;

/// W1: with `-p @net` the sandbox has pasta's interface besides `lo` (the side place holds
/// `/proc/net/dev` as the payload saw it) and DIR stays unwritten, its change kept. Positive
/// control: the same run without `-p @net` sees `lo` alone, so the check tells the two apart.
#[test]
fn w1_cow_with_net_profile() {
    each(&|who| {
        let c = Case::new(who);
        let script = "echo x > made; cat /proc/net/dev > \"$SIDE/nets\"";
        let names = |c: &Case| -> Vec<String> {
            let text = std::fs::read_to_string(c.side().join("nets")).unwrap();
            text.lines().filter_map(|l| l.split_once(':')).map(|(n, _)| n.trim().to_string()).collect()
        };
        let out = c.cow_with("w1n", &["-p", "@net"], script).output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let nets = names(&c);
        assert!(nets.iter().any(|n| n != "lo"), "{who:?}: no interface but lo: {nets:?}");
        assert!(!c.dir().join("made").exists(), "{who:?}: DIR written");
        assert!(c.run(&["diff", "w1n", "--stat"]).out.contains("A made"), "{who:?}");
        let control = c.cow_with("w1m", &[], script).output().unwrap();
        assert!(control.status.success(), "{who:?}: {}", String::from_utf8_lossy(&control.stderr));
        assert_eq!(names(&c), ["lo"], "{who:?}: control");
    });
}

/// W1: with `--net-allow` the payload reads snug's own `/etc/hosts` (a file snug writes,
/// bound by descriptor outside DIR), so the network of snug's own is up, and DIR stays
/// unwritten, its change kept.
#[test]
fn w1_cow_with_net_allow() {
    each(&|who| {
        let c = Case::new(who);
        let script = "echo x > made; cat /etc/hosts > \"$SIDE/hosts\"";
        let out = c.cow_with("w1a", &["--net-allow", "pkgs.example"], script).output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let hosts = std::fs::read_to_string(c.side().join("hosts")).unwrap();
        assert!(hosts.contains("snug --net-allow"), "{who:?}: {hosts}");
        assert!(!c.dir().join("made").exists(), "{who:?}: DIR written");
        assert!(c.run(&["diff", "w1a", "--stat"]).out.contains("A made"), "{who:?}");
    });
}

/// W1, W2: with `--jobs wait` what a background job writes after the main process ended is
/// kept too: the changes are read once the sandbox is gone. Positive control: with the
/// default `--jobs kill` the late file is never written, so the check tells the two apart.
#[test]
fn w1_cow_with_jobs_wait_keeps_late_writes() {
    each(&|who| {
        let c = Case::new(who);
        let script = "(sleep 0.3; echo late > late) & echo now > now";
        let out = c.cow_with("w1j", &["--jobs", "wait"], script).output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let stat = c.run(&["diff", "w1j", "--stat"]).out;
        assert!(stat.contains("A now") && stat.contains("A late"), "{who:?}: {stat}");
        assert!(!c.dir().join("late").exists() && !c.dir().join("now").exists(), "{who:?}: DIR written");
        let control = c.cow_with("w1k", &[], script).output().unwrap();
        assert!(control.status.success(), "{who:?}: {}", String::from_utf8_lossy(&control.stderr));
        let stat = c.run(&["diff", "w1k", "--stat"]).out;
        assert!(stat.contains("A now") && !stat.contains("A late"), "{who:?}: control: {stat}");
    });
}

/// W1, P8: a writable grant outside DIR keeps its protected paths read-only in a `--cow`
/// run (only DIR's own are left to `snug apply`). Positive control: a plain file beside the
/// hook in the same grant is written, so the refusal is the protection's.
#[test]
fn w1_cow_keeps_protection_of_other_grants() {
    each(&|who| {
        let c = Case::new(who);
        let other = crate::common::workdir(who);
        std::fs::create_dir_all(other.path().join(".git/hooks")).unwrap();
        if who == Who::User {
            let (u, g) = crate::common::test_user();
            let _ = std::process::Command::new("chown").arg("-R").arg(format!("{u}:{g}")).arg(other.path()).status();
        }
        let o = other.path().to_str().unwrap();
        let script = format!("echo evil > {o}/.git/hooks/pre-commit 2>/dev/null; echo ok > {o}/plain; echo x > made");
        let out = c.cow_with("w1g", &["--rw", o], &script).output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!other.path().join(".git/hooks/pre-commit").exists(), "{who:?}: hook written in the grant");
        assert_eq!(std::fs::read_to_string(other.path().join("plain")).unwrap(), "ok\n", "{who:?}: control");
        assert!(!c.dir().join("made").exists(), "{who:?}: DIR written");
    });
}

/// W1, B10: a profile that asks for what the command line did not (`allow_userns`, whose
/// cgroups differ) makes snug start nest again: the overlay is mounted in the nest that runs,
/// so DIR stays unwritten and the change is kept. Positive controls: with the early helper
/// started for the first nest as well, the run failed ("cannot mount the overlay …: invalid
/// argument": the first nest's overlay held the layers); joining that helper for the second
/// nest left it without an overlay, and the payload's `made` reached DIR.
#[test]
fn w1_b10_a_nest_started_again_gets_the_overlay() {
    each(&|who| {
        let c = Case::new(who);
        let cfg = c.side().join("cfg/snug/profiles.d");
        std::fs::create_dir_all(&cfg).unwrap();
        std::fs::write(cfg.join("nested.toml"), "allow_userns = true\n").unwrap();
        c.own(c.side());
        let mut cmd = c.cow_with("w1r", &["-p", "nested"], "echo x > made");
        cmd.env("XDG_CONFIG_HOME", c.side().join("cfg"));
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!c.dir().join("made").exists(), "{who:?}: DIR written");
        assert!(c.run(&["diff", "w1r", "--stat"]).out.contains("A made"), "{who:?}");
    });
}
