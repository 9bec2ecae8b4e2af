//! Policy resolution against a fake host (SPEC P1–P3).

use std::path::{Path, PathBuf};

use super::*;
use crate::error::{code_of, one_line, USAGE};
use crate::host::FakeHost;

fn request(dir: &str, profiles: &[&str], no_defaults: bool) -> Request {
    Request {
        profiles: profiles.iter().map(|s| s.to_string()).collect(),
        no_defaults,
        dir: Some(PathBuf::from(dir)),
        host_env: [("HOME", "/home/u"), ("PATH", "/evil"), ("LC_TIME", "C"), ("LANG", "C.UTF-8"), ("TOKEN", "s")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        config_dirs: vec![PathBuf::from("/cfg")],
        grants: Default::default(),
        project: false,
    }
}

fn mounts(p: &Policy) -> Vec<String> {
    p.mounts
        .iter()
        .map(|m| match (m.kind, &m.src) {
            (MountKind::Symlink, Some(t)) => {
                format!("symlink {} -> {}", m.dest.display(), t.display())
            }
            (kind, _) => format!("{kind:?} {}", m.dest.display()).to_lowercase(),
        })
        .collect()
}

fn err_of(host: &FakeHost, req: &Request) -> (i32, String) {
    let e = resolve_with(req, host).expect_err("should fail");
    (code_of(&e), one_line(&e))
}

#[test]
fn p1_defaults_on_a_merged_usr_host() {
    let p = resolve_with(&request("/home/u/proj", &[], false), &FakeHost::debian()).expect("ok");
    assert_eq!(p.profiles, ["@sys", "@home", "@cwd-rw", "@parent-ro"]);
    assert_eq!(p.target, PathBuf::from("/home/u/proj"));
    let m = mounts(&p);
    // Parent == HOME: @home's tmpfs wins over @parent-ro, DIR is bound after it.
    let pos = |s: &str| m.iter().position(|x| x == s).unwrap_or_else(|| panic!("{s} not in {m:?}"));
    assert!(pos("tmpfs /home/u") < pos("rw /home/u/proj"));
    assert!(!m.contains(&"ro /home/u".to_string()));
    for want in [
        "symlink /bin -> usr/bin",
        "symlink /lib64 -> usr/lib64",
        "ro /usr",
        "dev /dev",
        "proc /proc",
        "tmpfs /tmp",
        "ro /etc/passwd",
    ] {
        pos(want);
    }
    // Absent on the host: /lib32, /libx32, gai.conf; dangling: resolv.conf.
    assert!(!m.iter().any(|x| x.contains("lib32") || x.contains("gai.conf") || x.contains("resolv.conf")));
    assert!(!p.net);
}

#[test]
fn p1_mounts_are_sorted_parents_first() {
    let p = resolve_with(&request("/home/u/proj/sub", &[], false), &FakeHost::debian()).expect("ok");
    for (i, a) in p.mounts.iter().enumerate() {
        for b in &p.mounts[i + 1..] {
            assert!(!a.dest.starts_with(&b.dest), "{} after its parent {}", a.dest.display(), b.dest.display());
        }
    }
    let m = mounts(&p);
    assert!(m.contains(&"ro /home/u/proj".to_string()), "{m:?}");
}

#[test]
fn p1_clean_environment() {
    let p = resolve_with(&request("/home/u/proj", &[], false), &FakeHost::debian()).expect("ok");
    let keys: Vec<&str> = p.env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["HOME", "PATH", "LANG", "LC_TIME", "TMPDIR"]);
    assert_eq!(p.env[1].1, SANE_PATH);
}

/// P9: DIR may not be $HOME, above it, or /: 64 saying to choose a project directory. A
/// DIR below the home is fine, and the home stays an empty tmpfs.
#[test]
fn p9_dir_may_not_be_home_or_above_it() {
    for dir in ["/home/u", "/home/u/proj/../", "/home", "/"] {
        let e = resolve_with(&request(dir, &[], false), &FakeHost::debian()).expect_err(dir);
        let f = e.downcast_ref::<crate::error::Failure>().expect("failure");
        assert_eq!(f.code, USAGE, "{dir}: {e}");
        assert!(f.message.contains("choose a project directory"), "{dir}: {e}");
    }
    let p = resolve_with(&request("/home/u/proj", &[], false), &FakeHost::debian()).expect("ok");
    assert!(mounts(&p).contains(&"tmpfs /home/u".to_string()) && mounts(&p).contains(&"rw /home/u/proj".to_string()));
}

/// DIR = /tmp/w: /tmp stays the private tmpfs (DIR's parent read-only would be the host's
/// /tmp); @tmp-shared still shares it.
#[test]
fn p1_dir_directly_in_tmp_keeps_tmp_private() {
    let host = FakeHost::debian().dir("/tmp/w");
    let p = resolve_with(&request("/tmp/w", &[], false), &host).expect("ok");
    let m = mounts(&p);
    assert!(m.contains(&"tmpfs /tmp".to_string()) && m.contains(&"rw /tmp/w".to_string()), "{m:?}");
    assert!(!m.contains(&"ro /tmp".to_string()), "{m:?}");
    let sub = FakeHost::debian().dir("/tmp/w").dir("/tmp/w/sub");
    let deeper = resolve_with(&request("/tmp/w/sub", &[], false), &sub).expect("ok");
    let m = mounts(&deeper);
    assert!(m.contains(&"tmpfs /tmp".to_string()) && m.contains(&"ro /tmp/w".to_string()), "{m:?}");
    let shared = resolve_with(&request("/tmp/w", &["@tmp-shared"], false), &host).expect("ok");
    assert!(mounts(&shared).contains(&"rw /tmp".to_string()));
}

#[test]
fn p1_root_dir_is_refused() {
    // A usage error since P9 (/ holds the home directory); a ro or rw grant of / stays 77.
    let e = resolve_with(&request("/", &[], false), &FakeHost::debian()).expect_err("DIR=/ must be refused");
    assert_eq!(crate::error::code_of(&e), USAGE);
    assert!(crate::error::one_line(&e).contains("choose a project directory"), "{}", crate::error::one_line(&e));
}

#[test]
fn p1_dir_below_root_gets_no_parent_mount() {
    let p = resolve_with(&request("/tmp", &[], false), &FakeHost::debian()).expect("ok");
    assert!(p.mounts.iter().all(|m| m.dest != Path::new("/")), "{:?}", mounts(&p));
    assert!(mounts(&p).contains(&"rw /tmp".to_string()), "{:?}", mounts(&p));
}

#[test]
fn p2_no_defaults_keeps_only_base_mounts() {
    let p = resolve_with(&request("/home/u/proj", &["@net"], true), &FakeHost::debian()).expect("ok");
    assert_eq!(p.profiles, ["@net"]);
    assert_eq!(mounts(&p), ["dev /dev", "proc /proc", "tmpfs /tmp"]);
    assert!(p.net);
}

#[test]
fn p2_union_ro_and_rw_becomes_rw_and_duplicates_collapse() {
    let host = FakeHost::debian()
        .file("/cfg/a.toml", "ro = [\"/srv/data\"]\ninclude = [\"b\", \"@sys\"]")
        .file(
            "/cfg/b.toml",
            "rw = [\"/srv/data/\"]\ntmpfs = [\"{target}/node_modules\"]\n[env]\nEDITOR = \"vi\"\nPATH = \"/x\"",
        )
        .dir("/srv/data");
    let p = resolve_with(&request("/home/u/proj", &["a", "@sys", "a"], false), &host).expect("ok");
    assert_eq!(p.profiles, ["@sys", "@home", "@cwd-rw", "@parent-ro", "a", "b"]);
    let data: Vec<&Mount> = p.mounts.iter().filter(|m| m.dest == Path::new("/srv/data")).collect();
    assert_eq!(data.len(), 1);
    assert_eq!((data[0].kind, data[0].profile.as_str()), (MountKind::Rw, "b"));
    assert!(mounts(&p).contains(&"tmpfs /home/u/proj/node_modules".to_string()));
    assert!(p.env.contains(&("EDITOR".to_string(), "vi".to_string())));
    assert!(p.env.contains(&("PATH".to_string(), "/x".to_string())));
}

#[test]
fn p3_include_cycle_names_the_chain() {
    let host = FakeHost::debian()
        .file("/cfg/a.toml", "include = [\"b\"]")
        .file("/cfg/b.toml", "include = [\"c\"]")
        .file("/cfg/c.toml", "include = [\"a\"]");
    let (code, msg) = err_of(&host, &request("/home/u/proj", &["a"], false));
    assert_eq!((code, msg.as_str()), (POLICY, "include cycle: a -> b -> c -> a"));
}

#[test]
fn p3_bad_profiles_exit_77() {
    let host = FakeHost::debian()
        .file("/cfg/inc.toml", "include = [\"nosuch\"]")
        .file("/cfg/gone.toml", "ro = [\"/nope\"]")
        .file("/cfg/rel.toml", "rw = [\"data\"]")
        .file("/cfg/ph.toml", "tmpfs = [\"{cwd}/x\"]")
        .file("/cfg/up.toml", "tmpfs = [\"{home}/../x\"]")
        .file("/cfg/proc.toml", "tmpfs = [\"/proc\"]")
        .file("/cfg/key.toml", "mounts = []")
        .file("/cfg/env1.toml", "[env]\nA = \"1\"")
        .file("/cfg/env2.toml", "[env]\nA = \"2\"")
        .file("/cfg/envbad.toml", "[env]\n\"A=B\" = \"1\"");
    let cases: [(&[&str], &str); 10] = [
        (&["nosuch"], "unknown profile nosuch: no nosuch.toml in /cfg"),
        (&["inc"], "(included by inc)"),
        (&["gone"], "profile gone (/cfg/gone.toml): ro \"/nope\": /nope does not exist"),
        (&["rel"], "not an absolute path"),
        (&["ph"], "unknown placeholder {cwd}"),
        (&["up"], "must not contain .."),
        (&["proc"], "/dev and /proc are always private"),
        (&["key"], "/cfg/key.toml:1: unknown field `mounts`"),
        (&["env1", "env2"], "env A: profile env1 sets \"1\", profile env2 sets \"2\""),
        (&["envbad"], "env \"A=B\""),
    ];
    for (profiles, want) in cases {
        let (code, msg) = err_of(&host, &request("/home/u/proj", profiles, false));
        assert_eq!(code, POLICY, "{profiles:?}: {msg}");
        assert!(msg.contains(want), "{profiles:?}: {msg:?} lacks {want:?}");
    }
}

#[test]
fn r4_missing_dir_or_home_is_a_usage_error() {
    let host = FakeHost::debian().file("/home/u/f", "");
    assert_eq!(err_of(&host, &request("/nowhere", &[], false)).0, USAGE);
    assert_eq!(err_of(&host, &request("/home/u/f", &[], false)).0, USAGE);
    let mut req = request("/home/u/proj", &[], false);
    req.host_env.retain(|(k, _)| k != "HOME");
    assert_eq!(err_of(&host, &req).0, USAGE);
}

#[test]
fn p2_relative_dir_is_canonical() {
    let host = FakeHost::debian().cwd("/home/u/proj");
    let p = resolve_with(&request("./sub/../sub", &[], false), &host).expect("ok");
    assert_eq!(p.target, PathBuf::from("/home/u/proj/sub"));
}

#[test]
fn p2_env_values_expand_placeholders() {
    let host = FakeHost::debian().file(
        "/cfg/tc.toml",
        "[env]\nCARGO_HOME = \"{home}/.cargo\"\nOUT = \"{target}/out\"\nUP = \"{target_parent}\"",
    );
    let p = resolve_with(&request("/home/u/proj", &["tc"], false), &host).expect("ok");
    for (k, v) in [("CARGO_HOME", "/home/u/.cargo"), ("OUT", "/home/u/proj/out"), ("UP", "/home/u")] {
        assert!(p.env.contains(&(k.to_string(), v.to_string())), "{k}: {:?}", p.env);
    }
    let bad = FakeHost::debian().file("/cfg/tc.toml", "[env]\nX = \"{nope}\"");
    assert_eq!(err_of(&bad, &request("/home/u/proj", &["tc"], false)).0, crate::error::POLICY);
}

#[test]
fn o7_optional_paths_skip_and_path_plus_prepends() {
    let a = "ro = [\"?{home}/.tool\", \"?{home}/gone\"]\n[env]\n\"PATH+\" = \"{home}/.tool/bin\"\n";
    let b = "rw = [\"?{home}/.cache/b\"]\n[env]\n\"PATH+\" = \"/opt/b/bin\"\n";
    let host = FakeHost::debian().dir("/home/u/.tool").file("/cfg/a.toml", a).file("/cfg/b.toml", b);
    let p = resolve_with(&request("/home/u/proj", &["a", "b"], false), &host).expect("resolves");
    let m = mounts(&p);
    assert!(m.contains(&"ro /home/u/.tool".to_string()), "{m:?}");
    assert!(!m.iter().any(|l| l.contains("gone") || l.contains(".cache/b")), "{m:?}");
    let path = p.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str());
    assert_eq!(path, Some(&*format!("/home/u/.tool/bin:/opt/b/bin:{SANE_PATH}")));
    // Without `?` a missing path stays an error (P2).
    let host = FakeHost::debian().file("/cfg/c.toml", "ro = [\"{home}/gone\"]");
    assert_eq!(err_of(&host, &request("/home/u/proj", &["c"], false)).0, POLICY);
}

#[test]
fn p5_grants_follow_the_profile_rules_and_name_the_flag() {
    let host = FakeHost::debian().file("/cfg/ed.toml", "[env]\nEDITOR = \"vi\"").dir("/srv/data");
    let mut req = request("/home/u/proj", &[], false);
    req.grants = crate::policy::Grants {
        ro: vec!["/srv/data".into(), "/home/u/proj".into()],
        rw: vec!["{home}/proj/sub".into()],
        tmpfs: vec!["/opt/scratch".into()],
        env: vec!["TOKEN".into(), "X=1".into(), "UNSET".into()],
        unprotect: vec!["{target}/.envrc".into()],
        ..Default::default()
    };
    let p = resolve_with(&req, &host).expect("ok");
    let by = |dest: &str| p.mounts.iter().find(|m| m.dest == Path::new(dest)).map(|m| (m.kind, m.profile.as_str()));
    assert_eq!(by("/srv/data"), Some((MountKind::Ro, "--ro")));
    assert_eq!(by("/home/u/proj"), Some((MountKind::Rw, "@cwd-rw")), "rw beats ro, as between profiles");
    assert_eq!(by("/home/u/proj/sub"), Some((MountKind::Rw, "--rw")));
    assert_eq!(by("/opt/scratch"), Some((MountKind::Tmpfs, "--tmpfs")));
    let env = |k: &str| p.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!((env("TOKEN"), env("X"), env("UNSET")), (Some("s"), Some("1"), None));
    assert_eq!(p.profiles, ["@sys", "@home", "@cwd-rw", "@parent-ro"]);
    assert_eq!(p.unprotect, [PathBuf::from("/home/u/proj/.envrc")], "P8: --unprotect as a profile key");

    let fails = |g: crate::policy::Grants, profiles: &[&str]| {
        let mut req = request("/home/u/proj", profiles, false);
        req.grants = g;
        err_of(&host, &req)
    };
    let g = |ro: &[&str], env: &[&str]| crate::policy::Grants {
        ro: ro.iter().map(|s| s.to_string()).collect(),
        env: env.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    assert_eq!(fails(g(&["/nope"], &[]), &[]), (POLICY, "--ro \"/nope\": /nope does not exist".to_string()));
    // `?PATH` is optional on the command line as in a profile: skipped when missing.
    let mut req = request("/home/u/proj", &[], false);
    req.grants = g(&["?/nope", "?/srv/data"], &[]);
    let p = resolve_with(&req, &host).expect("an optional grant that is missing is skipped");
    assert!(!p.mounts.iter().any(|m| m.dest == Path::new("/nope")));
    assert!(p.mounts.iter().any(|m| m.dest == Path::new("/srv/data") && m.profile == "--ro"));
    assert_eq!(fails(g(&["/proc"], &[]), &[]).0, POLICY);
    assert_eq!(fails(g(&["/x/../etc"], &[]), &[]).0, POLICY);
    assert_eq!(fails(g(&[], &["=v"]), &[]), (POLICY, "-e \"\": not a valid environment entry".to_string()));
    let (code, msg) = fails(g(&[], &["EDITOR=nano"]), &["ed"]);
    assert_eq!((code, msg.as_str()), (POLICY, "env EDITOR: profile ed sets \"vi\", -e sets \"nano\""));
}

/// Test fixtures of other modules: a policy of `mounts` alone, every other field empty.
impl Policy {
    pub(crate) fn bare(target: &Path, home: &Path, mounts: Vec<Mount>) -> Policy {
        Policy {
            profiles: vec![],
            mounts,
            env: vec![],
            net: false,
            net_allow: vec![],
            target: target.to_path_buf(),
            home: home.to_path_buf(),
            max_procs: None,
            memory: None,
            create: vec![],
            allow_userns: false,
            unprotect: vec![],
            protected: vec![],
            cow: false,
        }
    }
}

/// P5: an explicit `--ro /tmp` from DIR = /tmp/x is bound, not taken for `@parent-ro`'s
/// implied bind of DIR's parent (which the private /tmp replaces). Positive control: with
/// the first of equal rank kept, /tmp was the private tmpfs and `--ro /tmp` was dropped
/// without a word.
#[test]
fn p5_explicit_grant_of_dirs_parent_is_kept() {
    let host = FakeHost::debian().dir("/tmp/x");
    let mut req = request("/tmp/x", &[], false);
    req.grants = crate::policy::Grants { ro: vec!["/tmp".into()], ..Default::default() };
    let p = resolve_with(&req, &host).expect("ok");
    let at_tmp = p.mounts.iter().find(|m| m.dest == Path::new("/tmp")).map(|m| (m.kind, m.profile.as_str()));
    assert_eq!(at_tmp, Some((MountKind::Ro, "--ro")), "{:?}", mounts(&p));
    let plain = resolve_with(&request("/tmp/x", &[], false), &host).expect("ok");
    assert!(mounts(&plain).contains(&"tmpfs /tmp".to_string()), "{:?}", mounts(&plain));
}
