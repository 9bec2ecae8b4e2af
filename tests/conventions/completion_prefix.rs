//! O7: every profile prefix completes in bash, with the words split as bash itself splits
//! them (`@` is in `COMP_WORDBREAKS`, so `-p @py` reaches the function as `-p`, `@`, `py`).

use crate::common::*;
use std::process::Command;

/// COMPREPLY for the line `line`, given as bash splits it (`words`), with the completion
/// sourced.
fn reply(words: &[&str], line: &str) -> Vec<String> {
    let bin = snug();
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <('{}' completions bash) || exit 9; compopt() {{ :; }}; \
         COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; \
         _snug_dynamic snug x y; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        bin.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let o = run_bounded(
        Command::new("bash").args(["--norc", "--noprofile", "-c", &script]).env("PATH", path),
        crate::conventions::LIMIT,
    );
    o.out.lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

/// O7: `-p @py<TAB>` offers `python` (bash puts it after the `@` already typed), `-p @r`
/// offers `rust` and no host name, `-p @` every builtin. Control: a word after another
/// option is not completed as a profile. Without the fix `-p @py` completed nothing and
/// `-p @r` offered a host name from /etc/hosts (the function saw `@` as the option).
#[test]
fn o7_every_profile_prefix_completes_in_bash() {
    if snug().file_name().is_some_and(|n| n != "snug") {
        return; // the completion calls snug by the name it completes
    }
    let r = reply(&["snug", "-p", "@", "py"], "snug -p @py");
    assert!(r.contains(&"python".to_string()) && r.iter().all(|w| w.starts_with("py")), "{r:?}");
    let r = reply(&["snug", "--profile", "@", "r"], "snug --profile @r");
    assert!(r.contains(&"rust".to_string()) && r.iter().all(|w| w.starts_with('r')), "{r:?}");
    let r = reply(&["snug", "-p", "@"], "snug -p @");
    assert!(r.contains(&"@sys".to_string()) && r.contains(&"@python".to_string()), "{r:?}");
    let r = reply(&["snug", "--name", "@", "py"], "snug --name @py");
    assert!(!r.contains(&"python".to_string()), "control: {r:?}");
}
