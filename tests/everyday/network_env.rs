//! SPEC N1, P1: `@net` carries the caller's proxy and CA variables and shows the files they
//! name read-only; `TZ` passes by default; a failed payload whose caller had a proxy or CA
//! variable the sandbox left out gets the `-e` hint, and nothing is said otherwise.

use crate::common::{code, workdir, Who};
use crate::everyday::{chown_to, each, fresh_dir, run, snug_with};

/// N1: `https_proxy` and a CA file outside every default view (/var/tmp) reach a `-p @net`
/// payload: the variable with the caller's value, the file readable at the same path.
/// Control: without `@net` neither is there.
/// Fails without the fix: `|` (both variables dropped) and `cat: '': No such file or
/// directory`, exit 1.
#[test]
fn n1_net_carries_proxy_and_ca_variables_and_their_files() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let ca_dir = fresh_dir(who, "ca");
        let ca = ca_dir.join("ca.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\nsnug-test\n").expect("ca");
        chown_to(who, &ca);
        let ca_s = ca.to_string_lossy().into_owned();
        let env =
            [("https_proxy", "http://proxy.invalid:3128"), ("SSL_CERT_FILE", ca_s.as_str()), ("NO_PROXY", "localhost")];
        let show = "echo \"$https_proxy|$NO_PROXY\"; cat \"$SSL_CERT_FILE\"";
        let out = run(&mut snug_with(who, dir.path(), &home, &env, &["-p", "@net", "--", "sh", "-c", show]));
        assert_eq!(code(out.status), 0, "{who:?}: {}", out.err);
        assert_eq!(
            out.out, "http://proxy.invalid:3128|localhost\n-----BEGIN CERTIFICATE-----\nsnug-test\n",
            "{who:?}: {}",
            out.err
        );
        let write = format!("echo x > {ca_s}");
        let ro = run(&mut snug_with(who, dir.path(), &home, &env, &["-p", "@net", "--", "sh", "-c", &write]));
        assert_ne!(code(ro.status), 0, "{who:?}: the CA file is writable");
        let without = run(&mut snug_with(who, dir.path(), &home, &env, &["--", "sh", "-c", show]));
        assert_eq!((code(without.status), without.out.as_str()), (1, "|\n"), "{who:?}: control: {}", without.err);
        let _ = std::fs::remove_dir_all(&home);
        let _ = std::fs::remove_dir_all(&ca_dir);
    });
}

/// P1: `TZ` passes by default. Control: a variable not on the list (`TZX`) does not.
/// Fails without the fix: `|` (TZ dropped).
#[test]
fn p1_tz_passes_by_default() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let env = [("TZ", "Pacific/Chatham"), ("TZX", "x")];
        let out = run(&mut snug_with(who, dir.path(), &home, &env, &["--", "sh", "-c", "echo \"$TZ|$TZX\""]));
        assert_eq!(out.out, "Pacific/Chatham|\n", "{who:?}: {}", out.err);
        let _ = std::fs::remove_dir_all(&home);
    });
}

/// The `-e` hint: a payload that fetches (a URL among its words) and fails while the caller's
/// `https_proxy` was left out gets one line naming it and `-p @net`; the same payload
/// succeeding, or failing with the variable passed (`-e https_proxy`), or failing without any
/// such variable, gets none; nor does a failing command that fetches nothing (O11), nor any
/// run under `-q`. Fails without the fix: no hint line.
#[test]
fn n1_dropped_proxy_variable_hint_after_a_failure_only() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let env = [("https_proxy", "http://proxy.invalid:3128")];
        let hint =
            "snug: hint: the sandbox has no network and left out https_proxy from your environment; -p @net gives";
        let fetch = ": https://example.invalid/pkg.tar.gz; exit 3";
        let failed = run(&mut snug_with(who, dir.path(), &home, &env, &["--", "sh", "-c", fetch]));
        assert_eq!(code(failed.status), 3);
        assert!(failed.err.starts_with(hint) && failed.err.lines().count() == 1, "{who:?}: {:?}", failed.err);
        for (env, args) in [
            (&env[..], &["--", "true"][..]),
            (&env[..], &["-e", "https_proxy", "--", "sh", "-c", fetch][..]),
            (&[][..], &["--", "sh", "-c", fetch][..]),
            (&env[..], &["--", "sh", "-c", "exit 3"][..]),
            (&env[..], &["-q", "--", "sh", "-c", fetch][..]),
        ] {
            let out = run(&mut snug_with(who, dir.path(), &home, env, args));
            assert_eq!(out.err, "", "{who:?}: {args:?}");
        }
        let _ = std::fs::remove_dir_all(&home);
    });
}
