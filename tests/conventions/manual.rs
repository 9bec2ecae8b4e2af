//! O7: the man pages and the completions, from the CLI definition.

use crate::common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Every `name(N)` a roff page refers to.
fn references(roff: &str) -> Vec<String> {
    let text = roff.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace("\\fI", "");
    let mut out = Vec::new();
    let b = text.as_bytes();
    for (i, _) in text.match_indices("(1)") {
        let start =
            text[..i].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).map_or(0, |s| s + 1);
        if start < i && b[start].is_ascii_alphabetic() {
            out.push(text[start..i].to_string());
        }
    }
    out
}

/// O7: `snug manpage --dir` writes snug(1) and a page per subcommand; every page any of them
/// names is one of them (bwrap(1) aside); EXIT STATUS lists every code; FILES names nothing
/// that is not installed (no README). Fails without the fix: only snug(1) existed (no
/// `--dir`), which named snug-ps(1), snug-doctor(1)… and pointed at README.md, and its EXIT
/// STATUS lacked 74 and 124.
#[test]
fn o7_man_pages_name_only_pages_that_exist() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run_bounded(Command::new(snug()).args(["manpage", "--dir"]).arg(dir.path()), crate::conventions::LIMIT);
    assert_eq!(o.status.code(), Some(0), "{}", o.err);
    let pages: Vec<String> =
        std::fs::read_dir(dir.path()).expect("dir").filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    for want in ["snug.1", "snug-ps.1", "snug-stop.1", "snug-signal.1", "snug-exec.1", "snug-doctor.1", "snug-allow.1"]
    {
        assert!(pages.iter().any(|p| p == want), "{want} in {pages:?}");
    }
    assert!(pages.iter().any(|p| p == "snug-profile-list.1"), "{pages:?}");
    for page in &pages {
        let text = std::fs::read_to_string(dir.path().join(page)).expect("read");
        for r in references(&text) {
            assert!(r == "bwrap" || pages.contains(&format!("{r}.1")), "{page} names {r}(1), not installed");
        }
        let exit = text.split(".SH \"EXIT STATUS\"").nth(1).expect("EXIT STATUS").split(".SH").next().unwrap_or("");
        for code in [64, 69, 70, 71, 74, 77, 124, 126, 127] {
            assert!(exit.contains(&format!("\\fB{code}\\fR")), "{page}: exit {code} missing");
        }
        assert!(!text.contains("README"), "{page} points at the README, which is not installed");
    }
    let top = std::fs::read_to_string(dir.path().join("snug.1")).expect("snug.1");
    assert!(references(&top).contains(&"snug-ps".to_string()), "control: the main page does name pages");
    // `snug manpage` alone still prints snug(1).
    let o = run_bounded(Command::new(snug()).arg("manpage"), crate::conventions::LIMIT);
    assert_eq!(o.out, top);
}

/// What bash's completion of snug gave for one line.
struct Completed {
    /// `complete -p snug`.
    spec: String,
    /// COMPREPLY, one a line.
    words: Vec<String>,
    /// Whether the function turned bash's file and host name fallback off (`compopt +o
    /// default`, seen through a `compopt` function standing in for the builtin, which only
    /// works during real completion).
    no_fallback: bool,
}

/// bash with snug's completion sourced: `complete -p snug`, then `words` completed as the
/// last word is typed.
fn complete(words: &[&str], env: &[(&str, &str)]) -> Completed {
    let bin = snug();
    let bindir = bin.parent().expect("bindir");
    let path = format!("{}:{}", bindir.display(), std::env::var("PATH").unwrap_or_default());
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let script = format!(
        "source <('{}' completions bash) || exit 9; complete -p snug; echo ---; \
         compopt() {{ calls+=\"compopt $*;\"; }}; \
         COMP_WORDS=({}); COMP_CWORD={cword}; COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
         _snug_dynamic snug '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"; echo \"$calls\" >&2",
        bin.display(),
        quoted.join(" "),
        words[cword],
        if cword > 0 { words[cword - 1] } else { "" },
    );
    let mut c = Command::new("bash");
    c.args(["--norc", "--noprofile", "-c", &script]).env("PATH", path).envs(env.iter().copied());
    if bin.file_name().is_some_and(|n| n != "snug") {
        panic!("the completion calls `snug` by the name it completes: {}", bin.display());
    }
    let o = run_bounded(&mut c, Duration::from_secs(20));
    let (spec, rest) = o.out.split_once("---\n").unwrap_or((&o.out, ""));
    Completed {
        spec: spec.to_string(),
        words: rest.lines().filter(|l| !l.is_empty()).map(String::from).collect(),
        no_fallback: o.err.contains("compopt +o default +o bashdefault"),
    }
}

/// O7: bash completion offers profile names after `-p` (builtins for `@`, user profiles
/// too; bash's fallback to files and host names turned off there) and live run names after
/// `stop`, `signal`, `exec`. The control: DIR, a path, gets no candidates from snug and keeps
/// bash's file fallback (`-o default`). Fails without the fix: `complete -p snug` named
/// clap's `_snug`, there was no `_snug_dynamic`, and `_snug` offered files after `-p`
/// (`compgen -f`) and left `stop` to the fallback, which gave file names.
#[test]
fn o7_bash_completion_offers_profiles_and_runs() {
    let cfg = tempfile::tempdir().expect("tempdir");
    let d = cfg.path().join("snug/profiles.d");
    std::fs::create_dir_all(&d).expect("mkdir");
    std::fs::write(d.join("mine.toml"), "description = \"x\"\n").expect("write");
    let env = [("XDG_CONFIG_HOME", cfg.path().to_str().expect("utf8"))];
    let c = complete(&["snug", "-p", "@"], &env);
    assert!(c.spec.contains("-F _snug_dynamic") && c.spec.trim_end().ends_with(" snug"), "{}", c.spec);
    for b in ["@sys", "@net", "@python", "@rust"] {
        assert!(c.words.contains(&b.to_string()), "{b} in {:?}", c.words);
    }
    assert!(c.words.iter().all(|w| w.starts_with('@')) && c.no_fallback, "only builtins for @: {:?}", c.words);
    let c = complete(&["snug", "--profile", ""], &env);
    assert!(c.words.contains(&"mine".to_string()) && c.words.contains(&"@sys".to_string()), "{:?}", c.words);
    assert!(!c.words.iter().any(|w| w.contains('/') || Path::new(w).exists()) && c.no_fallback, "{:?}", c.words);

    // A live run to complete.
    let dir = workdir(Who::Root);
    let name = format!("comp-{}", std::process::id());
    let mut cmd = snug_cmd(Who::Root, dir.path(), &["--name", &name, "--", "sh", "-c", "touch ready; sleep 30"]);
    let mut child = spawn_own_group(&mut cmd);
    assert!(until(Duration::from_secs(10), || dir.path().join("ready").exists()), "run started");
    for sub in ["stop", "signal", "exec"] {
        let c = complete(&["snug", sub, "comp-"], &[]);
        assert!(c.words.contains(&name) && c.no_fallback, "{sub}: {:?}", c.words);
    }
    let c = complete(&["snug", "stop", "--now", ""], &[]);
    assert!(c.words.contains(&name), "stop --now: {:?}", c.words);
    // Control: DIR, a path, is left to bash's file completion.
    let c = complete(&["snug", "/us"], &[]);
    assert!(c.words.is_empty() && !c.no_fallback && c.spec.contains("-o default"), "control: {:?}", c.words);
    let _ = run_bounded(Command::new(snug()).args(["stop", "--now", &name]), crate::conventions::LIMIT);
    kill_if_running(&mut child);
}
