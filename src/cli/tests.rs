//! The command line's parsing rules (SPEC R1, P5, O5, O6, L1).

use super::*;
use crate::error::{code_of, one_line};

fn run(args: &[&str]) -> RunArgs {
    let argv = std::iter::once("snug").chain(args.iter().copied());
    match parse_from(argv) {
        Ok(Command::Run(r)) => *r,
        other => panic!("{args:?}: {other:?}"),
    }
}

fn usage_error(args: &[&str]) -> String {
    let argv = std::iter::once("snug").chain(args.iter().copied());
    let err = parse_from(argv).expect_err("usage error");
    assert_eq!(code_of(&err), USAGE, "{args:?}");
    let line = one_line(&err);
    assert!(!line.contains('\n') && !line.contains("Usage:"), "{line}");
    line
}

#[test]
fn r1_dir_and_command() {
    let r = run(&["-p", "a", "--profile", "b", "-nv", "/w", "--", "ls", "-l", "--", "x"]);
    assert_eq!(r.profiles, ["a", "b"]);
    assert!(r.dry_run && r.verbose && !r.json && !r.no_defaults);
    assert_eq!(r.dir, Some(PathBuf::from("/w")));
    assert_eq!(r.cmd, ["ls", "-l", "--", "x"]);
    assert_eq!(r.command(), ["ls", "-l", "--", "x"]);
}

#[test]
fn r1_defaults() {
    let r = run(&[]);
    assert_eq!((r.dir, r.cmd.len()), (None, 0));
    let r = run(&["--", "true"]);
    assert_eq!((r.dir, r.cmd), (None, vec![OsString::from("true")]));
    let r = run(&["--no-defaults", "-n", "--json"]);
    assert!(r.no_defaults && r.json);
}

#[test]
fn r1_default_command_is_a_shell() {
    let r = run(&[]);
    let cmd = r.command();
    assert_eq!(cmd.len(), 1);
    let want = std::env::var("SHELL").ok().filter(|s| !s.is_empty());
    assert_eq!(cmd[0], OsString::from(want.unwrap_or_else(|| "/bin/sh".to_string())));
}

#[test]
fn o2_o3_subcommands_and_dir_spelt_like_one() {
    let p = |a: &[&str]| parse_from(std::iter::once("snug").chain(a.iter().copied())).ok();
    assert_eq!(p(&["doctor"]), Some(Command::Doctor));
    assert_eq!(p(&["profile", "list"]), Some(Command::ProfileList { names: false }));
    assert_eq!(p(&["profile", "show", "@sys"]), Some(Command::ProfileShow("@sys".into())));
    assert_eq!(run(&["./doctor"]).dir, Some(PathBuf::from("./doctor")));
    assert_eq!(run(&["./profile", "--", "x"]).dir, Some(PathBuf::from("./profile")));
}

#[test]
fn r4_usage_errors_are_one_line() {
    assert_eq!(usage_error(&["--json"]), "--json only goes with --dry-run");
    assert!(usage_error(&["--frobnicate"]).contains("--frobnicate"));
    usage_error(&["a", "b"]);
    assert!(usage_error(&["profile"]).contains("list, or show NAME"));
    usage_error(&["profile", "show"]);
    usage_error(&["-p"]);
    let line = usage_error(&["-p", "x", "doctor"]);
    assert!(line.contains("./doctor"), "{line}");
    usage_error(&["-v", "profile", "--", "ls"]);
}

#[test]
fn p5_o5_o6_grants_report_timeout() {
    let r = run(&["--ro", "/a", "--rw", "b", "--tmpfs", "/c", "-e", "X", "--env", "Y=1", "--ro", "/d"]);
    assert_eq!(
        (r.grants.ro, r.grants.rw, r.grants.tmpfs),
        (vec!["/a".into(), "/d".into()], vec!["b".into()], vec!["/c".into()])
    );
    assert_eq!(r.grants.env, ["X", "Y=1"]);
    assert_eq!(run(&["--report", "fd:3"]).report, Some(ReportTo::Fd(3)));
    assert_eq!(run(&["--report", "r.json"]).report, Some(ReportTo::Path("r.json".into())));
    let t = |v: &str| run(&["--timeout", v]).timeout;
    assert_eq!(t("90s"), Some(Duration::from_secs(90)));
    assert_eq!(t("1h30m"), Some(Duration::from_secs(5400)));
    assert_eq!(t("0.5s"), Some(Duration::from_millis(500)));
    assert_eq!(t("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(t("7"), Some(Duration::from_secs(7)));
    assert_eq!(t("0"), None, "0 means no timeout, as for timeout(1)");
    for bad in ["", "5x", "s", "1h-1m", "-3", "nan", "inf", "1.2.3s"] {
        assert!(usage_error(&[&format!("--timeout={bad}")]).contains("--timeout"), "{bad}");
    }
    for bad in ["fd:", "fd:x", "fd:-1", ""] {
        assert!(usage_error(&["--report", bad]).contains("--report"), "{bad}");
    }
}

/// P6, O7: `allow [--revoke] [DIR]`, `--no-project`, `manpage --dir`, and the hidden
/// `--names` helpers the completion scripts call; `allow` spelt as a DIR needs a path.
#[test]
fn p6_o7_allow_no_project_manpage_dir_names() {
    let p = |a: &[&str]| parse_from(std::iter::once("snug").chain(a.iter().copied())).ok();
    assert_eq!(p(&["allow"]), Some(Command::Allow { dir: None, revoke: false }));
    assert_eq!(p(&["allow", "--revoke", "x"]), Some(Command::Allow { dir: Some("x".into()), revoke: true }));
    assert!(run(&["--no-project", "--", "true"]).no_project);
    assert!(!run(&["--", "true"]).no_project);
    assert_eq!(p(&["manpage", "--dir", "/m"]), Some(Command::Manpage { dir: Some("/m".into()) }));
    assert_eq!(p(&["profile", "list", "--names"]), Some(Command::ProfileList { names: true }));
    assert_eq!(p(&["ps", "--names"]), Some(Command::Ps { json: false, names: true }));
    assert!(usage_error(&["-v", "allow"]).contains("./allow"));
}

/// W1, W3, W4: `--cow` is a run's option; `diff`, `apply`, `discard` parse into their
/// commands, and a DIR spelt like one needs a path.
#[test]
fn w3_cow_flag_and_subcommands() {
    assert!(run(&["--cow", "--", "true"]).cow);
    assert!(!run(&["--", "true"]).cow);
    let cmd = |args: &[&str]| parse_from(std::iter::once("snug").chain(args.iter().copied())).unwrap();
    assert_eq!(cmd(&["diff"]), Command::Cow(cow::CowCommand::List));
    assert_eq!(
        cmd(&["diff", "x", "--stat", "a/b"]),
        Command::Cow(cow::CowCommand::Diff { name: "x".into(), stat: true, paths: vec!["a/b".into()] })
    );
    assert_eq!(
        cmd(&["apply", "x", "p", "--partial", "--unprotect", ".envrc"]),
        Command::Cow(cow::CowCommand::Apply {
            name: "x".into(),
            paths: vec!["p".into()],
            partial: true,
            force: false,
            unprotect: vec![".envrc".into()],
        })
    );
    assert_eq!(cmd(&["discard", "x"]), Command::Cow(cow::CowCommand::Discard { name: "x".into() }));
    assert!(usage_error(&["-v", "discard"]).contains("./discard"));
}

/// R4: a mistyped flag's one line keeps clap's tip, so the fix is on the screen. Without the
/// tips, the line ended at "found" (the control: a flag nothing resembles has no tip).
#[test]
fn r4_a_mistyped_flag_names_the_flag_it_resembles() {
    let line = usage_error(&["--dry-runn"]);
    assert_eq!(
        line,
        "unexpected argument '--dry-runn' found; a similar argument exists: '--dry-run' (see snug --help)"
    );
    let line = usage_error(&["--zzzzzz"]);
    assert!(line.starts_with("unexpected argument '--zzzzzz' found") && !line.contains("similar"), "{line}");
}

/// G6, L2 (issue: `snug signal NAME CHLD` exited 0 and nothing was relayed): CHLD, PIPE and
/// URG, which a run never relays, are refused with 64 and why. Control: USR1 parses. Without
/// the check the parse succeeded (no usage error).
#[test]
fn g6_l2_signal_refuses_what_is_never_relayed() {
    for sig in ["CHLD", "SIGPIPE", "23"] {
        let line = usage_error(&["signal", "x", sig]);
        assert!(line.contains("is never relayed to a sandbox"), "{sig}: {line}");
    }
    let argv = ["snug", "signal", "x", "USR1"];
    assert!(matches!(parse_from(argv), Ok(Command::Signal { .. })));
}
