//! `--net-allow` (SPEC N5–N8): a network of snug's own, each row as root and as the
//! unprivileged user, with real clients and servers in network namespaces the test makes
//! (`net_allow/lab.rs`): documentation addresses only, nothing leaves the machine. Rows that
//! need the lab need root and say so when skipped.
//!
//! Split by concern: `matrix` (N5: every client, allowed and refused), `tls` (N5 over https,
//! N6's DoH), `escape` (N6),
//! `seen` (N7), `lifecycle` (N8, N3); flag and key handling are here.

use crate::common;
use crate::net::lab;

#[path = "net_allow/lab.rs"]
mod own_lab;

mod bounds;
mod escape;
mod lifecycle;
mod matrix;
mod seen;
mod tls;

use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(30);

/// N5: `-p @net` with `--net-allow` on the command line → 64; one of them from a profile or
/// `.snug.toml` → 77; a pattern not understood → 64 naming it; more than 256 ports → 64
/// naming the pattern that passes the bound; a bad `net_allow` in `.snug.toml` → 77. Control:
/// the same pattern alone runs.
#[test]
fn n5_flag_and_key_checks() {
    let who = Who::Root;
    let dir = workdir(who);
    let state = tempfile::tempdir().expect("tempdir");
    let in_dir = |args: &[&str]| {
        let mut c = snug_cmd(who, dir.path(), args);
        c.env("XDG_STATE_HOME", state.path());
        c
    };
    let run_args = |args: &[&str]| run_bounded(&mut in_dir(args), LIMIT);
    let o = run_args(&["-p", "@net", "--net-allow", "pkgs.example", "--", "true"]);
    assert_eq!(code(o.status), 64, "{}", o.err);
    assert!(o.err.starts_with("snug: ") && o.err.contains("@net") && o.err.lines().count() == 1, "{}", o.err);
    let o = run_args(&["--net-allow", "pkgs.example:0", "--", "true"]);
    assert_eq!(code(o.status), 64, "{}", o.err);
    assert!(o.err.contains("pkgs.example:0"), "{}", o.err);
    let o = run_args(&["--net-allow", "a.example:1000-1254", "--net-allow", "b.example:2000-2001", "--", "true"]);
    assert_eq!(code(o.status), 64, "{}", o.err);
    assert!(o.err.contains("b.example:2000-2001") && o.err.contains("256"), "{}", o.err);
    let o = run_args(&["--net-allow", "pkgs.example", "--", "true"]);
    assert_eq!(code(o.status), 0, "control: {}", o.err);

    std::fs::write(dir.path().join(".snug.toml"), "net_allow = [\"pkgs.example:22\"]\n").expect("write");
    let o = run_args(&["--no-project", "-p", "@net", "--", "true"]);
    assert_eq!(code(o.status), 0, "control without the project's file: {}", o.err);
    let allowed = run_args(&["allow", "."]);
    assert_eq!(code(allowed.status), 0, "snug allow: {}", allowed.err);
    let o = run_args(&["-p", "@net", "--", "true"]);
    assert_eq!(code(o.status), 77, "{}", o.err);
    assert!(o.err.contains("net_allow") && o.err.contains("@net"), "{}", o.err);
    let o = run_args(&["-n", "--json"]);
    assert_eq!(code(o.status), 0, "{}", o.err);
    let v: serde_json::Value = serde_json::from_str(&o.out).expect("json");
    let shown = v["net-allow"].to_string();
    assert!(shown.contains("pkgs.example:22 ports 22"), "{shown}");
    let o = run_args(&["-n", "--net-allow", "*.cdn.example"]);
    assert!(o.out.contains("*.cdn.example ports 443,80") && o.out.contains("listening on tcp 22,80,443"), "{}", o.out);
    assert!(o.out.contains("network:  snug's own"), "{}", o.out);

    std::fs::write(dir.path().join(".snug.toml"), "net_allow = [\"bad name\"]\n").expect("write");
    let _ = run_args(&["allow", "."]);
    let o = run_args(&["--", "true"]);
    assert_eq!(code(o.status), 77, "{}", o.err);
    assert!(o.err.contains("net_allow") && o.err.contains("bad name"), "{}", o.err);
}
